import type { WebContext } from './context';
import type { Db } from '../db/connect';
import {
  closeOperatorSession,
  liveOperatorSession,
  openOperatorSession,
} from '../api/services/admin/operator-sessions';
import { constantTimeEquals } from '../lib/crypto';
import type { Config } from '../lib/config';
import { clearCookie, readCookie, setCookie } from './session';

/**
 * The review queue's operator sign-in. There is no operator role on accounts: an operator is whoever
 * holds ADMIN_TOKEN (as for the admin REST routes). Signing in with it opens a session on the server
 * (db/repos/operator-sessions.ts: only the SHA-256 of the cookie's token is stored) and gives this browser
 * its cookie (HttpOnly, Secure, SameSite=Lax). Signing out ends the session on the server, so a copy of the
 * cookie is refused too; rotating ADMIN_TOKEN ends every operator sign-in at once; a session ends
 * WEB_SESSION_IDLE_MINUTES after sign-in (no sliding renewal).
 */
export const OPERATOR_COOKIE = '__Host-console-operator';

export interface OperatorSession {
  csrfToken: string;
  expiresAt: Date;
}

interface OperatorDeps {
  db: Db;
  config: Pick<Config, 'adminToken' | 'web'>;
}

/** True when `given` is the admin token (compared in constant time). */
export const isAdminToken = (config: Pick<Config, 'adminToken'>, given: string) =>
  given.length > 0 && constantTimeEquals(given, config.adminToken);

/** Signs this browser in as an operator; returns the session's CSRF token. */
export async function startOperatorSession(ctx: WebContext, deps: OperatorDeps): Promise<OperatorSession> {
  const ttlMs = deps.config.web.sessionIdleMs;
  const session = await openOperatorSession(deps);
  setCookie(ctx, OPERATOR_COOKIE, session.token, ttlMs / 1000);
  return { csrfToken: session.csrfToken, expiresAt: session.expiresAt };
}

/** The request's operator session: live on the server, opened with the current admin token; else null. */
export async function currentOperator(ctx: WebContext, deps: OperatorDeps): Promise<OperatorSession | null> {
  const cookie = readCookie(ctx, OPERATOR_COOKIE);
  if (!cookie) return null;
  return liveOperatorSession(deps, cookie);
}

/** Signs this browser out: the session ends on the server and the cookie is cleared. */
export async function endOperatorSignIn(ctx: WebContext, deps: OperatorDeps): Promise<void> {
  const cookie = readCookie(ctx, OPERATOR_COOKIE);
  if (cookie) await closeOperatorSession(deps.db, cookie);
  clearCookie(ctx, OPERATOR_COOKIE);
}
