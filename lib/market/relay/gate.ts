import { createHash } from 'node:crypto';
import { mcpHeaders } from '../../tools/consumer-params';
import { ToolSourceError } from '../../tools/errors';
import { connectAndList } from '../../tools/source';
import { parseSourceUrl, preflightSourceUrl } from '../../tools/network';
import type { SourceParamValues, ToolDefinition } from '../../tools/types';
import { confineConsumerParams, type ConfinedParams } from '../call-params';
import { failurePhrase } from '../consumer-errors';
import type { StoredMarketTool } from '../listing';
import { compareToolLists, type DriftReport } from '../tool-drift';
import type { MarketCallEntry, MarketToolCallDeps } from '../tool-call';
import { PrincipalRefusedError, type Ended, type RelayedCall } from './call';

/** What passed the gate: the approved tool called, the consumer's confined params, and the upstream's list (remote MCP). */
export interface Passed {
  tool: StoredMarketTool;
  consumer: Extract<ConfinedParams, { ok: true }>;
  /** The upstream's current tool list (remote MCP), handed to the runtime so it does not list them again. */
  known: ToolDefinition[] | undefined;
}

/** The approved, enabled tools of an entry (what tools/list shows and what may be called). */
export function callableTools(entry: Pick<MarketCallEntry, 'approvedTools'>): StoredMarketTool[] {
  return entry.approvedTools.filter((tool) => tool.isEnabled);
}

/**
 * The gate, before anything is held or charged: an approved, enabled tool of the entry, params the consumer
 * may give (only what the entry declares, within its enums, and for a remote MCP no header a consumer may not
 * set), and the rug-pull gate (remote MCP): the upstream's list compared with the approved one; a changed or
 * missing tool is refused (and, in the provider's own view, the entry flagged for review).
 */
export async function passGate(call: RelayedCall): Promise<Passed | Ended> {
  const { deps, request } = call;
  const { entry } = request;
  const tool = callableTools(entry).find((t) => t.toolName === request.toolName);
  if (!tool) return call.refuse('unknown_tool', `"${request.toolName}" is not an approved tool of this market entry`);
  const consumer = confineConsumerParams(entry.requiredUserParamsSchema, request.consumerParams);
  if (!consumer.ok) return call.refuse('invalid_params', consumer.message);
  if (entry.type !== 'remote_mcp') return { tool, consumer, known: undefined };
  try {
    mcpHeaders({ consumerParams: consumer.values });
  } catch (error) {
    if (error instanceof ToolSourceError && error.code === 'invalid_params')
      return call.refuse('invalid_params', `${error.message}. Nothing was sent or charged.`);
    throw error;
  }

  // The rug-pull gate.
  let view: Awaited<ReturnType<typeof upstreamTools>>;
  try {
    // A cold list is fetched from the provider's server: only for a caller that may still call.
    view = await upstreamTools(deps, entry, consumer.values, request.confirmPrincipal);
  } catch (error) {
    if (error instanceof PrincipalRefusedError) throw error;
    const why = error instanceof ToolSourceError ? failurePhrase(error) : "the provider's server could not be reached";
    return call.refuse(
      'upstream_unavailable',
      `The provider's server could not be reached to check its tools (nothing was charged): ${why}`,
    );
  }
  const report = comparedToolLists(entry.approvedTools, view.tools);
  // Only the provider's own view flags the entry: a list fetched with a consumer's values refuses that consumer's call alone.
  if (report.drifted.length && view.providerView) await deps.store.flagDrift(entry, report);
  const drift = report.drifted.find((d) => d.toolName === tool.toolName);
  if (drift) {
    const what =
      drift.change === 'missing'
        ? 'is no longer offered by the provider'
        : `changed since it was approved (${drift.fields.map((f) => f.field).join(', ')})`;
    return call.refuse(
      'tool_changed',
      `"${tool.toolName}" ${what}; it is refused until the market reviews the change. Nothing was charged.`,
    );
  }
  return { tool, consumer, known: view.tools };
}

/**
 * The upstream's current tool list (cached), and whether it is the provider's view (fetched with staticConfig only).
 * `confirmPrincipal` (a caller whose credential check is deferred to the run's acquire) is awaited before the
 * provider's server is asked: a revoked credential causes no upstream request at all.
 */
async function upstreamTools(
  deps: MarketToolCallDeps,
  entry: MarketCallEntry,
  consumerParams: SourceParamValues,
  confirmPrincipal: (() => Promise<void>) | undefined,
): Promise<{ tools: ToolDefinition[]; providerView: boolean }> {
  const consumerOnly = `${entry.submissionId}#lists-to-consumers-only`;
  const cached = deps.toolLists.get(entry.submissionId);
  if (cached) return { tools: cached, providerView: true };
  const url = parseSourceUrl(entry.remoteMcpUrl ?? '', 'The MCP server URL');
  preflightSourceUrl(url, deps.runtime.policy);
  const list = async (headers: Record<string, string>) => {
    await confirmPrincipal?.();
    const { session, tools } = await connectAndList(url, headers, deps.runtime);
    await session.close();
    return tools;
  };
  if (!deps.toolLists.get(consumerOnly) || Object.keys(consumerParams).length === 0) {
    try {
      const tools = await list(mcpHeaders({ params: entry.staticConfig }));
      deps.toolLists.set(entry.submissionId, tools);
      return { tools, providerView: true };
    } catch (error) {
      if (
        !(error instanceof ToolSourceError && error.code === 'auth_required') ||
        Object.keys(consumerParams).length === 0
      )
        throw error;
      deps.toolLists.set(consumerOnly, []);
    }
  }
  const key = `${entry.submissionId}#${createHash('sha256')
    .update(JSON.stringify(Object.entries(consumerParams).sort(([a], [b]) => a.localeCompare(b))))
    .digest('hex')}`;
  const hit = deps.toolLists.get(key);
  if (hit) return { tools: hit, providerView: false };
  const tools = await list(mcpHeaders({ params: entry.staticConfig, consumerParams }));
  deps.toolLists.set(key, tools);
  return { tools, providerView: false };
}

/**
 * compareToolLists of an entry version's approved tools and an upstream list, once per pair of lists:
 * both are held as the same objects while they are remembered (the entry cache, deps.toolLists) and
 * never changed, so every call in between gets the same report without comparing the schemas again.
 */
function comparedToolLists(approved: readonly StoredMarketTool[], upstream: readonly ToolDefinition[]): DriftReport {
  let byUpstream = comparedLists.get(approved);
  if (!byUpstream) {
    byUpstream = new WeakMap();
    comparedLists.set(approved, byUpstream);
  }
  let report = byUpstream.get(upstream);
  if (!report) {
    report = compareToolLists(approved, upstream);
    byUpstream.set(upstream, report);
  }
  return report;
}
const comparedLists = new WeakMap<readonly StoredMarketTool[], WeakMap<readonly ToolDefinition[], DriftReport>>();
