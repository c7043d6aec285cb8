import { sql } from 'kysely';
import type { Db } from '../connect';
import { endMarketGrants } from './oauth';
import { offsetOf, type PageRequest } from './pagination';

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
  },
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

/**
 * The account's credentials, newest first, revoked ones included: those issued directly and those OAuth
 * grants hold (with the app: the grant's client, or the name recorded with the credential).
 */
export async function listMarketCredentials(
  db: Db,
  userId: string,
  page: PageRequest,
): Promise<{ rows: MarketCredentialRecord[]; total: number }> {
  const base = db.selectFrom('market_credentials as c').where('c.user_id', '=', userId);
  const [rows, count] = await Promise.all([
    base
      .leftJoin('api_keys as k', 'k.id', 'c.api_key_id')
      .leftJoin('oauth_market_grants as g', 'g.credential_id', 'c.id')
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
        'c.created_at',
        'c.last_used_at',
        'c.revoked_at',
        sql<boolean>`(k.id is not null and k.revoked_at is null)`.as('key_live'),
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
      ])
      .orderBy('c.created_at', 'desc')
      .orderBy('c.id')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return {
    total: Number(count.n),
    rows: rows.map((row) => ({
      id: row.id,
      userId: row.user_id,
      entryId: row.entry_id,
      entryName: row.entry_name ?? null,
      apiKeyId: row.api_key_id,
      label: row.label,
      capMicros: row.cap_micros === null ? null : Number(row.cap_micros),
      createdAt: new Date(row.created_at),
      lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null,
      revokedAt: row.revoked_at ? new Date(row.revoked_at) : null,
      keyLive: Boolean(row.key_live),
      source: row.source,
      app:
        row.source === 'oauth' ? { clientId: row.client_id ?? null, clientName: row.client_name ?? row.label } : null,
    })),
  };
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
