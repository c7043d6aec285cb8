import { sql } from 'kysely';
import type { Db } from '../connect';
import type { JobKind, JobStatus, LedgerEntryKind } from '../schema';

/** Totals an operator watches, read in one round of small aggregate queries (GET /metrics, at scrape time). */
export interface PlatformState {
  jobs: { kind: JobKind; status: JobStatus; count: number }[];
  /** Per ledger entry kind: how many entries and their summed amount (usage entries are negative). */
  ledger: { kind: LedgerEntryKind; entries: number; amountMicros: number }[];
  wallets: { count: number; balanceMicros: number };
  /** Reserved, not yet settled: open job holds plus the unused part of active market runs (market_run_active, as in available balance). */
  holds: { open: number; micros: number };
}

/** The same reservations the available-balance arithmetic subtracts (db/repos/ledger.ts openHoldsMicros), summed over every account. */
async function openHolds(db: Db): Promise<PlatformState['holds']> {
  const { rows } = await sql<{ open: number; micros: number }>`
    select (select cast(count(*) as bigint) from job_holds where released_at is null)
         + (select cast(count(*) as bigint) from market_runs where status = 'open' and market_run_active(status, expires_at, calls_in_flight, idle_until, now())) as open,
           (select cast(coalesce(sum(amount_micros), 0) as bigint) from job_holds where released_at is null)
         + (select cast(coalesce(sum(hold_micros - charged_micros), 0) as bigint) from market_runs
             where status = 'open' and market_run_active(status, expires_at, calls_in_flight, idle_until, now())) as micros`.execute(
    db,
  );
  return { open: Number(rows[0]?.open ?? 0), micros: Number(rows[0]?.micros ?? 0) };
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
      .select([
        'kind',
        sql<number>`cast(count(*) as bigint)`.as('entries'),
        sql<number>`cast(coalesce(sum(amount_micros), 0) as bigint)`.as('amountMicros'),
      ])
      .groupBy('kind')
      .execute(),
    db
      .selectFrom('wallets')
      .select([
        sql<number>`cast(count(*) as bigint)`.as('count'),
        sql<number>`cast(coalesce(sum(balance_micros), 0) as bigint)`.as('balanceMicros'),
      ])
      .executeTakeFirstOrThrow(),
    openHolds(db),
  ]);
  return { jobs, ledger, wallets, holds };
}
