import { randomUUID } from 'node:crypto';
import type { Db } from '../connect';
import type { SubscriptionStatus } from '../schema';
import { generateApiKey, generateWebhookSecret, hashApiKey, seal, unseal } from '../../lib/crypto';
import { creditWallet } from './ledger';
import { createGenerationCache } from '../../lib/bounded-cache';

export interface NewUserInput {
  email: string;
  planId?: string;
  creditMicros?: number;
  monthlyOperationLimit?: number;
  automationLimit?: number;
}

export interface AuthenticatedUser {
  userId: string;
  email: string;
  subscription: { status: SubscriptionStatus; planId: string; monthlyOperationLimit: number; automationLimit: number };
}

export class UnknownPlanError extends Error {}
export class DuplicateEmailError extends Error {}

async function insertApiKey(
  db: Db,
  userId: string,
  budgets: { budget_total_micros: number | null; budget_monthly_micros: number | null } | null = null,
): Promise<string> {
  const apiKey = generateApiKey();
  await db
    .insertInto('api_keys')
    .values({
      id: randomUUID(),
      user_id: userId,
      key_hash: hashApiKey(apiKey),
      key_prefix: apiKey.slice(0, 12),
      ...budgets,
    })
    .execute();
  return apiKey;
}

export async function createUser(
  db: Db,
  masterKey: Buffer,
  input: NewUserInput,
): Promise<{ userId: string; apiKey: string }> {
  const userId = randomUUID();
  return db.transaction().execute(async (trx) => {
    const plan = await trx
      .selectFrom('plans')
      .selectAll()
      .where('id', '=', input.planId ?? 'starter')
      .executeTakeFirst();
    if (!plan) throw new UnknownPlanError(`Unknown plan "${input.planId}"`);
    const email = input.email.trim().toLowerCase();
    const existing = await trx.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
    if (existing) throw new DuplicateEmailError(`A user with email ${email} already exists`);
    await trx
      .insertInto('users')
      .values({
        id: userId,
        email,
        webhook_secret_sealed: seal(masterKey, generateWebhookSecret(), `webhook:${userId}`),
      })
      .execute();
    await trx
      .insertInto('subscriptions')
      .values({
        user_id: userId,
        plan_id: plan.id,
        status: 'active',
        monthly_operation_limit: input.monthlyOperationLimit ?? plan.monthly_operation_limit,
        automation_limit: input.automationLimit ?? plan.automation_limit,
      })
      .execute();
    await trx.insertInto('wallets').values({ user_id: userId, balance_micros: 0 }).execute();
    const apiKey = await insertApiKey(trx, userId);
    if (input.creditMicros && input.creditMicros > 0) {
      await creditWallet(trx, {
        userId,
        amountMicros: input.creditMicros,
        idempotencyKey: `signup-credit:${userId}`,
        description: 'Initial credit',
      });
    }
    return { userId, apiKey };
  });
}

export async function findUserByApiKey(db: Db, apiKey: string): Promise<AuthenticatedUser | null> {
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .innerJoin('subscriptions', 'subscriptions.user_id', 'users.id')
    .select([
      'users.id as userId',
      'users.email',
      'subscriptions.status',
      'subscriptions.plan_id',
      'subscriptions.monthly_operation_limit',
      'subscriptions.automation_limit',
    ])
    .where('api_keys.key_hash', '=', hashApiKey(apiKey))
    .where('api_keys.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  return {
    userId: row.userId,
    email: row.email,
    subscription: {
      status: row.status,
      planId: row.plan_id,
      monthlyOperationLimit: row.monthly_operation_limit,
      automationLimit: row.automation_limit,
    },
  };
}

/**
 * API keys → users, remembered for a few seconds so that a client's every request does not cost a
 * three-table join. Correctness: a rotation or subscription change made through this process
 * (admin API, CLI through it) forgets every remembered key at once — a lookup that raced with it is
 * not stored (generation check); one made by another process (a second API replica) takes effect
 * there within API_KEY_CACHE_TTL_MS. Unknown keys are never remembered. Admission re-reads the
 * subscription in its own transaction, so a deactivated account admits no job either way.
 */
export const API_KEY_CACHE_TTL_MS = 5_000;
let apiKeyCacheGeneration = 0;
const apiKeyCache = createGenerationCache<AuthenticatedUser>({
  ttlMs: API_KEY_CACHE_TTL_MS,
  maxEntries: 10_000,
  generation: () => apiKeyCacheGeneration,
});

export function findUserByApiKeyCached(db: Db, apiKey: string): Promise<AuthenticatedUser | null> {
  return apiKeyCache(db, hashApiKey(apiKey), () => findUserByApiKey(db, apiKey));
}

