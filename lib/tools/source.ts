import { AsyncLocalStorage } from 'node:async_hooks';
import {
  isInputRequiredResult,
  LOG_LEVEL_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkHttpError,
  type CallToolResult,
  type ClientCapabilities,
  type InputRequiredResult,
  type LoggingLevel,
  type LoggingMessageNotificationParams,
  type Progress,
} from '@modelcontextprotocol/client';
import { mcpHeaders } from './consumer-params';
import { callErrorFromNetwork, callErrorFromSource, scrubSecrets, ToolCallError, ToolSourceError } from './errors';
import { connectMcp, listMcpTools, type McpSession } from './mcp';
import { toolFetch, parseSourceUrl, preflightSourceUrl, type ToolNetworkDeps } from './network';
import { callOperation, isRepeatableOperation, resolveBaseUrl } from './openapi/call';
import { loadOpenApiDocument, type OpenApiDocument } from './openapi/document';
import { buildOpenApiModel, type OpenApiModel, type OpenApiOperation } from './openapi/tools';
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
  call(toolName: string, args: unknown, options?: ToolCallOptions): Promise<ToolCallResult>;
  /**
   * Calls a tool on behalf of a client behind the platform (the hosted market endpoint), relaying what
   * the tool sends back while it runs (`relay`): progress, log messages, and (2025 revisions) its
   * requests to the client. A tool that asks for input (2026-07-28 input-required result) is answered
   * `input_required`, with its requests and its opaque state; the client's answers come back in the
   * next call's `relay.inputResponses` and `relay.requestState`. Failures as for call(). An OpenAPI
   * source just calls.
   */
  relayCall(toolName: string, args: unknown, relay: CallRelay, options?: ToolCallOptions): Promise<RelayedAnswer>;
  close(): Promise<void>;
}

export interface ToolCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** The requests an MCP server may send its client while a tool call runs (2025 revisions). */
export type RelayedRequestMethod = 'sampling/createMessage' | 'elicitation/create' | 'roots/list';

/** What the client behind the platform receives of a call while it runs, and its answers of the last round. */
export interface CallRelay {
  /** The call's progress notifications, as they come. */
  onProgress?: (progress: Progress) => void;
  /** The call's log messages at or above `level` (absent: every level). */
  log?: { level?: LoggingLevel; onMessage: (message: LoggingMessageNotificationParams) => void };
  /**
   * A request the server sends its client during the call (2025 revisions), answered by the client
   * behind the platform; declared to the server only as far as the selection's `clientCapabilities` go.
   */
  request?: (
    method: RelayedRequestMethod,
    params: Record<string, unknown> | undefined,
    signal: AbortSignal,
  ) => Promise<Record<string, unknown>>;
  /** The client's answers to the input requests of the previous round (2026-07-28), by their keys. */
  inputResponses?: Record<string, unknown>;
  /** The server's `requestState` of the previous round, echoed unchanged. */
  requestState?: string;
}

export type RelayedAnswer =
  | { kind: 'result'; result: ToolCallResult }
  /** The tool asks the client for input (elicitation, sampling, roots) before it can answer. */
  | { kind: 'input_required'; inputRequests: Record<string, unknown>; requestState?: string };

