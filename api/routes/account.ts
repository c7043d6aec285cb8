import Router from '@koa/router';
import { billingPeriod, monthlyOperations } from '../../db/repos/jobs';
import { getWalletSummary } from '../../db/repos/ledger';
import { getWebhookSecret } from '../../db/repos/users';
import { microsToUsd } from '../../lib/money';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';

/** Not in the contract: what a client needs to see its own plan and verify webhooks. */
export function accountRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.get('/account', async (ctx) => {
    const user = ctx.state.user;
    const period = billingPeriod();
    const operations = await monthlyOperations(deps.db, user.userId, period);
    const wallet = await getWalletSummary(deps.db, user.userId);
    ctx.body = {
      userId: user.userId,
      email: user.email,
      subscription: user.subscription,
      balanceUsd: microsToUsd(wallet.balanceMicros),
      heldUsd: microsToUsd(wallet.heldMicros),
      availableUsd: microsToUsd(wallet.availableMicros),
      usage: { period, operations },
    };
  });

  router.get('/account/webhook-secret', async (ctx) => {
    const user = ctx.state.user;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { webhookSecret: await getWebhookSecret(deps.db, deps.config.masterKey, user.userId) };
  });

  return router;
}
