import { findPublicMcpEntry } from '../../db/repos/market-mcp';
import { wholeMicrosCap } from '../../lib/market/caps';
import { MarketRuleError } from '../../lib/market/errors';
import { checkUserParams } from '../../lib/market/user-params-schema';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';

/** A `market_mcps` item of a custom agent, a single run or an automation. */
export interface MarketMcpSelection {
  mcp_id: string;
  tool_names: string[];
  params: Record<string, unknown>;
  /** The selection's cap per execution, in USD. */
  max_total_usd?: number;
}

/**
 * Every `market_mcps` item names an approved tool-market entry (400 `market_entry_not_found`), only
 * tools it offers (400 `market_tool_not_found`), and only the params it declares, valid for its
 * requiredUserParamsSchema (400 `invalid_params`, lib/market/user-params-schema.ts), and a cap
 * (max_total_usd) in whole micro-USD (400 `validation_failed` naming it: lib/market/caps.ts).
 */
export async function checkMarketMcps(deps: ApiDeps, selections: readonly MarketMcpSelection[]): Promise<void> {
  for (const [i, market] of selections.entries()) {
    const at = `body/market_mcps/${i}`;
    if (market.max_total_usd !== undefined) {
      try {
        wholeMicrosCap(market.max_total_usd, `market_mcps[${i}].max_total_usd`, `${at}/max_total_usd`);
      } catch (err) {
        if (err instanceof MarketRuleError) throw new ApiError(err.status, err.code, err.message, err.details);
        throw err;
      }
    }
    const entry = await findPublicMcpEntry(deps.db, market.mcp_id);
    if (!entry)
      throw new ApiError(400, 'market_entry_not_found', `No approved tool-market entry has the id ${market.mcp_id}`, [
        { path: `${at}/mcp_id`, message: 'not an approved market entry' },
      ]);
    const offered = new Set(
      (entry.approvedTools ?? entry.tools).filter((t) => t.isEnabled !== false).map((t) => t.toolName),
    );
    const unknown = market.tool_names.filter((name) => !offered.has(name));
    if (unknown.length) {
      throw new ApiError(
        400,
        'market_tool_not_found',
        `The market entry ${market.mcp_id} has no tool named ${unknown.join(', ')}`,
        unknown.map((name) => ({ path: `${at}/tool_names`, message: `no tool "${name}"` })),
      );
    }
    try {
      checkUserParams(entry.requiredUserParamsSchema, market.params ?? {}, `${at}/params`);
    } catch (err) {
      if (err instanceof MarketRuleError)
        throw new ApiError(err.status, err.code, `market_mcps[${i}]: ${err.message}`, err.details);
      throw err;
    }
  }
}
