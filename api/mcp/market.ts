import type { Context } from 'koa';
import { Server, type AuthInfo, type CallToolResult, type Tool } from '@modelcontextprotocol/server';
import { acquireCallRun, findApiKeyOwner, findLiveApiKeyCached, loadCallEntryCached, createMarketCallStore, runSettings } from '../../db/repos/market-tool-calls';
import { looksLikeMcpCredential, openMcpCredential, paramsSchemaHash } from '../../lib/market/credential';
import { describedAs, pricingEventDefinition, type StoredMarketTool } from '../../lib/market/listing';
import { callableTools, callMarketTool, marketToolCallDeps, type MarketCallEntry, type MarketToolCallOutcome } from '../../lib/market/tool-call';
import { microsToUsd } from '../../lib/money';
import { resultContent } from '../../lib/tools/result';
import type { SourceParamValues } from '../../lib/tools/types';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import type { McpEndpointOptions } from './endpoint';

/** The hosted market endpoint: `/mcp/{entryId}` on the API origin (or under MCP_PUBLIC_URL). */
export const MARKET_MCP_PATH = /^\/mcp\/([^/]+)\/?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `_meta` keys of tools/list and tools/call answers. */
export const PRICING_META = 'scrape-platform/pricing';
export const BILLING_META = 'scrape-platform/billing';

/** Who is calling and with what: resolved from the bearer token before the MCP server is built. */
interface MarketPrincipal {
  userId: string;
  /** The credential's id, or `api-key:<key id>` for a plain API key. */
  selectionId: string;
  params: SourceParamValues;
  capMicros: number | null;
}

interface MarketRequestState {
  principal: MarketPrincipal;
  entry: MarketCallEntry;
  /** ?tools=a,b: only these tools are listed and callable. */
  only: Set<string> | null;
}

export function needsParams(schema: Record<string, unknown>): boolean {
  return Object.keys((schema?.properties as Record<string, unknown> | undefined) ?? {}).length > 0;
}

/** The advertised address of an entry's endpoint. */
export function marketMcpUrl(deps: Pick<ApiDeps, 'config'>, apiOrigin: string, entryId: string): string {
  return `${(deps.config.market.mcpPublicUrl ?? apiOrigin).replace(/\/+$/, '')}/mcp/${entryId}`;
}

function challenge(message: string, error = 'invalid_token'): ApiError {
  return new ApiError(401, 'unauthorized', message, undefined, {
    'WWW-Authenticate': `Bearer realm="market-mcp", error="${error}", error_description="${message.replace(/["\\]/g, '')}"`,
  });
}

/** Resolves the bearer token (a credential of this entry, or a plain API key for a parameterless entry). */
async function authenticate(deps: ApiDeps, ctx: Context): Promise<AuthInfo> {
  const entryId = MARKET_MCP_PATH.exec(ctx.path)?.[1] ?? '';
  const header = ctx.get('authorization');
  const token = /^Bearer\s+/i.test(header) ? header.replace(/^Bearer\s+/i, '').trim() : '';
  if (!token) throw challenge('Send Authorization: Bearer <credential> (POST /api/v1/mcp-market/mcps/{id}/credentials), or your API key for an entry without parameters', 'invalid_request');
  if (!UUID.test(entryId)) throw new ApiError(404, 'not_found', 'Market entry not found');
  const entry = await loadCallEntryCached(deps.db, deps.config.masterKey, entryId.toLowerCase());
  if (!entry) throw new ApiError(404, 'not_found', 'Market entry not found (not approved, or disabled)');

  let principal: MarketPrincipal;
  if (looksLikeMcpCredential(token)) {
    const claims = openMcpCredential(deps.config.masterKey, token);
    if (!claims) throw challenge('The credential is not valid');
    if (claims.entryId !== entry.entryId) throw challenge('This credential belongs to another market entry');
    const key = await findLiveApiKeyCached(deps.db, claims.apiKeyId, claims.userId);
    if (!key) throw challenge('The API key this credential was made with has been rotated; generate a new credential');
    if (claims.paramsSchemaHash !== paramsSchemaHash(entry.requiredUserParamsSchema)) throw challenge("The entry's parameters changed since this credential was made; generate a new credential");
    principal = { userId: claims.userId, selectionId: claims.id, params: claims.params, capMicros: claims.capMicros };
  } else {
    const key = await findApiKeyOwner(deps.db, token);
    if (!key) throw challenge('Unknown credential or API key');
    if (needsParams(entry.requiredUserParamsSchema)) {
      throw challenge('This entry needs parameters: create a credential with POST /api/v1/mcp-market/mcps/{id}/credentials and use it as the bearer token');
    }
    principal = { userId: key.userId, selectionId: `api-key:${key.apiKeyId}`, params: {}, capMicros: null };
  }
  const tools = typeof ctx.query.tools === 'string' ? ctx.query.tools : null;
  const state: MarketRequestState = { principal, entry, only: tools ? new Set(tools.split(',').map((t) => t.trim()).filter(Boolean)) : null };
  return { token: 'redacted', clientId: principal.userId, scopes: [], extra: { market: state } };
}