/** Opens a selection (throws ToolSourceError when it cannot be opened). */
export async function openToolSource(selection: ToolSelection, deps: ToolRuntimeDeps): Promise<ToolSource> {
  const secrets = [...Object.values(selection.params ?? {}), ...Object.values(selection.headers ?? {})];
  try {
    const source =
      selection.type === 'remote_mcp' ? await openMcpSource(selection, deps) : await openOpenApiSource(selection, deps);
    return scrubbing(source, secrets);
  } catch (error) {
    if (error instanceof ToolSourceError)
      throw new ToolSourceError(error.code, scrubSecrets(error.message, secrets), error.transient);
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
  const scrubbed = (error: unknown, name: string) =>
    error instanceof ToolCallError
      ? new ToolCallError(
          error.kind,
          scrubSecrets(error.message, secrets),
          error.reached,
          source.isRepeatable(name),
          error.rpc,
        )
      : error;
  return {
    type: source.type,
    tools: source.tools,
    isRepeatable: (name) => source.isRepeatable(name),
    close: () => source.close(),
    async call(name, args, options) {
      try {
        return await source.call(name, args, options);
      } catch (error) {
        throw scrubbed(error, name);
      }
    },
    async relayCall(name, args, relay, options) {
      try {
        return await source.relayCall(name, args, relay, options);
      } catch (error) {
        throw scrubbed(error, name);
      }
    },
  };
}

function selectTools(tools: ToolDefinition[], names: string[] | undefined): ToolDefinition[] {
  if (tools.length > MAX_TOOLS)
    throw new ToolSourceError(
      'source_too_large',
      `The source offers ${tools.length} tools; at most ${MAX_TOOLS} are supported`,
    );
  if (!names || names.length === 0) return tools;
  const wanted = new Set(names);
  return tools.filter((tool) => wanted.has(tool.name));
}

function unknownTool(name: string, tools: ToolDefinition[]): ToolCallError {
  const known = tools
    .map((tool) => tool.name)
    .slice(0, 50)
    .join(', ');
  return new ToolCallError(
    'unknown_tool',
    `There is no tool "${name}" in this source (tools: ${known || 'none'})`,
    false,
    false,
  );
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
  capabilities?: ClientCapabilities,
): Promise<OpenedMcp> {
  const timeoutMs = deps.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const session = await connectMcp({
    url,
    headers,
    fetch: toolFetch(deps, onConnected, { crossOriginRedirects: false }),
    timeoutMs,
    checkRedirect: (target) => preflightSourceUrl(target, deps.policy),
    capabilities,
  });
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
    selection.clientCapabilities,
  );
  const tools = selectTools(allTools, selection.toolNames);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const isRepeatable = (name: string) => {
    const hints = byName.get(name)?.annotations;
    return hints?.readOnlyHint === true || hints?.idempotentHint === true;
  };
  const maxResultBytes = deps.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
  const maxBinaryBytes = deps.maxBinaryBytes ?? DEFAULT_MAX_BINARY_BYTES;
  const relays = relayRouter(session, selection.clientCapabilities);

  async function callTool(
    name: string,
    args: unknown,
    options: ToolCallOptions,
    relay: CallRelay | null,
  ): Promise<RelayedAnswer> {
    if (!byName.has(name)) throw unknownTool(name, tools);
    const repeatable = isRepeatable(name);
    const timeoutMs = options.timeoutMs ?? deps.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    attempt.armed = true;
    attempt.reached = false;
    try {
      if (relay?.log) await relays.askForLogs(relay.log.level, timeoutMs);
      const params = {
        name,
        arguments: (args ?? {}) as Record<string, unknown>,
        ...(relay?.inputResponses && { inputResponses: relay.inputResponses }),
        ...(relay?.requestState !== undefined && { requestState: relay.requestState }),
        ...(relay?.log && relays.modern && { _meta: { [LOG_LEVEL_META_KEY]: relay.log.level ?? 'debug' } }),
      };
      const result = (await relays.within(relay, () =>
        session.client.callTool(params, {
          timeout: timeoutMs,
          signal: options.signal,
          ...(relay && { allowInputRequired: true }),
          ...(relay?.onProgress && { onprogress: relay.onProgress }),
        } as Parameters<typeof session.client.callTool>[1]),
      )) as CallToolResult | InputRequiredResult;
      if (isInputRequiredResult(result)) {
        if (!relay)
          throw new ToolCallError(
            'protocol_error',
            'The MCP server asked for input the platform cannot give here',
            true,
            repeatable,
          );
        return {
          kind: 'input_required',
          inputRequests: (result.inputRequests ?? {}) as Record<string, unknown>,
          ...(typeof result.requestState === 'string' && { requestState: result.requestState }),
        };
      }
      const oversized = oversizedBinary(result, maxBinaryBytes);
      if (oversized) {
        throw new ToolCallError(
          'too_large',
          `The tool answered with ${oversized.what} of ${oversized.bytes} bytes; binary blocks larger than ${maxBinaryBytes} bytes are not passed on`,
          true,
          repeatable,
        );
      }
      return { kind: 'result', result: mcpToolResult(result, maxResultBytes) };
    } catch (error) {
      if (error instanceof ToolCallError) throw error;
      throw mcpCallError(error, attempt.reached, repeatable);
    } finally {
      attempt.armed = false;
    }
  }

  return {
    type: 'remote_mcp',
    tools,
    isRepeatable,
    close: () => session.close(),
    async call(name, args, options = {}) {
      const answer = await callTool(name, args, options, null);
      if (answer.kind !== 'result')
        throw new ToolCallError(
          'protocol_error',
          'The MCP server asked for input the platform cannot give here',
          true,
          isRepeatable(name),
        );
      return answer.result;
    },
    relayCall: (name, args, relay, options = {}) => callTool(name, args, options, relay),
  };
}

