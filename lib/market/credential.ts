import { randomUUID } from 'node:crypto';
import { seal, unseal } from '../crypto';
import { canonicalJson } from './canonical-json';
import { sha256Hex } from './fingerprint';
import type { SourceParamValues } from '../tools/types';

/**
 * MCP client credentials of the hosted market endpoint: `mcpc1.<sealed>`, where `<sealed>` is the
 * AES-256-GCM seal (lib/crypto.ts, MASTER_KEY, associated data "mcp-credential") of the JSON claims
 * below. The credential holds the API key's *id* rather than the key: a rotated (revoked) key
 * invalidates every credential issued under it, and the key itself is never inside a token the
 * consumer hands to an MCP client. It is bound to one entry (its public id) and to the hash of the
 * entry's parameter schema when it was issued: a new schema means new credentials.
 */
export interface McpCredentialClaims {
  /** The credential's own id: the `x-service-charge-selection-id` of direct calls. */
  id: string;
  entryId: string;
  userId: string;
  apiKeyId: string;
  params: SourceParamValues;
  /** sha256 of the entry's requiredUserParamsSchema (canonical JSON) at issue time. */
  paramsSchemaHash: string;
  /** maxRunChargeUsd in micro-USD, or null. */
  capMicros: number | null;
  /** Issue time, unix ms. */
  iat: number;
}

const PREFIX = 'mcpc1.';
const AAD = 'mcp-credential';

export function paramsSchemaHash(schema: Record<string, unknown>): string {
  return sha256Hex(canonicalJson(schema ?? {}));
}

export function issueMcpCredential(
  masterKey: Buffer,
  claims: Omit<McpCredentialClaims, 'id' | 'iat'>,
  now = Date.now(),
): { token: string; claims: McpCredentialClaims } {
  const full: McpCredentialClaims = { id: randomUUID(), iat: now, ...claims };
  return { token: PREFIX + seal(masterKey, JSON.stringify(full), AAD), claims: full };
}

export function looksLikeMcpCredential(token: string): boolean {
  return token.startsWith(PREFIX);
}

/** The claims of a credential this server sealed, or null (malformed, forged, or sealed under another key). */
export function openMcpCredential(masterKey: Buffer, token: string): McpCredentialClaims | null {
  if (!looksLikeMcpCredential(token) || token.length > 16_384) return null;
  try {
    const claims = JSON.parse(unseal(masterKey, token.slice(PREFIX.length), AAD)) as McpCredentialClaims;
    if (typeof claims.entryId !== 'string' || typeof claims.apiKeyId !== 'string' || typeof claims.userId !== 'string')
      return null;
    return claims;
  } catch {
    return null;
  }
}
