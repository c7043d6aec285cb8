import {
  Client,
  ProtocolError,
  SdkError,
  SdkHttpError,
  SSEClientTransport,
  SseError,
  StreamableHTTPClientTransport,
  type ClientCapabilities,
  type Tool,
} from '@modelcontextprotocol/client';
import { mcpOutputSchemaValidator } from '../json-schema/mcp-validator';
import type { StreamingFetch } from '../net/streaming-fetch';
import { sourceErrorFromNetwork, ToolSourceError } from './errors';
import type { McpPromptInfo, McpResourceInfo, ToolAnnotations, ToolDefinition } from './types';

/**
 * Remote MCP over the official SDK v2 client. Streamable HTTP first, negotiating the protocol
 * revision (`versionNegotiation: 'auto'`: the current stateless revision through `server/discover`,
 * else the 2025 `initialize` handshake); when the endpoint does not take Streamable HTTP POSTs
 * (400/404/405/406/415), the legacy HTTP+SSE transport. Every request of both transports goes
 * through the given (guarded) fetch.
 */
export interface McpSession {
  client: Client;
  transport: 'streamable_http' | 'sse';
  close(): Promise<void>;
}

export interface McpConnectOptions {
  url: URL;
  /** Sent on every request (credentials from the source's params). */
  headers: Record<string, string>;
  fetch: StreamingFetch;
  timeoutMs: number;
  /**
   * Judges the target of a redirect the SDK did not follow (it never leaves the endpoint's origin):
   * throws the network rules' refusal (ssrf_blocked, insecure_url) when the target is one.
   */
  checkRedirect?: (target: URL) => void;
  /**
   * What the client behind the platform can answer (sampling, elicitation, roots), declared to the
   * server as this client's capabilities; the requests it sends for them are relayed (source.ts).
   */
  capabilities?: ClientCapabilities;
}

/** The upstream wants (other) credentials: 401/403. `challenge` is its WWW-Authenticate header when it sent one. */
export class McpAuthRequiredError extends ToolSourceError {
  constructor(
    readonly status: number,
    readonly challenge: string | null,
  ) {
    super(
      'auth_required',
      `The MCP server refused the request (HTTP ${status}): it needs ${status === 403 ? 'other' : 'valid'} credentials`,
    );
    this.name = 'McpAuthRequiredError';
  }
}

const CLIENT_INFO = { name: 'scrape-platform-tools', version: '1.0.0' };
const NOT_STREAMABLE_STATUSES = new Set([400, 404, 405, 406, 415]);

/** Wraps a fetch so that the WWW-Authenticate challenge of a 401/403 answer, and where a redirect pointed, are kept for the caller. */
export function recordingChallenges(fetch: StreamingFetch): {
  fetch: StreamingFetch;
  lastChallenge: () => string | null;
  lastRedirect: () => URL | null;
} {
  let challenge: string | null = null;
  let redirect: URL | null = null;
  return {
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      if (response.status === 401 || response.status === 403) challenge = response.headers.get('www-authenticate');
      const location = response.status >= 300 && response.status < 400 ? response.headers.get('location') : null;
      if (location) {
        try {
          redirect = new URL(location, input instanceof Request ? input.url : input.toString());
        } catch {
          redirect = null;
        }
      }
      return response;
    },
    lastChallenge: () => challenge,
    lastRedirect: () => redirect,
  };
}

/**
 * A redirect to another origin, which the SDK does not follow: a clear refusal (the network rules'
 * own for an internal or plain-http target) instead of "not an MCP server".
 */
function redirectRefusal(
  error: unknown,
  target: URL | null,
  check: McpConnectOptions['checkRedirect'],
): ToolSourceError | undefined {
  const status = httpStatusOf(error);
  if (status === undefined || status < 300 || status >= 400 || !target) return undefined;
  check?.(target);
  return new ToolSourceError(
    'invalid_source',
    `The MCP endpoint redirects (HTTP ${status}) to ${target.origin}${target.pathname}; redirects to another origin are not followed: use that URL as the endpoint if it is the intended server`,
  );
}

export async function connectMcp(options: McpConnectOptions): Promise<McpSession> {
  const challenges = recordingChallenges(options.fetch);
  const capabilities = options.capabilities ?? {};
  const streamable = new Client(CLIENT_INFO, {
    versionNegotiation: { mode: 'auto' },
    jsonSchemaValidator: mcpOutputSchemaValidator,
    capabilities,
  });
  try {
    await withDeadline(
      streamable.connect(
        new StreamableHTTPClientTransport(options.url, {
          fetch: challenges.fetch,
          requestInit: { headers: options.headers },
        }),
        { timeout: options.timeoutMs },
      ),
      options.timeoutMs,
      () => streamable.close(),
    );
    return session(streamable, 'streamable_http');
  } catch (error) {
    await streamable.close().catch(() => {});
    const refused = redirectRefusal(error, challenges.lastRedirect(), options.checkRedirect);
    if (refused) throw refused;
    const status = httpStatusOf(error);
    if (status === undefined || !NOT_STREAMABLE_STATUSES.has(status))
      throw connectError(error, challenges.lastChallenge());
  }
  const legacy = new Client(CLIENT_INFO, { jsonSchemaValidator: mcpOutputSchemaValidator, capabilities });
  try {
    await withDeadline(
      legacy.connect(
        new SSEClientTransport(options.url, { fetch: challenges.fetch, requestInit: { headers: options.headers } }),
        { timeout: options.timeoutMs },
      ),
      options.timeoutMs,
      () => legacy.close(),
    );
    return session(legacy, 'sse');
  } catch (error) {
    await legacy.close().catch(() => {});
    const refused = redirectRefusal(error, challenges.lastRedirect(), options.checkRedirect);
    if (refused) throw refused;
    const mapped = connectError(error, challenges.lastChallenge());
    if (mapped instanceof McpAuthRequiredError || mapped.code !== 'not_mcp_server') throw mapped;
    throw new ToolSourceError(
      'not_mcp_server',
      `${options.url.origin} does not answer as an MCP server (neither Streamable HTTP nor HTTP+SSE)`,
    );
  }
}

