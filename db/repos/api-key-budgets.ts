import { sql } from 'kysely';
import type { Db } from '../connect';
import { monthStartUtc, type CredentialBudgets } from './market-credentials';

/**
 * Budgets of an API key for the account's own market calls (migration 0030): the calls made with the key itself
 * (a bearer API key at /mcp/{entryId}, "Try a tool" in the console), whose runs' selection is `api-key:<id>`.
 * acquire_market_run enforces them in the statement that takes each call's hold, as it does a credential's.
 */
export interface ApiKeyBudgetsRecord extends CredentialBudgets {
  id: string;
  /** The key's first characters (sk_live_…), enough to tell keys apart; never the key. */
  prefix: string;
  createdAt: Date;
  /** What the key's own calls were charged, in all and this calendar month (UTC; a run counts in the month it opened). */
  spentMicros: number;
  spentThisMonthMicros: number;
}

/** The selection id of the account's own calls made with an API key (as the hosted endpoint and try a tool set it). */
export const apiKeySelection = (apiKeyId: string) => `api-key:${apiKeyId}`;

const nullableMicros = (value: number | string | null) => (value === null ? null : Number(value));

/** A live API key of the account with its budgets and what its calls spent, or null (no such live key). */
export async function findApiKeyBudgets(
  db: Db,
  userId: string,
  apiKeyId: string,
  now = new Date(),
): Promise<ApiKeyBudgetsRecord | null> {
  const month = monthStartUtc(now);
  const selection = apiKeySelection(apiKeyId);
  const row = await db
    .selectFrom('api_keys as k')
    .where('k.id', '=', apiKeyId)
    .where('k.user_id', '=', userId)
    .where('k.revoked_at', 'is', null)
    .select([
      'k.id',
      'k.key_prefix',
      'k.created_at',
      'k.budget_total_micros',
      'k.budget_monthly_micros',
      sql<string>`(select coalesce(sum(r.charged_micros), 0)::text from market_runs r
                    where r.selection_id = ${selection} and r.job_id is null and r.consumer_id = k.user_id)`.as(
        'spent',
      ),
      sql<string>`(select coalesce(sum(r.charged_micros), 0)::text from market_runs r
                    where r.selection_id = ${selection} and r.job_id is null and r.consumer_id = k.user_id
                      and r.created_at >= ${month})`.as('spent_month'),
    ])
    .executeTakeFirst();
  if (!row) return null;
  return {
    id: row.id,
    prefix: row.key_prefix,
    createdAt: new Date(row.created_at),
    budgetTotalMicros: nullableMicros(row.budget_total_micros),
    budgetMonthlyMicros: nullableMicros(row.budget_monthly_micros),
    spentMicros: Number(row.spent),
    spentThisMonthMicros: Number(row.spent_month),
  };
}

/**
 * Sets a live API key's budgets (undefined: unchanged; null: none). The next call made with the key is bounded by
 * them (the acquire statement reads them on every call). False when the account has no such live key.
 */
export async function setApiKeyBudgets(
  db: Db,
  userId: string,
  apiKeyId: string,
  budgets: Partial<CredentialBudgets>,
): Promise<boolean> {
  const changes = {
    ...(budgets.budgetTotalMicros !== undefined && { budget_total_micros: budgets.budgetTotalMicros }),
    ...(budgets.budgetMonthlyMicros !== undefined && { budget_monthly_micros: budgets.budgetMonthlyMicros }),
  };
  let query = db
    .updateTable('api_keys')
    .where('id', '=', apiKeyId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  // Nothing to change: the key is still looked up (a revoked or foreign key is refused all the same).
  query = Object.keys(changes).length ? query.set(changes) : query.set({ id: apiKeyId });
  return (await query.returning('id').executeTakeFirst()) !== undefined;
}
