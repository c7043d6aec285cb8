import type { Db } from '../../../db/connect';
import {
  findMarketCredential,
  listMarketCredentials,
  listUsedMcpEntries,
  recordMarketCredential,
  revokeMarketCredential,
  setCredentialBudgets,
  type CredentialBudgets,
  type MarketCredentialRecord,
} from '../../../db/repos/market-credentials';
import { paginationMeta, type PageRequest } from '../../../lib/pagination';
import { loadCallEntry } from '../../../db/repos/market-tool-calls';
import type { Config } from '../../../lib/config';
import { wholeMicrosCap } from '../../../lib/market/caps';
import { issueMcpCredential, paramsSchemaHash } from '../../../lib/market/credential';
import { MarketRuleError } from '../../../lib/market/errors';
import { checkUserParams } from '../../../lib/market/user-params-schema';
import { microsToUsd, usdToWholeMicros } from '../../../lib/money';
import type { SourceParamValues } from '../../../lib/tools/types';
import { ApiError, notFound } from '../../errors';
import { searchToolMarket } from './catalog';
import { marketMcpUrl } from '../shared/public-urls';

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

/** The budgets a consumer gives a credential, in USD (undefined: not given; null: none). */
export interface BudgetsUsd {
  budgetTotalUsd?: number | null;
  budgetMonthlyUsd?: number | null;
}

/**
 * A credential's budgets in whole micro-USD (undefined stays undefined, null stays null): an amount that is not a
 * positive whole number of micro-USD is refused with 400 validation_failed naming the field (lib/market/caps.ts).
 */
export function credentialBudgetsMicros(body: BudgetsUsd, at = 'body'): Partial<CredentialBudgets> {
  const micros = (usd: number | null | undefined, field: string) => {
    if (usd === undefined || usd === null) return usd;
    try {
      return wholeMicrosCap(usd, field, `${at}/${field}`);
    } catch (err) {
      if (err instanceof MarketRuleError) throw new ApiError(400, err.code, err.message, err.details);
      throw err;
    }
  };
  return {
    budgetTotalMicros: micros(body.budgetTotalUsd, 'budgetTotalUsd'),
    budgetMonthlyMicros: micros(body.budgetMonthlyUsd, 'budgetMonthlyUsd'),
  };
}

const usdOrNull = (micros: number | null | undefined) => (micros == null ? null : microsToUsd(micros));

export interface IssuedCredential {
  credential: string;
  mcpUrl: string;
  credentialId: string;
  entryId: string;
  label: string | null;
  maxTotalUsdPerRun: number | null;
  maxRunChargeUsd: number | null;
  budgetTotalUsd: number | null;
  budgetMonthlyUsd: number | null;
}

/**
 * Issues an MCP client credential for a live tool-market entry (POST /mcp-market/mcps/:id/credentials
 * and the console's credentials page): the values must fit the entry's requiredUserParamsSchema; the
 * credential seals them with the caller's API key id and the cap. The token is shown once; the service
 * records the credential's id, entry, key, label and cap (never the token or the params) so that the
 * account can list it and revoke it alone.
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
    /** A name the consumer gives it (where it is used), shown in the list. */
    label?: string | null;
    apiOrigin: string;
  } & BudgetsUsd,
): Promise<IssuedCredential> {
  const entry = await loadCallEntry(deps.db, deps.config.masterKey, input.entryId);
  if (!entry) throw notFound('Market entry');
  checkUserParams(entry.requiredUserParamsSchema, input.params, 'body/params');
  const capMicros = credentialCapMicros(input);
  const budgets = credentialBudgetsMicros(input);
  const apiKeyId = await input.apiKeyId();
  const { token, claims } = issueMcpCredential(deps.config.masterKey, {
    entryId: entry.entryId,
    userId: input.userId,
    apiKeyId,
    params: input.params,
    paramsSchemaHash: paramsSchemaHash(entry.requiredUserParamsSchema),
    capMicros,
  });
  const label = input.label?.trim() || null;
  await recordMarketCredential(deps.db, {
    id: claims.id,
    userId: input.userId,
    entryId: entry.entryId,
    apiKeyId,
    source: 'direct',
    label,
    capMicros,
    ...budgets,
    createdAt: new Date(claims.iat),
  });
  return {
    credential: token,
    mcpUrl: marketMcpUrl(deps.config, input.apiOrigin, entry.entryId),
    credentialId: claims.id,
    entryId: entry.entryId,
    label,
    maxTotalUsdPerRun: capMicros === null ? null : microsToUsd(capMicros),
    maxRunChargeUsd: capMicros === null ? null : microsToUsd(capMicros),
    budgetTotalUsd: usdOrNull(budgets.budgetTotalMicros),
    budgetMonthlyUsd: usdOrNull(budgets.budgetMonthlyMicros),
  };
}

