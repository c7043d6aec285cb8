import { findMarketCredential } from '../../../db/repos/market-credentials';
import { searchPublicMcpEntries } from '../../../db/repos/market-mcp';
import { loadCallEntry } from '../../../db/repos/market-tool-calls';
import { findLiveMarketGrantFor } from '../../../db/repos/oauth';
import { openMcpCredential } from '../../../lib/market/credential';
import type { MarketCallEntry } from '../../../lib/market/tool-call';
import type { ApiDeps } from '../../deps';

type Deps = Pick<ApiDeps, 'db' | 'config'>;

/** The live listing an authorization is for (the resource the client named, or the person's choice), or null. */
export function consentListing(deps: Deps, entryId: string): Promise<MarketCallEntry | null> {
  return loadCallEntry(deps.db, deps.config.masterKey, entryId);
}

/** The live listings the person may choose from when the client named none (by name, `q` filtering). */
export async function listingChoices(deps: Pick<ApiDeps, 'db'>, q: string) {
  const { rows } = await searchPublicMcpEntries(
    deps.db,
    { q: q || undefined, sort: 'name' },
    { page: 1, pageSize: 50 },
  );
  return rows.map((row) => ({ entryId: row.listingId, name: row.name }));
}

/**
 * The newest live grant of this client for this listing (another device's): when it was made, the credential's
 * claims (its parameters and limit per run) and the budgets recorded with it; null when there is none.
 */
export async function previousGrant(deps: Deps, key: { userId: string; clientId: string; entryId: string }) {
  const grant = await findLiveMarketGrantFor(deps.db, key);
  if (!grant) return null;
  const claims = openMcpCredential(deps.config.masterKey, grant.credential);
  const recorded = claims ? await findMarketCredential(deps.db, key.userId, claims.id) : null;
  return { createdAt: grant.createdAt, claims, recorded };
}
