import type { Context } from 'koa';
import { createHmac } from 'node:crypto';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  inputRequired,
  fromJsonSchema,
  LOG_LEVEL_META_KEY,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type AuthInfo,
  type CallToolResult,
  type ClientCapabilities,
  type InputRequests,
  type JsonSchemaType,
  type jsonSchemaValidator,
  type LoggingLevel,
  type LoggingMessageNotificationParams,
  type Progress,
  type ServerContext,
  type ServerOptions,
  type Tool,
} from '@modelcontextprotocol/server';
import { loadCallEntryCached, marketCallPath, type DeferredCredentialCheck } from '../services/market/call-path';
import { looksLikeMcpCredential } from '../../lib/market/credential';
import { describedAs, pricingEventDefinition, type StoredMarketTool } from '../../lib/market/listing';
import {
  callableTools,
  PrincipalRefusedError,
  relayMarketToolCall,
  type MarketCallEntry,
  type MarketRelayedOutcome,
  type MarketToolCallOutcome,
  type MarketToolCallRequest,
} from '../../lib/market/tool-call';
import { microsToUsd } from '../../lib/money';
import { resultContent } from '../../lib/tools/result';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { MODERN_REVISIONS_FROM, type McpEndpointOptions } from './endpoint';
import { marketMcpUrl as mcpUrlOf } from '../services/shared/public-urls';
import { MCP_SCOPE, type OAuthServer } from '../services/oauth/authorization-server';
import { API_KEY_PREFIX } from '../../lib/crypto';
import {
  credentialPrincipal,
  deferredCredentialPrincipal,
  needsParams,
  type MarketPrincipal,
} from '../services/market/credential-check';
import { findApiKeyOwner } from '../services/market/reads';

/** The hosted market endpoint: `/mcp/{entryId}` on the API origin (or under MCP_PUBLIC_URL). */
export const MARKET_MCP_PATH = /^\/mcp\/([^/]+)\/?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `_meta` keys of tools/list and tools/call answers. */
export const PRICING_META = 'scrape-platform/pricing';
export const BILLING_META = 'scrape-platform/billing';

interface MarketRequestState {
  principal: MarketPrincipal;
  entry: MarketCallEntry;
  /** ?tools=a,b: only these tools are listed and callable. */
  only: Set<string> | null;
  /**
   * A 2026-07-28 request's credential, whose liveness (key live, not revoked) is checked by the call's acquire
   * statement, or on its own after the SDK answered (confirmRequest) for a request that acquired no run.
   */
  deferred?: { check: DeferredCredentialCheck; refuse: (problem: string) => ApiError };
}

export { needsParams };

/** The advertised address of an entry's endpoint. */
export function marketMcpUrl(deps: Pick<ApiDeps, 'config'>, apiOrigin: string, entryId: string): string {
  return mcpUrlOf(deps.config, apiOrigin, entryId);
}

/**
 * A 401 with the Bearer challenge: the error, and (RFC 9728) where the endpoint's protected resource
 * metadata is, with the scope a token needs, so that an OAuth client discovers the authorization server
 * (a 403 for insufficient_scope: a valid token of this endpoint without the `mcp` scope).
 * A request without any token gets no `error` (RFC 6750 section 3.1).
 */
function challenge(message: string, error: string | null, resourceMetadata: string | null): ApiError {
  const parts = ['realm="market-mcp"'];
  if (error) parts.push(`error="${error}"`, `error_description="${message.replace(/["\\]/g, '')}"`);
  if (resourceMetadata) parts.push(`resource_metadata="${resourceMetadata}"`, `scope="${MCP_SCOPE}"`);
  const headers = { 'WWW-Authenticate': `Bearer ${parts.join(', ')}` };
  // RFC 6750 §3.1: a valid token without the scope the resource needs is a 403.
  if (error === 'insufficient_scope') return new ApiError(403, 'insufficient_scope', message, undefined, headers);
  return new ApiError(401, 'unauthorized', message, undefined, headers);
}

