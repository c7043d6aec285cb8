import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../connect';
import type { Job, JobKind, JobStatus } from '../schema';
import { InvalidAmountError, releaseHold } from './ledger';
import { offsetOf, type PageRequest } from '../../lib/pagination';
import { jobLog } from '../../lib/log';
import { jobDuration } from '../../lib/metrics';
import { announceJobTerminal } from '../job-terminal-events';

export function workflowIdFor(kind: JobKind, jobId: string): string {
  return `${kind}-${jobId}`;
}

export function billingPeriod(now = new Date()): string {
  return now.toISOString().slice(0, 7);
}

export type JobAdmission =
  | { outcome: 'created'; job: Job; holdMicros: number }
  | { outcome: 'existing'; job: Job }
  | { outcome: 'subscription_inactive' }
  | { outcome: 'insufficient_funds' }
  | { outcome: 'monthly_limit_reached'; limit: number };

/** What starts the job's workflow, kept on the row so a job committed without its workflow can still be started. */
export interface JobWorkflowStart {
  type: string;
  taskQueue: string;
  args: (job: Pick<Job, 'id'>) => unknown[];
}

export interface JobRequest {
  userId: string;
  kind: JobKind;
  request: Record<string, unknown>;
  webhookUrl: string | null;
  idempotencyKey: string | null;
  /** Seals the request's secrets for the new job id (secrets are bound to their job). */
  sealSecrets?: (jobId: string) => string | null;
  /** The most this job may reserve of the wallet (the per-kind maximum of the configuration). */
  holdMaxMicros: number;
  /** How to start the job's workflow; omitted when the workflow itself creates the job (automation runs). */
  workflow?: JobWorkflowStart;
  /** Default `<kind>-<jobId>`. */
  workflowId?: string;
  /** Whether the job counts against the monthly operation limit (default true). */
  countsOperation?: boolean;
  acceptedLog?: string;
}

/**
 * Admits a metered job: the subscription must be active, the available balance (balance − open
 * holds) positive, and the month's operation counter below the plan limit. One round trip: the
 * PL/pgSQL function admit_job (migration 0013) locks the wallet row, so concurrent admissions of one
 * user queue up for a few statements inside the database; the counter moves with a single
 * conditional upsert, the job is inserted, and its hold reserves up to `holdMaxMicros` of the
 * available balance, so concurrent requests can overshoot neither the limit nor the wallet.
 */
export async function admitJob(db: Db, input: JobRequest, now = new Date()): Promise<JobAdmission> {
  if (!Number.isSafeInteger(input.holdMaxMicros) || input.holdMaxMicros <= 0)
    throw new InvalidAmountError('A hold maximum must be a positive whole number of micro-USD');
  const id = randomUUID();
  try {
    const result = await sql<{ admission: AdmissionResult }>`
      select admit_job(${id}::uuid, ${input.userId}::uuid, ${input.kind}::text, ${JSON.stringify(input.request)}::jsonb, ${input.webhookUrl}::text,
                       ${input.sealSecrets?.(id) ?? null}::text, ${input.workflowId ?? workflowIdFor(input.kind, id)}::text, ${input.workflow?.type ?? null}::text,
                       ${input.workflow?.taskQueue ?? null}::text, ${input.workflow ? JSON.stringify(input.workflow.args({ id })) : null}::jsonb, ${input.idempotencyKey}::text,
                       array[${`${now.toISOString()} ${input.acceptedLog ?? 'job accepted'}`}::text], ${`${input.kind} job ${id} accepted`}::text,
                       ${input.holdMaxMicros}::bigint, ${input.countsOperation !== false}::boolean, ${billingPeriod(now)}::text) as admission`.execute(
      db,
    );
    const admission = result.rows[0]!.admission;
    switch (admission.outcome) {
      case 'created':
        return { outcome: 'created', job: jobFromJson(admission.job), holdMicros: Number(admission.hold) };
      case 'existing':
        return { outcome: 'existing', job: jobFromJson(admission.job) };
      case 'monthly_limit_reached':
        return { outcome: 'monthly_limit_reached', limit: admission.limit };
      default:
        return { outcome: admission.outcome };
    }
  } catch (err) {
    // Two requests with one idempotency key raced: the loser's statement rolled back whole.
    if (input.idempotencyKey && isUniqueViolation(err)) {
      const existing = await findByIdempotencyKey(db, input);
      if (existing) return { outcome: 'existing', job: existing };
    }
    throw err;
  }
}

