import { type Kysely, sql } from 'kysely';

/**
 * Custom agents on the tool runtime. A stored custom agent is an automation row of type
 * `custom-agent` (its payload is the request with every `params` value redacted; the params are in
 * `secrets_sealed`). A run is a job of kind `custom-agent`; these tables hold what its loop needs:
 *
 * - custom_agent_runs: the run's toolbox (the tools offered to the model, by source), built once when
 *   the run starts, and notes about sources that could not be opened.
 * - custom_agent_messages: the conversation with the model, in order (seq).
 * - agent_tool_calls: one row per tool invocation of a run (index in the run, source, tool, status,
 *   timing, cost); arguments and results are not kept here (they can hold secrets).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('custom_agent_runs')
    .addColumn('job_id', 'uuid', (c) => c.primaryKey().references('jobs.id').onDelete('cascade'))
    .addColumn('toolbox', 'jsonb', (c) => c.notNull())
    .addColumn('notes', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('custom_agent_messages')
    .addColumn('job_id', 'uuid', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('message', 'jsonb', (c) => c.notNull())
    .addPrimaryKeyConstraint('custom_agent_messages_pk', ['job_id', 'seq'])
    .execute();

  await db.schema
    .createTable('agent_tool_calls')
    .addColumn('job_id', 'uuid', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('call_index', 'integer', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('completed', 'error', 'failed', 'not_sent')`))
    .addColumn('started_at', 'timestamptz', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cost_micros', 'bigint', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`cost_micros >= 0`),
    )
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('agent_tool_calls_pk', ['job_id', 'call_index'])
    .execute();
}