/**
 * Bumped whenever any account's keys or subscription change through this process: every cache of
 * key validity (this one, and the hosted market endpoint's in db/repos/market-tool-calls.ts) drops
 * what it remembered under an older generation.
 */
export function apiKeysGeneration(): number {
  return apiKeyCacheGeneration;
}

/** Forgets every remembered key (after the user's keys or subscription changed). */
export function forgetCachedApiKeys(): void {
  apiKeyCacheGeneration++;
}

export async function userExists(db: Db, userId: string): Promise<boolean> {
  return !!(await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst());
}

/**
 * Revokes every key of the user and issues a new one, which keeps the budgets of the newest key it replaces
 * (migration 0030: a rotation must not lift the bound the account set on its own calls) and starts with nothing spent.
 */
export async function rotateApiKey(db: Db, userId: string): Promise<string> {
  forgetCachedApiKeys(); // lookups already under way are not stored
  try {
    return await db.transaction().execute(async (trx) => {
      const revoked = await trx
        .updateTable('api_keys')
        .set({ revoked_at: new Date() })
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .returning(['created_at', 'budget_total_micros', 'budget_monthly_micros'])
        .execute();
      const newest = revoked.sort((a, b) => new Date(b.created_at).getTime() - new Date(a.created_at).getTime())[0];
      return insertApiKey(
        trx,
        userId,
        newest
          ? { budget_total_micros: newest.budget_total_micros, budget_monthly_micros: newest.budget_monthly_micros }
          : null,
      );
    });
  } finally {
    forgetCachedApiKeys();
  }
}

export async function updateSubscription(
  db: Db,
  userId: string,
  change: { status?: SubscriptionStatus; monthlyOperationLimit?: number; automationLimit?: number; planId?: string },
): Promise<boolean> {
  forgetCachedApiKeys();
  const result = await db
    .updateTable('subscriptions')
    .set({
      ...(change.status && { status: change.status }),
      ...(change.planId && { plan_id: change.planId }),
      ...(change.monthlyOperationLimit !== undefined && { monthly_operation_limit: change.monthlyOperationLimit }),
      ...(change.automationLimit !== undefined && { automation_limit: change.automationLimit }),
      updated_at: new Date(),
    })
    .where('user_id', '=', userId)
    .executeTakeFirst();
  forgetCachedApiKeys();
  return result.numUpdatedRows > 0n;
}

/** The user's subscription row. */
export function getSubscription(db: Db, userId: string) {
  return db.selectFrom('subscriptions').selectAll().where('user_id', '=', userId).executeTakeFirstOrThrow();
}

/** The subscription's status, when the user has a subscription. */
export async function findSubscriptionStatus(db: Db, userId: string): Promise<SubscriptionStatus | undefined> {
  const subscription = await db
    .selectFrom('subscriptions')
    .select('status')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return subscription?.status;
}

/** The plan's automation limit, read under a lock on the subscription (held to the end of `trx`). */
export async function lockAutomationLimit(trx: Db, userId: string): Promise<number> {
  const subscription = await trx
    .selectFrom('subscriptions')
    .select('automation_limit')
    .where('user_id', '=', userId)
    .forUpdate()
    .executeTakeFirstOrThrow();
  return subscription.automation_limit;
}

export async function getWebhookSecret(db: Db, masterKey: Buffer, userId: string): Promise<string> {
  const row = await db
    .selectFrom('users')
    .select('webhook_secret_sealed')
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  return unseal(masterKey, row.webhook_secret_sealed, `webhook:${userId}`);
}

export async function setRouterApiKey(
  db: Db,
  masterKey: Buffer,
  userId: string,
  routerKey: string | null,
): Promise<void> {
  await db
    .updateTable('users')
    .set({ router_api_key_sealed: routerKey ? seal(masterKey, routerKey, `router:${userId}`) : null })
    .where('id', '=', userId)
    .execute();
}

export async function getRouterApiKey(db: Db, masterKey: Buffer, userId: string): Promise<string | null> {
  const row = await db.selectFrom('users').select('router_api_key_sealed').where('id', '=', userId).executeTakeFirst();
  return row?.router_api_key_sealed ? unseal(masterKey, row.router_api_key_sealed, `router:${userId}`) : null;
}

/** The email addresses of accounts by id (the catalogue names a listing's provider by its domain). */
export async function findEmails(db: Db, userIds: readonly string[]): Promise<Map<string, string>> {
  if (userIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('users')
    .select(['id', 'email'])
    .where('id', 'in', [...new Set(userIds)])
    .execute();
  return new Map(rows.map((row) => [row.id, row.email]));
}
