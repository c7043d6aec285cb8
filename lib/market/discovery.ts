/**
 * What discovering a tool source yields, and the signature of the function that does it. The tool
 * runtime (lib/tools) provides the implementation; the market only reads its result.
 */
export type MarketSourceType = 'remote_mcp' | 'openapi';

/** McpMarketDiscoveryRequest, with `params` (temporary auth values) kept apart: they are never stored. */
export interface DiscoveryRequest {
  type: MarketSourceType;
  /** Remote MCP endpoint, or the address of a hosted OpenAPI document. */
  url?: string | null;
  openapiBaseUrl?: string | null;
  specText?: string | null;
  spec?: Record<string, unknown> | null;
  params?: Record<string, unknown>;
}

export interface DiscoveredTool {
  name: string;
  description: string | null;
  inputSchema: Record<string, unknown> | null;
  annotations?: Record<string, unknown> | null;
  /**
   * Remote MCP: the tool exactly as the server listed it (inputSchema with `$schema`, outputSchema,
   * title, annotations, icons, _meta, ...). Not fingerprinted; a listing stores it, and the hosted
   * endpoint serves it in tools/list.
   */
  listing?: Record<string, unknown>;
}

/** A parameter the source needs (auth header, API key, path variable of the server URL, ...). */
export interface DiscoveryParam {
  name: string;
  /** Where it goes: header, query, path, cookie, bearer, ... (informational). */
  in?: string;
  required?: boolean;
  secret?: boolean;
  description?: string | null;
}

/** A prompt a remote MCP server lists (prompts/list): its text is read by the model like a tool's. */
export interface DiscoveredPrompt {
  name: string;
  title?: string;
  description?: string;
  arguments?: { name: string; title?: string; description?: string; required?: boolean }[];
}

/** A resource a remote MCP server lists (resources/list): its name, title and description reach the model. */
export interface DiscoveredResource {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

export interface Discovery {
  title: string | null;
  description: string | null;
  tools: DiscoveredTool[];
  params: DiscoveryParam[];
  /** Remote MCP: the server's prompts and resources, when it offers them (scanned like tools; not fingerprinted). */
  prompts?: DiscoveredPrompt[];
  resources?: DiscoveredResource[];
  /**
   * True when the source refused discovery for lack of credentials (401/403 from the MCP server,
   * or an OpenAPI document whose security requires values the request did not give).
   */
  authRequired?: boolean;
  /**
   * How the source was reached (informational, not fingerprinted): remote MCP transport, protocol
   * revision and server name/version; OpenAPI specification version and the base URL calls go to.
   */
  source?: Record<string, unknown>;
}

/** For an OpenAPI document fetched from `url`, discovery hands back the document itself: the fingerprint covers it. */
export interface DiscoveryResult extends Discovery {
  openapiDocument?: Record<string, unknown>;
}

/** The tool runtime's discovery: SSRF-guarded, HTTPS-only (allowlisted hosts aside), external $refs off. */
export type Discover = (request: DiscoveryRequest) => Promise<DiscoveryResult>;

/**
 * A source discovery refused or could not reach: `code` is what the API answers with
 * (ssrf_blocked, insecure_url, upstream_unreachable, invalid_source, ...), `status` its HTTP status
 * (400 for refusals and bad sources, 502 for upstream failures, 504 for an upstream timeout).
 * `retryable` failures (the upstream may come back) are tried again by the workflow before the
 * API answers with them.
 */
export class DiscoveryError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: 400 | 502 | 503 | 504 = 400,
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'DiscoveryError';
  }
}

/** The tools as the report and the fingerprint read them: no missing fields, nothing extra. */
export function normalisedDiscovery(raw: Discovery): Discovery {
  return {
    title: raw.title ?? null,
    description: raw.description ?? null,
    tools: (raw.tools ?? []).map((tool) => ({
      name: String(tool.name),
      description: tool.description ?? null,
      inputSchema: tool.inputSchema ?? null,
      ...(tool.annotations ? { annotations: tool.annotations } : {}),
      ...(tool.listing && typeof tool.listing === 'object' ? { listing: tool.listing } : {}),
    })),
    params: (raw.params ?? []).map((param) => ({
      name: String(param.name),
      ...(param.in !== undefined && { in: param.in }),
      required: param.required ?? false,
      secret: param.secret ?? false,
      description: param.description ?? null,
    })),
    ...(raw.prompts?.length ? { prompts: raw.prompts } : {}),
    ...(raw.resources?.length ? { resources: raw.resources } : {}),
    ...(raw.authRequired ? { authRequired: true } : {}),
    ...(raw.source ? { source: raw.source } : {}),
  };
}
