import Router from '@koa/router';
import { ApiKeyBudgetsRequest } from '../../lib/schemas/account';
import type { UserContext, UserState } from '../context';
import type { ApiDeps } from '../deps';
import { accountSummary } from '../services/account/account-summary';
import { requestApiKeyId, webhookSecret } from '../services/account/api-key';
import { apiKeyBudgets, updateApiKeyBudgets } from '../services/account/api-key-budgets';
import { parseBody } from '../validation';

/** Not in the contract: what a client needs to see its own plan, verify webhooks and bound its own key's spending. */
export function accountRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.get('/account', async (ctx) => {
    ctx.body = await accountSummary(deps.db, ctx.state.user);
  });

  router.get('/account/webhook-secret', async (ctx) => {
    const user = ctx.state.user;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await webhookSecret(deps, user.userId);
  });

  /** The id of the API key this request is made with (the account's, live). */
  const requestKeyId = (ctx: UserContext) => requestApiKeyId(deps.db, ctx.get('x-api-key'), ctx.state.user.userId);

  /** The request's API key with its budgets for the account's own market calls, and what they spent. */
  router.get('/account/api-key', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await apiKeyBudgets(deps.db, ctx.state.user.userId, await requestKeyId(ctx));
  });

  /** Sets those budgets: the next call made with the key is bounded by them. */
  router.patch('/account/api-key', async (ctx) => {
    const body = parseBody(ApiKeyBudgetsRequest, ctx.state.body);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await updateApiKeyBudgets(deps.db, ctx.state.user.userId, await requestKeyId(ctx), body);
  });

  return router;
}