/**
 * Resolves the bearer token: a credential of this entry, a plain API key for a parameterless entry,
 * or an OAuth access token issued for this entry's endpoint (standing for the credential its grant holds).
 */
async function authenticate(deps: ApiDeps, oauth: OAuthServer, ctx: Context): Promise<AuthInfo> {
  const rawEntryId = MARKET_MCP_PATH.exec(ctx.path)?.[1] ?? '';
  const entryId = rawEntryId.toLowerCase();
  const metadataUrl = UUID.test(rawEntryId) ? oauth.resourceMetadataUrl(ctx, entryId) : null;
  const challenge_ = (message: string, error: string | null = 'invalid_token') =>
    challenge(message, error, metadataUrl);
  const header = ctx.get('authorization');
  const token = /^Bearer\s+/i.test(header) ? header.replace(/^Bearer\s+/i, '').trim() : '';
  if (!token)
    throw challenge_(
      'Sign in with OAuth (see the resource metadata), or send Authorization: Bearer <credential> (POST /api/v1/mcp-market/mcps/{id}/credentials), or your API key for an entry without parameters',
      null,
    );
  if (!UUID.test(rawEntryId)) throw new ApiError(404, 'not_found', 'Market entry not found');
  const entry = await loadCallEntryCached(deps.db, deps.config.masterKey, entryId);
  if (!entry) throw new ApiError(404, 'not_found', 'Market entry not found (not approved, or disabled)');

  // A 2026-07-28 request (no session: each request stands alone) leaves the credential's liveness check to the
  // call's acquire statement, one round trip less; a 2025 session's requests are checked here, before anything.
  const revision = ctx.get('mcp-protocol-version');
  const deferrable = !ctx.get('mcp-session-id') && revision !== '' && revision >= MODERN_REVISIONS_FROM;
  let deferred: MarketRequestState['deferred'];
  const credentialOf = async (credential: string, source: 'direct' | 'oauth') => {
    if (deferrable) {
      const opened = deferredCredentialPrincipal(deps.db, deps.config.masterKey, entry, credential, source);
      if ('problem' in opened) throw challenge_(opened.problem);
      deferred = { check: opened.check, refuse: (problem) => challenge_(problem) };
      return opened.principal;
    }
    const opened = await credentialPrincipal(deps.db, deps.config.masterKey, entry, credential, source);
    if ('problem' in opened) throw challenge_(opened.problem);
    return opened.principal;
  };
  let principal: MarketPrincipal;
  if (looksLikeMcpCredential(token)) {
    principal = await credentialOf(token, 'direct');
  } else {
    const key = await findApiKeyOwner(deps.db, token);
    if (key) {
      if (needsParams(entry.requiredUserParamsSchema)) {
        throw challenge_(
          'This entry needs parameters: create a credential with POST /api/v1/mcp-market/mcps/{id}/credentials and use it as the bearer token',
        );
      }
      principal = { userId: key.userId, selectionId: `api-key:${key.apiKeyId}`, params: {}, capMicros: null };
    } else {
      // Neither a credential nor an API key: an OAuth access token issued for this endpoint, or nothing.
      const resolved =
        token.length <= 256 && !token.startsWith(API_KEY_PREFIX)
          ? await oauth.resolveAccessToken(ctx, token, entry.entryId)
          : null;
      if (!resolved) throw challenge_('Unknown credential, API key or access token');
      if ('refused' in resolved)
        throw challenge_(resolved.refused, resolved.insufficientScope ? 'insufficient_scope' : 'invalid_token');
      // The grant holds a credential like any other: the same checks, the same billing.
      principal = await credentialOf(resolved.grant.credential, 'oauth');
    }
  }
  const tools = typeof ctx.query.tools === 'string' ? ctx.query.tools : null;
  const state: MarketRequestState = {
    principal,
    entry,
    ...(deferred && { deferred }),
    only: tools
      ? new Set(
          tools
            .split(',')
            .map((t) => t.trim())
            .filter(Boolean),
        )
      : null,
  };
  return { token: 'redacted', clientId: principal.userId, scopes: [], extra: { market: state } };
}

