import Router from '@koa/router';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { loadCallEntryCached } from '../../db/repos/market-tool-calls';
import { MCP_SCOPE, type OAuthServer } from '../services/oauth/authorization-server';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The protected resource metadata (RFC 9728) of each hosted market endpoint, at the path-scoped
 * well-known address its 401 names: the resource, the authorization server that issues its tokens
 * and the scope they carry.
 */
export function protectedResourceRoutes(deps: ApiDeps, oauth: OAuthServer): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/.well-known/oauth-protected-resource/mcp/:entryId', async (ctx) => {
    const entryId = String(ctx.params.entryId);
    const entry = UUID.test(entryId)
      ? await loadCallEntryCached(deps.db, deps.config.masterKey, entryId.toLowerCase())
      : null;
    if (!entry) throw new ApiError(404, 'not_found', 'Market entry not found (not approved, or disabled)');
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = {
      resource: oauth.resource(ctx, entry.entryId),
      authorization_servers: [oauth.issuer(ctx)],
      scopes_supported: [MCP_SCOPE],
      bearer_methods_supported: ['header'],
      resource_name: entry.name,
    };
  });
  return router;
}
