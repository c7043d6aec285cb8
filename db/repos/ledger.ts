import type { Db } from '../connect';
import type { LedgerEntryKind } from '../schema';

export interface LedgerResult {
  replayed: boolean;
  balanceMicros: number;
}

/**
 * Appends one ledger entry and moves the balance in the same transaction. The idempotency key
 * is unique: a repeated key changes nothing and reports `replayed`.
 */
async function applyLedgerEntry(
  db: Db,
  entry: { userId: string; kind: LedgerEntryKind; amountMicros: number; idempotencyKey: string; jobId?: string | null; description: string },
): Promise<LedgerResult> {
  if (!Number.isSafeInteger(entry.amountMicros)) throw new Error('Ledger amounts are integer micro-USD');
  const run = async (trx: Db): Promise<LedgerResult> => {
    const inserted = await trx
      .insertInto('ledger_entries')
      .values({
        user_id: entry.userId,
        kind: entry.kind,
        amount_micros: entry.amountMicros,
        balance_after_micros: 0,
        idempotency_key: entry.idempotencyKey,
        job_id: entry.jobId ?? null,
        description: entry.description,
      })
      .onConflict((oc) => oc.column('idempotency_key').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) {
      const existing = await trx
        .selectFrom('ledger_entries')
        .select('balance_after_micros')
        .where('idempotency_key', '=', entry.idempotencyKey)
        .executeTakeFirstOrThrow();
      return { replayed: true, balanceMicros: existing.balance_after_micros };
    }
    const wallet = await trx
      .updateTable('wallets')
      .set((eb) => ({ balance_micros: eb('balance_micros', '+', entry.amountMicros), updated_at: new Date() }))
      .where('user_id', '=', entry.userId)
      .returning('balance_micros')
      .executeTakeFirstOrThrow();
    await trx.updateTable('ledger_entries').set({ balance_after_micros: wallet.balance_micros }).where('id', '=', inserted.id).execute();
    return { replayed: false, balanceMicros: wallet.balance_micros };
  };
  return db.isTransaction ? run(db) : db.transaction().execute(run);
}

export function creditWallet(db: Db, input: { userId: string; amountMicros: number; idempotencyKey: string; description: string }) {
  if (input.amountMicros <= 0) throw new Error('A credit must be positive');
  return applyLedgerEntry(db, { ...input, kind: 'credit' });
}

export interface UsageCharge {
  userId: string;
  jobId: string | null;
  agentName: string;
  result: string | null;
  payload: Record<string, unknown> | null;
  costMicros: number;
  idempotencyKey: string;
}

/**
 * Records usage as an agent transaction and debits the wallet for it, exactly once per key.
 * Usage is post-paid: the debit is the true cost even if it takes the balance below zero; new
 * runs are refused while the balance is not positive (see api/services/jobs).
 */
export async function chargeUsage(db: Db, charge: UsageCharge): Promise<LedgerResult> {
  if (!Number.isSafeInteger(charge.costMicros) || charge.costMicros < 0) throw new Error('Usage cost must be a non-negative integer');
  return db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('agent_transactions')
      .values({
        job_id: charge.jobId,
        user_id: charge.userId,
        agent_name: charge.agentName,
        result: charge.result,
        payload: charge.payload === null ? null : JSON.stringify(charge.payload),
        cost_micros: charge.costMicros,
        idempotency_key: charge.idempotencyKey,
      })
      .onConflict((oc) => oc.column('idempotency_key').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) return { replayed: true, balanceMicros: await getBalanceMicros(trx, charge.userId) };
    if (charge.costMicros === 0) return { replayed: false, balanceMicros: await getBalanceMicros(trx, charge.userId) };
    return applyLedgerEntry(trx, {
      userId: charge.userId,
      kind: 'usage',
      amountMicros: -charge.costMicros,
      idempotencyKey: charge.idempotencyKey,
      jobId: charge.jobId,
      description: `${charge.agentName} usage`,
    });
  });
}

export async function getBalanceMicros(db: Db, userId: string): Promise<number> {
  const row = await db.selectFrom('wallets').select('balance_micros').where('user_id', '=', userId).executeTakeFirst();
  return row?.balance_micros ?? 0;
}
