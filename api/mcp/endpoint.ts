import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import {
  createMcpHandler,
  isLegacyRequest,
  localhostAllowedHostnames,
  validateHostHeader,
  validateOriginHeader,
  type AuthInfo,
  type McpHttpHandler,
  type McpServerFactory,
} from '@modelcontextprotocol/server';
import { legacySessions, type LegacySessionOptions } from './legacy-sessions';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { ApiError } from '../errors';
import { errorBody } from '../middleware/errors';
import { createRateLimiter } from './rate-limit';
import { log } from '../../lib/log';

/** MCP messages are small; anything larger is refused (413) before it is parsed. */
const MAX_BODY_BYTES = 256 * 1024;

export interface McpEndpointOptions {
  /** The exact path (`/docs-mcp`), or a pattern for a family of endpoints (`/^\/mcp\/[^/]+$/`). */
  path: string | RegExp;
  /**
   * Builds a fresh server for every request: the SDK's stateless serving, which answers the current
   * protocol revision and, through its legacy fallback, clients of the 2025 revisions.
   */
  factory: McpServerFactory;
  /** Hostnames accepted in the Host and Origin headers besides the localhost names (DNS-rebinding protection). */
  allowedHostnames: string[];
  /** Requests per minute per client address; beyond it 429 with Retry-After. Omitted: no limit. */
  rateLimitPerMinute?: number;
  /**
   * Authenticates the request before the SDK sees it (throw an ApiError to refuse, e.g. 401 with
   * WWW-Authenticate); what it returns reaches the factory as `authInfo`. Omitted: a public endpoint.
   */
  authenticate?: (ctx: Context) => Promise<AuthInfo>;
  /**
   * When authenticate leaves part of its check to the request's handling (the hosted market endpoint leaves a
   * credential's liveness to the call's acquire statement): called once the SDK has answered and before its
   * answer is sent. An ApiError is answered instead (e.g. 401 with WWW-Authenticate); null sends the answer.
   */
  confirm?: (authInfo: AuthInfo) => Promise<ApiError | null>;
  /**
   * Serve clients of the 2025 revisions with sessions (legacy-sessions.ts) instead of the SDK's
   * stateless fallback: needed to relay a server's requests to such a client and its answers back.
   * Omitted: stateless serving of both eras.
   */
  sessions?: LegacySessionOptions;
}

/**
 * The client's address for rate limiting: the connection's peer, unless the operator says N proxies
 * stand in front of the API (TRUST_PROXY; the app then has `proxy` and `maxIpsCount` = N). Each
 * proxy appends the address it was reached from to X-Forwarded-For, so the client is the N-th entry
 * from the end (the first of `ctx.ips`, which keeps the last N); entries before it are the client's
 * own claims. A request that did not pass all N proxies (fewer entries) counts as its peer.
 */
export function clientAddress(ctx: Context): string {
  const hops = ctx.app.proxy ? ctx.app.maxIpsCount : 0;
  const forwarded = hops > 0 ? ctx.ips : [];
  return hops > 0 && forwarded.length >= hops ? forwarded[0] : (ctx.socket.remoteAddress ?? 'unknown');
}

/**
 * Koa middleware serving one MCP endpoint over Streamable HTTP with the SDK v2 handler: Host and
 * Origin validated, requests rate-limited per client address, refusals in the API's one error body.
 * Mount it before the JSON body parser: the SDK reads the request body itself.
 */
export function mcpEndpoint(options: McpEndpointOptions): Middleware {
  const served = options.sessions
    ? withLegacySessions(options.factory, options.sessions)
    : createMcpHandler(options.factory, { maxRequestBodySize: MAX_BODY_BYTES });
  // The Koa context of an authenticated request (for the error body of a refusal found after the SDK answered).
  const contexts = new WeakMap<AuthInfo, Context>();
  const handler = options.confirm ? confirming(served, options.confirm, contexts) : served;
  const serve = toNodeHandler(handler, {
    maxRequestBodySize: MAX_BODY_BYTES,
    onerror: (err) => log().error({ err, endpoint: String(options.path) }, 'MCP endpoint failed'),
  });
  const allowed = [...new Set([...localhostAllowedHostnames(), ...options.allowedHostnames])];
  const limiter = options.rateLimitPerMinute ? createRateLimiter(options.rateLimitPerMinute) : null;
  const matches = (path: string) =>
    typeof options.path === 'string' ? path === options.path : options.path.test(path);

  return async (ctx: Context, next: Next) => {
    if (!matches(ctx.path)) return next();
    const host = validateHostHeader(ctx.req.headers.host, allowed);
    if (!host.ok)
      throw new ApiError(403, 'host_not_allowed', `This MCP endpoint does not answer for this Host (${host.message})`);
    const origin = validateOriginHeader(ctx.req.headers.origin, allowed);
    if (!origin.ok)
      throw new ApiError(403, 'origin_not_allowed', `Requests from this Origin are not accepted (${origin.message})`);
    const verdict = limiter?.take(clientAddress(ctx));
    if (verdict && !verdict.allowed) {
      throw new ApiError(
        429,
        'rate_limited',
        `Too many requests from this address; retry in ${verdict.retryAfterSeconds} s`,
        undefined,
        {
          'Retry-After': String(verdict.retryAfterSeconds),
        },
      );
    }
    if (options.authenticate) {
      const auth = await options.authenticate(ctx);
      contexts.set(auth, ctx);
      (ctx.req as typeof ctx.req & { auth?: AuthInfo }).auth = auth;
    }
    const body = await readJsonBody(ctx.req);
    // The SDK writes the response itself; Koa must neither answer nor treat the request as unrouted.
    ctx.respond = false;
    ctx.status = 200;
    if (body && 'parsed' in body) await serve(ctx.req, ctx.res, body.parsed);
    else await serve(body ? replaying(ctx.req, body.raw) : ctx.req, ctx.res);
  };
}

