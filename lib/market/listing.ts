import { microsToUsd } from '../money';

/** A market tool as stored: money in integer micro-USD. */
export interface StoredMarketTool {
  toolName: string;
  displayName: string;
  /**
   * The upstream's own description, as validated. The approved-tools hash and the rug-pull gate
   * (tool-drift.ts) compare the upstream's current definitions with this, never with the
   * provider's text below.
   */
  description: string | null;
  /**
   * The description the provider wrote when listing the tool (scanned like upstream text at
   * submission), or null/absent to show the upstream's. What buyers and models read: describedAs().
   */
  providerDescription?: string | null;
  inputSchema: Record<string, unknown> | null;
  /**
   * Remote MCP: the tool exactly as the upstream listed it at validation (inputSchema with `$schema`,
   * outputSchema, title, annotations, icons, _meta), served unchanged in the hosted tools/list (the
   * provider's description and the pricing `_meta` added). Absent for OpenAPI tools and for entries
   * listed before it was kept: those serve `inputSchema` as today.
   */
  listing?: Record<string, unknown> | null;
  /** Per call under `tool_call_fixed`; null for other strategies. */
  clientPriceMicros: number | null;
  providerRevenueMicros: number | null;
  isEnabled: boolean;
}

export interface StoredPricingEvent {
  eventName: string;
  title: string | null;
  description: string | null;
  unitPriceMicros: number;
  providerRevenueMicros: number | null;
}

export type MonetizationStrategy = 'free' | 'provider_event' | 'tool_call_fixed';

/** The description buyers see in the catalogue and models read in tools/list: the provider's, else the upstream's. */
export function describedAs(tool: Pick<StoredMarketTool, 'description' | 'providerDescription'>): string | null {
  return tool.providerDescription ?? tool.description;
}

/** MarketToolDefinition as the API shows it (description: what buyers and models read). */
export function toolDefinition(tool: StoredMarketTool) {
  return {
    toolName: tool.toolName,
    displayName: tool.displayName,
    description: describedAs(tool),
    inputSchema: tool.inputSchema ?? {},
    ...(tool.clientPriceMicros !== null && { clientPriceUsd: microsToUsd(tool.clientPriceMicros) }),
    ...(tool.providerRevenueMicros !== null && { providerRevenueUsd: microsToUsd(tool.providerRevenueMicros) }),
    isEnabled: tool.isEnabled,
  };
}

/** MarketToolDefinition as the owner sees it: also the validated upstream description the rug-pull gate watches. */
export function ownerToolDefinition(tool: StoredMarketTool) {
  return { ...toolDefinition(tool), upstreamDescription: tool.description };
}

/** MarketPricingEvent as the API shows it. */
export function pricingEventDefinition(event: StoredPricingEvent) {
  return {
    eventName: event.eventName,
    ...(event.title !== null && { title: event.title }),
    description: event.description,
    unitPriceUsd: microsToUsd(event.unitPriceMicros),
    ...(event.providerRevenueMicros !== null && { providerRevenueUsd: microsToUsd(event.providerRevenueMicros) }),
  };
}

/** Stored values shown to their owner: the structure is kept, every value replaced by this mask. */
export const SECRET_MASK = '********';

export function maskValues(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskValues);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskValues(v)]));
  return SECRET_MASK;
}
