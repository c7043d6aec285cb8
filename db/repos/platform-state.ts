import { sql } from 'kysely';
import type { Db } from '../connect';
import type { JobKind, JobStatus, LedgerEntryKind } from '../schema';

/** Totals an operator watches, read in one round of small aggregate queries (GET /metrics, at scrape time). */
export interface PlatformState {
  jobs: { kind: JobKind; status: JobStatus; count: number }[];
  /** Per ledger entry kind: how many entries and their summed amount (usage entries are negative). */
  ledger: { kind: LedgerEntryKind; entries: number; amountMicros: number }[];
  wallets: { count: number; balanceMicros: number };
}

export async function readPlatformState(db: Db): Promise<PlatformState> {
  const [jobs, ledger, wallets] = await Promise.all([
    db
      .selectFrom('jobs')
      .select(['kind', 'status', sql<number>`cast(count(*) as bigint)`.as('count')])
      .groupBy(['kind', 'status'])
      .execute(),
    db
      .selectFrom('ledger_entries')
      .select(['kind', sql<number>`cast(count(*) as bigint)`.as('entries'), sql<number>`cast(coalesce(sum(amount_micros), 0) as bigint)`.as('amountMicros')])
      .groupBy('kind')
      .execute(),
    db
      .selectFrom('wallets')
      .select([sql<number>`cast(count(*) as bigint)`.as('count'), sql<number>`cast(coalesce(sum(balance_micros), 0) as bigint)`.as('balanceMicros')])
      .executeTakeFirstOrThrow(),
  ]);
  return { jobs, ledger, wallets };
}
