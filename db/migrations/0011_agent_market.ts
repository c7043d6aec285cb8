import { type Kysely, sql } from 'kysely';

/**
 * The agent market: providers publish agents (prompts sealed), consumers buy and run them.
 *
 * - agent_market_details: what an agent-market submission holds beyond the common columns of
 *   market_submissions. `system_prompt_sealed`, `prompt_template_sealed` and
 *   `selection_params_sealed` (the params of mcp_selections and
 *   custom_mcp_selections, kept apart from them) are AES-256-GCM under MASTER_KEY, bound to the submission id;
 *   they are unsealed for the owner's view and, for a run, only by the activity that calls the model.
 * - agent_market_purchases: one purchase per consumer and listing (the unique key makes a purchase
 *   idempotent and concurrency-safe); price = commission + provider revenue, integer micro-USD.
 *   Purchases belong to the listing (public id), so they carry over to approved revisions.
 * - agent_market_runs: which listing and live submission a run (a job of kind `agent-market`) used,
 *   for the run record and the provider's aggregate counts.
 * - ledger kind `sale`: a provider's share of an agent purchase (its consumer debit is a `usage`
 *   entry with the purchase's agent transaction).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('agent_market_details')
    .addColumn('submission_id', 'uuid', (c) => c.primaryKey().references('market_submissions.id').onDelete('cascade'))
    .addColumn('price_micros', 'bigint', (c) => c.notNull().check(sql`price_micros >= 0`))
    .addColumn('suggested_llm_provider', 'text', (c) => c.notNull())
    .addColumn('suggested_llm_model', 'text', (c) => c.notNull())
    .addColumn('run_mode', 'text', (c) => c.notNull().check(sql`run_mode in ('template', 'task')`))
    .addColumn('allow_task_override', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('system_prompt_sealed', 'text', (c) => c.notNull())
    .addColumn('prompt_template_sealed', 'text')
    .addColumn('input_schema', 'jsonb')
    .addColumn('structured_output', 'jsonb')
    .addColumn('skills', 'jsonb')
    .addColumn('mcp_selections', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('custom_mcp_selections', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    /** The params of both selection lists, {market: object[], custom: object[]} by index. */
    .addColumn('selection_params_sealed', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('agent_market_purchases')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('listing_id', 'uuid', (c) => c.notNull())
    .addColumn('consumer_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('submission_id', 'uuid', (c) => c.notNull().references('market_submissions.id').onDelete('cascade'))
    .addColumn('price_micros', 'bigint', (c) => c.notNull().check(sql`price_micros > 0`))
    .addColumn('commission_micros', 'bigint', (c) => c.notNull().check(sql`commission_micros >= 0`))
    .addColumn('provider_revenue_micros', 'bigint', (c) => c.notNull().check(sql`provider_revenue_micros >= 0`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('agent_market_purchases_once', ['listing_id', 'consumer_id'])
    .addCheckConstraint('agent_market_purchases_split', sql`price_micros = commission_micros + provider_revenue_micros`)
    .execute();
  await db.schema
    .createIndex('agent_market_purchases_provider_idx')
    .on('agent_market_purchases')
    .columns(['provider_id', 'listing_id'])
    .execute();

  await db.schema
    .createTable('agent_market_runs')
    .addColumn('job_id', 'uuid', (c) => c.primaryKey().references('jobs.id').onDelete('cascade'))
    .addColumn('listing_id', 'uuid', (c) => c.notNull())
    .addColumn('submission_id', 'uuid', (c) => c.notNull().references('market_submissions.id').onDelete('cascade'))
    .addColumn('consumer_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('agent_market_runs_provider_idx')
    .on('agent_market_runs')
    .columns(['provider_id', 'listing_id'])
    .execute();

  await sql`alter table ledger_entries drop constraint ledger_entries_kind_check`.execute(db);
  await sql`alter table ledger_entries add constraint ledger_entries_kind_check check (kind in ('credit', 'usage', 'adjustment', 'revenue', 'sale'))`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['agent_market_runs', 'agent_market_purchases', 'agent_market_details'])
    await db.schema.dropTable(table).ifExists().execute();
  await sql`alter table ledger_entries drop constraint ledger_entries_kind_check`.execute(db);
  await sql`alter table ledger_entries add constraint ledger_entries_kind_check check (kind in ('credit', 'usage', 'adjustment', 'revenue'))`.execute(
    db,
  );
}