const MODERN_REVISIONS_FROM = '2026-07-28';
const LOG_SEVERITY: readonly LoggingLevel[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

/** A call in flight on a connection: its relay, or null for a call with no client behind it. */
interface CallInFlight {
  relay: CallRelay | null;
}

/**
 * Routes what an MCP server sends its client while calls run to the call that asked: log messages,
 * and (2025 revisions) its requests for sampling, elicitation and roots. On the wire these carry no
 * reference to their call; a Streamable HTTP server sends them on the response stream of the call's
 * own POST, and the SDK client reads that stream in the async context of the callTool that posted
 * it, so each call runs in a context of its own (`asking`) and a message is relayed to the call whose
 * context it arrives in — never to another call of the same connection (a pooled upstream session
 * carries concurrent calls of one consumer's credential: lib/market/tool-call.ts). A message outside
 * any call's stream (the HTTP+SSE transport's one stream, a Streamable HTTP session's standalone GET
 * stream) goes to the call in flight when there is only one, and to none when several are: a request
 * is then refused, a log message dropped. Progress notifications carry their call's token and always
 * reach their own call.
 */
function relayRouter(session: McpSession, capabilities: ClientCapabilities | undefined) {
  const calls: CallInFlight[] = [];
  const asking = new AsyncLocalStorage<CallInFlight>();
  const modern = (session.client.getNegotiatedProtocolVersion() ?? '') >= MODERN_REVISIONS_FROM;
  let upstreamLevel: LoggingLevel | undefined;
  /** The relay of the call a message belongs to, if it takes it (`takes`). */
  const relayOf = (takes: (relay: CallRelay) => boolean): CallRelay | undefined => {
    const own = asking.getStore();
    if (own) return own.relay && calls.includes(own) && takes(own.relay) ? own.relay : undefined;
    // Not on a call's stream: whose it is can only be told when one call is in flight.
    const only = calls.length === 1 ? calls[0].relay : null;
    return only && takes(only) ? only : undefined;
  };
  session.client.setNotificationHandler('notifications/message', (notification) => {
    const { level } = notification.params;
    relayOf(
      ({ log }) => !!log && (log.level === undefined || LOG_SEVERITY.indexOf(level) >= LOG_SEVERITY.indexOf(log.level)),
    )?.log?.onMessage(notification.params);
  });
  const answerFor = (method: RelayedRequestMethod) =>
    session.client.setRequestHandler(method, async (request, ctx) => {
      const ask = relayOf((relay) => !!relay.request)?.request;
      if (!ask)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidRequest,
          `${method} is only relayed to the client of the tool call that sends it, while that call runs`,
        );
      return ask(method, request.params as Record<string, unknown> | undefined, ctx.mcpReq.signal) as never;
    });
  if (capabilities?.sampling) answerFor('sampling/createMessage');
  if (capabilities?.elicitation) answerFor('elicitation/create');
  if (capabilities?.roots) answerFor('roots/list');
  return {
    modern,
    /** Runs one call (`send`) in a context of its own, so that what the server sends on its stream reaches its relay. */
    async within<T>(relay: CallRelay | null, send: () => Promise<T>): Promise<T> {
      const call: CallInFlight = { relay };
      calls.push(call);
      try {
        return await asking.run(call, send);
      } finally {
        const at = calls.indexOf(call);
        if (at >= 0) calls.splice(at, 1);
      }
    },
    /** A 2025 server logs at the level its session was set to: set it when a call wants another. */
    async askForLogs(level: LoggingLevel | undefined, timeoutMs: number) {
      if (modern || !session.client.getServerCapabilities()?.logging) return;
      const wanted = level ?? 'debug';
      if (wanted === upstreamLevel || (upstreamLevel === undefined && wanted === 'debug')) return;
      upstreamLevel = wanted;
      await session.client.setLoggingLevel(wanted, { timeout: timeoutMs });
    },
  };
}

