import { randomBytes } from 'node:crypto';
import { seal, unseal } from '../../lib/crypto';
import type { Db } from '../connect';
import { endMarketGrants } from './oauth';

/**
 * Operator-managed OAuth clients (table `oauth_clients`, migration 0026): what an operator registers
 * through the admin API. The authorization server finds them before dynamically registered clients
 * and client ID metadata documents (api/services/oauth/authorization-server.ts). A confidential client's secret is sealed
 * with MASTER_KEY (associated data `oauth-client:<client_id>`) and shown once, at registration.
 */
export type ClientAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

export interface OperatorClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  tokenEndpointAuthMethod: ClientAuthMethod;
  createdAt: Date;
}

export class DuplicateClientError extends Error {}

const secretAad = (clientId: string) => `oauth-client:${clientId}`;

const toClient = (row: {
  client_id: string;
  client_name: string;
  redirect_uris: unknown;
  token_endpoint_auth_method: string;
  created_at: Date | string;
}): OperatorClient => ({
  clientId: row.client_id,
  clientName: row.client_name,
  redirectUris: (typeof row.redirect_uris === 'string' ? JSON.parse(row.redirect_uris) : row.redirect_uris) as string[],
  tokenEndpointAuthMethod: row.token_endpoint_auth_method as ClientAuthMethod,
  createdAt: new Date(row.created_at),
});

/** Registers a client; a confidential one gets a new secret, returned here and never again. */
export async function createOperatorClient(
  db: Db,
  masterKey: Buffer,
  input: { clientId?: string; clientName: string; redirectUris: string[]; tokenEndpointAuthMethod: ClientAuthMethod },
): Promise<OperatorClient & { clientSecret?: string }> {
  const clientId = input.clientId ?? `mcp_${randomBytes(16).toString('base64url')}`;
  const clientSecret = input.tokenEndpointAuthMethod === 'none' ? undefined : randomBytes(32).toString('base64url');
  const row = await db
    .insertInto('oauth_clients')
    .values({
      client_id: clientId,
      client_name: input.clientName,
      redirect_uris: JSON.stringify(input.redirectUris),
      token_endpoint_auth_method: input.tokenEndpointAuthMethod,
      client_secret: clientSecret ? seal(masterKey, clientSecret, secretAad(clientId)) : null,
    })
    .onConflict((oc) => oc.column('client_id').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new DuplicateClientError(`An OAuth client "${clientId}" is already registered`);
  return { ...toClient(row), ...(clientSecret && { clientSecret }) };
}

export async function listOperatorClients(db: Db): Promise<OperatorClient[]> {
  const rows = await db
    .selectFrom('oauth_clients')
    .select(['client_id', 'client_name', 'redirect_uris', 'token_endpoint_auth_method', 'created_at'])
    .orderBy('created_at', 'desc')
    .orderBy('client_id')
    .limit(1_000)
    .execute();
  return rows.map(toClient);
}

/**
 * Deletes a client and ends what it holds: every live market grant of it is revoked with the market
 * credential it holds, and the authorization server's grants, codes and tokens of them removed
 * (endMarketGrants). False when there is no such client.
 */
export async function deleteOperatorClient(
  db: Db,
  masterKey: Buffer,
  clientId: string,
  now = new Date(),
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const deleted = await trx.deleteFrom('oauth_clients').where('client_id', '=', clientId).executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) return false;
    await endMarketGrants(trx, masterKey, { clientId }, now);
    return true;
  });
}

/** The client's metadata as oidc-provider reads it (RFC 7591 names, the secret unsealed), or undefined. */
export async function operatorClientMetadata(
  db: Db,
  masterKey: Buffer,
  clientId: string,
): Promise<Record<string, unknown> | undefined> {
  const row = await db.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  if (!row) return undefined;
  const client = toClient(row);
  return {
    client_id: client.clientId,
    client_name: client.clientName,
    redirect_uris: client.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: client.tokenEndpointAuthMethod,
    ...(row.client_secret && { client_secret: unseal(masterKey, row.client_secret, secretAad(client.clientId)) }),
  };
}