/** The price an agent or person sees before calling (tools/list `_meta`). */
function pricingMeta(entry: MarketCallEntry, tool: StoredMarketTool, maxRunChargeUsd: number) {
  switch (entry.monetizationStrategy) {
    case 'tool_call_fixed':
      return { monetizationStrategy: 'tool_call_fixed', clientPriceUsd: microsToUsd(tool.clientPriceMicros ?? 0), currency: 'USD', per: 'call' };
    case 'provider_event':
      return { monetizationStrategy: 'provider_event', currency: 'USD', events: entry.pricingEvents.map(pricingEventDefinition), maxRunChargeUsd };
    default:
      return { monetizationStrategy: 'free', clientPriceUsd: 0, currency: 'USD' };
  }
}

function billingMeta(outcome: MarketToolCallOutcome) {
  const base = { runId: outcome.runId, chargedUsd: outcome.status === 'answered' ? microsToUsd(outcome.costMicros) : 0 };
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
    inputSchema: (tool.inputSchema && Object.keys(tool.inputSchema).length ? tool.inputSchema : { type: 'object' }) as { type: 'object' },
    _meta: { [PRICING_META]: pricing },
  };
}

/** The mount options of /mcp/{entryId}: a stateless SDK v2 server per request, authenticated first. */
export function marketMcpEndpoint(deps: ApiDeps): McpEndpointOptions {
  const market = deps.config.market;
  const callDeps = marketToolCallDeps({
    store: createMarketCallStore(deps.db, { commit: market.callCommit, idleGraceMs: market.runIdleGraceMs }),
    market,
    policy: deps.policy,
  });
  const settings = runSettings(market);
  const hosts = [market.mcpPublicUrl, market.publicApiUrl].filter((u): u is string => !!u).map((u) => new URL(u).hostname);

  return {
    path: MARKET_MCP_PATH,
    allowedHostnames: hosts,
    rateLimitPerMinute: market.mcpRateLimitPerMinute,
    authenticate: (ctx) => authenticate(deps, ctx),
    factory: ({ authInfo }) => {
      const state = (authInfo?.extra as { market?: MarketRequestState } | undefined)?.market;
      if (!state) throw new Error('market MCP request without authentication');
      const { entry, principal, only } = state;
      const offered = callableTools(entry).filter((t) => !only || only.has(t.toolName));
      const maxRunChargeUsd = microsToUsd(Math.min(market.runChargeLimitMicros, principal.capMicros ?? Number.MAX_SAFE_INTEGER));
      const server = new Server({ name: `market-${entry.slug}`, title: entry.name, version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler('tools/list', async () => ({
        tools: offered.map((tool) => listedTool(tool, pricingMeta(entry, tool, maxRunChargeUsd))),
      }));
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const name = request.params.name;
        const allowed = offered.some((t) => t.toolName === name);
        const outcome = await callMarketTool(callDeps, {
          consumerId: principal.userId,
          entry: allowed ? entry : { ...entry, approvedTools: [] },
          toolName: name,
          args: request.params.arguments ?? {},
          consumerParams: principal.params,
          selectionId: principal.selectionId,
          // A fixed-price or free call is a run of its own, holding its price; a credential's provider_event
          // calls share one run while they follow each other (its hold, its charge token, its grace).
          runPerCall: entry.monetizationStrategy !== 'provider_event',
          signal: ctx.mcpReq.signal,
          acquireRun: (reserveMicros) =>
            acquireCallRun(deps.db, settings, {
              consumerId: principal.userId,
              entryId: entry.entryId,
              selectionId: principal.selectionId,
              jobId: null,
              capMicros: principal.capMicros,
              reserveMicros,
              shared: entry.monetizationStrategy === 'provider_event',
            }),
        });
        return toResult(outcome);
      });
      return server;
    },
  };
}
