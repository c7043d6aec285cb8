import Router from '@koa/router';
import { creditWallet, InvalidAmountError } from '../../db/repos/ledger';
import {
  createUser,
  DuplicateEmailError,
  getSubscription,
  rotateApiKey,
  setRouterApiKey,
  UnknownPlanError,
  updateSubscription,
  userExists,
} from '../../db/repos/users';
import { microsToUsd, usdToWholeMicros } from '../../lib/money';
import type { AppRouteContext, AppState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError, notFound } from '../errors';
import { requireAdminToken } from '../middleware/auth';
import { jsonBody } from '../middleware/json-body';
import { CreateUserRequest, CreditRequest, RouterKeyRequest, SubscriptionChangeRequest } from '../../lib/schemas/admin';
import { parseBody, parseUuidParam } from '../validation';
import { registerSkillsAdminRoutes } from './admin-skills';
import { registerMarketAdminRoutes } from './market/admin';
import { registerOAuthAdminRoutes } from './admin-oauth';

/** Operator API, guarded by ADMIN_TOKEN; the `npm run admin` CLI is its client. */
export function adminRoutes(deps: ApiDeps): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/admin' });
  router.use(requireAdminToken(deps.config.adminToken), jsonBody());

  const existingUser = async (ctx: AppRouteContext) => {
    const userId = parseUuidParam('userId', ctx.params.userId);
    if (!(await userExists(deps.db, userId))) throw notFound('User');
    return userId;
  };

  /** Money moves in whole micro-USD: an amount with a fraction of a micro (1e-7) is refused, never rounded. */
  const wholeMicros = (field: string, usd: number) => {
    const micros = usdToWholeMicros(usd);
    if (micros === null || micros <= 0) {
      throw new ApiError(
        400,
        'validation_failed',
        `${field} must be a positive whole number of micro-USD (at least 0.000001 USD, at most 6 decimals), got ${usd}`,
        [{ path: `body/${field}`, message: 'not a positive whole number of micro-USD' }],
      );
    }
    return micros;
  };

  router.post('/users', async (ctx) => {
    const body = parseBody(CreateUserRequest, ctx.state.body);
    try {
      const created = await createUser(deps.db, deps.config.masterKey, {
        email: body.email,
        planId: body.plan,
        creditMicros: body.creditUsd ? wholeMicros('creditUsd', body.creditUsd) : 0,
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
    const body = parseBody(CreditRequest, ctx.state.body);
    const amountMicros = wholeMicros('amountUsd', body.amountUsd);
    try {
      const result = await creditWallet(deps.db, {
        userId,
        amountMicros,
        idempotencyKey: `admin-credit:${userId}:${body.idempotencyKey}`,
        description: body.description ?? 'Operator credit',
      });
      ctx.body = { userId, balanceUsd: microsToUsd(result.balanceMicros), replayed: result.replayed };
    } catch (err) {
      if (err instanceof InvalidAmountError) throw new ApiError(400, 'validation_failed', err.message);
      throw err;
    }
  });

  router.patch('/users/:userId/subscription', async (ctx) => {
    const userId = await existingUser(ctx);
    const body = parseBody(SubscriptionChangeRequest, ctx.state.body);
    try {
      await updateSubscription(deps.db, userId, { ...body, planId: body.plan });
    } catch (err) {
      if ((err as { code?: string }).code === '23503')
        throw new ApiError(400, 'validation_failed', `Unknown plan "${body.plan}"`);
      throw err;
    }
    const row = await getSubscription(deps.db, userId);
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
    const body = parseBody(RouterKeyRequest, ctx.state.body);
    await setRouterApiKey(deps.db, deps.config.masterKey, userId, body.routerApiKey);
    ctx.body = { userId, routerKeySet: body.routerApiKey !== null };
  });

  registerSkillsAdminRoutes(router, deps);
  registerMarketAdminRoutes(router, deps);
  registerOAuthAdminRoutes(router, deps);

  return router;
}
