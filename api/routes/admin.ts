import Router from '@koa/router';
import type { AppRouteContext, AppState } from '../context';
import type { ApiDeps } from '../deps';
import { requireAdminToken } from '../middleware/auth';
import { jsonBody } from '../middleware/json-body';
import { CreateUserRequest, CreditRequest, RouterKeyRequest, SubscriptionChangeRequest } from '../../lib/schemas/admin';
import {
  changeSubscription,
  createAccount,
  creditAccount,
  requireUser,
  rotateAccountKey,
  setAccountRouterKey,
} from '../services/admin/users';
import { parseBody, parseUuidParam } from '../validation';
import { registerSkillsAdminRoutes } from './admin-skills';
import { registerMarketAdminRoutes } from './market/admin';
import { registerOAuthAdminRoutes } from './admin-oauth';

/** Operator API, guarded by ADMIN_TOKEN; the `npm run admin` CLI is its client. */
export function adminRoutes(deps: ApiDeps): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/admin' });
  router.use(requireAdminToken(deps.config.adminToken), jsonBody());

  const existingUser = (ctx: AppRouteContext) => requireUser(deps.db, parseUuidParam('userId', ctx.params.userId));

  router.post('/users', async (ctx) => {
    const body = parseBody(CreateUserRequest, ctx.state.body);
    const created = await createAccount(deps, body);
    ctx.status = 201;
    ctx.body = created;
  });

  router.post('/users/:userId/credit', async (ctx) => {
    const userId = await existingUser(ctx);
    const body = parseBody(CreditRequest, ctx.state.body);
    ctx.body = await creditAccount(deps.db, userId, body);
  });

  router.patch('/users/:userId/subscription', async (ctx) => {
    const userId = await existingUser(ctx);
    const body = parseBody(SubscriptionChangeRequest, ctx.state.body);
    ctx.body = await changeSubscription(deps.db, userId, body);
  });

  router.post('/users/:userId/rotate-key', async (ctx) => {
    const userId = await existingUser(ctx);
    ctx.body = await rotateAccountKey(deps.db, userId);
  });

  router.put('/users/:userId/router-key', async (ctx) => {
    const userId = await existingUser(ctx);
    const body = parseBody(RouterKeyRequest, ctx.state.body);
    ctx.body = await setAccountRouterKey(deps, userId, body.routerApiKey);
  });

  registerSkillsAdminRoutes(router, deps);
  registerMarketAdminRoutes(router, deps);
  registerOAuthAdminRoutes(router, deps);

  return router;
}
