import { randomUUID } from 'node:crypto';
import { BoundedCache } from '../bounded-cache';
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

/** Why a credential may no longer be used: revoked, or its API key rotated (the hosted endpoint answers either as a 401 invalid_token). */
export const CREDENTIAL_REVOKED = 'This credential has been revoked; create a new one';
export const CREDENTIAL_KEY_ROTATED =
  'The API key this credential was made with has been rotated; generate a new credential';

const PREFIX = 'mcpc1.';
const AAD = 'mcp-credential';

export function paramsSchemaHash(schema: Record<string, unknown>): string {
  return sha256Hex(canonicalJson(schema ?? {}));
}

/**
 * paramsSchemaHash of a schema object that is not changed after it is read (a live entry's, which the
 * entry cache hands out as one object per entry version): hashed once per object, not once per call.
 */
export function paramsSchemaHashOf(schema: Record<string, unknown>): string {
  if (schema === null || typeof schema !== 'object') return paramsSchemaHash(schema);
  let hash = schemaHashes.get(schema);
  if (hash === undefined) {
    hash = paramsSchemaHash(schema);
    schemaHashes.set(schema, hash);
  }
  return hash;
}
const schemaHashes = new WeakMap<object, string>();

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

/**
 * openMcpCredential remembered per token (the hosted endpoint opens the caller's credential on every
 * request). The claims are a pure function of the token and the key, so remembering them changes no
 * answer: whether the credential may still be used (its API key live, not rotated; the entry's
 * parameter schema unchanged) is checked by the caller on every request, after this. Only tokens that
 * opened are remembered, bounded in number and idle time, per master key; the claims are frozen.
 */
export function openMcpCredentialCached(masterKey: Buffer, token: string): Readonly<McpCredentialClaims> | null {
  let cache = openedCredentials.get(masterKey);
  if (!cache) {
    cache = new BoundedCache<Readonly<McpCredentialClaims>>({ maxEntries: 10_000, idleMs: 10 * 60_000 });
    openedCredentials.set(masterKey, cache);
  }
  const hit = cache.get(token);
  if (hit) return hit;
  const claims = openMcpCredential(masterKey, token);
  if (!claims) return null;
  const frozen = deepFreeze(claims);
  cache.set(token, frozen);
  return frozen;
}
const openedCredentials = new WeakMap<Buffer, BoundedCache<Readonly<McpCredentialClaims>>>();

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
