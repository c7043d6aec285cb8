import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { WebContext } from './context';
import { constantTimeEquals } from '../lib/crypto';
import type { Config } from '../lib/config';
import { readCookie, setCookie } from './session';

/**
 * The review queue's operator sign-in. There is no operator role on accounts: an operator is whoever
 * holds ADMIN_TOKEN (as for the admin REST routes). Signing in with it gives this browser a signed
 * cookie (HttpOnly, Secure, SameSite=Lax) that carries its expiry and its CSRF token, with an HMAC
 * keyed by a hash of the admin token: nothing is stored, rotating ADMIN_TOKEN ends every operator
 * sign-in at once, and the cookie ends WEB_SESSION_IDLE_MINUTES after sign-in (no sliding renewal).
 */
export const OPERATOR_COOKIE = '__Host-console-operator';

export interface OperatorSession {
  csrfToken: string;
  expiresAt: Date;
}

const macKey = (adminToken: string) => createHash('sha256').update(`console-operator:${adminToken}`).digest();
const mac = (adminToken: string, payload: string) =>
  createHmac('sha256', macKey(adminToken)).update(payload).digest('base64url');

/** True when `given` is the admin token (compared in constant time). */
export const isAdminToken = (config: Pick<Config, 'adminToken'>, given: string) =>
  given.length > 0 && constantTimeEquals(given, config.adminToken);

/** Signs this browser in as an operator; returns the session's CSRF token. */
export function startOperatorSession(ctx: WebContext, config: Pick<Config, 'adminToken' | 'web'>): OperatorSession {
  const expiresAt = new Date(Date.now() + config.web.sessionIdleMs);
  const csrfToken = randomBytes(24).toString('base64url');
  const payload = `${expiresAt.getTime()}.${csrfToken}`;
  setCookie(ctx, OPERATOR_COOKIE, `${payload}.${mac(config.adminToken, payload)}`, config.web.sessionIdleMs / 1000);
  return { csrfToken, expiresAt };
}

/** The request's operator session: a cookie this server signed with the current admin token, not expired; else null. */
export function currentOperator(ctx: WebContext, config: Pick<Config, 'adminToken'>): OperatorSession | null {
  const cookie = readCookie(ctx, OPERATOR_COOKIE);
  if (!cookie || cookie.length > 256) return null;
  const parts = cookie.split('.');
  if (parts.length !== 3) return null;
  const [expires, csrfToken, signature] = parts as [string, string, string];
  if (!constantTimeEquals(signature, mac(config.adminToken, `${expires}.${csrfToken}`))) return null;
  const expiresAt = new Date(Number(expires));
  if (!Number.isFinite(expiresAt.getTime()) || expiresAt.getTime() <= Date.now()) return null;
  return { csrfToken, expiresAt };
}
