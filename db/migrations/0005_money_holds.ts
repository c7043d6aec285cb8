import { type Kysely, sql } from 'kysely';

/**
 * Holds: admission reserves an amount of the wallet for each job (never more than the balance
 * minus the other open holds), settlement debits the true cost, never more than the hold, and
 * releases it in the same transaction. Open holds are the rows with `released_at` null.
 *
 * Jobs also keep what is needed to start their workflow (type, task queue, arguments), so the
 * pending-job reconciler can start a job whose API process died between commit and start.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('job_holds')
    .addColumn('job_id', 'uuid', (c) => c.primaryKey().references('jobs.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('amount_micros', 'bigint', (c) => c.notNull().check(sql`amount_micros > 0`))
    /** What settlement debited; null while open or when released without settlement (an abandoned start). */
    .addColumn('settled_micros', 'bigint')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('released_at', 'timestamptz')
    .addCheckConstraint(
      'job_holds_settled_within_hold',
      sql`settled_micros is null or (settled_micros >= 0 and settled_micros <= amount_micros)`,
    )
    .addCheckConstraint('job_holds_settled_when_released', sql`settled_micros is null or released_at is not null`)
    .execute();
  await sql`create index job_holds_open_idx on job_holds (user_id) where released_at is null`.execute(db);

  await db.schema
    .alterTable('jobs')
    .addColumn('workflow_type', 'text')
    .addColumn('workflow_task_queue', 'text')
    .addColumn('workflow_args', 'jsonb')
    .execute();
  await sql`create index jobs_pending_idx on jobs (created_at) where status = 'pending'`.execute(db);
}
