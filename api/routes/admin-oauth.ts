import type Router from '@koa/router';
import {
  createOperatorClient,
  deleteOperatorClient,
  DuplicateClientError,
  listOperatorClients,
  type OperatorClient,
} from '../../db/repos/oauth-clients';
import { OAuthClientRequest } from '../../lib/schemas/admin';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError, notFound } from '../errors';
import { parseBody } from '../validation';

const CLIENT_ID = /^[A-Za-z0-9][A-Za-z0-9._~-]{2,99}$/;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Why a redirect URI cannot be registered, or null. As the MCP authorization spec asks: HTTPS, or
 * plain HTTP on a loopback host for a native client (127.0.0.1, [::1], localhost); an absolute URL
 * without a fragment or credentials. The authorization server matches it exactly (port included).
 */
export function redirectUriProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.hash || value.includes('#')) return 'must not have a fragment';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return 'must be an https URL, or http on a loopback host (127.0.0.1, [::1], localhost) for a native client';
}

const view = (client: OperatorClient & { clientSecret?: string }) => ({
  clientId: client.clientId,
  name: client.clientName,
  redirectUris: client.redirectUris,
  tokenEndpointAuthMethod: client.tokenEndpointAuthMethod,
  createdAt: client.createdAt.toISOString(),
  ...(client.clientSecret && { clientSecret: client.clientSecret }),
});

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
    const problems = body.redirectUris.flatMap((uri, i) => {
      const problem = redirectUriProblem(uri);
      return problem ? [{ path: `body/redirectUris/${i}`, message: problem }] : [];
    });
    if (problems.length) throw new ApiError(400, 'validation_failed', 'Invalid redirect URI', problems);
    try {
      const client = await createOperatorClient(deps.db, deps.config.masterKey, {
        clientId: body.clientId,
        clientName: body.name.trim() || body.name,
        redirectUris: body.redirectUris,
        tokenEndpointAuthMethod: body.tokenEndpointAuthMethod ?? 'none',
      });
      ctx.status = 201;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = view(client);
    } catch (err) {
      if (err instanceof DuplicateClientError) throw new ApiError(409, 'conflict', err.message);
      throw err;
    }
  });

  router.get('/oauth/clients', async (ctx) => {
    ctx.body = { clients: (await listOperatorClients(deps.db)).map(view) };
  });

  router.delete('/oauth/clients/:clientId', async (ctx) => {
    const clientId = String(ctx.params.clientId);
    if (!CLIENT_ID.test(clientId) || !(await deleteOperatorClient(deps.db, deps.config.masterKey, clientId)))
      throw notFound('OAuth client');
    ctx.status = 204;
  });
}