/**
 * After the SDK answered a request whose credential check was deferred: the check, unless the call's acquire
 * made it (one statement, never remembered), and the 401 a refused credential gets in place of the answer.
 */
async function confirmRequest(authInfo: AuthInfo): Promise<ApiError | null> {
  const deferred = stateOf(authInfo)?.deferred;
  if (!deferred) return null;
  try {
    await deferred.check.confirm();
    return null;
  } catch (error) {
    if (error instanceof PrincipalRefusedError) return deferred.refuse(error.problem);
    throw error;
  }
}

/** The price an agent or person sees before calling (tools/list `_meta`). */
function pricingMeta(entry: MarketCallEntry, tool: StoredMarketTool, maxRunChargeUsd: number) {
  switch (entry.monetizationStrategy) {
    case 'tool_call_fixed':
      return {
        monetizationStrategy: 'tool_call_fixed',
        clientPriceUsd: microsToUsd(tool.clientPriceMicros ?? 0),
        currency: 'USD',
        per: 'call',
      };
    case 'provider_event':
      return {
        monetizationStrategy: 'provider_event',
        currency: 'USD',
        events: entry.pricingEvents.map(pricingEventDefinition),
        maxRunChargeUsd,
      };
    default:
      return { monetizationStrategy: 'free', clientPriceUsd: 0, currency: 'USD' };
  }
}

function billingMeta(outcome: MarketToolCallOutcome) {
  const base = {
    runId: outcome.runId,
    chargedUsd: outcome.status === 'answered' ? microsToUsd(outcome.costMicros) : 0,
  };
  if (outcome.status === 'answered') return { ...base, outcome: 'answered' };
  return { ...base, outcome: outcome.status, code: outcome.code };
}

/**
 * The answer as the consumer reads it: every block the tool sent, its structuredContent, isError and
 * its `_meta`, with the billing `_meta` beside the tool's own (scrubbed by callMarketTool).
 */
function toResult(outcome: MarketToolCallOutcome): CallToolResult {
  const billing = billingMeta(outcome);
  if (outcome.status === 'answered') {
    const { result } = outcome;
    return {
      content: resultContent(result),
      ...(result.structuredContent && { structuredContent: result.structuredContent }),
      isError: result.isError,
      _meta: { ...result.meta, [BILLING_META]: billing },
    };
  }
  return { content: [{ type: 'text', text: outcome.message }], isError: true, _meta: { [BILLING_META]: billing } };
}

/**
 * A tool as tools/list shows it: exactly as the upstream listed it when the entry was validated (its
 * inputSchema with `$schema`, outputSchema, annotations, icons, `_meta`, in the upstream's key order),
 * with the provider's description where the provider wrote one, the provider's display name as the
 * title where it differs from the tool's name, and the price beside the upstream's `_meta`. An entry
 * listed before listings were kept (or an OpenAPI tool) shows its name, title, description and input schema.
 */
function listedTool(tool: StoredMarketTool, pricing: Record<string, unknown>): Tool {
  const description = describedAs(tool);
  const listing = tool.listing as (Partial<Tool> & Record<string, unknown>) | null | undefined;
  if (listing && listing.inputSchema) {
    const title = tool.displayName !== tool.toolName ? tool.displayName : (listing.title ?? tool.displayName);
    return {
      ...listing,
      name: tool.toolName,
      title,
      ...(description !== null ? { description } : {}),
      inputSchema: listing.inputSchema,
      _meta: { ...(listing._meta as Record<string, unknown> | undefined), [PRICING_META]: pricing },
    } as Tool;
  }
  return {
    name: tool.toolName,
    title: tool.displayName,
    ...(description !== null && { description }),
    inputSchema: (tool.inputSchema && Object.keys(tool.inputSchema).length ? tool.inputSchema : { type: 'object' }) as {
      type: 'object';
    },
    _meta: { [PRICING_META]: pricing },
  };
}

