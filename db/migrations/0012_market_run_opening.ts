import { type Kysely } from 'kysely';
import { dropFunctionsNamed } from './drop-functions';

/**
 * Opening a market run in one round trip (the hosted endpoint opens one per tool call).
 *
 * - open_holds_micros(user): the money an account has reserved and not yet settled — open job holds
 *   plus the unused part of its open, unexpired market runs. The one definition of "open holds"
 *   (db/repos/ledger.ts openHoldsMicros, admit_job and open_market_run call it).
 * - open_market_run(...): the rules of db/repos/market-runs.ts openMarketRun as one PL/pgSQL call:
 *   the live entry and the subscription are checked, the consumer's wallet row is locked, and the
 *   hold — min(available, cap, limit), nothing for a free entry — is computed by a LATER statement
 *   than the lock. A volatile PL/pgSQL function takes a fresh snapshot for each statement under READ
 *   COMMITTED, so that statement sees the holds of every opening or admission that held the lock
 *   before (the rule the two-statement transaction kept), while the lock is held for the function's
 *   few statements instead of four client round trips. Its commit does not wait for the WAL flush: a
 *   run is only a reservation (a later durable commit flushes it anyway).
 *   Returns {"outcome": "opened", "run": <market_runs row>} or {"outcome": <refusal>}.
 *
 * Both were created here. Their text now lives in one place each: open_holds_micros in
 * db/functions/open_holds_micros.sql, applied after the versioned migrations (db/functions/README.md);
 * open_market_run, replaced by acquire_market_run in migration 0016, in the git history of this file.
 */
export async function up(): Promise<void> {}

export async function down(db: Kysely<any>): Promise<void> {
  await dropFunctionsNamed(db, 'open_market_run', 'open_holds_micros');
}
