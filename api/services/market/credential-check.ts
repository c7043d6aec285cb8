import type { Db } from '../../../db/connect';
import {
  findCredentialUse,
  LAST_USED_PRECISION_MS,
  markCredentialUsed,
  recordMarketCredential,
  type CredentialSource,
} from '../../../db/repos/market-credentials';
import {
  CREDENTIAL_KEY_ROTATED,
  CREDENTIAL_REVOKED,
  looksLikeMcpCredential,
  openMcpCredentialCached,
  paramsSchemaHashOf,
  type McpCredentialClaims,
} from '../../../lib/market/credential';
import { PrincipalRefusedError, type MarketCallEntry } from '../../../lib/market/tool-call';
import type { SourceParamValues } from '../../../lib/tools/types';
import type { DeferredCredentialCheck } from './call-path';

/**
 * The check of a presented market credential (an MCP client credential for one entry): the hosted
 * endpoint (api/mcp/market.ts) and "try a tool" (try.ts) both ask it who may call and with what.
 */

/** Who calls a market entry and with what: the consumer, the credential (or API key) and its parameters. */
export interface MarketPrincipal {
  userId: string;
  /** The credential's id, or `api-key:<key id>` for a plain API key. */
  selectionId: string;
  params: SourceParamValues;
  capMicros: number | null;
}

/** Whether an entry asks its consumers for parameters (then only a credential made for it can call it). */
export function needsParams(schema: Record<string, unknown>): boolean {
  return Object.keys((schema?.properties as Record<string, unknown> | undefined) ?? {}).length > 0;
}

/**
 * The principal of an MCP client credential presented for `entry`, or why it may not be used: the
 * hosted endpoint's check (api/mcp/market.ts) and the console's "try a tool" both use it. Whether the
 * credential is revoked and its API key still live is read in one statement on every request (never
 * cached), so a revocation takes effect at the next request. A credential issued before credentials
 * were recorded (migration 0023) is recorded now, on its first use (`source`: how it reached us), and
 * from then on listed and revocable like any other.
 */
export async function credentialPrincipal(
  db: Db,
  masterKey: Buffer,
  entry: MarketCallEntry,
  token: string,
  source: CredentialSource = 'direct',
): Promise<{ principal: MarketPrincipal } | { problem: string }> {
  const opened = openCredentialFor(masterKey, entry, token);
  if ('problem' in opened) return opened;
  const problem = (await checkCredentialUse(db, opened.claims, source)) ?? opened.paramsProblem;
  return problem ? { problem } : { principal: opened.principal };
}

/**
 * The same principal with the credential's liveness check left to the call's acquire statement
 * (DeferredCredentialCheck, migration 0027), which saves the hosted call a round trip: what needs no database
 * (the token opens, is this entry's, the entry's parameters unchanged) is checked now; the rest by the acquire,
 * or by `check.confirm()` for a request that acquires no run — always before anything is recorded, forwarded
 * or answered.
 */
export function deferredCredentialPrincipal(
  db: Db,
  masterKey: Buffer,
  entry: MarketCallEntry,
  token: string,
  source: CredentialSource = 'direct',
): { principal: MarketPrincipal; check: DeferredCredentialCheck } | { problem: string } {
  const opened = openCredentialFor(masterKey, entry, token);
  if ('problem' in opened) return opened;
  // Refused without the database (so before the key's and the revocation's checks, unlike credentialPrincipal).
  if (opened.paramsProblem) return { problem: opened.paramsProblem };
  const { claims } = opened;
  let verdict: string | null | undefined;
  let confirming: Promise<string | null> | undefined;
  const check: DeferredCredentialCheck = {
    credential: { id: claims.id, apiKeyId: claims.apiKeyId, source, issuedAt: new Date(claims.iat) },
    settled: () => verdict !== undefined,
    settle: (problem) => {
      verdict ??= problem;
    },
    confirm: async () => {
      if (verdict === undefined) {
        confirming ??= checkCredentialUse(db, claims, source);
        const problem = await confirming;
        verdict ??= problem;
      }
      if (verdict) throw new PrincipalRefusedError(verdict);
    },
  };
  return { principal: opened.principal, check };
}

function openCredentialFor(
  masterKey: Buffer,
  entry: MarketCallEntry,
  token: string,
):
  | { principal: MarketPrincipal; claims: Readonly<McpCredentialClaims>; paramsProblem: string | null }
  | { problem: string } {
  const claims = looksLikeMcpCredential(token) ? openMcpCredentialCached(masterKey, token) : null;
  if (!claims || typeof claims.id !== 'string') return { problem: 'The credential is not valid' };
  if (claims.entryId !== entry.entryId) return { problem: 'This credential belongs to another market entry' };
  return {
    claims,
    paramsProblem:
      claims.paramsSchemaHash === paramsSchemaHashOf(entry.requiredUserParamsSchema)
        ? null
        : "The entry's parameters changed since this credential was made; generate a new credential",
    principal: { userId: claims.userId, selectionId: claims.id, params: claims.params, capMicros: claims.capMicros },
  };
}

/** The credential's liveness, read in its own statement: null (may be used) or the problem; records a first use, marks the last. */
async function checkCredentialUse(
  db: Db,
  claims: Readonly<McpCredentialClaims>,
  source: CredentialSource,
): Promise<string | null> {
  const use = await findCredentialUse(db, {
    credentialId: claims.id,
    apiKeyId: claims.apiKeyId,
    userId: claims.userId,
  });
  if (!use) return CREDENTIAL_KEY_ROTATED;
  if (use.recorded?.revokedAt) return CREDENTIAL_REVOKED;
  const now = new Date();
  if (!use.recorded) {
    await recordMarketCredential(db, {
      id: claims.id,
      userId: claims.userId,
      entryId: claims.entryId,
      apiKeyId: claims.apiKeyId,
      source,
      label: null,
      capMicros: claims.capMicros,
      createdAt: new Date(claims.iat),
      lastUsedAt: now,
    });
  } else if (!use.recorded.lastUsedAt || now.getTime() - use.recorded.lastUsedAt.getTime() >= LAST_USED_PRECISION_MS) {
    await markCredentialUsed(db, claims.id, now);
  }
  return null;
}
