import type { Db } from '../connect';

/** A stored oidc-provider model instance, as the library hands it over and expects it back. */
export type OAuthPayload = Record<string, unknown> & { grantId?: string; uid?: string; consumed?: number };

/** The storage interface oidc-provider asks of an adapter (one instance per model name). */
export interface OAuthAdapter {
  upsert(id: string, payload: OAuthPayload, expiresIn?: number): Promise<void>;
  find(id: string): Promise<OAuthPayload | undefined>;
  findByUid(uid: string): Promise<OAuthPayload | undefined>;
  findByUserCode(userCode: string): Promise<OAuthPayload | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

/**
 * oidc-provider's storage over Kysely (Postgres and PGlite alike): table `oauth_records`, one row per
 * (model, id). An expired row is as absent as a missing one (and is removed when next written over
 * or by pruneExpiredOAuthRecords).
 */
export function oauthAdapterFactory(db: Db): (model: string) => OAuthAdapter {
  return (model: string) => {
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
        const row = {
          model,
          id,
          payload: JSON.stringify(payload),
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
        return toPayload(await live().where('id', '=', id).executeTakeFirst());
      },
      async findByUid(uid) {
        return toPayload(await live().where('uid', '=', uid).executeTakeFirst());
      },
      async findByUserCode() {
        // The device flow is not enabled: there are no user codes.
        return undefined;
      },
      async consume(id) {
        await db
          .updateTable('oauth_records')
          .set({ consumed_at: new Date() })
          .where('model', '=', model)
          .where('id', '=', id)
          .execute();
      },
      async destroy(id) {
        await db.deleteFrom('oauth_records').where('model', '=', model).where('id', '=', id).execute();
      },
      async revokeByGrantId(grantId) {
        await db.deleteFrom('oauth_records').where('grant_id', '=', grantId).execute();
      },
    };
  };
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
  createdAt: Date;
}

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
    .executeTakeFirst();
  if (!row) return null;
  return {
    grantId: row.grant_id,
    userId: row.user_id,
    entryId: row.entry_id,
    clientId: row.client_id,
    clientName: row.client_name,
    credential: row.credential,
    createdAt: new Date(row.created_at),
  };
}

/** The account's live grants, newest first (the console's "Connected apps"; no credential in them). */
export async function listLiveMarketGrants(db: Db, userId: string): Promise<Omit<MarketGrant, 'credential'>[]> {
  const rows = await db
    .selectFrom('oauth_market_grants')
    .select(['grant_id', 'user_id', 'entry_id', 'client_id', 'client_name', 'created_at'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .limit(200)
    .execute();
  return rows.map((row) => ({
    grantId: row.grant_id,
    userId: row.user_id,
    entryId: row.entry_id,
    clientId: row.client_id,
    clientName: row.client_name,
    createdAt: new Date(row.created_at),
  }));
}

/**
 * Revokes one of the account's grants: marked revoked, and the authorization server's grant with every
 * code, access token and refresh token of it deleted. False when the account has no such live grant.
 */
export async function revokeMarketGrant(db: Db, userId: string, grantId: string, now = new Date()): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('oauth_market_grants')
      .set({ revoked_at: now })
      .where('grant_id', '=', grantId)
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await trx.deleteFrom('oauth_records').where('grant_id', '=', grantId).execute();
    await trx.deleteFrom('oauth_records').where('model', '=', 'Grant').where('id', '=', grantId).execute();
    return true;
  });
}

/**
 * The newest live grant of the account to the client for the entry (what a new authorization of the
 * same client for the same listing replaces), without its credential's contents; or null.
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
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  if (!row) return null;
  return {
    grantId: row.grant_id,
    userId: row.user_id,
    entryId: row.entry_id,
    clientId: row.client_id,
    clientName: row.client_name,
    credential: row.credential,
    createdAt: new Date(row.created_at),
  };
}

/**
 * Revokes every live grant of the account to the client for the entry except `keep` (the one just
 * approved), with the authorization server's grants, codes and tokens of them; returns how many.
 */
export async function revokeOtherMarketGrants(
  db: Db,
  key: { userId: string; clientId: string; entryId: string; keep: string },
  now = new Date(),
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const revoked = await trx
      .updateTable('oauth_market_grants')
      .set({ revoked_at: now })
      .where('user_id', '=', key.userId)
      .where('client_id', '=', key.clientId)
      .where('entry_id', '=', key.entryId)
      .where('grant_id', '!=', key.keep)
      .where('revoked_at', 'is', null)
      .returning('grant_id')
      .execute();
    const ids = revoked.map((r) => r.grant_id);
    if (ids.length) {
      await trx.deleteFrom('oauth_records').where('grant_id', 'in', ids).execute();
      await trx.deleteFrom('oauth_records').where('model', '=', 'Grant').where('id', 'in', ids).execute();
    }
    return ids.length;
  });
}