/**
 * The handler with options.confirm between the SDK's answer and the client: a refusal replaces the answer (whose
 * body is dropped unread) with the API's error body, its status and headers.
 */
function confirming(
  handler: Pick<McpHttpHandler, 'fetch'>,
  confirm: NonNullable<McpEndpointOptions['confirm']>,
  contexts: WeakMap<AuthInfo, Context>,
): Pick<McpHttpHandler, 'fetch'> {
  return {
    fetch: async (request, requestOptions) => {
      const response = await handler.fetch(request, requestOptions);
      const auth = requestOptions?.authInfo;
      const refusal = auth ? await confirm(auth) : null;
      if (!refusal) return response;
      await response.body?.cancel().catch(() => {});
      const ctx = contexts.get(auth!);
      return new Response(
        JSON.stringify(ctx ? errorBody(ctx, refusal) : { error: { code: refusal.code, message: refusal.message } }),
        {
          status: refusal.status,
          headers: { 'content-type': 'application/json; charset=utf-8', ...refusal.headers },
        },
      );
    },
  };
}

/**
 * A JSON POST's body, read and parsed once here and handed to the SDK parsed (it then reads and parses
 * nothing, and routes without cloning the request). Read up to one byte past MAX_BODY_BYTES: a body the
 * SDK would refuse (too large, not JSON) comes back raw, and the SDK gets it as if it read it itself, so
 * its answers (413, the JSON-RPC parse error) stay its own. Null: not a JSON POST (the SDK reads it).
 */
async function readJsonBody(req: IncomingMessage): Promise<{ parsed: unknown } | { raw: Buffer } | null> {
  if (req.method !== 'POST' || !/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return null;
  if (Number(req.headers['content-length']) > MAX_BODY_BYTES) return null;
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    received += chunk.byteLength;
    if (received > MAX_BODY_BYTES) return { raw: Buffer.concat(chunks) };
  }
  const raw = Buffer.concat(chunks);
  if (raw.byteLength === 0) return { raw };
  try {
    return { parsed: JSON.parse(raw.toString('utf8')) as unknown };
  } catch {
    return { raw };
  }
}

/** The request with its body already read: the SDK's adapter reads `raw` from it as it would the socket. */
function replaying(req: IncomingMessage, raw: Buffer): IncomingMessage {
  return Object.create(req, {
    [Symbol.asyncIterator]: {
      value: async function* () {
        if (raw.byteLength) yield raw;
      },
    },
  }) as IncomingMessage;
}

/** The first revision of the stateless era (every request carries its own envelope). */
export const MODERN_REVISIONS_FROM = '2026-07-28';

/**
 * 2026-07-28 requests to the SDK's per-request serving, 2025-era requests (an initialize, and every
 * request naming a session) to sessions. Routed without reading the body when the headers tell: an
 * Mcp-Session-Id is a session's; an MCP-Protocol-Version of the stateless era goes to the per-request
 * serving, which checks the body against it (a mismatch is refused, 400). Any other request is
 * classified by the SDK (isLegacyRequest reads a copy of a POST body).
 */
function withLegacySessions(
  factory: McpServerFactory,
  sessionOptions: LegacySessionOptions,
): Pick<McpHttpHandler, 'fetch'> {
  const modern = createMcpHandler(factory, { maxRequestBodySize: MAX_BODY_BYTES, legacy: 'reject' });
  const sessions = legacySessions(factory, { ...sessionOptions, maxRequestBodySize: MAX_BODY_BYTES });
  const isLegacy = async (request: Request, parsedBody: unknown) => {
    if (request.headers.has('mcp-session-id')) return true;
    const revision = request.headers.get('mcp-protocol-version');
    if (revision !== null && revision >= MODERN_REVISIONS_FROM) return false;
    return isLegacyRequest(request, parsedBody, { maxRequestBodySize: MAX_BODY_BYTES });
  };
  return {
    fetch: async (request, requestOptions) =>
      (await isLegacy(request, requestOptions?.parsedBody))
        ? sessions.fetch(request, requestOptions)
        : modern.fetch(request, requestOptions),
  };
}
