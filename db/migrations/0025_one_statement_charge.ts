import { type Kysely } from 'kysely';
import { dropFunctionsNamed } from './drop-functions';

/**
 * A provider's production charge in one statement.
 *
 * - charge_market_run_event(...): the locked part of POST /provider/runs/{runId}/charge
 *   (db/repos/market-runs.ts chargeMarketRun) as one function call, where it was a transaction of
 *   seven round trips: both wallets locked in id order, the run locked and re-checked (a charge with
 *   the same key that won a race is returned as 'raced'; then open, unexpired, live by
 *   market_run_active, the entry still approved), then the charge row, the run's total and
 *   post_market_charge. A run its workflow closed once idle answers 'ended', as one whose grace is
 *   over (migration 0024). The split (lib/market/commission.ts) stays in TypeScript: the caller computes
 *   it from the run's remaining hold (hold − charged) as it read it, and passes that amount; when the
 *   locked run has another remaining hold (another charge came first), nothing is written and the
 *   function answers 'stale' with the amount it found, so the caller splits again. An event the run does not price comes with a null
 *   unit price and is answered 'unknown_event' after the run's own checks, as before. Returns jsonb {outcome, charged?, slug?}.
 *
 * It was created here; its text now lives in db/functions/charge_market_run_event.sql, applied after the
 * versioned migrations (db/functions/README.md).
 */
export async function up(): Promise<void> {}

export async function down(db: Kysely<any>): Promise<void> {
  await dropFunctionsNamed(db, 'charge_market_run_event');
}
