import { sql } from 'kysely';
import type { Db } from '../connect';

/**
 * What a provider earned, read from the ledger of its sales: the charges of its tool-market runs
 * (market_run_charges: calls priced per call, events the provider reported) and the purchases of
 * its agents (agent_market_purchases). Amounts are the provider's share (after the commission).
 * Days are UTC days.
 */

/** Every sale of the provider since `since`: when, of which listing, for which event, and the provider's share. */
function sales(providerId: string, since: Date) {
  return sql<{
    at: Date;
    listing_id: string;
    market: string;
    event_name: string;
    tool_name: string | null;
    revenue: string;
    total: string;
  }>`
    select c.created_at as at, r.entry_id as listing_id, 'mcp' as market, c.event_name, c.tool_name,
           c.provider_revenue_micros as revenue, c.total_micros as total
    from market_run_charges c join market_runs r on r.id = c.run_id
    where r.provider_id = ${providerId}::uuid and c.created_at >= ${since}
    union all
    select p.created_at, p.listing_id, 'agent', 'agent_purchase', null, p.provider_revenue_micros, p.price_micros
    from agent_market_purchases p
    where p.provider_id = ${providerId}::uuid and p.created_at >= ${since}`;
}

const dayOf = (date: Date) => date.toISOString().slice(0, 10);

/** Revenue per UTC day from `from` (its day) to `to` (its day), every day present (0 when nothing was earned). */
export async function revenuePerDay(
  db: Db,
  providerId: string,
  range: { from: Date; to: Date },
): Promise<{ day: string; micros: number }[]> {
  const start = new Date(`${dayOf(range.from)}T00:00:00.000Z`);
  const { rows } = await sql<{ day: string; micros: string }>`
    select to_char(s.at at time zone 'UTC', 'YYYY-MM-DD') as day, sum(s.revenue) as micros
    from (${sales(providerId, start)}) s group by 1`.execute(db);
  const earned = new Map(rows.map((row) => [row.day, Number(row.micros)]));
  const days: { day: string; micros: number }[] = [];
  for (let at = start; dayOf(at) <= dayOf(range.to); at = new Date(at.getTime() + 86_400_000))
    days.push({ day: dayOf(at), micros: earned.get(dayOf(at)) ?? 0 });
  return days;
}

/** Revenue since `since` per listing (with its live name when it has one), largest first. */
export async function revenuePerListing(
  db: Db,
  providerId: string,
  since: Date,
): Promise<
  {
    listingId: string;
    market: 'mcp' | 'agent';
    name: string | null;
    charges: number;
    micros: number;
    totalMicros: number;
  }[]
> {
  const { rows } = await sql<{
    listing_id: string;
    market: 'mcp' | 'agent';
    name: string | null;
    charges: string;
    micros: string;
    total: string;
  }>`
    select s.listing_id, s.market,
           (select m.name from market_submissions m where m.listing_id = s.listing_id and m.live limit 1) as name,
           count(*) as charges, sum(s.revenue) as micros, sum(s.total) as total
    from (${sales(providerId, since)}) s
    group by s.listing_id, s.market order by 5 desc, 1`.execute(db);
  return rows.map((row) => ({
    listingId: row.listing_id,
    market: row.market,
    name: row.name,
    charges: Number(row.charges),
    micros: Number(row.micros),
    totalMicros: Number(row.total),
  }));
}

/** Revenue since `since` per event (a priced tool call is `tool_call` with its tool; an agent sale is `agent_purchase`), largest first. */
export async function revenuePerEvent(
  db: Db,
  providerId: string,
  since: Date,
): Promise<{ eventName: string; toolName: string | null; charges: number; micros: number }[]> {
  const { rows } = await sql<{ event_name: string; tool_name: string | null; charges: string; micros: string }>`
    select s.event_name, s.tool_name, count(*) as charges, sum(s.revenue) as micros
    from (${sales(providerId, since)}) s
    group by s.event_name, s.tool_name order by 4 desc, 1, 2`.execute(db);
  return rows.map((row) => ({
    eventName: row.event_name,
    toolName: row.tool_name,
    charges: Number(row.charges),
    micros: Number(row.micros),
  }));
}
