import Router from '@koa/router';
import { getWebhookSecret } from '../../db/repos/users';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { accountSummary } from '../services/account';

/** Not in the contract: what a client needs to see its own plan and verify webhooks. */
export function accountRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.get('/account', async (ctx) => {
    ctx.body = await accountSummary(deps.db, ctx.state.user);
  });

  router.get('/account/webhook-secret', async (ctx) => {
    const user = ctx.state.user;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { webhookSecret: await getWebhookSecret(deps.db, deps.config.masterKey, user.userId) };
  });

  return router;
}
