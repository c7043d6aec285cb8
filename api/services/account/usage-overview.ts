import type { Db } from '../../../db/connect';
import { listAgentTransactions } from '../../../db/repos/agent-transactions';
import type { PageRequest } from '../../../lib/pagination';
import { listOpenHolds, spendPerCategory, spendPerDay, spendPerListing } from '../../../db/repos/spending';
import type { AuthenticatedUser } from '../../../db/repos/users';
import { microsToUsd } from '../../../lib/money';
import { accountSummary } from './account-summary';

/**
 * The console's usage page: the wallet, what was spent per day, category and listing over the last `days` days
 * (today included, from midnight UTC), the open holds, and a page of the account's transactions.
 */
export async function usageOverview(
  db: Db,
  user: AuthenticatedUser,
  options: { days: number; page: PageRequest; now?: Date },
) {
  const { userId } = user;
  const { days, page } = options;
  const now = options.now ?? new Date();
  const since = new Date(
    `${new Date(now.getTime() - (days - 1) * 86_400_000).toISOString().slice(0, 10)}T00:00:00.000Z`,
  );
  const [account, perDay, perCategory, perListing, holds, transactions] = await Promise.all([
    accountSummary(db, user),
    spendPerDay(db, userId, { from: since, to: now }),
    spendPerCategory(db, userId, since),
    spendPerListing(db, userId, since),
    listOpenHolds(db, userId),
    listAgentTransactions(db, userId, page),
  ]);
  return {
    email: account.email,
    money: { balanceUsd: account.balanceUsd, heldUsd: account.heldUsd, availableUsd: account.availableUsd },
    days,
    perDay: perDay.map((d) => ({ day: d.day, usd: microsToUsd(d.micros) })),
    perCategory: perCategory.map((c) => ({ ...c, usd: microsToUsd(c.micros) })),
    perListing: perListing.map((l) => ({ ...l, usd: microsToUsd(l.micros) })),
    holds: {
      ...holds,
      jobsUsd: holds.jobs.map((j) => microsToUsd(j.micros)),
      marketRunsUsd: holds.marketRuns.map((r) => microsToUsd(r.micros)),
    },
    transactions: {
      rows: transactions.transactions.map((t) => ({ ...t, costUsd: microsToUsd(t.cost_micros) })),
      page: page.page,
      totalPages: transactions.meta.totalPages,
    },
  };
}
