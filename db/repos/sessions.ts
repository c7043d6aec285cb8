import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Db } from '../connect';
import type { AuthenticatedUser } from './users';

/** A live console session and who it belongs to. */
export interface WebSession {
  id: string;
  /** The account, as an API key's request would see it. */
  user: AuthenticatedUser;
  /** The API key the session was begun with (a rotated key ends the session). */
  apiKeyId: string;
  csrfToken: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface SessionLifetimes {
  /** A session without a request for this long has ended. */
  idleMs: number;
  /** A session ends this long after it began. */
  maxMs: number;
}

/** Last-seen is written at most this often per session: a page view does not have to be a database write. */
export const LAST_SEEN_RESOLUTION_MS = 60_000;

export const sessionTokenHash = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/**
 * Begins a session for the owner of `apiKeyId`. Returns the cookie's token (only its hash is
 * stored) and the session's CSRF token.
 */
export async function createSession(
  db: Db,
  input: { userId: string; apiKeyId: string; lifetimes: SessionLifetimes; now?: Date },
): Promise<{ token: string; session: { id: string; csrfToken: string; expiresAt: Date } }> {
  const now = input.now ?? new Date();
  const token = randomBytes(32).toString('base64url');
  const row = {
    id: randomUUID(),
    user_id: input.userId,
    api_key_id: input.apiKeyId,
    token_hash: sessionTokenHash(token),
    csrf_token: randomBytes(24).toString('base64url'),
    created_at: now,
    last_seen_at: now,
    expires_at: new Date(now.getTime() + input.lifetimes.maxMs),
  };
  await db.transaction().execute(async (trx) => {
    // Ended sessions of the account are of no further use: they go as a new one begins.
    await trx
      .deleteFrom('sessions')
      .where('user_id', '=', input.userId)
      .where((eb) =>
        eb.or([
          eb('revoked_at', 'is not', null),
          eb('expires_at', '<=', now),
          eb('last_seen_at', '<=', new Date(now.getTime() - input.lifetimes.idleMs)),
        ]),
      )
      .execute();
    await trx.insertInto('sessions').values(row).execute();
  });
  return { token, session: { id: row.id, csrfToken: row.csrf_token, expiresAt: row.expires_at } };
}

/**
 * The live session of a cookie token: not revoked, before its absolute expiry, used within the idle
 * time, and made with an API key that has not been rotated since. Marks it seen (at most once per
 * LAST_SEEN_RESOLUTION_MS). Null for anything else.
 */
export async function findLiveSession(
  db: Db,
  token: string,
  lifetimes: SessionLifetimes,
  now = new Date(),
): Promise<WebSession | null> {
  if (!token || token.length > 128) return null;
  const row = await db
    .selectFrom('sessions as s')
    .innerJoin('api_keys as k', 'k.id', 's.api_key_id')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .innerJoin('subscriptions as sub', 'sub.user_id', 's.user_id')
    .select([
      's.id',
      's.user_id',
      's.api_key_id',
      'u.email',
      's.csrf_token',
      's.created_at',
      's.last_seen_at',
      's.expires_at',
    ])
    .select(['sub.status', 'sub.plan_id', 'sub.monthly_operation_limit', 'sub.automation_limit'])
    .where('s.token_hash', '=', sessionTokenHash(token))
    .where('s.revoked_at', 'is', null)
    .where('k.revoked_at', 'is', null)
    .where('s.expires_at', '>', now)
    .where('s.last_seen_at', '>', new Date(now.getTime() - lifetimes.idleMs))
    .executeTakeFirst();
  if (!row) return null;
  if (now.getTime() - new Date(row.last_seen_at).getTime() >= LAST_SEEN_RESOLUTION_MS) {
    await db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', row.id).execute();
  }
  return {
    id: row.id,
    user: {
      userId: row.user_id,
      email: row.email,
      subscription: {
        status: row.status,
        planId: row.plan_id,
        monthlyOperationLimit: row.monthly_operation_limit,
        automationLimit: row.automation_limit,
      },
    },
    apiKeyId: row.api_key_id,
    csrfToken: row.csrf_token,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
  };
}

/** Ends one session (sign-out). */
export async function revokeSession(db: Db, sessionId: string, now = new Date()): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Ends every session of the account (sign-out everywhere); returns how many were live. */
export async function revokeUserSessions(db: Db, userId: string, now = new Date()): Promise<number> {
  const result = await db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** How many sessions of the account are live now (the console shows it beside "sign out everywhere"). */
export async function countLiveSessions(
  db: Db,
  userId: string,
  lifetimes: SessionLifetimes,
  now = new Date(),
): Promise<number> {
  const row = await db
    .selectFrom('sessions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .where('last_seen_at', '>', new Date(now.getTime() - lifetimes.idleMs))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