/** The verified payload of a requestState the endpoint minted: the round of the call that waits for input. */
interface HostedRequestState {
  w: string;
}

/** The JSON-RPC errors of a tool's server that reach the consumer as errors (not as an isError result). */
const RELAYED_RPC_ERRORS: ReadonlySet<number> = new Set([
  ProtocolErrorCode.MissingRequiredClientCapability,
  ProtocolErrorCode.UrlElicitationRequired,
]);

const stateOf = (authInfo: AuthInfo | undefined) =>
  (authInfo?.extra as { market?: MarketRequestState } | undefined)?.market;

/** Whose a session or a requestState is: the consumer, the credential (or API key) and the entry. */
function principalKey(authInfo: AuthInfo | undefined): string {
  const state = stateOf(authInfo);
  return state ? `${state.principal.userId}\0${state.principal.selectionId}\0${state.entry.entryId}` : '';
}

/** The client capabilities a tool's server may ask the consumer's client for (and that are relayed). */
function relayedCapabilities(
  capabilities: ClientCapabilities | undefined,
): Pick<ClientCapabilities, 'sampling' | 'elicitation' | 'roots'> | undefined {
  if (!capabilities) return undefined;
  const { sampling, elicitation, roots } = capabilities;
  return { ...(sampling && { sampling }), ...(elicitation && { elicitation }), ...(roots && { roots }) };
}

/**
 * The mount options of /mcp/{entryId}, authenticated first: 2026-07-28 clients get an SDK v2 server
 * per request; clients of the 2025 revisions a session (legacy-sessions.ts, bound to the consumer's
 * credential), so that what a tool asks of them during a call reaches them and their answers come back.
 */
