import { sql } from 'kysely';
import type { Db } from '../connect';
import type { JobKind, JobStatus, LedgerEntryKind } from '../schema';

/** Totals an operator watches, read in one round of small aggregate queries (GET /metrics, at scrape time). */
export interface PlatformState {
  jobs: { kind: JobKind; status: JobStatus; count: number }[];
  /** Per ledger entry kind: how many entries and their summed amount (usage entries are negative). */
  ledger: { kind: LedgerEntryKind; entries: number; amountMicros: number }[];
  wallets: { count: number; balanceMicros: number };
  /** Open holds (reserved, not yet settled); null while the database has no holds table. */
  holds: { open: number; micros: number } | null;
}

/**
 * Holds live in `job_holds` (the holds migration). Read through plain SQL behind an existence
 * check, so these totals also work on a database migrated before that table existed.
 */
async function openHolds(db: Db): Promise<PlatformState['holds']> {
  const { rows } = await sql<{ present: boolean }>`select to_regclass('job_holds') is not null as present`.execute(db);
  if (!rows[0]?.present) return null;
  const totals = await sql<{ open: number; micros: number }>`
    select cast(count(*) as bigint) as open, cast(coalesce(sum(amount_micros), 0) as bigint) as micros
    from job_holds where released_at is null`.execute(db);
  return totals.rows[0];
}

export async function readPlatformState(db: Db): Promise<PlatformState> {
  const [jobs, ledger, wallets, holds] = await Promise.all([
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
    openHolds(db),
  ]);
  return { jobs, ledger, wallets, holds };
}
