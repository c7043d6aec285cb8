import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../connect';
import type { Database, MarketSubmissionsTable } from '../schema';
import { searchTerms } from '../skills/search';
import { offsetOf, type PageRequest } from '../../lib/pagination';

/** How the public catalogue is ordered: `relevance` is ts_rank with a query and newest approval without one. */
export type CatalogueSort = 'relevance' | 'newest' | 'price_asc' | 'price_desc' | 'name' | 'quality';
export const CATALOGUE_SORTS: readonly CatalogueSort[] = [
  'relevance',
  'newest',
  'price_asc',
  'price_desc',
  'name',
  'quality',
];

/** What the catalogue pages narrow a market's search by, beyond the REST list's own filters. */
export interface CatalogueFilter {
  q?: string;
  /** Inclusive bounds on the listing's "from" price (its cheapest call, event or purchase), micro-USD. */
  minPriceMicros?: number;
  maxPriceMicros?: number;
  sort?: CatalogueSort;
}

/** An ORDER BY key of the catalogue (ties: newest approval, then listing id). */
export interface CatalogueOrder {
  expression: RawBuilder<unknown>;
  direction: 'asc' | 'desc';
}

/**
 * The order of a sort given the market's price and quality expressions (null: the market has no
 * quality score, and `quality` falls back to newest); undefined keeps the default order.
 */
export function catalogueOrder(
  sort: CatalogueSort | undefined,
  price: RawBuilder<number>,
  quality: RawBuilder<number> | null,
): CatalogueOrder | undefined {
  switch (sort) {
    case 'newest':
      return { expression: sql`s.approved_at`, direction: 'desc' };
    case 'price_asc':
      return { expression: price, direction: 'asc' };
    case 'price_desc':
      return { expression: price, direction: 'desc' };
    case 'name':
      return { expression: sql`lower(s.name)`, direction: 'asc' };
    case 'quality':
      return quality
        ? { expression: sql`coalesce(${quality}, -1)`, direction: 'desc' }
        : { expression: sql`s.approved_at`, direction: 'desc' };
    default:
      return undefined;
  }
}

/** One market's submissions (`market_submissions as s`) joined with its details table (`d`), as a query to narrow. */
export type JoinedSubmissionQuery<Details, Row> = SelectQueryBuilder<
  Database & { s: MarketSubmissionsTable; d: Details },
  's' | 'd',
  Row
>;

/**
 * The reads both markets make of their submissions joined with their details: by id (optionally the
 * owner's), by ids, the live approved entry of a listing, and the public catalogue search.
 * `joined` builds the market's joined query; `toSubmission` maps one of its rows.
 */
export function submissionReads<Details, Row extends { id: string }, T>(
  joined: (db: Db) => JoinedSubmissionQuery<Details, Row>,
  toSubmission: (row: Row) => T,
) {
  return {
    async find(db: Db, id: string, ownerId?: string): Promise<T | null> {
      let query = joined(db).where('s.id', '=', id);
      if (ownerId) query = query.where('s.owner_id', '=', ownerId);
      const row = await query.executeTakeFirst();
      return row ? toSubmission(row as Row) : null;
    },

    async findMany(db: Db, ids: readonly string[]): Promise<Map<string, T>> {
      if (ids.length === 0) return new Map();
      const rows = (await joined(db).where('s.id', 'in', ids).execute()) as Row[];
      return new Map(rows.map((row) => [row.id, toSubmission(row)]));
    },

    /** The live, approved entry of a listing (by its public id), or null. */
    async findPublic(db: Db, listingId: string): Promise<T | null> {
      const row = await joined(db)
        .where('s.listing_id', '=', listingId)
        .where('s.live', '=', true)
        .where('s.status', '=', 'approved')
        .executeTakeFirst();
      return row ? toSubmission(row as Row) : null;
    },

    /**
     * The public catalogue: live approved entries, narrowed by `narrow` (market filters). With `q`, full
     * text over the search document: every term must match, the last one as a prefix, ranked by
     * ts_rank; otherwise newest approval first. `order` (the catalogue pages' sorts) comes before both.
     */
    async searchPublic(
      db: Db,
      q: string | undefined,
      page: PageRequest,
      narrow: (query: JoinedSubmissionQuery<Details, Row>) => JoinedSubmissionQuery<Details, Row> = (query) => query,
      order?: CatalogueOrder,
    ): Promise<{ rows: T[]; total: number }> {
      let base = narrow(joined(db).where('s.live', '=', true).where('s.status', '=', 'approved'));
      let tsQuery: ReturnType<typeof sql<string>> | null = null;
      if (q !== undefined && q.trim() !== '') {
        const terms = searchTerms(q);
        if (terms.length === 0) return { rows: [], total: 0 };
        const text = terms.map((t, i) => (i === terms.length - 1 ? `${t}:*` : t)).join(' & ');
        tsQuery = sql<string>`to_tsquery('english', ${text})`;
        base = base.where(sql<boolean>`s.search_document @@ ${tsQuery}`);
      }
      const first = order
        ? base.orderBy(order.expression, (ob) => (order.direction === 'asc' ? ob.asc() : ob.desc()).nullsLast())
        : base;
      const ordered = tsQuery
        ? first
            .orderBy(sql`ts_rank(s.search_document, ${tsQuery})`, 'desc')
            .orderBy('s.approved_at', 'desc')
            .orderBy('s.listing_id')
        : first.orderBy('s.approved_at', 'desc').orderBy('s.listing_id');
      const [rows, count] = await Promise.all([
        ordered.limit(page.pageSize).offset(offsetOf(page)).execute(),
        base
          .clearSelect()
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow(),
      ]);
      return { rows: (rows as Row[]).map(toSubmission), total: Number(count.n) };
    },
  };
}
