import { loadCallEntryCached } from '../market/call-path';
import type { ApiDeps } from '../../deps';
import { ApiError } from '../../errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The approved, enabled market entry a protected resource's metadata describes, or 404. */
export async function protectedResourceEntry(deps: Pick<ApiDeps, 'db' | 'config'>, entryId: string) {
  const entry = UUID.test(entryId)
    ? await loadCallEntryCached(deps.db, deps.config.masterKey, entryId.toLowerCase())
    : null;
  if (!entry) throw new ApiError(404, 'not_found', 'Market entry not found (not approved, or disabled)');
  return entry;
}