type JobJson = Omit<Job, 'created_at' | 'updated_at'> & { created_at: string; updated_at: string };
type AdmissionResult =
  | { outcome: 'created'; job: JobJson; hold: number }
  | { outcome: 'existing'; job: JobJson }
  | { outcome: 'monthly_limit_reached'; limit: number }
  | { outcome: 'subscription_inactive' | 'insufficient_funds' };

/** A jobs row as admit_job returns it (to_jsonb): timestamps as text. */
function jobFromJson(row: JobJson): Job {
  return { ...row, created_at: new Date(row.created_at), updated_at: new Date(row.updated_at) };
}

function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === '23505';
}

function findByIdempotencyKey(db: Db, input: JobRequest): Promise<Job | undefined> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('user_id', '=', input.userId)
    .where('kind', '=', input.kind)
    .where('idempotency_key', '=', input.idempotencyKey)
    .executeTakeFirst();
}

/**
 * Undoes an admission whose workflow was never started: the job fails with `reason`, the operation
 * is given back, the hold is released, and the idempotency key is freed so that a retry of the
 * request admits and starts a new job instead of answering with this one. Only a pending job is
 * abandoned; returns whether this call did it.
 */
export async function abandonJob(
  db: Db,
  job: Pick<Job, 'id' | 'user_id' | 'created_at'>,
  reason: string,
  now = new Date(),
): Promise<boolean> {
  const abandoned = await db.transaction().execute(async (trx) => {
    const failed = await trx
      .updateTable('jobs')
      .set({
        status: 'failed',
        error: reason,
        idempotency_key: null,
        logs: logsWith([`failed: ${reason}`], now),
        updated_at: now,
      })
      .where('id', '=', job.id)
      .where('status', '=', 'pending')
      .returning('kind')
      .executeTakeFirst();
    if (!failed) return false;
    await releaseHold(trx, job.id);
    // Automation runs do not count against the monthly operation limit (see admitJob's countsOperation).
    if (failed.kind !== 'automation')
      await trx
        .updateTable('monthly_usage')
        .set((eb) => ({ operations: eb('operations', '-', 1) }))
        .where('user_id', '=', job.user_id)
        .where('period', '=', billingPeriod(job.created_at))
        .where('operations', '>', 0)
        .execute();
    await trx
      .insertInto('system_logs')
      .values({ user_id: job.user_id, job_id: job.id, log_message: `${failed.kind} job ${job.id} failed: ${reason}` })
      .execute();
    return true;
  });
  if (abandoned) announceJobTerminal(job.id);
  return abandoned;
}

/** Jobs still pending after `olderThanMs`: their workflow may never have been started. */
export function listStalePendingJobs(db: Db, olderThanMs: number, limit = 100, now = new Date()): Promise<Job[]> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('status', '=', 'pending')
    .where('created_at', '<', new Date(now.getTime() - olderThanMs))
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

export function findJob(db: Db, scope: { userId: string; kind: JobKind; jobId: string }): Promise<Job | undefined> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', scope.jobId)
    .where('user_id', '=', scope.userId)
    .where('kind', '=', scope.kind)
    .executeTakeFirst();
}

/** The caller's own job of any kind (the console's run page); undefined for another account's id. */
export function findOwnJob(db: Db, userId: string, jobId: string): Promise<Job | undefined> {
  return db.selectFrom('jobs').selectAll().where('id', '=', jobId).where('user_id', '=', userId).executeTakeFirst();
}

