import type { Db } from '../../../db/connect';
import { findApiKeyOwner } from '../../../db/repos/market-tool-calls';
import {
  countLiveSessions,
  createSession,
  findLiveSession,
  revokeSession,
  revokeUserSessions,
  type SessionLifetimes,
  type WebSession,
} from '../../../db/repos/sessions';

/** The console session a cookie's token opens, while it is live (idle and absolute lifetimes), else null. */
export function liveConsoleSession(db: Db, token: string, lifetimes: SessionLifetimes): Promise<WebSession | null> {
  return findLiveSession(db, token, lifetimes);
}

/** Signs in with an API key: a new session's token, or null when the key is not (or no longer) valid. */
export async function signInWithApiKey(
  db: Db,
  apiKey: string,
  lifetimes: SessionLifetimes,
): Promise<{ token: string } | null> {
  const owner = apiKey ? await findApiKeyOwner(db, apiKey) : null;
  if (!owner) return null;
  const { token } = await createSession(db, { userId: owner.userId, apiKeyId: owner.apiKeyId, lifetimes });
  return { token };
}

/** Signs out this session, or (`everywhere`) every session of its account. */
export async function signOut(db: Db, session: WebSession, everywhere: boolean): Promise<void> {
  if (everywhere) await revokeUserSessions(db, session.user.userId);
  else await revokeSession(db, session.id);
}

/** How many live console sessions the account has (the home page shows it beside "sign out everywhere"). */
export function liveSessionCount(db: Db, userId: string, lifetimes: SessionLifetimes): Promise<number> {
  return countLiveSessions(db, userId, lifetimes);
}
