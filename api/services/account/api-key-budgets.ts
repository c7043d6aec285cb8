import type { Db } from '../../../db/connect';
import { findApiKeyBudgets, setApiKeyBudgets, type ApiKeyBudgetsRecord } from '../../../db/repos/api-key-budgets';
import { microsToUsd } from '../../../lib/money';
import { notFound } from '../../errors';
import { credentialBudgetsMicros, type BudgetsUsd } from '../market/credentials';

/** ApiKeyBudgets: an API key's budgets for the account's own market calls, and what those calls spent. */
export interface ApiKeyBudgetsView {
  id: string;
  prefix: string;
  createdAt: string;
  budgetTotalUsd: number | null;
  budgetMonthlyUsd: number | null;
  spentUsd: number;
  spentThisMonthUsd: number;
}

const usdOrNull = (micros: number | null) => (micros === null ? null : microsToUsd(micros));

function apiKeyBudgetsView(record: ApiKeyBudgetsRecord): ApiKeyBudgetsView {
  return {
    id: record.id,
    prefix: record.prefix,
    createdAt: record.createdAt.toISOString(),
    budgetTotalUsd: usdOrNull(record.budgetTotalMicros),
    budgetMonthlyUsd: usdOrNull(record.budgetMonthlyMicros),
    spentUsd: microsToUsd(record.spentMicros),
    spentThisMonthUsd: microsToUsd(record.spentThisMonthMicros),
  };
}

/** GET /account/api-key and the console's API key page: the key, its budgets and what its own calls spent. */
export async function apiKeyBudgets(db: Db, userId: string, apiKeyId: string): Promise<ApiKeyBudgetsView> {
  const record = await findApiKeyBudgets(db, userId, apiKeyId);
  if (!record) throw notFound('API key');
  return apiKeyBudgetsView(record);
}

/**
 * Sets an API key's budgets (PATCH /account/api-key and the console): a value replaces the budget, null removes
 * it, an absent one stays; an amount not in whole micro-USD is 400 validation_failed naming the field. The next
 * call made with the key is bounded by them.
 */
export async function updateApiKeyBudgets(
  db: Db,
  userId: string,
  apiKeyId: string,
  body: BudgetsUsd,
): Promise<ApiKeyBudgetsView> {
  const budgets = credentialBudgetsMicros(body);
  if (!(await setApiKeyBudgets(db, userId, apiKeyId, budgets))) throw notFound('API key');
  return apiKeyBudgets(db, userId, apiKeyId);
}
