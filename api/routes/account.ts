import Router from '@koa/router';
import type { Context } from 'koa';
import { billingPeriod } from '../../db/repos/jobs';
import { getWalletSummary } from '../../db/repos/ledger';
import { getWebhookSecret, type AuthenticatedUser } from '../../db/repos/users';
import { microsToUsd } from '../../lib/money';
import type { ApiDeps } from '../deps';

/** Not in the contract: what a client needs to see its own plan and verify webhooks. */
export function accountRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/account', async (ctx: Context) => {
    const user = ctx.state.user as AuthenticatedUser;
    const period = billingPeriod();
    const usage = await deps.db
      .selectFrom('monthly_usage')
      .select('operations')
      .where('user_id', '=', user.userId)
      .where('period', '=', period)
      .executeTakeFirst();
    const wallet = await getWalletSummary(deps.db, user.userId);
    ctx.body = {
      userId: user.userId,
      email: user.email,
      subscription: user.subscription,
      balanceUsd: microsToUsd(wallet.balanceMicros),
      heldUsd: microsToUsd(wallet.heldMicros),
      availableUsd: microsToUsd(wallet.availableMicros),
      usage: { period, operations: usage?.operations ?? 0 },
    };
  });

  router.get('/account/webhook-secret', async (ctx: Context) => {
    const user = ctx.state.user as AuthenticatedUser;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { webhookSecret: await getWebhookSecret(deps.db, deps.config.masterKey, user.userId) };
  });

  return router;
}
