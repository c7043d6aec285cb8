import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../connect';
import type { MarketSubmissionsTable } from '../schema';
import { DEFAULT_DRAFT_SLUG_DAYS } from '../../lib/config';
import { MarketRuleError } from '../../lib/market/errors';
import { transition, type Market, type ReviewAction, type SubmissionStatus } from '../../lib/market/review-state';
import { offsetOf, type PageRequest } from '../../lib/pagination';

/**
 * The review machinery both markets share: common submission columns, slug reservations, the state
 * machine's transitions, revisions and the live-listing swap. What differs per market (tool source,
 * pricing, agent prompts) lives in its own details table and plugs in through MarketDetailsHooks.
 */
export interface SubmissionCore {
  id: string;
  market: Market;
  ownerId: string;
  /** The public id of the listing (shared by a submission and its revisions). */
  listingId: string;
  parentEntryId: string | null;
  live: boolean;
  status: SubmissionStatus;
  slug: string;
  name: string;
  description: string | null;
  iconUrl: string | null;
  iconObjectKey: string | null;
  reviewReason: string | null;
  submittedAt: Date | null;
  reviewedAt: Date | null;
  approvedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface MarketDetailsHooks {
  /** Copies the market's details of `fromId` to the new revision `toId` (in the same transaction). */
  copyDetails(trx: Db, fromId: string, toId: string): Promise<void>;
  /** Runs in the approval transaction: snapshot what consumers will be served. */
  onApprove?(trx: Db, submissionId: string): Promise<void>;
}

export interface CoreFields {
  slug: string;
  name: string;
  description: string | null;
  iconUrl: string | null;
  iconObjectKey: string | null;
  /** Extra words for the listing's full-text search (tool names for the tool market). */
  searchText: string;
}

type Row = Selectable<MarketSubmissionsTable>;

const date = (value: Date | string | null): Date | null => (value === null ? null : new Date(value));

export function toCore(row: Row): SubmissionCore {
  return {
    id: row.id,
    market: row.market,
    ownerId: row.owner_id,
    listingId: row.listing_id,
    parentEntryId: row.parent_entry_id,
    live: row.live,
    status: row.status,
    slug: row.slug,
    name: row.name,
    description: row.description,
    iconUrl: row.icon_url,
    iconObjectKey: row.icon_object_key,
    reviewReason: row.review_reason,
    submittedAt: date(row.submitted_at),
    reviewedAt: date(row.reviewed_at),
    approvedAt: date(row.approved_at),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

const inTransaction = <T>(db: Db, run: (trx: Db) => Promise<T>): Promise<T> =>
  db.isTransaction ? run(db) : db.transaction().execute(run);

/**
 * Reserves `slug` for the listing (slugs are unique per market; the listing's revisions share theirs).
 * The primary key makes concurrent claims safe: the second waits for the first and then sees it.
 * A holder that never reached review — all its submissions draft or rejected — and has not changed
 * for `draftTtlMs` (MARKET_DRAFT_SLUG_DAYS) loses the slug to the claimant; its drafts meet 409
 * slug_taken when they next try to use it. 409 slug_taken when another listing holds it.
 */
async function reserveSlug(
  trx: Db,
  market: Market,
  slug: string,
  listingId: string,
  draftTtlMs: number,
): Promise<void> {
  await trx
    .insertInto('market_slugs')
    .values({ market, slug, listing_id: listingId })
    .onConflict((oc) => oc.columns(['market', 'slug']).doNothing())
    .execute();
  const holderOf = async () =>
    (
      await trx
        .selectFrom('market_slugs')
        .select('listing_id')
        .where('market', '=', market)
        .where('slug', '=', slug)
        .executeTakeFirstOrThrow()
    ).listing_id;
  let holder = await holderOf();
  if (holder !== listingId) {
    await sql`update market_slugs s set listing_id = ${listingId}::uuid, created_at = now()
      where s.market = ${market} and s.slug = ${slug} and s.listing_id = ${holder}::uuid
        and not exists (select 1 from market_submissions m where m.market = ${market} and m.listing_id = ${holder}::uuid
          and (m.status not in ('draft', 'rejected') or m.updated_at > now() - ${draftTtlMs}::float8 * interval '1 millisecond'))`.execute(
      trx,
    );
    holder = await holderOf();
  }
  if (holder !== listingId)
    throw new MarketRuleError(
      409,
      'slug_taken',
      `The slug "${slug}" is taken in the ${market} market; choose another`,
      [{ path: 'body/slug', message: 'is taken' }],
    );
}

/** Frees the listing's slugs that none of its submissions uses any more (after a rename). */
async function releaseUnusedSlugs(trx: Db, market: Market, listingId: string): Promise<void> {
  await sql`delete from market_slugs s where s.market = ${market} and s.listing_id = ${listingId}::uuid
    and not exists (select 1 from market_submissions m where m.market = ${market} and m.listing_id = ${listingId}::uuid and m.slug = s.slug)`.execute(
    trx,
  );
}

/**
 * How long a listing that never reached review keeps its slug without a change, in ms: the routes
 * pass MARKET_DRAFT_SLUG_DAYS; absent, its default.
 */
export type DraftSlugTtl = { draftSlugTtlMs?: number };
const draftSlugTtl = (given: DraftSlugTtl) => given.draftSlugTtlMs ?? DEFAULT_DRAFT_SLUG_DAYS * 86_400_000;

/** A new draft listing; `writeDetails` stores the market's details in the same transaction. */
export async function createSubmission(
  db: Db,
  input: {
    market: Market;
    ownerId: string;
    fields: CoreFields;
    writeDetails: (trx: Db, id: string) => Promise<void>;
  } & DraftSlugTtl,
): Promise<string> {
  const id = randomUUID();
  await inTransaction(db, async (trx) => {
    await reserveSlug(trx, input.market, input.fields.slug, id, draftSlugTtl(input));
    await trx
      .insertInto('market_submissions')
      .values({
        id,
        market: input.market,
        owner_id: input.ownerId,
        listing_id: id,
        parent_entry_id: null,
        status: 'draft',
        slug: input.fields.slug,
        name: input.fields.name,
        description: input.fields.description,
        icon_url: input.fields.iconUrl,
        icon_object_key: input.fields.iconObjectKey,
        search_text: input.fields.searchText,
      })
      .execute();
    await input.writeDetails(trx, id);
  });
  return id;
}

async function lockSubmission(trx: Db, market: Market, id: string, ownerId?: string): Promise<Row> {
  let query = trx.selectFrom('market_submissions').selectAll().where('id', '=', id).where('market', '=', market);
  if (ownerId) query = query.where('owner_id', '=', ownerId);
  const row = await query.forUpdate().executeTakeFirst();
  if (!row) throw new MarketRuleError(404, 'not_found', 'Submission not found');
  return row;
}

/** The owner's submission; 404 for unknown ids and other accounts'. */
export async function getOwnSubmission(db: Db, market: Market, ownerId: string, id: string): Promise<SubmissionCore> {
  const row = await db
    .selectFrom('market_submissions')
    .selectAll()
    .where('id', '=', id)
    .where('market', '=', market)
    .where('owner_id', '=', ownerId)
    .executeTakeFirst();
  if (!row) throw new MarketRuleError(404, 'not_found', 'Submission not found');
  return toCore(row);
}

/**
 * Full replacement of a draft or rejected submission (409 invalid_state otherwise); the submission
 * is a draft again afterwards. The state is checked under a row lock, so an update cannot race a submit.
 */
export async function replaceSubmission(
  db: Db,
  input: {
    market: Market;
    ownerId: string;
    id: string;
    fields: CoreFields;
    writeDetails: (trx: Db, id: string) => Promise<void>;
  } & DraftSlugTtl,
): Promise<void> {
  await inTransaction(db, async (trx) => {
    const row = await lockSubmission(trx, input.market, input.id, input.ownerId);
    const status = transition('update', row.status);
    await reserveSlug(trx, input.market, input.fields.slug, row.listing_id, draftSlugTtl(input));
    await trx
      .updateTable('market_submissions')
      .set({
        status,
        slug: input.fields.slug,
        name: input.fields.name,
        description: input.fields.description,
        icon_url: input.fields.iconUrl,
        icon_object_key: input.fields.iconObjectKey,
        search_text: input.fields.searchText,
        updated_at: new Date(),
      })
      .where('id', '=', input.id)
      .execute();
    await releaseUnusedSlugs(trx, input.market, row.listing_id);
    await input.writeDetails(trx, input.id);
  });
}

/**
 * draft → pending_review (409 invalid_state from any other status, so submitting twice is 409). The
 * listing must (still) hold the submission's slug: a draft left unchanged past MARKET_DRAFT_SLUG_DAYS
 * may have lost it to another listing (409 slug_taken).
 */
export async function submitForReview(
  db: Db,
  market: Market,
  ownerId: string,
  id: string,
  slugs: DraftSlugTtl = {},
): Promise<void> {
  await inTransaction(db, async (trx) => {
    const row = await lockSubmission(trx, market, id, ownerId);
    const status = transition('submit', row.status);
    await reserveSlug(trx, market, row.slug, row.listing_id, draftSlugTtl(slugs));
    await trx
      .updateTable('market_submissions')
      .set({ status, submitted_at: new Date(), updated_at: new Date() })
      .where('id', '=', id)
      .execute();
  });
}

/**
 * The owner deletes a draft or rejected submission (409 invalid_state otherwise; another account's is
 * 404): its market details go with it, and the slugs its listing no longer uses are released. A
 * revision draft goes alone; the live entry of its listing keeps the slug.
 */
export async function deleteSubmission(db: Db, market: Market, ownerId: string, id: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const row = await lockSubmission(trx, market, id, ownerId);
    transition('delete', row.status);
    await trx.deleteFrom('market_submissions').where('id', '=', id).execute();
    await releaseUnusedSlugs(trx, market, row.listing_id);
  });
}

/**
 * A revision: a new draft copying the live approved entry, with parentEntryId, in the same listing
 * (so it keeps the public id and may keep the slug). 409 invalid_state unless the source is
 * approved and live.
 */
export async function createRevision(
  db: Db,
  market: Market,
  ownerId: string,
  id: string,
  hooks: MarketDetailsHooks,
): Promise<string> {
  const revisionId = randomUUID();
  await inTransaction(db, async (trx) => {
    const row = await lockSubmission(trx, market, id, ownerId);
    transition('revise', row.status);
    if (!row.live)
      throw new MarketRuleError(
        409,
        'invalid_state',
        'This approved submission has been replaced by a newer revision; revise the live one',
      );
    await trx
      .insertInto('market_submissions')
      .values({
        id: revisionId,
        market,
        owner_id: ownerId,
        listing_id: row.listing_id,
        parent_entry_id: row.id,
        status: 'draft',
        slug: row.slug,
        name: row.name,
        description: row.description,
        icon_url: row.icon_url,
        icon_object_key: row.icon_object_key,
        search_text: row.search_text,
      })
      .execute();
    await hooks.copyDetails(trx, row.id, revisionId);
  });
  return revisionId;
}

export async function listOwnSubmissions(
  db: Db,
  market: Market,
  ownerId: string,
  page: PageRequest,
): Promise<{ rows: SubmissionCore[]; total: number }> {
  const base = db.selectFrom('market_submissions').where('market', '=', market).where('owner_id', '=', ownerId);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows.map(toCore), total: Number(count.n) };
}

