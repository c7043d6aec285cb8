import { sql } from 'kysely';
import type { Db } from '../connect';
import type { LedgerEntryKind } from '../schema';

export interface LedgerResult {
  replayed: boolean;
  balanceMicros: number;
}

/** A money amount that is not a positive whole number of micro-USD (e.g. a credit of 1e-7 USD). */
export class InvalidAmountError extends Error {
  override readonly name = 'InvalidAmountError';
}

/**
 * Appends one ledger entry and moves the balance, in one statement: the PL/pgSQL function
 * apply_ledger_entry (migrations 0014, 0015), the one definition of a wallet movement, which
 * charge_usage and post_market_charge use too. The idempotency key is unique: a repeated key changes
 * nothing and reports `replayed`.
 */
async function applyLedgerEntry(
  db: Db,
  entry: {
    userId: string;
    kind: LedgerEntryKind;
    amountMicros: number;
    idempotencyKey: string;
    jobId?: string | null;
    marketRunId?: string | null;
    description: string;
  },
): Promise<LedgerResult> {
  if (!Number.isSafeInteger(entry.amountMicros)) throw new InvalidAmountError('Ledger amounts are integer micro-USD');
  const result = await sql<{ entry: { replayed: boolean; balance: number } }>`
    select apply_ledger_entry(${entry.userId}::uuid, ${entry.kind}::text, ${entry.amountMicros}::bigint, ${entry.idempotencyKey}::text,
                              ${entry.jobId ?? null}::uuid, ${entry.description}::text, ${entry.marketRunId ?? null}::uuid) as entry`.execute(
    db,
  );
  const { replayed, balance } = result.rows[0]!.entry;
  return { replayed, balanceMicros: Number(balance) };
}

export function creditWallet(
  db: Db,
  input: { userId: string; amountMicros: number; idempotencyKey: string; description: string },
) {
  if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros <= 0) {
    throw new InvalidAmountError('A credit must be a positive whole number of micro-USD (at least 0.000001 USD)');
  }
  return applyLedgerEntry(db, { ...input, kind: 'credit' });
}

export interface UsageCharge {
  userId: string;
  jobId: string | null;
  agentName: string;
  result: string | null;
  payload: Record<string, unknown> | null;
  /** The true cost of what was used. */
  costMicros: number;
  idempotencyKey: string;
}

export interface ChargeResult extends LedgerResult {
  /** What the wallet was debited: the true cost, capped at the job's hold (or the available balance). */
  debitedMicros: number;
  /** The part of the true cost that was over the cap and is not charged (the platform absorbs it). */
  unbilledMicros: number;
}

/**
 * What the account's running work has reserved and not yet spent: the open holds of its jobs, plus the
 * unused part (hold − charged) of its open, unexpired market runs. The one definition of "held" that
 * admission, settlement outside jobs, market runs and the account view all use:
 * available = balance − openHoldsMicros. It is written once, in SQL: open_holds_micros (migration
 * 0012), which admit_job and open_market_run call too.
 *
 * A market run stops counting when it is closed or expires (its unused hold is then free again); a
 * charge is only accepted while the database clock is before the run's expiry, checked under the
 * consumer's wallet lock, so an admission can never reserve money an accepted charge then spends.
 */
async function openHoldsMicros(db: Db, userId: string): Promise<number> {
  const row = await sql<{ held: number }>`select open_holds_micros(${userId}::uuid) as held`.execute(db);
  return Number(row.rows[0]?.held ?? 0);
}

/**
 * Records usage as an agent transaction, debits the wallet for it and releases the job's hold,
 * all in one transaction and exactly once per key. The debit is the true cost but never more
 * than the job's open hold (for a job whose hold was already released without settlement, e.g.
 * an abandoned start, nothing), or, for usage outside a job, than the available balance: the
 * wallet can never go below zero. A rare overrun beyond the cap is not charged; the transaction's
 * payload reports it as `unbilledUsd`.
 */
export async function chargeUsage(db: Db, charge: UsageCharge): Promise<ChargeResult> {
  if (!Number.isSafeInteger(charge.costMicros) || charge.costMicros < 0)
    throw new InvalidAmountError('Usage cost must be a non-negative integer');
  // One round trip: the PL/pgSQL function charge_usage (migration 0014) applies the rules above.
  const result = await sql<{ charge: { replayed: boolean; balance: number; debited: number; unbilled: number } }>`
    select charge_usage(${charge.userId}::uuid, ${charge.jobId}::uuid, ${charge.agentName}::text, ${charge.result}::text,
                        ${charge.payload === null ? null : JSON.stringify(charge.payload)}::jsonb, ${charge.costMicros}::bigint,
                        ${charge.idempotencyKey}::text, ${`${charge.agentName} usage`}::text) as charge`.execute(db);
  const { replayed, balance, debited, unbilled } = result.rows[0]!.charge;
  return { replayed, balanceMicros: Number(balance), debitedMicros: Number(debited), unbilledMicros: Number(unbilled) };
}