/** The account's most recent jobs of every kind (or of one), newest first. */
export function listRecentJobs(db: Db, userId: string, options: { limit: number; kind?: JobKind }): Promise<Job[]> {
  let query = db.selectFrom('jobs').selectAll().where('user_id', '=', userId);
  if (options.kind) query = query.where('kind', '=', options.kind);
  return query.orderBy('created_at', 'desc').orderBy('id').limit(options.limit).execute();
}

/** A job as the console's runs list shows it: with what its charges (agent transactions) debited so far. */
export type JobWithCost = Job & { cost_micros: number };

/**
 * The account's jobs of every kind, newest first, optionally of one kind and one status, a page at a
 * time, each with the sum of its charges (the transactions GET /transactions lists for it).
 */
export async function listOwnJobs(
  db: Db,
  userId: string,
  filter: { kind?: JobKind; status?: JobStatus },
  page: PageRequest,
): Promise<{ rows: JobWithCost[]; total: number }> {
  let base = db.selectFrom('jobs').where('jobs.user_id', '=', userId);
  if (filter.kind) base = base.where('jobs.kind', '=', filter.kind);
  if (filter.status) base = base.where('jobs.status', '=', filter.status);
  const [rows, count] = await Promise.all([
    base
      .selectAll('jobs')
      .select(
        sql<string>`(select coalesce(sum(t.cost_micros), 0) from agent_transactions t where t.job_id = jobs.id)`.as(
          'cost',
        ),
      )
      .orderBy('jobs.created_at', 'desc')
      .orderBy('jobs.id')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    base.select(sql<string>`count(*)`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return {
    rows: rows.map(({ cost, ...job }) => ({ ...(job as Job), cost_micros: Number(cost) })),
    total: Number(count.n),
  };
}

export function getJob(db: Db, jobId: string): Promise<Job> {
  return db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
}

/**
 * The job's log with `lines` appended, each stamped with `now`: the one way every statement that
 * writes to the log sets it (array[...] rather than an array parameter, which PGlite and pg type differently).
 */
export function logsWith(lines: readonly string[], now: Date) {
  return sql<
    string[]
  >`logs || array[${sql.join(lines.map((line) => sql`${`${now.toISOString()} ${line}`}::text`))}]::text[]`;
}

/** Appends lines to the job's log, in order, in one statement. */
export async function appendJobLog(
  db: Db,
  jobId: string,
  message: string | readonly string[],
  now = new Date(),
): Promise<void> {
  const lines = typeof message === 'string' ? [message] : message;
  if (lines.length === 0) return;
  await db
    .updateTable('jobs')
    .set({ logs: logsWith(lines, now), updated_at: now })
    .where('id', '=', jobId)
    .execute();
}

/** A line in the job's log and one in its owner's system log, written by one statement. */
export async function logJobEvent(
  db: Db,
  event: { jobId: string; jobLog: string; systemLog: string },
  now = new Date(),
): Promise<void> {
  await db
    .with('job', (qb) =>
      qb
        .updateTable('jobs')
        .set({ logs: logsWith([event.jobLog], now), updated_at: now })
        .where('id', '=', event.jobId)
        .returning(['id', 'user_id']),
    )
    .insertInto('system_logs')
    .columns(['user_id', 'job_id', 'log_message'])
    .expression((eb) =>
      eb.selectFrom('job').select(['user_id', 'id', sql<string>`${event.systemLog}::text`.as('log_message')]),
    )
    .execute();
}

/**
 * Moves a job forward; terminal states are never left, so replays of a finished activity change
 * nothing. With `systemLogEvent`, the line "<kind> job <id> <event>" goes to the owner's system log
 * in the same statement, when (and only when) the job moved.
 */
export async function transitionJob(
  db: Db,
  jobId: string,
  to: Exclude<JobStatus, 'pending'>,
  fields: {
    result?: Record<string, unknown> | null;
    error?: string | null;
    log?: string;
    systemLogEvent?: string;
  } = {},
  now = new Date(),
): Promise<boolean> {
  const from: JobStatus[] = to === 'processing' ? ['pending'] : ['pending', 'processing'];
  const moved = db.with('moved', (qb) =>
    qb
      .updateTable('jobs')
      .set({
        status: to,
        ...(fields.result !== undefined && { result: JSON.stringify(fields.result) }),
        ...(fields.error !== undefined && { error: fields.error }),
        ...(fields.log && { logs: logsWith([fields.log], now) }),
        updated_at: now,
      })
      .where('id', '=', jobId)
      .where('status', 'in', from)
      .returning(['id', 'user_id', 'kind', 'created_at']),
  );
  const event = fields.systemLogEvent ?? null;
  const updated = await moved
    .with('logged', (qb) =>
      qb
        .insertInto('system_logs')
        .columns(['user_id', 'job_id', 'log_message'])
        .expression((eb) =>
          eb
            .selectFrom('moved')
            .select(['user_id', 'id', sql<string>`kind || ' job ' || id || ' ' || ${event}::text`.as('log_message')])
            .where(sql<boolean>`${event}::text is not null`),
        ),
    )
    .selectFrom('moved')
    .select(['kind', 'created_at'])
    .executeTakeFirst();
  if (!updated) return false;
  if (to !== 'processing') {
    const seconds = Math.max(0, (now.getTime() - new Date(updated.created_at).getTime()) / 1000);
    jobDuration.labels(updated.kind, to).observe(seconds);
    jobLog(jobId, { kind: updated.kind }).info(
      { status: to, durationSeconds: seconds, ...(fields.error && { error: fields.error }) },
      `job ${to}`,
    );
    // Inside a caller's transaction the row is not visible yet: waiters find it on their next re-read.
    if (!db.isTransaction) announceJobTerminal(jobId);
  }
  return true;
}

/** The model a job's request names (`request.llm_model`), when it names one. */
export async function findJobLlmModel(db: Db, jobId: string): Promise<string | null | undefined> {
  const row = await db
    .selectFrom('jobs')
    .select(sql<string | null>`request->>'llm_model'`.as('model'))
    .where('id', '=', jobId)
    .executeTakeFirst();
  return row?.model;
}

/** The user's job of this kind recorded under an idempotency key (a scheduled run's run id). */
export function findJobByIdempotencyKey(
  db: Db,
  key: { userId: string; kind: JobKind; idempotencyKey: string },
): Promise<Job | undefined> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('user_id', '=', key.userId)
    .where('kind', '=', key.kind)
    .where('idempotency_key', '=', key.idempotencyKey)
    .executeTakeFirst();
}

/** A scheduled run that could not be admitted: a failed job row without a hold, so the run is still visible and reported. */
export async function recordSkippedRun(
  db: Db,
  input: { userId: string; runId: string; request: Record<string, unknown>; webhookUrl: string | null; error: string },
): Promise<Job> {
  const inserted = await db
    .insertInto('jobs')
    .values({
      id: randomUUID(),
      user_id: input.userId,
      kind: 'automation',
      status: 'failed',
      request: JSON.stringify(input.request),
      webhook_url: input.webhookUrl,
      workflow_id: input.runId,
      idempotency_key: input.runId,
      error: input.error,
      logs: [`${new Date().toISOString()} ${input.error}`],
    })
    .onConflict((oc) => oc.column('workflow_id').doNothing())
    .returningAll()
    .executeTakeFirst();
  return (
    inserted ??
    (await db.selectFrom('jobs').selectAll().where('workflow_id', '=', input.runId).executeTakeFirstOrThrow())
  );
}

/** How many operations the user's plan has counted in a billing period (0 before the first). */
export async function monthlyOperations(db: Db, userId: string, period: string): Promise<number> {
  const usage = await db
    .selectFrom('monthly_usage')
    .select('operations')
    .where('user_id', '=', userId)
    .where('period', '=', period)
    .executeTakeFirst();
  return usage?.operations ?? 0;
}
