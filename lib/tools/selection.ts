import type { SourceParamValues, ToolSelection } from './types';

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
  const common = { name: stored.name ?? undefined, toolNames: stored.tool_names ?? [], params };
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
