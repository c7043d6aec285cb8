import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../connect';
import type { Job, JobKind, JobStatus } from '../schema';
import { insertHold, lockAvailableMicros, releaseHold } from './ledger';
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
 * holds) positive, and the month's operation counter below the plan limit. In one transaction,
 * with the wallet row locked so concurrent admissions of one user queue up: the counter moves with
 * a single conditional upsert, the job is inserted, and its hold reserves up to `holdMaxMicros` of
 * the available balance, so concurrent requests can overshoot neither the limit nor the wallet.
 */
export async function admitJob(db: Db, input: JobRequest, now = new Date()): Promise<JobAdmission> {
  try {
    return await db.transaction().execute(async (trx) => {
      if (input.idempotencyKey) {
        const existing = await findByIdempotencyKey(trx, input);
        if (existing) return { outcome: 'existing', job: existing };
      }
      const account = await trx
        .selectFrom('subscriptions')
        .select(['status', 'monthly_operation_limit'])
        .where('user_id', '=', input.userId)
        .executeTakeFirstOrThrow();
      if (account.status !== 'active') return { outcome: 'subscription_inactive' };
      const availableMicros = await lockAvailableMicros(trx, input.userId);
      if (availableMicros <= 0) return { outcome: 'insufficient_funds' };
      const limit = account.monthly_operation_limit;
      if (input.countsOperation !== false) {
        const counted = limit > 0 && (await sql<{ operations: number }>`
          insert into monthly_usage (user_id, period, operations)
          values (${input.userId}, ${billingPeriod(now)}, 1)
          on conflict (user_id, period) do update set operations = monthly_usage.operations + 1
          where monthly_usage.operations < ${limit}::int
          returning operations`.execute(trx)).rows.length === 1;
        if (!counted) return { outcome: 'monthly_limit_reached', limit };
      }
      const id = randomUUID();
      const job = await trx
        .insertInto('jobs')
        .values({
          id,
          user_id: input.userId,
          kind: input.kind,
          status: 'pending',
          request: JSON.stringify(input.request),
          webhook_url: input.webhookUrl,
          sealed_secrets: input.sealSecrets?.(id) ?? null,
          workflow_id: input.workflowId ?? workflowIdFor(input.kind, id),
          workflow_type: input.workflow?.type ?? null,
          workflow_task_queue: input.workflow?.taskQueue ?? null,
          workflow_args: input.workflow ? JSON.stringify(input.workflow.args({ id })) : null,
          idempotency_key: input.idempotencyKey,
          logs: [`${now.toISOString()} ${input.acceptedLog ?? 'job accepted'}`],
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      const holdMicros = await insertHold(trx, { userId: input.userId, jobId: id, maxMicros: input.holdMaxMicros, availableMicros });
      await trx.insertInto('system_logs').values({ user_id: input.userId, job_id: id, log_message: `${input.kind} job ${id} accepted` }).execute();
      return { outcome: 'created', job, holdMicros };
    });
  } catch (err) {
    // Two requests with one idempotency key raced: the loser's transaction rolled back whole.
    if (input.idempotencyKey && isUniqueViolation(err)) {
      const existing = await findByIdempotencyKey(db, input);
      if (existing) return { outcome: 'existing', job: existing };
    }
    throw err;
  }
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
export async function abandonJob(db: Db, job: Pick<Job, 'id' | 'user_id' | 'created_at'>, reason: string, now = new Date()): Promise<boolean> {
  const abandoned = await db.transaction().execute(async (trx) => {
    const failed = await trx
      .updateTable('jobs')
      .set({ status: 'failed', error: reason, idempotency_key: null, logs: sql`array_append(logs, ${`${now.toISOString()} failed: ${reason}`})`, updated_at: now })
      .where('id', '=', job.id)
      .where('status', '=', 'pending')
      .returning('kind')
      .executeTakeFirst();
    if (!failed) return false;
    await releaseHold(trx, job.id);
    // Automation runs do not count against the monthly operation limit (see admitJob's countsOperation).
    if (failed.kind !== 'automation') await trx
      .updateTable('monthly_usage')
      .set((eb) => ({ operations: eb('operations', '-', 1) }))
      .where('user_id', '=', job.user_id)
      .where('period', '=', billingPeriod(job.created_at))
      .where('operations', '>', 0)
      .execute();
    await trx.insertInto('system_logs').values({ user_id: job.user_id, job_id: job.id, log_message: `${failed.kind} job ${job.id} failed: ${reason}` }).execute();
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

export function getJob(db: Db, jobId: string): Promise<Job> {
  return db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
}

export async function appendJobLog(db: Db, jobId: string, message: string, now = new Date()): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ logs: sql`array_append(logs, ${`${now.toISOString()} ${message}`})`, updated_at: now })
    .where('id', '=', jobId)
    .execute();
}

/** Moves a job forward; terminal states are never left, so replays of a finished activity change nothing. */
export async function transitionJob(
  db: Db,
  jobId: string,
  to: Exclude<JobStatus, 'pending'>,
  fields: { result?: Record<string, unknown> | null; error?: string | null; log?: string } = {},
  now = new Date(),
): Promise<boolean> {
  const from: JobStatus[] = to === 'processing' ? ['pending'] : ['pending', 'processing'];
  const updated = await db
    .updateTable('jobs')
    .set({
      status: to,
      ...(fields.result !== undefined && { result: JSON.stringify(fields.result) }),
      ...(fields.error !== undefined && { error: fields.error }),
      ...(fields.log && { logs: sql`array_append(logs, ${`${now.toISOString()} ${fields.log}`})` }),
      updated_at: now,
    })
    .where('id', '=', jobId)
    .where('status', 'in', from)
    .returning(['kind', 'created_at'])
    .executeTakeFirst();
  if (!updated) return false;
  if (to !== 'processing') {
    const seconds = Math.max(0, (now.getTime() - new Date(updated.created_at).getTime()) / 1000);
    jobDuration.labels(updated.kind, to).observe(seconds);
    jobLog(jobId, { kind: updated.kind }).info({ status: to, durationSeconds: seconds, ...(fields.error && { error: fields.error }) }, `job ${to}`);
    // Inside a caller's transaction the row is not visible yet: waiters find it on their next re-read.
    if (!db.isTransaction) announceJobTerminal(jobId);
  }
  return true;
}