export function marketMcpEndpoint(deps: ApiDeps, oauth: OAuthServer): McpEndpointOptions {
  const market = deps.config.market;
  const { callDeps, consumerRun } = marketCallPath(deps.db, market, deps.policy);
  const hosts = [market.mcpPublicUrl, market.publicApiUrl]
    .filter((u): u is string => !!u)
    .map((u) => new URL(u).hostname);
  // A call waiting for input is named by a requestState only this platform can mint (any API process:
  // the key derives from the master key), bound to the consumer's credential and the entry.
  const requestStates = createRequestStateCodec<HostedRequestState>({
    key: createHmac('sha256', deps.config.masterKey).update('market-mcp-request-state').digest(),
    ttlSeconds: Math.ceil(market.inputRequiredTtlMs / 1000),
    bind: (ctx) => principalKey(ctx.http?.authInfo),
  });

  return {
    path: MARKET_MCP_PATH,
    allowedHostnames: hosts,
    rateLimitPerMinute: market.mcpRateLimitPerMinute,
    authenticate: (ctx) => authenticate(deps, oauth, ctx),
    confirm: confirmRequest,
    sessions: {
      principalOf: principalKey,
      maxSessions: market.mcpMaxSessions,
      maxPerPrincipal: market.mcpSessionsPerConsumer,
      idleMs: market.mcpSessionIdleMs,
    },
    factory: ({ authInfo, era }) => {
      const opened = stateOf(authInfo);
      if (!opened) throw new Error('market MCP request without authentication');
      // A session's server answers many requests: each is served with its own (fresh) authentication.
      const current = (ctx: ServerContext) => stateOf(ctx.http?.authInfo) ?? opened;
      const offeredTo = ({ entry, only }: MarketRequestState) =>
        callableTools(entry).filter((t) => !only || only.has(t.toolName));
      // The level a 2025 client set with logging/setLevel (none: every level, as the protocol lets a server choose).
      let sessionLogLevel: LoggingLevel | undefined;
      const { product, server } = hostedServer(
        { name: `market-${opened.entry.slug}`, title: opened.entry.name, version: '1.0.0' },
        {
          // The endpoint does not notify tool-list changes (a listing changes through a review, not live).
          capabilities: { tools: { listChanged: false }, logging: {} },
          requestState: { verify: (state, ctx) => requestStates.verify(state, ctx) },
          inputRequired: { roundTimeoutMs: market.inputRequiredTtlMs },
        },
        era === 'modern' ? offeredTo(opened).filter(declaresParamHeaders) : [],
      );
      server.setRequestHandler('logging/setLevel', async (request) => {
        sessionLogLevel = request.params.level;
        return {};
      });
      server.setRequestHandler('tools/list', async (_request, ctx) => {
        const state = current(ctx);
        const maxRunChargeUsd = microsToUsd(
          Math.min(market.runChargeLimitMicros, state.principal.capMicros ?? Number.MAX_SAFE_INTEGER),
        );
        return {
          tools: offeredTo(state).map((tool) => listedTool(tool, pricingMeta(state.entry, tool, maxRunChargeUsd))),
        };
      });
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const state = current(ctx);
        const { entry, principal } = state;
        const name = request.params.name;
        const allowed = offeredTo(state).some((t) => t.toolName === name);
        const waiting = ctx.mcpReq.requestState<HostedRequestState>();
        let outcome: MarketRelayedOutcome;
        try {
          outcome = await relayMarketToolCall(callDeps, {
            consumerId: principal.userId,
            entry: allowed ? entry : { ...entry, approvedTools: [] },
            toolName: name,
            args: request.params.arguments ?? {},
            consumerParams: principal.params,
            selectionId: principal.selectionId,
            ...consumerRun(
              { consumerId: principal.userId, selectionId: principal.selectionId, capMicros: principal.capMicros },
              entry,
              state.deferred?.check,
            ),
            signal: ctx.mcpReq.signal,
            relay: callRelay(
              ctx,
              era,
              era === 'legacy' ? sessionLogLevel : undefined,
              server,
              market.inputRequiredTtlMs,
            ),
            ...(waiting?.w && { resume: { waitingId: waiting.w } }),
            ...(ctx.mcpReq.inputResponses && { inputResponses: ctx.mcpReq.inputResponses }),
          });
        } catch (error) {
          // Nothing was acquired, recorded or forwarded: the endpoint answers 401 in place of this (confirmRequest).
          if (error instanceof PrincipalRefusedError)
            throw new ProtocolError(ProtocolErrorCode.InvalidRequest, error.problem);
          throw error;
        }
        if (outcome.status === 'input_required') {
          // On a 2025 session the SDK asks the client for each input in a request of its own and calls this handler again.
          return inputRequired({
            inputRequests: outcome.inputRequests as InputRequests,
            requestState: await requestStates.mint({ w: outcome.waitingId }, ctx),
          });
        }
        if (outcome.status === 'refused' && outcome.code === 'input_expired')
          throw new ProtocolError(ProtocolErrorCode.InvalidParams, outcome.message, {
            reason: 'invalid_request_state',
          });
        if (outcome.status === 'failed' && outcome.rpc && RELAYED_RPC_ERRORS.has(outcome.rpc.code))
          throw new ProtocolError(outcome.rpc.code, outcome.message, outcome.rpc.data);
        return toResult(outcome);
      });
      return product;
    },
  };
}

/** A tool whose input schema declares arguments its clients mirror into `Mcp-Param-*` headers (SEP-2243, `x-mcp-header`). */
function declaresParamHeaders(tool: StoredMarketTool): boolean {
  let declares = paramHeaderTools.get(tool);
  if (declares === undefined) {
    const schema = (tool.listing as { inputSchema?: unknown } | null | undefined)?.inputSchema;
    declares = schema !== undefined && JSON.stringify(schema).includes('"x-mcp-header"');
    paramHeaderTools.set(tool, declares);
  }
  return declares;
}
const paramHeaderTools = new WeakMap<StoredMarketTool, boolean>();

