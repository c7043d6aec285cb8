import type Router from '@koa/router';
import { OAuthClientRequest } from '../../lib/schemas/admin';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';
import { operatorClients, registerOperatorClient, removeOperatorClient } from '../services/oauth/operator-clients';
import { parseBody } from '../validation';

/**
 * Operator-managed OAuth clients of the authorization server (issue 25), on the admin router (prefix
 * /admin, ADMIN_TOKEN):
 * POST   /admin/oauth/clients              {name, redirectUris, clientId?, tokenEndpointAuthMethod?}
 *        → 201 the client; a confidential client's `clientSecret` is in this answer only
 * GET    /admin/oauth/clients              → {clients: [...]} (never a secret)
 * DELETE /admin/oauth/clients/{clientId}   → 204; the client's grants and tokens end with it
 */
export function registerOAuthAdminRoutes(router: Router<AppState>, deps: ApiDeps): void {
  router.post('/oauth/clients', async (ctx) => {
    const body = parseBody(OAuthClientRequest, ctx.state.body);
    const client = await registerOperatorClient(deps, body);
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = client;
  });

  router.get('/oauth/clients', async (ctx) => {
    ctx.body = await operatorClients(deps.db);
  });

  router.delete('/oauth/clients/:clientId', async (ctx) => {
    const clientId = String(ctx.params.clientId);
    await removeOperatorClient(deps, clientId);
    ctx.status = 204;
  });
}
