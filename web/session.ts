import type { WebContext } from './context';
import type { SessionLifetimes, WebSession } from '../db/repos/sessions';
import { liveConsoleSession } from '../api/services/account/console-sessions';
import type { Config } from '../lib/config';
import { requireFormToken, requireSameOrigin } from './csrf';
import type { WebDeps } from './deps';
import { readForm } from './forms';
import { PageError } from './page';

/**
 * The console's cookies. `__Host-` binds them to this origin (Secure, Path=/, no Domain); browsers
 * accept Secure cookies from http://localhost and 127.0.0.1, so `npm start` works without TLS.
 */
export const SESSION_COOKIE = '__Host-console-session';
/** Pairs the sign-in form with the browser that loaded it (there is no session yet to hold a token). */
export const SIGN_IN_COOKIE = '__Host-console-sign-in';

export const sessionLifetimes = (config: Pick<Config, 'web'>): SessionLifetimes => ({
  idleMs: config.web.sessionIdleMs,
  maxMs: config.web.sessionMaxMs,
});

export function readCookie(ctx: WebContext, name: string): string | null {
  const header = ctx.get('cookie');
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return null;
}

/** Sets an HttpOnly, Secure, SameSite=Lax cookie (written by hand: Koa refuses Secure cookies on plain-HTTP requests). */
export function setCookie(ctx: WebContext, name: string, value: string, maxAgeSeconds: number): void {
  ctx.append(
    'Set-Cookie',
    `${name}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly; Secure; SameSite=Lax`,
  );
}

export const clearCookie = (ctx: WebContext, name: string) => setCookie(ctx, name, '', 0);

/** The request's live session, or null (read once per request). */
export async function currentSession(ctx: WebContext, deps: WebDeps): Promise<WebSession | null> {
  if (ctx.state.webSession !== undefined) return ctx.state.webSession;
  const token = readCookie(ctx, SESSION_COOKIE);
  const session = token ? await liveConsoleSession(deps.db, token, sessionLifetimes(deps.config)) : null;
  ctx.state.webSession = session;
  // The access log names the account, as it does for API-key requests.
  if (session) ctx.state.user = session.user;
  return session;
}

/**
 * The request's live session, or null after redirecting to the console's sign-in page (which then comes back
 * here); a stale session cookie is cleared. Every signed-in page starts with it.
 */
export async function signedIn(ctx: WebContext, deps: WebDeps): Promise<WebSession | null> {
  const session = await currentSession(ctx, deps);
  if (session) return session;
  if (readCookie(ctx, SESSION_COOKIE) !== null) clearCookie(ctx, SESSION_COOKIE);
  ctx.redirect(`/console/sign-in?next=${encodeURIComponent(ctx.path)}`);
  return null;
}

/**
 * A signed-in page's form post: the Origin/Sec-Fetch-Site check, the live session (else 401: there is no page to
 * come back to after signing in), then the form and its token.
 */
export async function signedInForm(
  ctx: WebContext,
  deps: WebDeps,
): Promise<{ session: WebSession; form: URLSearchParams }> {
  requireSameOrigin(ctx, deps.config);
  const session = await currentSession(ctx, deps);
  if (!session) throw new PageError(401, 'Sign in first', 'Your session has ended: sign in again.');
  const form = await readForm(ctx);
  requireFormToken(form.get('csrf'), session.csrfToken);
  return { session, form };
}
