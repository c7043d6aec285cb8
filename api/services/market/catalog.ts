import type { Db } from '../../../db/connect';
import { findPurchase, searchPublicAgents, type AgentSubmission } from '../../../db/repos/market-agents';
import type { CatalogueFilter } from '../../../db/repos/market-listings';
import { searchPublicMcpEntries, type McpSubmission } from '../../../db/repos/market-mcp';
import type { PageRequest } from '../../../lib/pagination';
import { pricingEventDefinition, toolDefinition, type MonetizationStrategy } from '../../../lib/market/listing';
import { microsToUsd } from '../../../lib/money';
import type { MarketToolView } from './agent-tools';

/** Builds the URL of an uploaded icon from its object key. */
export type IconUrl = (key: string) => string;

const iconOf = (sub: { iconObjectKey: string | null; iconUrl: string | null }, iconUrl: IconUrl) =>
  sub.iconObjectKey ? iconUrl(sub.iconObjectKey) : sub.iconUrl;

/** McpMarketPublicEntry: what anyone sees of a live approved tool-market entry. */
export function toolEntryView(sub: McpSubmission, iconUrl: IconUrl) {
  const tools = (sub.approvedTools ?? sub.tools).filter((tool) => tool.isEnabled);
  return {
    id: sub.listingId,
    slug: sub.slug,
    type: sub.type,
    name: sub.name,
    description: sub.description,
    iconUrl: iconOf(sub, iconUrl),
    monetizationStrategy: sub.monetizationStrategy,
    requiredUserParamsSchema: sub.requiredUserParamsSchema,
    pricingEvents: sub.pricingEvents.map(pricingEventDefinition),
    tools: tools.map(toolDefinition),
  };
}

export type ToolEntryView = ReturnType<typeof toolEntryView>;

/** AgentMarketPublicEntry: what any caller sees of a live approved agent (no prompts, selection params, provider or review data). */
export function agentEntryView(
  sub: AgentSubmission,
  iconUrl: IconUrl,
  purchased: boolean,
  marketTools: MarketToolView[],
) {
  return {
    id: sub.listingId,
    slug: sub.slug,
    name: sub.name,
    description: sub.description,
    iconUrl: iconOf(sub, iconUrl),
    priceUsd: microsToUsd(sub.priceMicros),
    suggestedLlmProvider: sub.suggestedLlmProvider,
    suggestedLlmModel: sub.suggestedLlmModel,
    runMode: sub.runMode,
    allowTaskOverride: sub.allowTaskOverride,
    inputSchema: sub.inputSchema,
    structuredOutput: sub.structuredOutput,
    purchased,
    marketTools,
  };
}

export type AgentEntryView = ReturnType<typeof agentEntryView>;

/** Whether `userId` may run the agent without buying it now: its owner, a free agent, or bought before. */
export async function mayRunAgent(db: Db, agent: AgentSubmission, userId: string): Promise<boolean> {
  return (
    agent.ownerId === userId ||
    agent.priceMicros === 0 ||
    (await findPurchase(db, agent.listingId, userId)) !== undefined
  );
}

/** The tool market's public catalogue search (GET /mcp-market/mcps and the /market page). */
export function searchToolMarket(
  db: Db,
  filter: CatalogueFilter & { monetizationStrategy?: MonetizationStrategy },
  page: PageRequest,
) {
  return searchPublicMcpEntries(db, filter, page);
}

/** The agent market's public catalogue search (GET /agent-market/agents and the /market page). */
export function searchAgentMarket(db: Db, filter: CatalogueFilter & { paid?: boolean }, page: PageRequest) {
  return searchPublicAgents(db, filter, page);
}
