import Router from '@koa/router';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';
import { MCP_SCOPE, type OAuthServer } from '../services/oauth/authorization-server';
import { protectedResourceEntry } from '../services/oauth/protected-resource';

/**
 * The protected resource metadata (RFC 9728) of each hosted market endpoint, at the path-scoped
 * well-known address its 401 names: the resource, the authorization server that issues its tokens
 * and the scope they carry.
 */
export function protectedResourceRoutes(deps: ApiDeps, oauth: OAuthServer): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/.well-known/oauth-protected-resource/mcp/:entryId', async (ctx) => {
    const entry = await protectedResourceEntry(deps, String(ctx.params.entryId));
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
