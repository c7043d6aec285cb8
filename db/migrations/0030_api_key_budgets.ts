import { type Kysely, sql } from 'kysely';

/**
 * Budgets per API key for the account's own calls (issue 34, "Money and caps").
 *
 * - api_keys.budget_total_micros / budget_monthly_micros: what the market tool calls made with the API key itself
 *   (a bearer API key at /mcp/{entryId}, and "Try a tool" in the console: selection `api-key:<id>`) may spend in
 *   all, and per calendar month (UTC); null: no such budget. The same semantics as a credential's budgets
 *   (migration 0028): an active run counts its hold, any other its charges; a run counts in the month it opened.
 *   Calls made with a credential are bounded by that credential's budgets, an agent's by its max_total_usd.
 * - acquire_market_run(...): the same arguments and outcomes as migration 0028's; a direct call (no job) whose
 *   selection is `api-key:<id>` reads that key's budgets (the account's own key only) where 0028 reads a
 *   credential's, after the wallet lock, so concurrent calls cannot pass them together ('budget_reached').
 *   Its text lives in db/functions/acquire_market_run.sql, applied after the versioned migrations
 *   (db/functions/README.md).
 */

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table api_keys
              add column budget_total_micros bigint check (budget_total_micros > 0),
              add column budget_monthly_micros bigint check (budget_monthly_micros > 0)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table api_keys drop column if exists budget_total_micros, drop column if exists budget_monthly_micros`.execute(
    db,
  );
}
