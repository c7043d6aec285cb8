import type { ParameterizedContext } from 'koa';
import type { WebSession } from '../db/repos/sessions';
import type { AuthenticatedUser } from '../db/repos/users';
import type { Logger } from '../lib/log';

/**
 * What a page request carries in `ctx.state`, typed once. The app's middleware sets the request id and
 * logger before the pages run (api/app.ts); web/session.ts reads the console session once per request.
 */
export interface WebState {
  /** The caller's X-Request-Id when well-formed, else a fresh UUID. */
  requestId: string;
  /** The request's child logger; absent only before the app's logging middleware has run. */
  log?: Logger;
  /** The console session, once read: null when there is none (undefined before it is read). */
  webSession?: WebSession | null;
  /** The session's account, so that the access log names it as it does for API-key requests. */
  user?: AuthenticatedUser;
}

/** The context of every page handler and helper. */
export type WebContext = ParameterizedContext<WebState>;
