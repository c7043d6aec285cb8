import type { Db } from '../../../db/connect';
import { findPublicMcpEntry, type McpSubmission } from '../../../db/repos/market-mcp';
import type { AgentMarketToolSelection } from '../../../lib/market/agent-submission';
import { microsToUsd, usdCapToMicrosFloor } from '../../../lib/money';

/** AgentMarketToolPricing: a market tool of an agent as consumers see it, with what its calls cost. */
export type MarketToolView = Awaited<ReturnType<ReturnType<typeof marketToolsViewer>>>[number];

/**
 * The market tools of agents with their prices (the marketTools of AgentMarketPublicEntry): the
 * selected tools of each listing, their prices or pricing events, and the agent's cap per run. Each
 * listing is read once per viewer (one request).
 */
export function marketToolsViewer(db: Db) {
  const entries = new Map<string, Promise<McpSubmission | null>>();
  const entry = (id: string) => {
    if (!entries.has(id)) entries.set(id, findPublicMcpEntry(db, id));
    return entries.get(id)!;
  };
  return (selections: readonly AgentMarketToolSelection[]) =>
    Promise.all(
      selections.map(async (selection) => {
        // The cap that bounds the runs (selectionCapMicros): one stored with more than 6 decimals, rounded down.
        const capMicros = selection.max_total_usd === undefined ? null : usdCapToMicrosFloor(selection.max_total_usd);
        const maxTotalUsd = capMicros === null ? null : microsToUsd(capMicros);
        const sub = await entry(selection.mcp_id);
        if (!sub) return { mcpId: selection.mcp_id, available: false, maxTotalUsd };
        const fixed = sub.monetizationStrategy === 'tool_call_fixed';
        const tools = (sub.approvedTools ?? sub.tools).filter(
          (t) => t.isEnabled && (selection.tool_names.length === 0 || selection.tool_names.includes(t.toolName)),
        );
        return {
          mcpId: sub.listingId,
          available: true,
          slug: sub.slug,
          name: sub.name,
          monetizationStrategy: sub.monetizationStrategy,
          tools: tools.map((t) => ({
            toolName: t.toolName,
            displayName: t.displayName,
            clientPriceUsd: fixed ? microsToUsd(t.clientPriceMicros ?? 0) : 0,
          })),
          pricingEvents: sub.pricingEvents.map((e) => ({
            eventName: e.eventName,
            description: e.description,
            unitPriceUsd: microsToUsd(e.unitPriceMicros),
          })),
          maxTotalUsd,
        };
      }),
    );
}