/** MarketCredential: what the account sees of one issued credential (never the token or its params). */
export interface CredentialView {
  id: string;
  entryId: string;
  entryName: string | null;
  label: string | null;
  maxTotalUsdPerRun: number | null;
  budgetTotalUsd: number | null;
  budgetMonthlyUsd: number | null;
  /** What its runs were charged, in all and in this calendar month (UTC). */
  spentUsd: number;
  spentThisMonthUsd: number;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** active; revoked (DELETE, or the console's Revoke); key_rotated (the API key it was made with was rotated). */
  status: 'active' | 'revoked' | 'key_rotated';
  /** direct: issued by POST /mcp-market/mcps/{id}/credentials or the console; oauth: an app's, made when you connected it. */
  source: 'direct' | 'oauth';
  /** The OAuth client that holds it (source oauth), else null. */
  app: { clientId: string | null; name: string | null } | null;
}

export function credentialView(record: MarketCredentialRecord): CredentialView {
  return {
    id: record.id,
    entryId: record.entryId,
    entryName: record.entryName,
    label: record.label,
    maxTotalUsdPerRun: usdOrNull(record.capMicros),
    budgetTotalUsd: usdOrNull(record.budgetTotalMicros),
    budgetMonthlyUsd: usdOrNull(record.budgetMonthlyMicros),
    spentUsd: microsToUsd(record.spentMicros),
    spentThisMonthUsd: microsToUsd(record.spentThisMonthMicros),
    createdAt: record.createdAt.toISOString(),
    lastUsedAt: record.lastUsedAt?.toISOString() ?? null,
    revokedAt: record.revokedAt?.toISOString() ?? null,
    status: record.revokedAt ? 'revoked' : record.keyLive ? 'active' : 'key_rotated',
    source: record.source,
    app: record.app ? { clientId: record.app.clientId, name: record.app.clientName } : null,
  };
}

/**
 * The account's market credentials, newest first (GET /mcp-market/credentials and the console's
 * credentials page), revoked ones included: the ones issued directly and the ones OAuth grants hold (`app`).
 */
export async function listEntryCredentials(db: Db, userId: string, page: PageRequest) {
  const { rows, total } = await listMarketCredentials(db, userId, page);
  return { credentials: rows.map(credentialView), meta: paginationMeta(page, total) };
}

/**
 * Revokes one of the account's credentials (DELETE /mcp-market/credentials/{id} and the console's
 * Revoke): the next request made with it is refused; an app's (OAuth) credential ends its grant too.
 * Idempotent; another account's id is a 404.
 */
export async function revokeEntryCredential(
  deps: { db: Db; config: Config },
  userId: string,
  credentialId: string,
): Promise<{ revokedAt: string }> {
  const revoked = await revokeMarketCredential(deps.db, deps.config.masterKey, userId, credentialId);
  if (!revoked) throw notFound('Market credential');
  return { revokedAt: revoked.revokedAt.toISOString() };
}

/** How many listings the console's credential chooser offers at once (the account's, and search results). */
export const LISTING_CHOICES = 10;

/** A live listing a credential can be made for, as the console's chooser shows it. */
export interface ListingChoice {
  entryId: string;
  name: string;
  description: string | null;
  /** The latest use of the account's credentials for it (the listings the account uses), else null. */
  lastUsedAt: string | null;
}

/** The live listings the account holds credentials for, most recently used first (the console's chooser). */
export async function listingsInUse(db: Db, userId: string): Promise<ListingChoice[]> {
  const used = await listUsedMcpEntries(db, userId, LISTING_CHOICES);
  return used.map((entry) => ({
    entryId: entry.entryId,
    name: entry.name,
    description: null,
    lastUsedAt: entry.lastUsedAt.toISOString(),
  }));
}

/** Live listings whose name, description or tool names match `q` (the catalogue's full-text search), best first. */
export async function findListingsByName(db: Db, q: string): Promise<ListingChoice[]> {
  const { rows } = await searchToolMarket(db, { q }, { page: 1, pageSize: LISTING_CHOICES });
  return rows.map((row) => ({
    entryId: row.listingId,
    name: row.name,
    description: row.description,
    lastUsedAt: null,
  }));
}

/**
 * Sets one of the account's credentials' budgets (PATCH /mcp-market/credentials/{id} and the console): a value
 * replaces the budget, null removes it, an absent one stays. The next call made with the credential is bounded by
 * them. Another account's id is a 404.
 */
export async function updateCredentialBudgets(
  db: Db,
  userId: string,
  credentialId: string,
  body: BudgetsUsd,
): Promise<CredentialView> {
  const budgets = credentialBudgetsMicros(body);
  if (!(await setCredentialBudgets(db, userId, credentialId, budgets))) throw notFound('Market credential');
  const record = await findMarketCredential(db, userId, credentialId);
  if (!record) throw notFound('Market credential');
  return credentialView(record);
}