export async function getBalanceMicros(db: Db, userId: string): Promise<number> {
  const row = await db.selectFrom('wallets').select('balance_micros').where('user_id', '=', userId).executeTakeFirst();
  return row?.balance_micros ?? 0;
}

export interface WalletSummary {
  /** The ledger balance. */
  balanceMicros: number;
  /** What running work holds: open job holds and the unused part of open market runs. */
  heldMicros: number;
  /** balance − held: what new runs can reserve. */
  availableMicros: number;
}

export async function getWalletSummary(db: Db, userId: string): Promise<WalletSummary> {
  const read = async (trx: Db) => {
    const balanceMicros = await getBalanceMicros(trx, userId);
    const heldMicros = await openHoldsMicros(trx, userId);
    return { balanceMicros, heldMicros, availableMicros: balanceMicros - heldMicros };
  };
  // One snapshot, so a settlement between the two reads cannot show a hold and its debit at once.
  return db.isTransaction ? read(db) : db.transaction().setIsolationLevel('repeatable read').execute(read);
}

/** Releases a job's open hold without a debit (the job never ran). */
export async function releaseHold(db: Db, jobId: string): Promise<boolean> {
  const released = await db
    .updateTable('job_holds')
    .set({ released_at: new Date() })
    .where('job_id', '=', jobId)
    .where('released_at', 'is', null)
    .executeTakeFirst();
  return released.numUpdatedRows > 0n;
}

/**
 * Locks the wallet rows of these accounts for the rest of the transaction, always in user-id order,
 * so two transactions locking the same pair (a consumer and a provider charging each other's runs)
 * cannot deadlock.
 */
export async function lockWallets(trx: Db, userIds: readonly string[]): Promise<void> {
  if (!trx.isTransaction) throw new Error('lockWallets must run inside a transaction');
  // Rows are locked as the sorted result is produced, so in user-id order.
  await trx
    .selectFrom('wallets')
    .select('user_id')
    .where('user_id', 'in', [...new Set(userIds)])
    .orderBy('user_id')
    .forUpdate()
    .execute();
}

export interface AgentPurchasePosting {
  purchaseId: string;
  consumerId: string;
  providerId: string;
  priceMicros: number;
  providerRevenueMicros: number;
  /** The consumer's transaction line (agent_name) and its payload. */
  agentName: string;
  payload: Record<string, unknown>;
}

/**
 * Posts an agent-market purchase inside the purchase transaction (both wallets locked by the caller):
 * the consumer's debit of the price (a `usage` entry with the agent transaction the consumer sees in
 * /transactions, key `agent-purchase:<id>`) and the provider's share on their own wallet (a `sale`
 * entry, key `agent-sale:<id>`); the commission (price − share) stays with the platform.
 * 'insufficient_funds' (nothing posted) when the consumer's available balance (balance − open holds)
 * is below the price.
 */
export async function postAgentPurchase(
  trx: Db,
  posting: AgentPurchasePosting,
): Promise<'posted' | 'insufficient_funds'> {
  if (!trx.isTransaction) throw new Error('postAgentPurchase must run inside the purchase transaction');
  const { priceMicros, providerRevenueMicros } = posting;
  if (!Number.isSafeInteger(priceMicros) || priceMicros <= 0)
    throw new InvalidAmountError('A purchase price is a positive whole number of micro-USD');
  if (
    !Number.isSafeInteger(providerRevenueMicros) ||
    providerRevenueMicros < 0 ||
    providerRevenueMicros > priceMicros
  ) {
    throw new InvalidAmountError('Provider revenue is a whole number of micro-USD between 0 and the price');
  }
  const available =
    (await getBalanceMicros(trx, posting.consumerId)) - (await openHoldsMicros(trx, posting.consumerId));
  if (available < priceMicros) return 'insufficient_funds';
  const debitKey = `agent-purchase:${posting.purchaseId}`;
  await trx
    .insertInto('agent_transactions')
    .values({
      job_id: null,
      user_id: posting.consumerId,
      agent_name: posting.agentName,
      result: 'purchase',
      payload: JSON.stringify(posting.payload),
      cost_micros: priceMicros,
      idempotency_key: debitKey,
    })
    .execute();
  await applyLedgerEntry(trx, {
    userId: posting.consumerId,
    kind: 'usage',
    amountMicros: -priceMicros,
    idempotencyKey: debitKey,
    description: `${posting.agentName}: purchase`,
  });
  if (providerRevenueMicros > 0) {
    await applyLedgerEntry(trx, {
      userId: posting.providerId,
      kind: 'sale',
      amountMicros: providerRevenueMicros,
      idempotencyKey: `agent-sale:${posting.purchaseId}`,
      description: `${posting.agentName}: sale`,
    });
  }
  return 'posted';
}
