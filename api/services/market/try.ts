import type { Db } from '../../../db/connect';
import type { Config } from '../../../lib/config';
import { callableTools, callMarketTool, type MarketToolCallOutcome } from '../../../lib/market/tool-call';
import type { NetworkPolicy } from '../../../lib/net/ssrf';
import { loadCallEntryCached, marketCallPath } from './call-path';
import { credentialPrincipal, needsParams, type MarketPrincipal } from './credential-check';

export type TryOutcome = { status: 'called'; outcome: MarketToolCallOutcome } | { status: 'refused'; problem: string };

/**
 * A call of one tool of a live entry by a signed-in consumer, as the hosted endpoint /mcp/{entryId}
 * makes it (the same call path, run and billing): with the consumer's own credential for the entry,
 * or, for an entry without parameters, as their API key (`api-key:<id>`, like a bearer API key).
 */
export function marketToolTrier(deps: { db: Db; config: Config; policy: NetworkPolicy }) {
  const market = deps.config.market;
  const { callDeps, consumerRun } = marketCallPath(deps.db, market, deps.policy);

  return async function tryTool(input: {
    userId: string;
    apiKeyId: string;
    entryId: string;
    toolName: string;
    args: Record<string, unknown>;
    /** An MCP client credential (mcpc1.…), or null to call as the API key (entries without parameters only). */
    credential: string | null;
  }): Promise<TryOutcome> {
    const entry = await loadCallEntryCached(deps.db, deps.config.masterKey, input.entryId);
    if (!entry) return { status: 'refused', problem: 'This entry is not live (not approved, or disabled)' };
    let principal: MarketPrincipal;
    if (input.credential) {
      const opened = await credentialPrincipal(deps.db, deps.config.masterKey, entry, input.credential);
      if ('problem' in opened) return { status: 'refused', problem: opened.problem };
      // A credential is the consumer's own: another account's is refused here (its owner is billed otherwise).
      if (opened.principal.userId !== input.userId)
        return { status: 'refused', problem: 'This credential belongs to another account' };
      principal = opened.principal;
    } else {
      if (needsParams(entry.requiredUserParamsSchema))
        return { status: 'refused', problem: 'This entry needs parameters: use a credential made for it' };
      principal = { userId: input.userId, selectionId: `api-key:${input.apiKeyId}`, params: {}, capMicros: null };
    }
    if (!callableTools(entry).some((tool) => tool.toolName === input.toolName))
      return { status: 'refused', problem: 'This entry has no such tool' };
    const outcome = await callMarketTool(callDeps, {
      consumerId: principal.userId,
      entry,
      toolName: input.toolName,
      args: input.args,
      consumerParams: principal.params,
      selectionId: principal.selectionId,
      // Billed as the same consumer's call through the hosted endpoint is.
      ...consumerRun(
        { consumerId: principal.userId, selectionId: principal.selectionId, capMicros: principal.capMicros },
        entry,
      ),
    });
    return { status: 'called', outcome };
  };
}