function session(client: Client, transport: McpSession['transport']): McpSession {
  return { client, transport, close: () => client.close().catch(() => {}) };
}

export async function listMcpTools(session: McpSession, timeoutMs: number): Promise<ToolDefinition[]> {
  try {
    const { tools } = await session.client.listTools(undefined, { timeout: timeoutMs });
    return tools.map(toToolDefinition);
  } catch (error) {
    throw connectError(error, null);
  }
}

/** The most prompts and resources discovery keeps of a server (the first page, at most this many each). */
export const MAX_LISTED_PROMPTS_AND_RESOURCES = 200;

/**
 * The server's prompts and resources (first page each), for the tool market's poisoning scan: their
 * names, titles and descriptions reach the model too. Only what the server advertises is asked; a
 * failure leaves that list out (discovery is about tools).
 */
export async function listMcpPromptsAndResources(
  session: McpSession,
  timeoutMs: number,
): Promise<{ prompts?: McpPromptInfo[]; resources?: McpResourceInfo[] }> {
  const capabilities = session.client.getServerCapabilities() ?? {};
  const out: { prompts?: McpPromptInfo[]; resources?: McpResourceInfo[] } = {};
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  if (capabilities.prompts) {
    try {
      const { prompts } = await session.client.listPrompts(undefined, { timeout: timeoutMs });
      out.prompts = prompts.slice(0, MAX_LISTED_PROMPTS_AND_RESOURCES).map((prompt) => ({
        name: String(prompt.name),
        ...(text(prompt.title) && { title: text(prompt.title) }),
        ...(text(prompt.description) && { description: text(prompt.description) }),
        ...(prompt.arguments?.length && {
          arguments: prompt.arguments.map((argument) => ({
            name: String(argument.name),
            ...(text((argument as { title?: unknown }).title) && {
              title: text((argument as { title?: unknown }).title),
            }),
            ...(text(argument.description) && { description: text(argument.description) }),
            ...(argument.required !== undefined && { required: argument.required === true }),
          })),
        }),
      }));
    } catch {
      // No prompts then: the scan reads what it was given.
    }
  }
  if (capabilities.resources) {
    try {
      const { resources } = await session.client.listResources(undefined, { timeout: timeoutMs });
      out.resources = resources.slice(0, MAX_LISTED_PROMPTS_AND_RESOURCES).map((resource) => ({
        uri: String(resource.uri),
        name: String(resource.name),
        ...(text(resource.title) && { title: text(resource.title) }),
        ...(text(resource.description) && { description: text(resource.description) }),
        ...(text(resource.mimeType) && { mimeType: text(resource.mimeType) }),
      }));
    } catch {
      // No resources then.
    }
  }
  return out;
}

export function toToolDefinition(tool: Tool): ToolDefinition {
  const { $schema: _dialect, ...inputSchema } = (tool.inputSchema ?? {}) as Record<string, unknown>;
  const hints = tool.annotations ?? {};
  const annotations: ToolAnnotations = {};
  const title = tool.title ?? hints.title;
  if (title) annotations.title = title;
  for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    if (typeof hints[key] === 'boolean') annotations[key] = hints[key];
  }
  return {
    name: tool.name,
    description: tool.description ?? null,
    inputSchema,
    ...(Object.keys(annotations).length > 0 && { annotations }),
    listing: tool,
  };
}

/** The HTTP status an SDK error reports (SdkHttpError, or SseError for the legacy transport). */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof SdkHttpError) return error.status;
  if (error instanceof SseError) return error.code;
  return undefined;
}

function connectError(error: unknown, challenge: string | null): ToolSourceError {
  if (error instanceof ToolSourceError) return error;
  const status = httpStatusOf(error);
  if (status === 401 || status === 403) return new McpAuthRequiredError(status, challenge);
  const network = sourceErrorFromNetwork(error);
  if (network) return network;
  if (error instanceof SdkError && error.code === 'REQUEST_TIMEOUT')
    return new ToolSourceError('upstream_timeout', 'The MCP server did not answer in time', true);
  if (status !== undefined && status >= 500)
    return new ToolSourceError('upstream_error', `The MCP server failed (HTTP ${status})`, true);
  if (error instanceof ProtocolError)
    return new ToolSourceError('upstream_error', `The MCP server answered with an error: ${error.message}`);
  const message = error instanceof Error ? error.message : String(error);
  return new ToolSourceError('not_mcp_server', `Not a usable MCP endpoint: ${message}`);
}

/** Rejects with an upstream_timeout once `ms` pass (and runs `onTimeout` to release what is pending). */
export function withDeadline<T>(promise: Promise<T>, ms: number, onTimeout: () => unknown): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void Promise.resolve()
        .then(onTimeout)
        .catch(() => {});
      reject(new ToolSourceError('upstream_timeout', `No answer within ${ms} ms`, true));
    }, ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
