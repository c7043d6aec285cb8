import { sql } from 'kysely';
import type { Db } from '../connect';
import { endMarketGrants } from './oauth';
import { offsetOf, type PageRequest } from '../../lib/pagination';

/**
 * The issued market credentials (migration 0023): what the account sees of them and whether one may
 * still be used. Never the token or its parameters, which stay sealed inside the token.
 */
export type CredentialSource = 'direct' | 'oauth';

export interface MarketCredentialRecord {
  id: string;
  userId: string;
  entryId: string;
  /** The entry's name while it is live, else null. */
  entryName: string | null;
  apiKeyId: string;
  label: string | null;
  capMicros: number | null;
  /** What all its runs may spend together, and those opened in one calendar month (UTC): migration 0028. */
  budgetTotalMicros: number | null;
  budgetMonthlyMicros: number | null;
  /** What its runs were charged, in all and in the current calendar month (UTC, by the month a run opened). */
  spentMicros: number;
  spentThisMonthMicros: number;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** Whether the API key it is bound to is still live (a rotated key ends every credential made with it). */
  keyLive: boolean;
  /** direct: issued by the REST route or the console; oauth: held by an OAuth grant (an app). */
  source: CredentialSource;
  /** The OAuth client holding it (source oauth): its id when the grant is linked, and its name. */
  app: { clientId: string | null; clientName: string | null } | null;
}

/** A credential's budgets in micro-USD (null: none): migration 0028. */
export interface CredentialBudgets {
  budgetTotalMicros: number | null;
  budgetMonthlyMicros: number | null;
}

