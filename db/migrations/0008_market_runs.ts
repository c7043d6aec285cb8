import { type Kysely, sql } from 'kysely';

/**
 * Market runs and production charges.
 *
 * - market_runs: one run of a consumer against a market entry (a hosted-endpoint tool call, or an
 *   agent execution's selection). At opening it reserves `hold_micros` of the consumer's wallet
 *   (min(available, the consumer's cap, MARKET_RUN_CHARGE_LIMIT_USD)); provider charges debit the
 *   wallet within it and add to `charged_micros`. While the run is open and unexpired its unused
 *   part (hold − charged) counts against the available balance like a job hold. `pricing_events`
 *   is the entry's pricing when the run opened (the price the consumer saw).
 * - market_run_charges: the production charges, one per (run, idempotency key), with the split
 *   (total = provider revenue + commission, integer micro-USD) and the result returned to the provider.
 * - ledger_entries.market_run_id: the run a market debit (the consumer's) or revenue credit (the
 *   provider's) belongs to; ledger kind `revenue` is a provider's share of a market charge.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('market_runs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('consumer_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    /** The entry's public id (listing id). */
    .addColumn('entry_id', 'uuid', (c) => c.notNull())
    /** The live submission when the run opened. */
    .addColumn('submission_id', 'uuid', (c) => c.notNull().references('market_submissions.id').onDelete('cascade'))
    .addColumn('selection_id', 'text', (c) => c.notNull())
    .addColumn('pricing_events', 'jsonb', (c) => c.notNull())
    /** The consumer's own cap (credential or selection), null when none was set. */
    .addColumn('cap_micros', 'bigint', (c) => c.check(sql`cap_micros is null or cap_micros >= 0`))
    .addColumn('hold_micros', 'bigint', (c) => c.notNull().check(sql`hold_micros >= 0`))
    .addColumn('charged_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('open')
        .check(sql`status in ('open', 'closed')`),
    )
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('closed_at', 'timestamptz')
    .addCheckConstraint('market_runs_charged_within_hold', sql`charged_micros >= 0 and charged_micros <= hold_micros`)
    .execute();
  await sql`create index market_runs_open_idx on market_runs (consumer_id) where status = 'open'`.execute(db);
  await db.schema
    .createIndex('market_runs_provider_idx')
    .on('market_runs')
    .columns(['provider_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('market_run_charges')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('run_id', 'uuid', (c) => c.notNull().references('market_runs.id').onDelete('cascade'))
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('event_name', 'text', (c) => c.notNull())
    .addColumn('tool_name', 'text')
    .addColumn('requested_count', 'integer', (c) => c.notNull())
    .addColumn('charged_count', 'integer', (c) => c.notNull())
    .addColumn('unit_price_micros', 'bigint', (c) => c.notNull())
    .addColumn('total_micros', 'bigint', (c) => c.notNull())
    .addColumn('commission_micros', 'bigint', (c) => c.notNull())
    .addColumn('provider_revenue_micros', 'bigint', (c) => c.notNull())
    .addColumn('result', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('market_run_charges_key', ['run_id', 'idempotency_key'])
    .addCheckConstraint(
      'market_run_charges_split',
      sql`charged_count >= 0 and charged_count <= requested_count and total_micros = charged_count * unit_price_micros
        and commission_micros >= 0 and provider_revenue_micros >= 0 and total_micros = commission_micros + provider_revenue_micros`,
    )
    .execute();

  await db.schema.alterTable('ledger_entries').addColumn('market_run_id', 'uuid').execute();
  await sql`create index ledger_entries_market_run_idx on ledger_entries (market_run_id) where market_run_id is not null`.execute(
    db,
  );
  await sql`alter table ledger_entries drop constraint ledger_entries_kind_check`.execute(db);
  await sql`alter table ledger_entries add constraint ledger_entries_kind_check check (kind in ('credit', 'usage', 'adjustment', 'revenue'))`.execute(
    db,
  );
}
