import { sql } from 'kysely';
import type { Db } from '../connect';
import type { JobKind } from '../schema';

/**
 * What an account spent, read from its agent transactions (each is what one charge debited: usage of
 * a run, a market tool call, an agent purchase — the lines GET /transactions lists) and what its
 * running work holds now. Days are UTC days.
 */

/** What a charge is counted under: its run's kind, else a market tool call or an agent purchase, else its agent name. */
export type SpendCategory = JobKind | 'market-call' | 'agent-purchase' | string;

export const MARKET_CALL_PREFIX = 'market:';
const AGENT_PURCHASE_PREFIX = 'agent-market:';

const dayOf = (date: Date) => date.toISOString().slice(0, 10);

/** Spend per UTC day from `from` (its day) to `to` (its day), every day present (0 when nothing was spent). */
export async function spendPerDay(
  db: Db,
  userId: string,
  range: { from: Date; to: Date },
): Promise<{ day: string; micros: number }[]> {
  const start = new Date(`${dayOf(range.from)}T00:00:00.000Z`);
  const rows = await db
    .selectFrom('agent_transactions')
    .select([
      sql<string>`to_char(executed_at at time zone 'UTC', 'YYYY-MM-DD')`.as('day'),
      sql<string>`sum(cost_micros)`.as('micros'),
    ])
    .where('user_id', '=', userId)
    .where('executed_at', '>=', start)
    .groupBy(sql`1`)
    .execute();
  const spent = new Map(rows.map((row) => [row.day, Number(row.micros)]));
  const days: { day: string; micros: number }[] = [];
  for (let at = start; dayOf(at) <= dayOf(range.to); at = new Date(at.getTime() + 86_400_000))
    days.push({ day: dayOf(at), micros: spent.get(dayOf(at)) ?? 0 });
  return days;
}

/** Spend since `since` per category, largest first. */
export async function spendPerCategory(
  db: Db,
  userId: string,
  since: Date,
): Promise<{ category: SpendCategory; micros: number; charges: number }[]> {
  const category = sql<string>`coalesce(j.kind, case when t.agent_name like ${`${MARKET_CALL_PREFIX}%`} then 'market-call'
    when t.agent_name like ${`${AGENT_PURCHASE_PREFIX}%`} then 'agent-purchase' else t.agent_name end)`;
  const rows = await db
    .selectFrom('agent_transactions as t')
    .leftJoin('jobs as j', 'j.id', 't.job_id')
    .select([
      category.as('category'),
      sql<string>`sum(t.cost_micros)`.as('micros'),
      sql<string>`count(*)`.as('charges'),
    ])
    .where('t.user_id', '=', userId)
    .where('t.executed_at', '>=', since)
    .groupBy(sql`1`)
    .orderBy(sql`2`, 'desc')
    .orderBy(sql`1`)
    .execute();
  return rows.map((row) => ({ category: row.category, micros: Number(row.micros), charges: Number(row.charges) }));
}

/** Spend since `since` on each tool-market listing (its calls, from agents' runs too), largest first; the listing id when its slug still names one. */
export async function spendPerListing(
  db: Db,
  userId: string,
  since: Date,
): Promise<{ slug: string; listingId: string | null; micros: number; charges: number }[]> {
  const rows = await db
    .selectFrom('agent_transactions as t')
    .leftJoin('market_slugs as m', (join) =>
      join.on('m.market', '=', 'mcp').on(sql`m.slug`, '=', sql`substr(t.agent_name, ${MARKET_CALL_PREFIX.length + 1})`),
    )
    .select([
      sql<string>`substr(t.agent_name, ${MARKET_CALL_PREFIX.length + 1})`.as('slug'),
      'm.listing_id',
      sql<string>`sum(t.cost_micros)`.as('micros'),
      sql<string>`count(*)`.as('charges'),
    ])
    .where('t.user_id', '=', userId)
    .where('t.executed_at', '>=', since)
    .where('t.agent_name', 'like', `${MARKET_CALL_PREFIX}%`)
    .groupBy([sql`1`, 'm.listing_id'])
    .orderBy(sql`3`, 'desc')
    .orderBy(sql`1`)
    .execute();
  return rows.map((row) => ({
    slug: row.slug,
    listingId: row.listing_id,
    micros: Number(row.micros),
    charges: Number(row.charges),
  }));
}

export interface OpenHolds {
  /** Jobs admitted and not yet settled: what each reserved. */
  jobs: { jobId: string; kind: JobKind; micros: number; since: Date }[];
  /** Market runs still taking charges with part of their hold unused: that part. */
  marketRuns: { runId: string; entryId: string; micros: number; expiresAt: Date }[];
}

/** The account's holds now: the parts of open_holds_micros (the "held" of the wallet), one by one. */
export async function listOpenHolds(db: Db, userId: string): Promise<OpenHolds> {
  const [jobs, runs] = await Promise.all([
    db
      .selectFrom('job_holds as h')
      .innerJoin('jobs as j', 'j.id', 'h.job_id')
      .select(['h.job_id', 'j.kind', 'h.amount_micros', 'h.created_at'])
      .where('h.user_id', '=', userId)
      .where('h.released_at', 'is', null)
      .orderBy('h.created_at')
      .execute(),
    db
      .selectFrom('market_runs')
      .select(['id', 'entry_id', sql<string>`hold_micros - charged_micros`.as('micros'), 'expires_at'])
      .where('consumer_id', '=', userId)
      .where(sql<boolean>`market_run_active(status, expires_at, calls_in_flight, idle_until, now())`)
      // A run whose hold is spent (or a free one) holds nothing of the balance, however long its window stays open.
      .where(sql<boolean>`hold_micros > charged_micros`)
      .orderBy('created_at')
      .execute(),
  ]);
  return {
    jobs: jobs.map((row) => ({
      jobId: row.job_id,
      kind: row.kind,
      micros: Number(row.amount_micros),
      since: new Date(row.created_at),
    })),
    marketRuns: runs.map((row) => ({
      runId: row.id,
      entryId: row.entry_id,
      micros: Number(row.micros),
      expiresAt: new Date(row.expires_at),
    })),
  };
}
