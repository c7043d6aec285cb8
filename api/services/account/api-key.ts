import type { Db } from '../../../db/connect';
import { findApiKeyOwner } from '../../../db/repos/market-tool-calls';
import { getWebhookSecret } from '../../../db/repos/users';
import type { Config } from '../../../lib/config';
import { unauthorized } from '../../errors';

/** GET /account/webhook-secret: the secret the account's webhooks are signed with. */
export async function webhookSecret(deps: { db: Db; config: Pick<Config, 'masterKey'> }, userId: string) {
  return { webhookSecret: await getWebhookSecret(deps.db, deps.config.masterKey, userId) };
}

/** The id of the API key a request is made with (the account's, live), else 401. */
export async function requestApiKeyId(db: Db, apiKey: string, userId: string): Promise<string> {
  const key = await findApiKeyOwner(db, apiKey);
  if (!key || key.userId !== userId) throw unauthorized();
  return key.apiKeyId;
}
