import { type Kysely } from 'kysely';
import { dropFunctionsNamed } from './drop-functions';

/**
 * Ledger entries and usage charges in one round trip each.
 *
 * apply_ledger_entry(...) is the one definition of a wallet movement (db/repos/ledger.ts
 * applyLedgerEntry, used by credits): the entry is appended under its unique idempotency key (a
 * repeated key changes nothing and answers the balance it left, `replayed`), the wallet's balance
 * moves, and the entry records the balance after it.
 *
 * charge_usage(...) applies the rules of db/repos/ledger.ts chargeUsage as one PL/pgSQL call, where
 * they were nine client round trips (begin, wallet lock, replay check, hold lock, transaction line,
 * hold release, ledger entry, balance, commit): the wallet row is locked; a transaction line with the
 * same idempotency key answers as a replay; the debit is the true cost capped at the job's open hold
 * (nothing when the hold was already released) or, outside a job, at the available balance (computed
 * by a later statement than the lock, so it sees every hold committed before the lock was granted);
 * the agent transaction is inserted, the hold released, and the debit applied with
 * apply_ledger_entry. The commit is durable.
 *
 * apply_ledger_entry returns {"replayed": bool, "balance": micros}; charge_usage
 * {"replayed": bool, "balance": micros, "debited": micros, "unbilled": micros}.
 *
 * Both were created here; their text now lives in db/functions/charge_usage.sql and apply_ledger_entry.sql,
 * applied after the versioned migrations (db/functions/README.md).
 */
export async function up(): Promise<void> {}

export async function down(db: Kysely<any>): Promise<void> {
  await dropFunctionsNamed(db, 'charge_usage', 'apply_ledger_entry');
}