function mcpCallError(error: unknown, reached: boolean, repeatable: boolean): ToolCallError {
  const network = callErrorFromNetwork(error, repeatable);
  if (network)
    return reached && !network.reached ? new ToolCallError(network.kind, network.message, true, repeatable) : network;
  if (error instanceof ProtocolError) {
    const kind = error.code === ProtocolErrorCode.InvalidParams ? 'invalid_arguments' : 'protocol_error';
    return new ToolCallError(kind, `The MCP server answered with an error: ${error.message}`, true, repeatable, {
      code: error.code,
      ...(error.data !== undefined && { data: error.data }),
    });
  }
  if (error instanceof SdkHttpError) {
    if (error.status === 401 || error.status === 403)
      return new ToolCallError(
        'auth_required',
        `The MCP server refused the credentials (HTTP ${error.status})`,
        true,
        repeatable,
      );
    if (error.status >= 500)
      return new ToolCallError('upstream_error', `The MCP server failed (HTTP ${error.status})`, true, repeatable);
    return new ToolCallError('protocol_error', `The MCP server answered HTTP ${error.status}`, true, repeatable);
  }
  if (error instanceof SdkError && error.code === 'REQUEST_TIMEOUT')
    return new ToolCallError('timeout', 'The tool did not answer in time', reached, repeatable);
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError'))
    return new ToolCallError('timeout', 'The tool call was cancelled', reached, repeatable);
  const message = error instanceof Error ? error.message : String(error);
  return new ToolCallError(
    reached ? 'connection_lost' : 'protocol_error',
    `The tool call failed: ${message}`,
    reached,
    repeatable,
  );
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
    if (/[\r\n\0]/.test(String(value)))
      throw new ToolSourceError('invalid_source', `params.${name} contains a line break`);
  }
  for (const [name, value] of Object.entries(spec.consumerParams ?? {})) {
    if (/[\r\n\0]/.test(String(value)))
      throw new ToolSourceError('invalid_params', `params.${name} contains a line break`);
  }
  const sources = [spec.spec, spec.specText, spec.url].filter((value) => value !== undefined && value !== null);
  if (sources.length !== 1)
    throw new ToolSourceError('invalid_source', 'An OpenAPI source needs exactly one of spec, specText or url');
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
      if (operation.serverTemplate)
        operationBaseUrls.set(operation.toolName, resolveBaseUrl(model, operation, undefined, spec, document.location));
    }
  }
  return {
    document,
    model,
    baseUrl,
    baseUrlOf: (operation) =>
      operationBaseUrls.has(operation.toolName) ? operationBaseUrls.get(operation.toolName)! : baseUrl,
  };
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
  const source: ToolSource = {
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
    async relayCall(name, args, _relay, options) {
      return { kind: 'result', result: await source.call(name, args, options) };
    },
  };
  return source;
}
