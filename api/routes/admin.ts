import Router from '@koa/router';
import type { Context } from 'koa';
import { creditWallet } from '../../db/repos/ledger';
import { createUser, DuplicateEmailError, rotateApiKey, setRouterApiKey, UnknownPlanError, updateSubscription, userExists } from '../../db/repos/users';
import { usdToMicros } from '../../lib/money';
import type { ApiDeps } from '../deps';
import { ApiError, notFound } from '../errors';
import { requireAdminToken } from '../middleware/auth';
import { jsonBody } from '../middleware/json-body';
import { CreateUserRequest, CreditRequest, RouterKeyRequest, SubscriptionChangeRequest } from '../../lib/schemas/admin';
import { parseBody, parseUuidParam } from '../validation';
import { registerSkillsAdminRoutes } from './skills';

/** Operator API, guarded by ADMIN_TOKEN; the `npm run admin` CLI is its client. */
export function adminRoutes(deps: ApiDeps): Router {
  const router = new Router({ prefix: '/admin' });
  router.use(requireAdminToken(deps.config.adminToken), jsonBody());

  const existingUser = async (ctx: Context) => {
    const userId = parseUuidParam('userId', ctx.params.userId);
    if (!(await userExists(deps.db, userId))) throw notFound('User');
    return userId;
  };

  router.post('/users', async (ctx) => {
    const body = parseBody<{ email: string; plan?: string; creditUsd?: number; monthlyOperationLimit?: number; automationLimit?: number }>(
      CreateUserRequest,
      ctx.state.body,
    );
    try {
      const created = await createUser(deps.db, deps.config.masterKey, {
        email: body.email,
        planId: body.plan,
        creditMicros: body.creditUsd ? usdToMicros(body.creditUsd) : 0,
        monthlyOperationLimit: body.monthlyOperationLimit,
        automationLimit: body.automationLimit,
      });
      ctx.status = 201;
      ctx.body = created;
    } catch (err) {
      if (err instanceof DuplicateEmailError) throw new ApiError(409, 'conflict', err.message);
      if (err instanceof UnknownPlanError) throw new ApiError(400, 'validation_failed', err.message);
      throw err;
    }
  });

  router.post('/users/:userId/credit', async (ctx) => {
    const userId = await existingUser(ctx);
    const body = parseBody<{ amountUsd: number; idempotencyKey: string; description?: string }>(CreditRequest, ctx.state.body);
    const result = await creditWallet(deps.db, {
      userId,
      amountMicros: usdToMicros(body.amountUsd),
      idempotencyKey: `admin-credit:${userId}:${body.idempotencyKey}`,
      description: body.description ?? 'Operator credit',
    });
    ctx.body = { userId, balanceUsd: result.balanceMicros / 1e6, replayed: result.replayed };
  });

  router.patch('/users/:userId/subscription', async (ctx) => {
    const userId = await existingUser(ctx);
    const body = parseBody<{ status?: 'active' | 'inactive'; plan?: string; monthlyOperationLimit?: number; automationLimit?: number }>(
      SubscriptionChangeRequest,
      ctx.state.body,
    );
    try {
      await updateSubscription(deps.db, userId, { ...body, planId: body.plan });
    } catch (err) {
      if ((err as { code?: string }).code === '23503') throw new ApiError(400, 'validation_failed', `Unknown plan "${body.plan}"`);
      throw err;
    }
    const row = await deps.db.selectFrom('subscriptions').selectAll().where('user_id', '=', userId).executeTakeFirstOrThrow();
    ctx.body = {
      userId,
      plan: row.plan_id,
      status: row.status,
      monthlyOperationLimit: row.monthly_operation_limit,
      automationLimit: row.automation_limit,
    };
  });

  router.post('/users/:userId/rotate-key', async (ctx) => {
    const userId = await existingUser(ctx);
    ctx.body = { userId, apiKey: await rotateApiKey(deps.db, userId) };
  });

  router.put('/users/:userId/router-key', async (ctx) => {
    const userId = await existingUser(ctx);
    const body = parseBody<{ routerApiKey: string | null }>(RouterKeyRequest, ctx.state.body);
    await setRouterApiKey(deps.db, deps.config.masterKey, userId, body.routerApiKey);
    ctx.body = { userId, routerKeySet: body.routerApiKey !== null };
  });

  registerSkillsAdminRoutes(router, deps);

  return router;
}
