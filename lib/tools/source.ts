import { ProtocolError, ProtocolErrorCode, SdkError, SdkHttpError } from '@modelcontextprotocol/client';
import { mcpHeaders } from './consumer-params';
import { callErrorFromNetwork, callErrorFromSource, scrubSecrets, ToolCallError, ToolSourceError } from './errors';
import { connectMcp, listMcpTools, type McpSession } from './mcp';
import { toolFetch, parseSourceUrl, preflightSourceUrl, type ToolNetworkDeps } from './network';
import { callOperation, isRepeatableOperation, resolveBaseUrl } from './openapi-call';
import { loadOpenApiDocument, type OpenApiDocument } from './openapi-document';
import { buildOpenApiModel, type OpenApiModel, type OpenApiOperation } from './openapi-tools';
import { DEFAULT_MAX_BINARY_BYTES, DEFAULT_MAX_RESULT_BYTES, mcpToolResult, oversizedBinary } from './result';
import type { ToolCallResult, ToolDefinition, ToolSelection, ToolSourceSpec, ToolSourceType } from './types';

/** Limits of the tool runtime, on top of the network rules. */
export interface ToolRuntimeDeps extends ToolNetworkDeps {
  /** Opening a source: MCP handshake and tool list, or loading an OpenAPI document (default 20 s). */
  connectTimeoutMs?: number;
  /** One tool call (default 120 s). */
  callTimeoutMs?: number;
  /** Tool results are cut to this many bytes, with a note (default 50 KB). */
  maxResultBytes?: number;
  /**
   * A binary block of an MCP result (image, audio, an embedded resource's blob) larger than this many
   * decoded bytes fails the call (`too_large`) instead of being passed on (default 4 MB).
   */
  maxBinaryBytes?: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;
const MAX_TOOLS = 1000;

/** An opened tool source: its tools, and calls to them. */
export interface ToolSource {
  readonly type: ToolSourceType;
  readonly tools: ToolDefinition[];
  /**
   * Whether calling this tool twice is harmless (MCP `readOnlyHint` or `idempotentHint`; OpenAPI
   * GET/HEAD/OPTIONS/PUT/DELETE), which is what allows retrying a call that may have reached it.
   */
  isRepeatable(toolName: string): boolean;
  /**
   * Calls a tool. A tool that ran and failed is a result with `isError`; a call that got no tool result
   * throws ToolCallError, whose `retryable` applies the rule: resend only what provably did not reach
   * the upstream, or what is repeatable.
   */
  call(toolName: string, args: unknown, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<ToolCallResult>;
  close(): Promise<void>;
}

/** Opens a selection (throws ToolSourceError when it cannot be opened). */
export async function openToolSource(selection: ToolSelection, deps: ToolRuntimeDeps): Promise<ToolSource> {
  const secrets = [...Object.values(selection.params ?? {}), ...Object.values(selection.headers ?? {})];
  try {
    const source = selection.type === 'remote_mcp' ? await openMcpSource(selection, deps) : await openOpenApiSource(selection, deps);
    return scrubbing(source, secrets);
  } catch (error) {
    if (error instanceof ToolSourceError) throw new ToolSourceError(error.code, scrubSecrets(error.message, secrets), error.transient);
    throw error;
  }
}

/** The same as openToolSource, with a source that cannot be opened reported as a call failure (the tool was not invoked). */
export async function openToolSourceForCall(selection: ToolSelection, deps: ToolRuntimeDeps): Promise<ToolSource> {
  try {
    return await openToolSource(selection, deps);
  } catch (error) {
    if (error instanceof ToolSourceError) throw callErrorFromSource(error);
    throw error;
  }
}

function scrubbing(source: ToolSource, secrets: unknown[]): ToolSource {
  return {
    type: source.type,
    tools: source.tools,
    isRepeatable: (name) => source.isRepeatable(name),
    close: () => source.close(),
    async call(name, args, options) {
      try {
        return await source.call(name, args, options);
      } catch (error) {
        if (error instanceof ToolCallError) {
          const scrubbed = new ToolCallError(error.kind, scrubSecrets(error.message, secrets), error.reached, source.isRepeatable(name));
          throw scrubbed;
        }
        throw error;
      }
    },
  };
}

function selectTools(tools: ToolDefinition[], names: string[] | undefined): ToolDefinition[] {
  if (tools.length > MAX_TOOLS) throw new ToolSourceError('source_too_large', `The source offers ${tools.length} tools; at most ${MAX_TOOLS} are supported`);
  if (!names || names.length === 0) return tools;
  const wanted = new Set(names);
  return tools.filter((tool) => wanted.has(tool.name));
}

function unknownTool(name: string, tools: ToolDefinition[]): ToolCallError {
  const known = tools.map((tool) => tool.name).slice(0, 50).join(', ');
  return new ToolCallError('unknown_tool', `There is no tool "${name}" in this source (tools: ${known || 'none'})`, false, false);
}

// ---- remote MCP ---------------------------------------------------------------------------------

export interface OpenedMcp {
  session: McpSession;
  tools: ToolDefinition[];
}

/**
 * Connects (Streamable HTTP, else legacy SSE) and lists the tools; the caller closes the session.
 * `headers` are sent with every request (see mcpHeaders: the owner's params, a consumer's, the platform's).
 */
export async function connectAndList(
  url: URL,
  headers: Record<string, string>,
  deps: ToolRuntimeDeps,
  onConnected?: (request: { url: URL; method: string }) => void,
  knownTools?: ToolDefinition[],
): Promise<OpenedMcp> {
  const timeoutMs = deps.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const session = await connectMcp({ url, headers, fetch: toolFetch(deps, onConnected, { crossOriginRedirects: false }), timeoutMs, checkRedirect: (target) => preflightSourceUrl(target, deps.policy) });
  try {
    return { session, tools: knownTools ?? (await listMcpTools(session, timeoutMs)) };
  } catch (error) {
    await session.close();
    throw error;
  }
}

async function openMcpSource(selection: ToolSelection, deps: ToolRuntimeDeps): Promise<ToolSource> {
  if (!selection.url) throw new ToolSourceError('invalid_source', 'A remote MCP source needs its URL');
  const url = parseSourceUrl(selection.url, 'The MCP server URL');
  preflightSourceUrl(url, deps.policy);
  // Whether the connection carrying the current tools/call request came up: from then on it may have run.
  const attempt = { armed: false, reached: false };
  const { session, tools: allTools } = await connectAndList(
    url,
    mcpHeaders(selection),
    deps,
    ({ method }) => {
      if (attempt.armed && method === 'POST') attempt.reached = true;
    },
    selection.knownTools,
  );
  const tools = selectTools(allTools, selection.toolNames);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const isRepeatable = (name: string) => {
    const hints = byName.get(name)?.annotations;
    return hints?.readOnlyHint === true || hints?.idempotentHint === true;
  };
  const maxResultBytes = deps.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
  const maxBinaryBytes = deps.maxBinaryBytes ?? DEFAULT_MAX_BINARY_BYTES;
  return {
    type: 'remote_mcp',
    tools,
    isRepeatable,
    close: () => session.close(),
    async call(name, args, options = {}) {
      if (!byName.has(name)) throw unknownTool(name, tools);
      const repeatable = isRepeatable(name);
      const timeoutMs = options.timeoutMs ?? deps.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
      attempt.armed = true;
      attempt.reached = false;
      try {
        const result = await session.client.callTool({ name, arguments: (args ?? {}) as Record<string, unknown> }, { timeout: timeoutMs, signal: options.signal });
        const oversized = oversizedBinary(result, maxBinaryBytes);
        if (oversized) {
          throw new ToolCallError('too_large', `The tool answered with ${oversized.what} of ${oversized.bytes} bytes; binary blocks larger than ${maxBinaryBytes} bytes are not passed on`, true, repeatable);
        }
        return mcpToolResult(result, maxResultBytes);
      } catch (error) {
        if (error instanceof ToolCallError) throw error;
        throw mcpCallError(error, attempt.reached, repeatable);
      } finally {
        attempt.armed = false;
      }
    },
  };
}

function mcpCallError(error: unknown, reached: boolean, repeatable: boolean): ToolCallError {
  const network = callErrorFromNetwork(error, repeatable);
  if (network) return reached && !network.reached ? new ToolCallError(network.kind, network.message, true, repeatable) : network;
  if (error instanceof ProtocolError) {
    const kind = error.code === ProtocolErrorCode.InvalidParams ? 'invalid_arguments' : 'protocol_error';
    return new ToolCallError(kind, `The MCP server answered with an error: ${error.message}`, true, repeatable);
  }
  if (error instanceof SdkHttpError) {
    if (error.status === 401 || error.status === 403) return new ToolCallError('auth_required', `The MCP server refused the credentials (HTTP ${error.status})`, true, repeatable);
    if (error.status >= 500) return new ToolCallError('upstream_error', `The MCP server failed (HTTP ${error.status})`, true, repeatable);
    return new ToolCallError('protocol_error', `The MCP server answered HTTP ${error.status}`, true, repeatable);
  }
  if (error instanceof SdkError && error.code === 'REQUEST_TIMEOUT') return new ToolCallError('timeout', 'The tool did not answer in time', reached, repeatable);
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return new ToolCallError('timeout', 'The tool call was cancelled', reached, repeatable);
  const message = error instanceof Error ? error.message : String(error);
  return new ToolCallError(reached ? 'connection_lost' : 'protocol_error', `The tool call failed: ${message}`, reached, repeatable);
}

// ---- OpenAPI ------------------------------------------------------------------------------------

export interface LoadedOpenApi {
  document: OpenApiDocument;
  model: OpenApiModel;
  /** Where calls go, or null when the document has no absolute server URL and no override was given. */
  baseUrl: URL | null;
  /** Where one operation's calls go (its own server URL, else baseUrl). */
  baseUrlOf: (operation: OpenApiOperation) => URL | null;
}

/**
 * Loads and validates the document, builds its tools, and checks the API's base URL against the network
 * rules. A consumer's value for a server URL variable that may not fill it refuses the source here
 * (ToolSourceError `invalid_params`), for the document's server and every operation's.
 */
export async function loadOpenApi(spec: ToolSourceSpec, deps: ToolRuntimeDeps): Promise<LoadedOpenApi> {
  for (const [name, value] of Object.entries(spec.params ?? {})) {
    if (/[\r\n\0]/.test(String(value))) throw new ToolSourceError('invalid_source', `params.${name} contains a line break`);
  }
  for (const [name, value] of Object.entries(spec.consumerParams ?? {})) {
    if (/[\r\n\0]/.test(String(value))) throw new ToolSourceError('invalid_params', `params.${name} contains a line break`);
  }
  const sources = [spec.spec, spec.specText, spec.url].filter((value) => value !== undefined && value !== null);
  if (sources.length !== 1) throw new ToolSourceError('invalid_source', 'An OpenAPI source needs exactly one of spec, specText or url');
  if (spec.url) preflightSourceUrl(parseSourceUrl(spec.url, 'The OpenAPI document URL'), deps.policy);
  if (spec.baseUrl) preflightSourceUrl(parseSourceUrl(spec.baseUrl, 'The OpenAPI base URL'), deps.policy);
  const document = await loadOpenApiDocument(
    { url: spec.url, spec: spec.spec, specText: spec.specText },
    toolFetch(deps),
    deps.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
  );
  const model = buildOpenApiModel(document);
  const baseUrl = resolveBaseUrl(model, null, spec.baseUrl, spec, document.location);
  if (baseUrl) preflightSourceUrl(baseUrl, deps.policy);
  const operationBaseUrls = new Map<string, URL | null>();
  if (!spec.baseUrl) {
    for (const operation of model.operations) {
      if (operation.serverTemplate) operationBaseUrls.set(operation.toolName, resolveBaseUrl(model, operation, undefined, spec, document.location));
    }
  }
  return { document, model, baseUrl, baseUrlOf: (operation) => (operationBaseUrls.has(operation.toolName) ? operationBaseUrls.get(operation.toolName)! : baseUrl) };
}

async function openOpenApiSource(selection: ToolSelection, deps: ToolRuntimeDeps): Promise<ToolSource> {
  const { model, baseUrlOf } = await loadOpenApi(selection, deps);
  const operations = new Map(model.operations.map((operation) => [operation.toolName, operation]));
  const tools = selectTools(
    model.operations.map((operation) => operation.tool),
    selection.toolNames,
  );
  const offered = new Set(tools.map((tool) => tool.name));
  const maxResultBytes = deps.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
  const isRepeatable = (name: string) => {
    const operation = operations.get(name);
    return operation !== undefined && isRepeatableOperation(operation);
  };
  return {
    type: 'openapi',
    tools,
    isRepeatable,
    close: async () => {},
    async call(name, args, options = {}) {
      const operation = operations.get(name);
      if (!operation || !offered.has(name)) throw unknownTool(name, tools);
      let reached = false;
      return callOperation(operation, args, {
        model,
        baseUrlOf,
        params: selection.params ?? {},
        consumerParams: selection.consumerParams,
        fetch: toolFetch(deps, () => (reached = true), { crossOriginRedirects: false }),
        reached: () => reached,
        timeoutMs: options.timeoutMs ?? deps.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
        maxResultBytes,
        signal: options.signal,
        extraHeaders: selection.headers,
      });
    },
  };
}
