import type { Context } from 'koa';
import type { Config } from '../../../lib/config';

/** The origin clients reach the API at: PUBLIC_API_URL, else the request's own (X-Forwarded-Host/-Proto only with TRUST_PROXY). */
export function publicOrigin(ctx: Context, config: Pick<Config, 'market'>): string {
  // Not ctx.origin: in Koa 3 that is the request's Origin header.
  return config.market.publicApiUrl ?? `${ctx.protocol}://${ctx.host}`;
}

/** The advertised address of a market entry's hosted MCP endpoint (MCP_PUBLIC_URL, else the API origin). */
export function marketMcpUrl(config: Pick<Config, 'market'>, apiOrigin: string, entryId: string): string {
  return `${(config.market.mcpPublicUrl ?? apiOrigin).replace(/\/+$/, '')}/mcp/${entryId}`;
}
