import { findMarketCredential } from '../../../db/repos/market-credentials';
import { findPublicMcpEntry } from '../../../db/repos/market-mcp';
import { listLiveMarketGrants, revokeMarketGrant } from '../../../db/repos/oauth';
import type { ApiDeps } from '../../deps';
import { credentialView } from '../market/credentials';

type Deps = Pick<ApiDeps, 'db' | 'config'>;

/** The market credential an OAuth grant holds (its budgets and what it spent), or null (a grant not linked). */
async function grantCredential(deps: Deps, userId: string, credentialId: string | null) {
  const record = credentialId ? await findMarketCredential(deps.db, userId, credentialId) : null;
  if (!record) return null;
  const view = credentialView(record);
  return {
    id: view.id,
    budgetMonthlyUsd: view.budgetMonthlyUsd,
    budgetTotalUsd: view.budgetTotalUsd,
    spentUsd: view.spentUsd,
    spentThisMonthUsd: view.spentThisMonthUsd,
  };
}

/** The account's OAuth grants (the console's connected apps): which client may call which listing, and its credential. */
export async function connectedApps(deps: Deps, userId: string) {
  const grants = await listLiveMarketGrants(deps.db, userId);
  const names = new Map<string, string>();
  for (const entryId of new Set(grants.map((g) => g.entryId))) {
    names.set(entryId, (await findPublicMcpEntry(deps.db, entryId))?.name ?? 'a listing no longer live');
  }
  return Promise.all(
    grants.map(async (g) => ({
      grantId: g.grantId,
      clientName: g.clientName ?? g.clientId,
      clientId: g.clientId,
      entryId: g.entryId,
      listing: names.get(g.entryId) ?? g.entryId,
      approvedAt: g.createdAt,
      device: g.device,
      lastUsedAt: g.lastUsedAt,
      credential: await grantCredential(deps, userId, g.credentialId),
    })),
  );
}

/** Revokes one of the account's grants (its tokens and credential end); false when the account has no such grant. */
export function revokeConnectedApp(deps: Deps, userId: string, grantId: string): Promise<boolean> {
  return revokeMarketGrant(deps.db, deps.config.masterKey, userId, grantId);
}
