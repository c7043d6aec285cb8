import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../connect';
import type { Job, JobKind, JobStatus } from '../schema';
import { jobLog } from '../../lib/log';
import { jobDuration } from '../../lib/metrics';

export function workflowIdFor(kind: JobKind, jobId: string): string {
  return `${kind}-${jobId}`;
}

export function billingPeriod(now = new Date()): string {
  return now.toISOString().slice(0, 7);
}

export type JobAdmission =
  | { outcome: 'created'; job: Job }
  | { outcome: 'existing'; job: Job }
  | { outcome: 'subscription_inactive' }
  | { outcome: 'insufficient_funds' }
  | { outcome: 'monthly_limit_reached'; limit: number };

export interface JobRequest {
  userId: string;
  kind: JobKind;
  request: Record<string, unknown>;
  webhookUrl: string | null;
  idempotencyKey: string | null;
  /** Seals the request's secrets for the new job id (secrets are bound to their job). */
  sealSecrets?: (jobId: string) => string | null;
}

/**
 * Admits a metered job: the subscription must be active, the wallet positive, and the month's
 * operation counter below the plan limit. The counter moves with a single conditional upsert
 * in the same transaction as the job insert, so concurrent requests can never overshoot it.
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
        .innerJoin('wallets', 'wallets.user_id', 'subscriptions.user_id')
        .select(['subscriptions.status', 'subscriptions.monthly_operation_limit', 'wallets.balance_micros'])
        .where('subscriptions.user_id', '=', input.userId)
        .executeTakeFirstOrThrow();
      if (account.status !== 'active') return { outcome: 'subscription_inactive' };
      if (account.balance_micros <= 0) return { outcome: 'insufficient_funds' };
      const limit = account.monthly_operation_limit;
      const counted = limit > 0 && (await sql<{ operations: number }>`
        insert into monthly_usage (user_id, period, operations)
        values (${input.userId}, ${billingPeriod(now)}, 1)
        on conflict (user_id, period) do update set operations = monthly_usage.operations + 1
        where monthly_usage.operations < ${limit}
        returning operations`.execute(trx)).rows.length === 1;
      if (!counted) return { outcome: 'monthly_limit_reached', limit };
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
          workflow_id: workflowIdFor(input.kind, id),
          idempotency_key: input.idempotencyKey,
          logs: [`${now.toISOString()} job accepted`],
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx.insertInto('system_logs').values({ user_id: input.userId, job_id: id, log_message: `${input.kind} job ${id} accepted` }).execute();
      return { outcome: 'created', job };
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

/** Undoes an admission whose workflow could not be started: the job fails and the operation is given back. */
export async function abandonJob(db: Db, job: Job, reason: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const failed = await trx
      .updateTable('jobs')
      .set({ status: 'failed', error: reason, updated_at: new Date() })
      .where('id', '=', job.id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (failed.numUpdatedRows === 0n) return;
    await trx
      .updateTable('monthly_usage')
      .set((eb) => ({ operations: eb('operations', '-', 1) }))
      .where('user_id', '=', job.user_id)
      .where('period', '=', billingPeriod(job.created_at))
      .where('operations', '>', 0)
      .execute();
  });
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
  }
  return true;
}
