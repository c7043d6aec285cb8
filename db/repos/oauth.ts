import { createHash } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../connect';
import type { OAuthMarketGrantsTable } from '../schema';
import { openMcpCredential } from '../../lib/market/credential';

/** A stored oidc-provider model instance, as the library hands it over and expects it back. */
export type OAuthPayload = Record<string, unknown> & { grantId?: string; uid?: string; consumed?: number };

/** The storage interface oidc-provider asks of an adapter (one instance per model name). */
export interface OAuthAdapter {
  upsert(id: string, payload: OAuthPayload, expiresIn?: number): Promise<void>;
  find(id: string): Promise<OAuthPayload | undefined>;
  findByUid(uid: string): Promise<OAuthPayload | undefined>;
  findByUserCode(userCode: string): Promise<OAuthPayload | undefined>;
  /**
   * Marks a code or refresh token used, atomically: true for the one caller that consumed it; false when it
   * was consumed already (or is absent), with the grant it belongs to (what a reuse ends).
   */
  consume(id: string): Promise<{ consumed: true } | { consumed: false; grantId: string | null }>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

/**
 * The models whose id is a bearer secret a client holds (an opaque token's value is its id, `jti`): stored
 * under the SHA-256 of the id, with no `jti` in the payload, like API keys and console sessions. The rest
 * (clients, grants, interactions, sessions) are found by ids that are not bearer secrets on their own.
 */
export const HASHED_OAUTH_MODELS: readonly string[] = [
  'AccessToken',
  'RefreshToken',
  'AuthorizationCode',
  'ClientCredentials',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'RegistrationAccessToken',
  'InitialAccessToken',
  'PushedAuthorizationRequest',
];

export const oauthRecordKey = (id: string) => createHash('sha256').update(id, 'utf8').digest('hex');

/**
 * oidc-provider's storage over Kysely (Postgres and PGlite alike): table `oauth_records`, one row per
 * (model, id). An expired row is as absent as a missing one (and is removed when next written over
 * or by pruneExpiredOAuthRecords). Tokens and codes are kept under the hash of their value
 * (HASHED_OAUTH_MODELS): the table holds no value a client received.
 */
export function oauthAdapterFactory(db: Db): (model: string) => OAuthAdapter {
  return (model: string) => {
    const hashed = HASHED_OAUTH_MODELS.includes(model);
    const keyOf = (id: string) => (hashed ? oauthRecordKey(id) : id);
    const live = (now = new Date()) =>
      db
        .selectFrom('oauth_records')
        .select(['payload', 'consumed_at'])
        .where('model', '=', model)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
    const toPayload = (row: { payload: Record<string, unknown>; consumed_at: Date | null } | undefined) => {
      if (!row) return undefined;
      const payload = (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as OAuthPayload;
      return row.consumed_at
        ? { ...payload, consumed: Math.floor(new Date(row.consumed_at).getTime() / 1000) }
        : payload;
    };
    return {
      async upsert(id, payload, expiresIn) {
        const { jti: _jti, ...withoutValue } = payload;
        const row = {
          model,
          id: keyOf(id),
          payload: JSON.stringify(hashed ? withoutValue : payload),
          grant_id: typeof payload.grantId === 'string' ? payload.grantId : null,
          uid: typeof payload.uid === 'string' ? payload.uid : null,
          expires_at: typeof expiresIn === 'number' ? new Date(Date.now() + expiresIn * 1000) : null,
        };
        await db
          .insertInto('oauth_records')
          .values(row)
          .onConflict((oc) =>
            oc.columns(['model', 'id']).doUpdateSet({
              payload: row.payload,
              grant_id: row.grant_id,
              uid: row.uid,
              expires_at: row.expires_at,
            }),
          )
          .execute();
      },
      async find(id) {
        const payload = toPayload(await live().where('id', '=', keyOf(id)).executeTakeFirst());
        // The value is not stored: the one presented is the token's id.
        return payload && hashed ? { ...payload, jti: id } : payload;
      },
      async findByUid(uid) {
        return toPayload(await live().where('uid', '=', uid).executeTakeFirst());
      },
      async findByUserCode() {
        // The device flow is not enabled: there are no user codes.
        return undefined;
      },
      async consume(id) {
        // One statement: of two concurrent uses of the same code or refresh token, exactly one consumes it.
        const consumed = await db
          .updateTable('oauth_records')
          .set({ consumed_at: new Date() })
          .where('model', '=', model)
          .where('id', '=', keyOf(id))
          .where('consumed_at', 'is', null)
          .returning('id')
          .executeTakeFirst();
        if (consumed) return { consumed: true };
        const row = await db
          .selectFrom('oauth_records')
          .select('grant_id')
          .where('model', '=', model)
          .where('id', '=', keyOf(id))
          .executeTakeFirst();
        return { consumed: false, grantId: row?.grant_id ?? null };
      },
      async destroy(id) {
        await db.deleteFrom('oauth_records').where('model', '=', model).where('id', '=', keyOf(id)).execute();
      },
      async revokeByGrantId(grantId) {
        await db.deleteFrom('oauth_records').where('grant_id', '=', grantId).execute();
      },
    };
  };
}

/** Moves a record's expiry to `until` unless it already lives longer (or forever). */
export async function extendOAuthRecord(db: Db, model: string, id: string, until: Date): Promise<void> {
  await db
    .updateTable('oauth_records')
    .set({ expires_at: until })
    .where('model', '=', model)
    .where('id', '=', id)
    .where('expires_at', '<', until)
    .execute();
}

/** Removes expired rows (codes, tokens, interactions that ran out); returns how many. */
export async function pruneExpiredOAuthRecords(db: Db, now = new Date()): Promise<number> {
  const result = await db.deleteFrom('oauth_records').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export interface MarketGrant {
  grantId: string;
  userId: string;
  entryId: string;
  clientId: string;
  clientName: string | null;
  /** The sealed market credential the grant stands for. */
  credential: string;
  /** Its id in market_credentials (null for a grant made before migration 0029 and not linked then). */
  credentialId: string | null;
  /** Which device it was made on: the name the person gave it and the consenting browser's user agent. */
  device: { name: string | null; userAgent: string | null };
  createdAt: Date;
}

type GrantRow = Selectable<OAuthMarketGrantsTable>;

const toGrant = (row: GrantRow & { credential: string }): MarketGrant => ({
  grantId: row.grant_id,
  userId: row.user_id,
  entryId: row.entry_id,
  clientId: row.client_id,
  clientName: row.client_name,
  credential: row.credential,
  credentialId: row.credential_id,
  device: { name: row.device_name, userAgent: row.user_agent },
  createdAt: new Date(row.created_at),
});

export async function saveMarketGrant(db: Db, grant: Omit<MarketGrant, 'createdAt'>): Promise<void> {
  await db
    .insertInto('oauth_market_grants')
    .values({
      grant_id: grant.grantId,
      user_id: grant.userId,
      entry_id: grant.entryId,
      client_id: grant.clientId,
      client_name: grant.clientName,
      credential: grant.credential,
      credential_id: grant.credentialId,
      device_name: grant.device.name?.slice(0, 100) || null,
      user_agent: grant.device.userAgent?.slice(0, 512) || null,
    })
    .execute();
}

/** The live (not revoked) market grant of an oidc-provider grant id, or null. */
export async function findLiveMarketGrant(db: Db, grantId: string): Promise<MarketGrant | null> {
  const row = await db
    .selectFrom('oauth_market_grants')
    .selectAll()
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .where('credential', 'is not', null)
    .executeTakeFirst();
  return row ? toGrant(row as GrantRow & { credential: string }) : null;
}

/** A live grant as Connected apps lists it (its credential's id, never the credential), with its last use. */
export type ListedMarketGrant = Omit<MarketGrant, 'credential'> & { lastUsedAt: Date | null };

/** The account's live grants, newest first (the console's "Connected apps"): one per device that signed in. */
export async function listLiveMarketGrants(db: Db, userId: string): Promise<ListedMarketGrant[]> {
  const rows = await db
    .selectFrom('oauth_market_grants as g')
    .leftJoin('market_credentials as c', 'c.id', 'g.credential_id')
    .select([
      'g.grant_id',
      'g.user_id',
      'g.entry_id',
      'g.client_id',
      'g.client_name',
      'g.device_name',
      'g.user_agent',
      'g.created_at',
      'g.credential_id',
      'c.last_used_at',
    ])
    .where('g.user_id', '=', userId)
    .where('g.revoked_at', 'is', null)
    .orderBy('g.created_at', 'desc')
    .limit(200)
    .execute();
  return rows.map((row) => ({
    grantId: row.grant_id,
    userId: row.user_id,
    entryId: row.entry_id,
    clientId: row.client_id,
    clientName: row.client_name,
    device: { name: row.device_name, userAgent: row.user_agent },
    createdAt: new Date(row.created_at),
    credentialId: row.credential_id,
    lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null,
  }));
}

/** Which live grants a revocation ends (every given criterion must hold). */
export interface GrantSelector {
  grantId?: string;
  userId?: string;
  clientId?: string;
  entryId?: string;
  credentialId?: string;
}

/**
 * Ends the live market grants `selector` picks, in the caller's transaction: each is marked revoked and its
 * sealed credential removed from it; the market credential it held is revoked (found by credential_id, or by
 * opening the sealed copy of a grant made before migration 0029); the authorization server's grant and every
 * code, access token and refresh token of it are deleted. Returns the ended grants' ids.
 */
export async function endMarketGrants(
  trx: Db,
  masterKey: Buffer,
  selector: GrantSelector,
  now = new Date(),
): Promise<string[]> {
  let query = trx
    .selectFrom('oauth_market_grants')
    .select(['grant_id', 'credential_id', 'credential'])
    .where('revoked_at', 'is', null);
  if (selector.grantId !== undefined) query = query.where('grant_id', '=', selector.grantId);
  if (selector.userId !== undefined) query = query.where('user_id', '=', selector.userId);
  if (selector.clientId !== undefined) query = query.where('client_id', '=', selector.clientId);
  if (selector.entryId !== undefined) query = query.where('entry_id', '=', selector.entryId);
  if (selector.credentialId !== undefined) query = query.where('credential_id', '=', selector.credentialId);
  const rows = await query.forUpdate().execute();
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.grant_id);
  const credentialIds = rows
    .map((r) => r.credential_id ?? (r.credential ? (openMcpCredential(masterKey, r.credential)?.id ?? null) : null))
    .filter((id): id is string => typeof id === 'string');
  await trx
    .updateTable('oauth_market_grants')
    .set({ revoked_at: now, credential: null })
    .where('grant_id', 'in', ids)
    .execute();
  if (credentialIds.length)
    await trx
      .updateTable('market_credentials')
      .set({ revoked_at: sql`coalesce(revoked_at, ${now})` })
      .where('id', 'in', credentialIds)
      .execute();
  await trx.deleteFrom('oauth_records').where('grant_id', 'in', ids).execute();
  await trx.deleteFrom('oauth_records').where('model', '=', 'Grant').where('id', 'in', ids).execute();
  return ids;
}

/**
 * Revokes one of the account's grants and the credential it holds (endMarketGrants). False when the account
 * has no such live grant.
 */
export async function revokeMarketGrant(
  db: Db,
  masterKey: Buffer,
  userId: string,
  grantId: string,
  now = new Date(),
): Promise<boolean> {
  return db
    .transaction()
    .execute(async (trx) => (await endMarketGrants(trx, masterKey, { userId, grantId }, now)).length > 0);
}

/**
 * Ends a grant and its whole token family: the market grant and its credential (endMarketGrants), and every
 * code, access token and refresh token of the grant and the authorization server's grant itself, whether or
 * not the market grant was still live. What a grant the authorization server revoked (RFC 7009 revocation, the
 * end of a session) and the reuse of a used refresh token or code (RFC 9700 reuse detection) lead to. Idempotent.
 */
export async function endGrantFamily(db: Db, masterKey: Buffer, grantId: string, now = new Date()): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await endMarketGrants(trx, masterKey, { grantId }, now);
    await trx.deleteFrom('oauth_records').where('grant_id', '=', grantId).execute();
    await trx.deleteFrom('oauth_records').where('model', '=', 'Grant').where('id', '=', grantId).execute();
  });
}

/**
 * The newest live grant of the account to the client for the entry (a new authorization of the same client
 * for the same listing, on another device, starts from its values); or null.
 */
export async function findLiveMarketGrantFor(
  db: Db,
  key: { userId: string; clientId: string; entryId: string },
): Promise<MarketGrant | null> {
  const row = await db
    .selectFrom('oauth_market_grants')
    .selectAll()
    .where('user_id', '=', key.userId)
    .where('client_id', '=', key.clientId)
    .where('entry_id', '=', key.entryId)
    .where('revoked_at', 'is', null)
    .where('credential', 'is not', null)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return row ? toGrant(row as GrantRow & { credential: string }) : null;
}
