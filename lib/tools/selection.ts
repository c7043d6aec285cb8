import type { SourceParamValues, ToolDefinition, ToolSelection } from './types';

/** A CustomMcpSelectionRequest (contract, "MCP selections") as stored with a run; `params` are kept apart, sealed. */
export interface CustomMcpSelection {
  type: 'remote_mcp' | 'openapi';
  name?: string | null;
  source_url?: string | null;
  openapi_spec?: Record<string, unknown> | string | null;
  tool_names?: string[];
  tool_discovery_cache?: Record<string, unknown>;
}

/**
 * The tool-runtime view of a custom selection. For `openapi`, `openapi_spec` (object or JSON/YAML text)
 * is the document and `source_url`, if also given, the API's base URL; with no `openapi_spec`,
 * `source_url` is the URL of the document.
 */
export function selectionFromCustomMcp(stored: CustomMcpSelection, params: SourceParamValues): ToolSelection {
  const knownTools = cachedTools(stored.tool_discovery_cache, stored.tool_names ?? []);
  const common = {
    name: stored.name ?? undefined,
    toolNames: stored.tool_names ?? [],
    params,
    ...(knownTools && { knownTools }),
  };
  if (stored.type === 'remote_mcp') return { type: 'remote_mcp', url: stored.source_url ?? undefined, ...common };
  const spec = stored.openapi_spec;
  if (spec === null || spec === undefined) return { type: 'openapi', url: stored.source_url ?? undefined, ...common };
  return {
    type: 'openapi',
    ...(typeof spec === 'string' ? { specText: spec } : { spec }),
    baseUrl: stored.source_url ?? undefined,
    ...common,
  };
}

/**
 * The tools of a `tool_discovery_cache` (a discovery response: `{tools: [{name, description, inputSchema}]}`)
 * when it is still usable: a well-formed, non-empty list that has every tool the selection names.
 * Null otherwise (the source is listed again).
 */
export function cachedTools(
  cache: Record<string, unknown> | undefined,
  toolNames: readonly string[],
): ToolDefinition[] | null {
  const tools = cache?.tools;
  if (!Array.isArray(tools) || tools.length === 0) return null;
  const valid = tools.every((t) => t && typeof t === 'object' && typeof (t as { name?: unknown }).name === 'string');
  if (!valid) return null;
  const definitions = (tools as Record<string, unknown>[]).map((t) => ({
    name: t.name as string,
    description: typeof t.description === 'string' ? t.description : null,
    inputSchema: t.inputSchema && typeof t.inputSchema === 'object' ? (t.inputSchema as Record<string, unknown>) : null,
    ...(t.annotations && typeof t.annotations === 'object'
      ? { annotations: t.annotations as ToolDefinition['annotations'] }
      : {}),
  }));
  const names = new Set(definitions.map((t) => t.name));
  return toolNames.every((name) => names.has(name)) ? definitions : null;
}
