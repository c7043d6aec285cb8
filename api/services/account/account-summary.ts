import type { Db } from '../../../db/connect';
import { billingPeriod, monthlyOperations } from '../../../db/repos/jobs';
import { getWalletSummary } from '../../../db/repos/ledger';
import type { AuthenticatedUser } from '../../../db/repos/users';
import { microsToUsd } from '../../../lib/money';

/** The account as GET /account shows it (and the console's home page): plan, wallet and this period's usage. */
export async function accountSummary(db: Db, user: AuthenticatedUser) {
  const period = billingPeriod();
  const [operations, wallet] = await Promise.all([
    monthlyOperations(db, user.userId, period),
    getWalletSummary(db, user.userId),
  ]);
  return {
    userId: user.userId,
    email: user.email,
    subscription: user.subscription,
    balanceUsd: microsToUsd(wallet.balanceMicros),
    heldUsd: microsToUsd(wallet.heldMicros),
    availableUsd: microsToUsd(wallet.availableMicros),
    usage: { period, operations },
  };
}
