import { randomUUID } from 'node:crypto';
import type { Db } from '../connect';
import type { EventVerificationRecord } from '../../lib/market/records';

type Row = {
  id: string;
  owner_id: string;
  run_id: string;
  source_fingerprint: string;
  event_names: unknown;
  verified_event_names: unknown;
  created_at: Date | string;
  expires_at: Date | string;
};

function toRecord(row: Row): EventVerificationRecord {
  return {
    id: row.id,
    ownerId: row.owner_id,
    runId: row.run_id,
    sourceFingerprint: row.source_fingerprint,
    eventNames: row.event_names as string[],
    verifiedEventNames: row.verified_event_names as string[],
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
  };
}

export async function createEventVerification(
  db: Db,
  input: { ownerId: string; sourceFingerprint: string; eventNames: string[]; ttlMs: number; now?: Date },
): Promise<EventVerificationRecord> {
  const now = input.now ?? new Date();
  const row = await db
    .insertInto('market_event_verifications')
    .values({
      id: randomUUID(),
      owner_id: input.ownerId,
      run_id: randomUUID(),
      source_fingerprint: input.sourceFingerprint,
      event_names: JSON.stringify(input.eventNames),
      verified_event_names: '[]',
      created_at: now,
      expires_at: new Date(now.getTime() + input.ttlMs),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRecord(row);
}

/** The owner's verification with that id (null for unknown ids and other accounts'). */
export async function findEventVerification(
  db: Db,
  ownerId: string,
  id: string,
): Promise<EventVerificationRecord | null> {
  const row = await db
    .selectFrom('market_event_verifications')
    .selectAll()
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .executeTakeFirst();
  return row ? toRecord(row) : null;
}

export async function findEventVerificationByRun(db: Db, runId: string): Promise<EventVerificationRecord | null> {
  const row = await db
    .selectFrom('market_event_verifications')
    .selectAll()
    .where('run_id', '=', runId)
    .executeTakeFirst();
  return row ? toRecord(row) : null;
}

export type VerificationChargeOutcome<R> =
  | { kind: 'recorded'; result: R; verification: EventVerificationRecord }
  | { kind: 'replayed'; result: R }
  | { kind: 'conflict' }
  | { kind: 'not_found' }
  | { kind: 'expired' }
  | { kind: 'unknown_event' };

/**
 * One verification charge, in one transaction under a lock on the verification: a repeated
 * idempotency key returns the stored result (or `conflict` when the request differs); otherwise the
 * event must be one of the verification's, the result is stored and the event marked verified.
 * No money moves.
 */
export async function recordVerificationCharge<R extends Record<string, unknown>>(
  db: Db,
  input: {
    runId: string;
    idempotencyKey: string;
    requestHash: string;
    eventName: string;
    now?: Date;
    result: (verification: EventVerificationRecord) => R;
  },
): Promise<VerificationChargeOutcome<R>> {
  return db.transaction().execute(async (trx) => {
    const locked = await trx
      .selectFrom('market_event_verifications')
      .selectAll()
      .where('run_id', '=', input.runId)
      .forUpdate()
      .executeTakeFirst();
    if (!locked) return { kind: 'not_found' } as const;
    const existing = await trx
      .selectFrom('market_verification_charges')
      .select(['request_hash', 'result'])
      .where('run_id', '=', input.runId)
      .where('idempotency_key', '=', input.idempotencyKey)
      .executeTakeFirst();
    if (existing) {
      return existing.request_hash === input.requestHash
        ? ({ kind: 'replayed', result: existing.result as unknown as R } as const)
        : ({ kind: 'conflict' } as const);
    }
    const verification = toRecord(locked);
    if (verification.expiresAt <= (input.now ?? new Date())) return { kind: 'expired' } as const;
    if (!verification.eventNames.includes(input.eventName)) return { kind: 'unknown_event' } as const;
    const verified = verification.verifiedEventNames.includes(input.eventName)
      ? verification.verifiedEventNames
      : [...verification.verifiedEventNames, input.eventName];
    const updated = { ...verification, verifiedEventNames: verified };
    const result = input.result(updated);
    await trx
      .insertInto('market_verification_charges')
      .values({
        run_id: input.runId,
        idempotency_key: input.idempotencyKey,
        request_hash: input.requestHash,
        event_name: input.eventName,
        result: JSON.stringify(result),
      })
      .execute();
    await trx
      .updateTable('market_event_verifications')
      .set({ verified_event_names: JSON.stringify(verified) })
      .where('run_id', '=', input.runId)
      .execute();
    return { kind: 'recorded', result, verification: updated } as const;
  });
}
