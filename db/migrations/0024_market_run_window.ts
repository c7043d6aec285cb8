import { type Kysely, sql } from 'kysely';

/**
 * The windowed market run: a consumer's hosted calls to one entry through one credential share one run (one
 * hold, one workflow) while they follow each other, instead of a run per call.
 *
 * - market_runs.idle_grace: how long the run stays active after its last call ended (null: the caller's
 *   grace, MARKET_RUN_IDLE_GRACE_SECONDS — a provider_event run, an agent execution's run). A window of
 *   fixed-price or free calls has MARKET_RUN_WINDOW_IDLE_SECONDS: it stops taking calls (and holding
 *   anything) that long after its last call, and its workflow (workflows/market-run.ts, patch
 *   `market-run-settles-when-idle`) then closes and settles it.
 * - acquire_market_run(..., p_idle_grace): as migration 0016's, with the run's idle grace, and a direct
 *   call's window bounded like a run: a fixed-price call that fits the cap (maxTotalUsdPerRun) and
 *   MARKET_RUN_CHARGE_LIMIT_USD on its own, but not on top of what the window already holds, retires the
 *   window and opens the next one (the cap stays per run: a window is a run). A call over the cap on its
 *   own is still refused (run_limit_reached). An agent execution's cap (p_job) is unchanged: per
 *   execution, over all its runs.
 * - end_market_call(...): the grace after a call is the run's idle_grace when it has one.
 *
 * The functions' current text lives in db/functions/<name>.sql, applied after the versioned migrations
 * (db/functions/README.md), which also replaces a version with other arguments (acquire_market_run's of 0016);
 * the versions created here are in the git history of this file.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table market_runs add column idle_grace interval`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table market_runs drop column if exists idle_grace`.execute(db);
}
