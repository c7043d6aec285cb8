import { randomBytes } from 'node:crypto';
import type { Db } from '../connect';
import { sessionTokenHash } from './sessions';

/**
 * The review queue's operator sessions (migration 0029): one row per sign-in with ADMIN_TOKEN, kept under the
 * SHA-256 of the cookie's token (as console sessions are), so that signing out ends the session on the server:
 * a copy of the cookie is refused after it. `admin_key` is a hash of the admin token the session was opened
 * with: rotating ADMIN_TOKEN ends every operator session at once.
 */
export interface OperatorSessionRecord {
  csrfToken: string;
  expiresAt: Date;
}

/** Opens a session; returns the cookie's token (only its hash is stored). Ended sessions are removed as one begins. */
export async function createOperatorSession(
  db: Db,
  input: { adminKey: string; ttlMs: number; now?: Date },
): Promise<OperatorSessionRecord & { token: string }> {
  const now = input.now ?? new Date();
  const token = randomBytes(32).toString('base64url');
  const row = {
    token_hash: sessionTokenHash(token),
    admin_key: input.adminKey,
    csrf_token: randomBytes(24).toString('base64url'),
    created_at: now,
    expires_at: new Date(now.getTime() + input.ttlMs),
  };
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('operator_sessions').where('expires_at', '<=', now).execute();
    await trx.insertInto('operator_sessions').values(row).execute();
  });
  return { token, csrfToken: row.csrf_token, expiresAt: row.expires_at };
}

/** The live session of a cookie token opened with the current admin token, or null. */
export async function findOperatorSession(
  db: Db,
  token: string,
  adminKey: string,
  now = new Date(),
): Promise<OperatorSessionRecord | null> {
  if (!token || token.length > 128) return null;
  const row = await db
    .selectFrom('operator_sessions')
    .select(['csrf_token', 'expires_at'])
    .where('token_hash', '=', sessionTokenHash(token))
    .where('admin_key', '=', adminKey)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return row ? { csrfToken: row.csrf_token, expiresAt: new Date(row.expires_at) } : null;
}

/** Ends the session of a cookie token (sign-out). */
export async function endOperatorSession(db: Db, token: string): Promise<void> {
  if (!token || token.length > 128) return;
  await db.deleteFrom('operator_sessions').where('token_hash', '=', sessionTokenHash(token)).execute();
}
