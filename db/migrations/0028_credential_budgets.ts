import { type Kysely, sql } from 'kysely';

/**
 * Budgets of market credentials, and the run's own limit (issue 34, "Money and caps").
 *
 * - market_credentials.budget_total_micros / budget_monthly_micros: what the credential (and so the OAuth grant
 *   whose credential it is) may spend in all, and per calendar month (UTC); null: no such budget. Unlike
 *   maxTotalUsdPerRun (cap_micros), which bounds one run (one window of calls), they bound every run of the
 *   credential together.
 * - market_runs.limit_micros: the most the run may be charged whatever the wallet holds, min(run charge limit, the
 *   consumer's cap room, the budgets' room) when it opened: what x-service-charge-max-total-usd tells the provider
 *   (its hold, min(available balance, this), would tell it the consumer's balance). Null for runs opened before.
 * - acquire_market_run(...): the same arguments as migration 0027's, and a direct call's run (no job) of a
 *   selection that is a recorded credential is bounded by the credential's budgets, read in the same statement
 *   after the wallet lock: what its runs spent (an active run counts its hold, any other its charges, as an agent
 *   execution's cap counts them), in all and in the calendar month (UTC) of the call's clock (p_created), plus
 *   what the call reserves, stays within each budget. A call that would pass one is refused ('budget_reached',
 *   naming the budget, its amount and the room left); a provider_event run holds at most the room. Runs count in
 *   the month they opened; a shared run (a window) opened in an earlier month takes no call of a later month (the
 *   call opens the next run), so each call's reservation counts in its own month. Concurrent calls queue on the
 *   wallet lock, so together they cannot pass a budget.
 *
 * acquire_market_run's current text lives in db/functions/acquire_market_run.sql, applied after the versioned
 * migrations (db/functions/README.md); the version created here is in the git history of this file.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table market_credentials
              add column budget_total_micros bigint check (budget_total_micros > 0),
              add column budget_monthly_micros bigint check (budget_monthly_micros > 0)`.execute(db);
  await sql`alter table market_runs add column limit_micros bigint`.execute(db);
  await sql`create index market_runs_direct_spend_idx on market_runs (selection_id, created_at) where job_id is null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists market_runs_direct_spend_idx`.execute(db);
  await sql`alter table market_runs drop column if exists limit_micros`.execute(db);
  await sql`alter table market_credentials drop column if exists budget_total_micros, drop column if exists budget_monthly_micros`.execute(
    db,
  );
}
