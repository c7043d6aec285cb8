import type { ParameterizedContext } from 'koa';
import type { RouterContext } from '@koa/router';
import type { AuthenticatedUser } from '../db/repos/users';
import type { Logger } from '../lib/log';

/**
 * What a request carries in `ctx.state`, typed once. The app's middleware fills it in order (api/app.ts):
 * requestId, then the request's logger, then (on /api/v1) the authenticated user, then the JSON body.
 */
export interface AppState {
  /** Set first, by middleware/request-id: the caller's X-Request-Id when well-formed, else a fresh UUID. */
  requestId: string;
  /** The request's child logger (middleware/request-log); absent only before that middleware has run. */
  log?: Logger;
  /** The caller behind the API key (middleware/auth `requireApiKey`); absent on public and admin routes. */
  user?: AuthenticatedUser;
  /** The parsed JSON body (middleware/json-body, mounted after authentication); undefined when empty. */
  body?: unknown;
}

/** `ctx.state` on the routes behind `requireApiKey` (every /api/v1 router but the docs): the user is there. */
export interface UserState extends AppState {
  user: AuthenticatedUser;
}

/** The context app-level middleware sees (before any router). */
export type AppContext = ParameterizedContext<AppState>;

/** The context of a route on a public or admin router (`new Router<AppState>()`). */
export type AppRouteContext = RouterContext<AppState>;

/** The context of a route behind `requireApiKey` (`new Router<UserState>()`). */
export type UserContext = RouterContext<UserState>;
