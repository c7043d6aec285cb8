import { type Kysely, sql } from 'kysely';
import { dropFunctionsNamed } from './drop-functions';

/**
 * A hosted market call without the workflow engine on its path, and market charges on the one
 * definition of a wallet movement.
 *
 * - market_runs.workflow_started_at: a run's workflow is started by the platform workers' dispatcher
 *   (workers/market-run-dispatcher.ts), which finds opened runs without one (an outbox: the run row
 *   written by open_market_run is the record that a workflow is owed, so a crash of the process that
 *   opened it can no longer lose the start). Runs opened before this migration had theirs started by
 *   the process that opened them.
 * - apply_ledger_entry(...) gains p_market_run (default null, so charge_usage's calls are unchanged):
 *   the run a market debit or revenue entry belongs to.
 * - post_market_charge(...): the ledger side of a market charge (db/repos/ledger.ts postMarketCharge)
 *   — the consumer's transaction line, the debit and the provider's revenue (commission, the rest,
 *   stays with the platform), both entries through apply_ledger_entry and carrying the run.
 * - settle_market_call(...): the settlement of an answered fixed-price call (db/repos/market-tool-calls.ts):
 *   both wallets locked in id order, the run locked and re-checked (open, remaining hold ≥ price), then
 *   the charge row, the run's total (and its close for a direct call), post_market_charge and the
 *   call's log line. One call whose statements' plans the function keeps, where the one-statement
 *   form was planned anew for every call. Returns 'charged', 'run_closed' or 'run_limit_reached'.
 *
 * The functions' current text lives in db/functions/<name>.sql, applied after the versioned migrations
 * (db/functions/README.md), which also replaces a version with other arguments (apply_ledger_entry's of 0014); the
 * versions created here are in the git history of this file.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table market_runs add column workflow_started_at timestamptz`.execute(db);
  await sql`update market_runs set workflow_started_at = created_at`.execute(db);
  await sql`create index market_runs_workflow_owed_idx on market_runs (created_at) where workflow_started_at is null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropFunctionsNamed(db, 'settle_market_call', 'post_market_charge');
  await sql`drop index if exists market_runs_workflow_owed_idx`.execute(db);
  await sql`alter table market_runs drop column if exists workflow_started_at`.execute(db);
}