export async function listSubmissionsForReview(
  db: Db,
  market: Market,
  filter: { status?: SubmissionStatus; nameContains?: string },
  page: PageRequest,
): Promise<{ rows: SubmissionCore[]; total: number }> {
  let base = db.selectFrom('market_submissions').where('market', '=', market);
  if (filter.status) base = base.where('status', '=', filter.status);
  if (filter.nameContains) {
    // Matched as plain text: LIKE's wildcards and its escape character are escaped.
    const pattern = `%${filter.nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    // A UUID also finds the submission with that id, or the submissions of the listing with that public id.
    const id = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(filter.nameContains.trim())
      ? filter.nameContains.trim().toLowerCase()
      : null;
    base = base.where((eb) =>
      eb.or([
        eb('name', 'ilike', pattern),
        eb('slug', 'ilike', pattern),
        ...(id ? [eb('id', '=', id), eb('listing_id', '=', id)] : []),
      ]),
    );
  }
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('submitted_at', 'asc')
      .orderBy('created_at', 'asc')
      .orderBy('id')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows.map(toCore), total: Number(count.n) };
}

export async function getSubmissionForReview(db: Db, market: Market, id: string): Promise<SubmissionCore> {
  const row = await db
    .selectFrom('market_submissions')
    .selectAll()
    .where('id', '=', id)
    .where('market', '=', market)
    .executeTakeFirst();
  if (!row) throw new MarketRuleError(404, 'not_found', 'Submission not found');
  return toCore(row);
}

/**
 * An operator's decision, in one transaction:
 * - approve (pending_review → approved): the market snapshots what it serves (hooks.onApprove); a
 *   first submission becomes its listing's live entry; a revision replaces its parent as the live
 *   entry of the same listing (same public id), atomically — 409 stale_revision when the parent is
 *   no longer the live entry;
 * - reject (pending_review → rejected) with a reason the owner sees;
 * - disable (approved → disabled): a live entry leaves the public listing, for good: approving a
 *   revision of a disabled listing (one made before it was disabled) is 409 listing_disabled.
 */
let reviewsGeneration = 0;

/** Bumped by every review through this process: caches of live entries (the hosted endpoint's) drop what they remembered. */
export function marketReviewsGeneration(): number {
  return reviewsGeneration;
}

export async function reviewSubmission(
  db: Db,
  input: { market: Market; id: string; action: ReviewAction; reason?: string | null },
  hooks: MarketDetailsHooks,
): Promise<SubmissionCore> {
  const reviewed = await reviewInTransaction(db, input, hooks);
  // After the commit: what caches remembered before it is dropped, and a read that overlapped it is not stored.
  reviewsGeneration++;
  return reviewed;
}

async function reviewInTransaction(
  db: Db,
  input: { market: Market; id: string; action: ReviewAction; reason?: string | null },
  hooks: MarketDetailsHooks,
): Promise<SubmissionCore> {
  return inTransaction(db, async (trx) => {
    const row = await lockSubmission(trx, input.market, input.id);
    const status = transition(input.action, row.status);
    const now = new Date();
    if (input.action === 'approve') {
      const live = await trx
        .selectFrom('market_submissions')
        .select(['id', 'status'])
        .where('listing_id', '=', row.listing_id)
        .where('live', '=', true)
        .forUpdate()
        .executeTakeFirst();
      // Disabling is final: a revision (made before or after) cannot bring the listing back.
      if (live?.status === 'disabled') {
        throw new MarketRuleError(
          409,
          'listing_disabled',
          'An operator disabled this listing; a revision of it cannot be approved (reject it instead)',
        );
      }
      if (row.parent_entry_id !== null && live?.id !== row.parent_entry_id) {
        throw new MarketRuleError(
          409,
          'stale_revision',
          'The entry this revision was made from is no longer the live listing; create a new revision from the live entry',
        );
      }
      if (live && live.id !== row.id)
        await trx
          .updateTable('market_submissions')
          .set({ live: false, updated_at: now })
          .where('id', '=', live.id)
          .execute();
      await hooks.onApprove?.(trx, row.id);
    }
    const updated = await trx
      .updateTable('market_submissions')
      .set({
        status,
        reviewed_at: now,
        updated_at: now,
        review_reason: input.action === 'approve' ? null : (input.reason ?? null),
        ...(input.action === 'approve' && { live: true, approved_at: now }),
      })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toCore(updated);
  });
}
