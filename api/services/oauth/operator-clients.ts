import type { Db } from '../../../db/connect';
import {
  createOperatorClient,
  deleteOperatorClient,
  DuplicateClientError,
  listOperatorClients,
  type ClientAuthMethod,
  type OperatorClient,
} from '../../../db/repos/oauth-clients';
import type { ApiDeps } from '../../deps';
import { ApiError, notFound } from '../../errors';

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
 * POST /admin/oauth/clients: a client the operator registers (its redirect URIs checked; 409 for a taken id); a
 * confidential client's `clientSecret` is in this answer only.
 */
export async function registerOperatorClient(
  deps: Pick<ApiDeps, 'db' | 'config'>,
  body: { clientId?: string; name: string; redirectUris: string[]; tokenEndpointAuthMethod?: ClientAuthMethod },
) {
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
    return view(client);
  } catch (err) {
    if (err instanceof DuplicateClientError) throw new ApiError(409, 'conflict', err.message);
    throw err;
  }
}

/** GET /admin/oauth/clients: every operator client (never a secret). */
export async function operatorClients(db: Db) {
  return { clients: (await listOperatorClients(db)).map(view) };
}

/** DELETE /admin/oauth/clients/{clientId}: the client, its grants and tokens end; 404 for an unknown id. */
export async function removeOperatorClient(deps: Pick<ApiDeps, 'db' | 'config'>, clientId: string): Promise<void> {
  if (!CLIENT_ID.test(clientId) || !(await deleteOperatorClient(deps.db, deps.config.masterKey, clientId)))
    throw notFound('OAuth client');
}