/** Schemas registered only for the SDK to read their header declarations: never compiled, never run. */
const DECLARATIONS_ONLY: jsonSchemaValidator = {
  getValidator: () => (input) => ({ valid: true, data: input as never, errorMessage: undefined }),
};

/**
 * The server of one request (or 2025 session). When tools of the entry declare `Mcp-Param-*` headers
 * (SEP-2243), a 2026-07-28 request is served by an McpServer on which those tools are registered with
 * their input schemas, so that the SDK checks the request's headers against the arguments before the
 * call is dispatched (400, -32020 on a mismatch); its tools/list and tools/call are this endpoint's
 * (set on the server below, replacing the McpServer's own). Otherwise a plain Server.
 */
function hostedServer(
  info: ConstructorParameters<typeof Server>[0],
  options: ServerOptions,
  declaring: StoredMarketTool[],
): { product: McpServer | Server; server: Server } {
  if (declaring.length === 0) {
    const server = new Server(info, options);
    return { product: server, server };
  }
  const product = new McpServer(info, options);
  for (const tool of declaring) {
    const schema = (tool.listing as { inputSchema: JsonSchemaType }).inputSchema;
    product.registerTool(tool.toolName, { inputSchema: fromJsonSchema(schema, DECLARATIONS_ONLY) }, async () => ({
      content: [],
    }));
  }
  return { product, server: product.server };
}

/**
 * What a call relays to the consumer's client while it runs: progress (to the client's own
 * progressToken), log messages (at the level the client asked for: a 2026-07-28 request's
 * `logLevel`, a 2025 session's logging/setLevel, else every level on a 2025 session and none on
 * 2026-07-28), and on a 2025 session the tool's requests to the client (sampling, elicitation, roots),
 * sent as requests of this call. A 2026-07-28 client cannot be sent requests: a tool's server of a
 * 2025 revision that sends one mid-call gets an error (a 2026-07-28 server asks with input-required
 * results, which are relayed both ways).
 */
function callRelay(
  ctx: ServerContext,
  era: 'legacy' | 'modern',
  sessionLogLevel: LoggingLevel | undefined,
  server: Server,
  requestTimeoutMs: number,
): NonNullable<MarketToolCallRequest['relay']> {
  const progressToken = ctx.mcpReq._meta?.progressToken;
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const modernLevel = envelope?.[LOG_LEVEL_META_KEY] as LoggingLevel | undefined;
  const capabilities = relayedCapabilities(
    era === 'modern'
      ? (envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined)
      : server.getClientCapabilities(),
  );
  const quiet = () => {};
  return {
    ...(capabilities && { capabilities }),
    ...(progressToken !== undefined && {
      onProgress: (progress: Progress) =>
        void ctx.mcpReq
          .notify({ method: 'notifications/progress', params: { ...progress, progressToken } })
          .catch(quiet),
    }),
    ...((era === 'legacy' || modernLevel !== undefined) && {
      log: {
        level: era === 'legacy' ? sessionLogLevel : modernLevel,
        onMessage: (message: LoggingMessageNotificationParams) =>
          void ctx.mcpReq.notify({ method: 'notifications/message', params: message }).catch(quiet),
      },
    }),
    request:
      era === 'legacy'
        ? (method, params, signal) =>
            ctx.mcpReq.send({ method, params } as never, { signal, timeout: requestTimeoutMs }) as Promise<
              Record<string, unknown>
            >
        : async (method) => {
            throw new ProtocolError(
              ProtocolErrorCode.MethodNotFound,
              `${method} cannot be relayed to this client: it speaks the 2026-07-28 revision, which has no requests from server to client (a 2026-07-28 server asks for input with an input-required result)`,
            );
          },
  };
}
