import type { Db } from '../../db/connect';
import { loadCallEntry } from '../../db/repos/market-tool-calls';
import type { Config } from '../../lib/config';
import { issueMcpCredential, paramsSchemaHash } from '../../lib/market/credential';
import { checkUserParams } from '../../lib/market/user-params-schema';
import { microsToUsd, usdToWholeMicros } from '../../lib/money';
import type { SourceParamValues } from '../../lib/tools/types';
import { ApiError, notFound } from '../errors';
import { marketMcpUrl } from './public-urls';

/** The credential's cap per run (maxTotalUsdPerRun, or its deprecated alias maxRunChargeUsd) in whole micro-USD, or null. */
export function credentialCapMicros(body: { maxTotalUsdPerRun?: number; maxRunChargeUsd?: number }): number | null {
  const { maxTotalUsdPerRun: cap, maxRunChargeUsd: alias } = body;
  if (cap !== undefined && alias !== undefined && cap !== alias) {
    throw new ApiError(
      400,
      'validation_failed',
      'maxRunChargeUsd is a deprecated alias of maxTotalUsdPerRun: send one of them',
      [{ path: 'body/maxRunChargeUsd', message: 'differs from maxTotalUsdPerRun' }],
    );
  }
  const usd = cap ?? alias;
  if (usd === undefined) return null;
  const micros = usdToWholeMicros(usd);
  if (micros === null || micros <= 0) {
    const name = cap !== undefined ? 'maxTotalUsdPerRun' : 'maxRunChargeUsd';
    throw new ApiError(400, 'validation_failed', `${name} must be a positive amount in whole micro-USD`, [
      { path: `body/${name}`, message: 'is not a whole number of micro-USD' },
    ]);
  }
  return micros;
}

export interface IssuedCredential {
  credential: string;
  mcpUrl: string;
  credentialId: string;
  entryId: string;
  maxTotalUsdPerRun: number | null;
  maxRunChargeUsd: number | null;
}

/**
 * Issues an MCP client credential for a live tool-market entry (POST /mcp-market/mcps/:id/credentials
 * and the console's credentials page): the values must fit the entry's requiredUserParamsSchema; the
 * credential seals them with the caller's API key id and the cap. The token is shown once.
 */
export async function issueEntryCredential(
  deps: { db: Db; config: Config },
  input: {
    userId: string;
    /** The API key the credential is bound to, read once the request is known to be valid. */
    apiKeyId: () => Promise<string>;
    entryId: string;
    params: SourceParamValues;
    maxTotalUsdPerRun?: number;
    maxRunChargeUsd?: number;
    apiOrigin: string;
  },
): Promise<IssuedCredential> {
  const entry = await loadCallEntry(deps.db, deps.config.masterKey, input.entryId);
  if (!entry) throw notFound('Market entry');
  checkUserParams(entry.requiredUserParamsSchema, input.params, 'body/params');
  const capMicros = credentialCapMicros(input);
  const apiKeyId = await input.apiKeyId();
  const { token, claims } = issueMcpCredential(deps.config.masterKey, {
    entryId: entry.entryId,
    userId: input.userId,
    apiKeyId,
    params: input.params,
    paramsSchemaHash: paramsSchemaHash(entry.requiredUserParamsSchema),
    capMicros,
  });
  return {
    credential: token,
    mcpUrl: marketMcpUrl(deps.config, input.apiOrigin, entry.entryId),
    credentialId: claims.id,
    entryId: entry.entryId,
    maxTotalUsdPerRun: capMicros === null ? null : microsToUsd(capMicros),
    maxRunChargeUsd: capMicros === null ? null : microsToUsd(capMicros),
  };
}
