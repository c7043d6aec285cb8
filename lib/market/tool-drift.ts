import { canonicalJson } from './canonical-json';
import { toolListHash, type FingerprintTool } from './fingerprint';
import type { StoredMarketTool } from './listing';

/**
 * The rug-pull gate's comparison: the approved tools of an entry against what its upstream lists
 * now. Only approved tools matter (a provider may offer more tools than it listed); each approved
 * tool is unchanged, changed (name kept, description and/or input schema differ) or missing.
 */
export interface ToolDrift {
  toolName: string;
  change: 'changed' | 'missing';
  /** What differs, with the approved and the upstream value of each. */
  fields: { field: 'description' | 'inputSchema' | 'outputSchema'; approved: unknown; upstream: unknown }[];
}

export interface DriftReport {
  /** toolListHash of the upstream tools restricted to the approved names. */
  upstreamHash: string;
  /** The approved list's hash (mcp_market_details.approved_tools_hash). */
  approvedHash: string;
  drifted: ToolDrift[];
}

const fingerprintOf = (tool: StoredMarketTool): FingerprintTool => ({
  name: tool.toolName,
  description: tool.description,
  inputSchema: tool.inputSchema,
});

/** An upstream tool as the gate reads it: its fingerprinted fields, and (remote MCP) the tool exactly as listed. */
export type UpstreamTool = FingerprintTool & { listing?: Record<string, unknown> | object };

const listed = (
  listing: Record<string, unknown> | object | null | undefined,
  key: 'inputSchema' | 'outputSchema',
): unknown => (listing as Record<string, unknown> | undefined)?.[key] ?? null;

/**
 * Each approved tool against the upstream's: the description and the input schema as models get them
 * (every entry); for a tool approved with its exact MCP listing (what tools/list serves), the input
 * schema exactly as listed (with its `$schema` dialect) and the output schema (what results are
 * checked against) too.
 */
export function compareToolLists(
  approved: readonly StoredMarketTool[],
  upstream: readonly UpstreamTool[],
): DriftReport {
  const names = new Set(approved.map((t) => t.toolName));
  const current = new Map(upstream.filter((t) => names.has(t.name)).map((t) => [t.name, t]));
  const drifted: ToolDrift[] = [];
  for (const tool of approved) {
    const now = current.get(tool.toolName);
    if (!now) {
      drifted.push({ toolName: tool.toolName, change: 'missing', fields: [] });
      continue;
    }
    const fields: ToolDrift['fields'] = [];
    if ((now.description ?? null) !== (tool.description ?? null))
      fields.push({ field: 'description', approved: tool.description ?? null, upstream: now.description ?? null });
    if (canonicalJson(now.inputSchema ?? null) !== canonicalJson(tool.inputSchema ?? null)) {
      fields.push({ field: 'inputSchema', approved: tool.inputSchema ?? null, upstream: now.inputSchema ?? null });
    } else if (
      tool.listing &&
      canonicalJson(listed(now.listing, 'inputSchema') ?? now.inputSchema ?? null) !==
        canonicalJson(listed(tool.listing, 'inputSchema'))
    ) {
      fields.push({
        field: 'inputSchema',
        approved: listed(tool.listing, 'inputSchema'),
        upstream: listed(now.listing, 'inputSchema'),
      });
    }
    if (
      tool.listing &&
      canonicalJson(listed(now.listing, 'outputSchema')) !== canonicalJson(listed(tool.listing, 'outputSchema'))
    ) {
      fields.push({
        field: 'outputSchema',
        approved: listed(tool.listing, 'outputSchema'),
        upstream: listed(now.listing, 'outputSchema'),
      });
    }
    if (fields.length) drifted.push({ toolName: tool.toolName, change: 'changed', fields });
  }
  return {
    upstreamHash: toolListHash([...current.values()]),
    approvedHash: toolListHash(approved.map(fingerprintOf)),
    drifted,
  };
}
