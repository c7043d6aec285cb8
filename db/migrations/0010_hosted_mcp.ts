import { type Kysely, sql } from 'kysely';

/**
 * The hosted market MCP endpoint and market tools in agents.
 *
 * - market_runs.job_id: the agent execution a run belongs to (null for a call through /mcp/{entryId});
 *   at most one open run per (execution, selection), so an agent's calls through one `market_mcps`
 *   selection share one run and its hold.
 * - market_runs.settled_at: when the run's workflow closed it, released the unused hold and
 *   recorded its settlement (null while that has not happened yet).
 * - mcp_market_drift: the rug-pull gate's flag. An approved tool whose name, description or input
 *   schema changed upstream since approval is refused, and the live submission is flagged here for
 *   re-review with a per-tool diff (`tools`), shown to operators by the admin API.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('market_runs')
    .addColumn('job_id', 'uuid')
    .addColumn('settled_at', 'timestamptz')
    .execute();
  await sql`create unique index market_runs_agent_open_idx on market_runs (job_id, selection_id) where job_id is not null and status = 'open'`.execute(
    db,
  );
  await db.schema
    .createTable('mcp_market_drift')
    .addColumn('submission_id', 'uuid', (c) => c.primaryKey().references('market_submissions.id').onDelete('cascade'))
    .addColumn('entry_id', 'uuid', (c) => c.notNull())
    .addColumn('approved_hash', 'text', (c) => c.notNull())
    .addColumn('upstream_hash', 'text', (c) => c.notNull())
    .addColumn('tools', 'jsonb', (c) => c.notNull())
    .addColumn('first_detected_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('detected_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}