export async function recordMarketCredential(
  db: Db,
  row: {
    id: string;
    userId: string;
    entryId: string;
    apiKeyId: string;
    source: CredentialSource;
    label: string | null;
    capMicros: number | null;
    createdAt: Date;
    /** Set when the credential is recorded at a use (one issued before the table existed). */
    lastUsedAt?: Date;
  } & Partial<CredentialBudgets>,
): Promise<void> {
  await db
    .insertInto('market_credentials')
    .values({
      id: row.id,
      user_id: row.userId,
      entry_id: row.entryId,
      api_key_id: row.apiKeyId,
      source: row.source,
      label: row.label,
      cap_micros: row.capMicros,
      budget_total_micros: row.budgetTotalMicros ?? null,
      budget_monthly_micros: row.budgetMonthlyMicros ?? null,
      created_at: row.createdAt,
      last_used_at: row.lastUsedAt ?? null,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** What a presented credential's check needs, read in one statement on every use (nothing remembered). */
export interface CredentialUse {
  /** The credential's row: absent for one issued before the table existed (recorded on first use). */
  recorded: { revokedAt: Date | null; lastUsedAt: Date | null } | null;
}

/**
 * Whether a credential may be used: its API key live (not rotated) and, when recorded, not revoked.
 * Null when the key is no longer live. One indexed read per request, never cached, so a revocation
 * (or a rotation) takes effect at the next request, in every process.
 */
export async function findCredentialUse(
  db: Db,
  input: { credentialId: string; apiKeyId: string; userId: string },
): Promise<CredentialUse | null> {
  const row = await db
    .selectFrom('api_keys as k')
    .leftJoin('market_credentials as c', (join) =>
      join.on('c.id', '=', input.credentialId).onRef('c.user_id', '=', 'k.user_id'),
    )
    .select(['k.id', 'c.id as credential_id', 'c.revoked_at', 'c.last_used_at'])
    .where('k.id', '=', input.apiKeyId)
    .where('k.user_id', '=', input.userId)
    .where('k.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  return {
    recorded: row.credential_id
      ? {
          revokedAt: row.revoked_at ? new Date(row.revoked_at) : null,
          lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null,
        }
      : null,
  };
}

/** How stale last_used_at may get before a use writes it again (minute precision, at most one write a minute). */
export const LAST_USED_PRECISION_MS = 60_000;

export async function markCredentialUsed(db: Db, id: string, now = new Date()): Promise<void> {
  await db
    .updateTable('market_credentials')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) =>
      eb.or([
        eb('last_used_at', 'is', null),
        eb('last_used_at', '<', new Date(now.getTime() - LAST_USED_PRECISION_MS)),
      ]),
    )
    .execute();
}

/** The start of the calendar month (UTC) of `now`. */
export function monthStartUtc(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** The account's credentials as the account sees them: with their budgets and what their runs were charged. */
function credentialRows(db: Db, userId: string, now: Date) {
  const month = monthStartUtc(now);
  return db
    .selectFrom('market_credentials as c')
    .leftJoin('api_keys as k', 'k.id', 'c.api_key_id')
    .leftJoin('oauth_market_grants as g', 'g.credential_id', 'c.id')
    .where('c.user_id', '=', userId)
    .select([
      'c.source',
      'g.client_id',
      'g.client_name',
      'c.id',
      'c.user_id',
      'c.entry_id',
      'c.api_key_id',
      'c.label',
      'c.cap_micros',
      'c.budget_total_micros',
      'c.budget_monthly_micros',
      'c.created_at',
      'c.last_used_at',
      'c.revoked_at',
      sql<boolean>`(k.id is not null and k.revoked_at is null)`.as('key_live'),
      // What its direct runs (the credential's id is their selection) were charged, in all and this month.
      sql<string>`(select coalesce(sum(r.charged_micros), 0)::text from market_runs r
                    where r.selection_id = c.id::text and r.job_id is null and r.consumer_id = c.user_id)`.as('spent'),
      sql<string>`(select coalesce(sum(r.charged_micros), 0)::text from market_runs r
                    where r.selection_id = c.id::text and r.job_id is null and r.consumer_id = c.user_id
                      and r.created_at >= ${month})`.as('spent_month'),
      (eb) =>
        eb
          .selectFrom('market_submissions as s')
          .select('s.name')
          .whereRef('s.listing_id', '=', 'c.entry_id')
          .where('s.market', '=', 'mcp')
          .where('s.live', '=', true)
          .where('s.status', '=', 'approved')
          .limit(1)
          .as('entry_name'),
    ]);
}

type CredentialRow = Awaited<ReturnType<ReturnType<typeof credentialRows>['execute']>>[number];

const nullableMicros = (value: number | string | null) => (value === null ? null : Number(value));

function toRecord(row: CredentialRow): MarketCredentialRecord {
  return {
    id: row.id,
    userId: row.user_id,
    entryId: row.entry_id,
    entryName: row.entry_name ?? null,
    apiKeyId: row.api_key_id,
    label: row.label,
    capMicros: nullableMicros(row.cap_micros),
    budgetTotalMicros: nullableMicros(row.budget_total_micros),
    budgetMonthlyMicros: nullableMicros(row.budget_monthly_micros),
    spentMicros: Number(row.spent),
    spentThisMonthMicros: Number(row.spent_month),
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null,
    revokedAt: row.revoked_at ? new Date(row.revoked_at) : null,
    keyLive: Boolean(row.key_live),
    source: row.source,
    app: row.source === 'oauth' ? { clientId: row.client_id ?? null, clientName: row.client_name ?? row.label } : null,
  };
}

/**
 * The account's credentials, newest first, revoked ones included: those issued directly and those OAuth
 * grants hold (with the app: the grant's client, or the name recorded with the credential).
 */
export async function listMarketCredentials(
  db: Db,
  userId: string,
  page: PageRequest,
  now = new Date(),
): Promise<{ rows: MarketCredentialRecord[]; total: number }> {
  const [rows, count] = await Promise.all([
    credentialRows(db, userId, now)
      .orderBy('c.created_at', 'desc')
      .orderBy('c.id')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    db
      .selectFrom('market_credentials')
      .where('user_id', '=', userId)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { total: Number(count.n), rows: rows.map(toRecord) };
}

/** One of the account's credentials (either source), or null (another account's is as absent). */
export async function findMarketCredential(
  db: Db,
  userId: string,
  id: string,
  now = new Date(),
): Promise<MarketCredentialRecord | null> {
  const row = await credentialRows(db, userId, now).where('c.id', '=', id).executeTakeFirst();
  return row ? toRecord(row) : null;
}

/**
 * Sets a credential's budgets (undefined: unchanged; null: none). The next call made with it is bounded by them
 * (the acquire statement reads them on every call). False when the account has no such credential.
 */
export async function setCredentialBudgets(
  db: Db,
  userId: string,
  id: string,
  budgets: Partial<CredentialBudgets>,
): Promise<boolean> {
  const changes = {
    ...(budgets.budgetTotalMicros !== undefined && { budget_total_micros: budgets.budgetTotalMicros }),
    ...(budgets.budgetMonthlyMicros !== undefined && { budget_monthly_micros: budgets.budgetMonthlyMicros }),
  };
  const row = Object.keys(changes).length
    ? await db
        .updateTable('market_credentials')
        .set(changes)
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .returning('id')
        .executeTakeFirst()
    : await db
        .selectFrom('market_credentials')
        .select('id')
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .executeTakeFirst();
  return row !== undefined;
}

/**
 * Revokes one of the account's credentials (idempotent: a revoked one keeps its first revocation time). One an
 * OAuth grant holds ends that grant with it (its tokens stop working). Null when the account has no such
 * credential (another account's is as absent).
 */
export async function revokeMarketCredential(
  db: Db,
  masterKey: Buffer,
  userId: string,
  id: string,
  now = new Date(),
): Promise<{ revokedAt: Date } | null> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('market_credentials')
      .set({ revoked_at: sql`coalesce(revoked_at, ${now})` })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .returning(['revoked_at', 'source'])
      .executeTakeFirst();
    if (!row?.revoked_at) return null;
    if (row.source === 'oauth') await endMarketGrants(trx, masterKey, { userId, credentialId: id }, now);
    return { revokedAt: new Date(row.revoked_at) };
  });
}

/** A live tool-market entry the account uses: the console's list to create a credential from. */
export interface UsedMcpEntry {
  entryId: string;
  name: string;
  /** The latest use (or creation) of the account's credentials for it. */
  lastUsedAt: Date;
}

/**
 * The live entries the account holds credentials for (issued directly or through an OAuth grant, revoked ones
 * included: a person who revoked one may want a new one), most recently used first.
 */
export async function listUsedMcpEntries(db: Db, userId: string, limit: number): Promise<UsedMcpEntry[]> {
  const rows = await db
    .selectFrom('market_credentials as c')
    .innerJoin('market_submissions as s', (join) =>
      join
        .onRef('s.listing_id', '=', 'c.entry_id')
        .on('s.market', '=', 'mcp')
        .on('s.live', '=', true)
        .on('s.status', '=', 'approved'),
    )
    .where('c.user_id', '=', userId)
    .select(['s.listing_id', 's.name', sql<Date>`max(coalesce(c.last_used_at, c.created_at))`.as('last_used')])
    .groupBy(['s.listing_id', 's.name'])
    .orderBy(sql`max(coalesce(c.last_used_at, c.created_at))`, 'desc')
    .orderBy('s.listing_id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ entryId: row.listing_id, name: row.name, lastUsedAt: new Date(row.last_used) }));
}
