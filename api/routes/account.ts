import Router from '@koa/router';
import type { Context } from 'koa';
import { getWebhookSecret, type AuthenticatedUser } from '../../db/repos/users';
import type { ApiDeps } from '../deps';
import { accountSummary } from '../services/account';

/** Not in the contract: what a client needs to see its own plan and verify webhooks. */
export function accountRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/account', async (ctx: Context) => {
    ctx.body = await accountSummary(deps.db, ctx.state.user as AuthenticatedUser);
  });

  router.get('/account/webhook-secret', async (ctx: Context) => {
    const user = ctx.state.user as AuthenticatedUser;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { webhookSecret: await getWebhookSecret(deps.db, deps.config.masterKey, user.userId) };
  });

  return router;
}
