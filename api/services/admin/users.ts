import type { Db } from '../../../db/connect';
import { creditWallet, InvalidAmountError } from '../../../db/repos/ledger';
import {
  createUser,
  DuplicateEmailError,
  getSubscription,
  rotateApiKey,
  setRouterApiKey,
  UnknownPlanError,
  updateSubscription,
  userExists,
} from '../../../db/repos/users';
import { microsToUsd, usdToWholeMicros } from '../../../lib/money';
import type { ApiDeps } from '../../deps';
import { ApiError, notFound } from '../../errors';

type Deps = Pick<ApiDeps, 'db' | 'config'>;

/** The user an operator names, or 404. */
export async function requireUser(db: Db, userId: string): Promise<string> {
  if (!(await userExists(db, userId))) throw notFound('User');
  return userId;
}

/** Money moves in whole micro-USD: an amount with a fraction of a micro (1e-7) is refused, never rounded. */
function wholeMicros(field: string, usd: number): number {
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
}

/** POST /admin/users: a new account (409 for a taken email, 400 for an unknown plan). */
export async function createAccount(
  deps: Deps,
  body: { email: string; plan?: string; creditUsd?: number; monthlyOperationLimit?: number; automationLimit?: number },
) {
  try {
    return await createUser(deps.db, deps.config.masterKey, {
      email: body.email,
      planId: body.plan,
      creditMicros: body.creditUsd ? wholeMicros('creditUsd', body.creditUsd) : 0,
      monthlyOperationLimit: body.monthlyOperationLimit,
      automationLimit: body.automationLimit,
    });
  } catch (err) {
    if (err instanceof DuplicateEmailError) throw new ApiError(409, 'conflict', err.message);
    if (err instanceof UnknownPlanError) throw new ApiError(400, 'validation_failed', err.message);
    throw err;
  }
}

/** POST /admin/users/{userId}/credit: an operator's credit, once per idempotency key. */
export async function creditAccount(
  db: Db,
  userId: string,
  body: { amountUsd: number; idempotencyKey: string; description?: string },
) {
  const amountMicros = wholeMicros('amountUsd', body.amountUsd);
  try {
    const result = await creditWallet(db, {
      userId,
      amountMicros,
      idempotencyKey: `admin-credit:${userId}:${body.idempotencyKey}`,
      description: body.description ?? 'Operator credit',
    });
    return { userId, balanceUsd: microsToUsd(result.balanceMicros), replayed: result.replayed };
  } catch (err) {
    if (err instanceof InvalidAmountError) throw new ApiError(400, 'validation_failed', err.message);
    throw err;
  }
}

/** PATCH /admin/users/{userId}/subscription: the change, then the subscription as it now is. */
export async function changeSubscription(
  db: Db,
  userId: string,
  body: { status?: 'active' | 'inactive'; plan?: string; monthlyOperationLimit?: number; automationLimit?: number },
) {
  try {
    await updateSubscription(db, userId, { ...body, planId: body.plan });
  } catch (err) {
    if ((err as { code?: string }).code === '23503')
      throw new ApiError(400, 'validation_failed', `Unknown plan "${body.plan}"`);
    throw err;
  }
  const row = await getSubscription(db, userId);
  return {
    userId,
    plan: row.plan_id,
    status: row.status,
    monthlyOperationLimit: row.monthly_operation_limit,
    automationLimit: row.automation_limit,
  };
}

/** POST /admin/users/{userId}/rotate-key: a new API key (the old one stops working). */
export async function rotateAccountKey(db: Db, userId: string) {
  return { userId, apiKey: await rotateApiKey(db, userId) };
}

/** PUT /admin/users/{userId}/router-key: the account's own LLM router key, sealed (null removes it). */
export async function setAccountRouterKey(deps: Deps, userId: string, routerApiKey: string | null) {
  await setRouterApiKey(deps.db, deps.config.masterKey, userId, routerApiKey);
  return { userId, routerKeySet: routerApiKey !== null };
}
