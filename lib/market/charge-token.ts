import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * Charge tokens: `mct1.<payload>.<mac>`, both parts base64url; payload is JSON of ChargeTokenClaims
 * and mac the HMAC-SHA256 of "mct1.<payload>" under the server's charge-token key
 * (MARKET_CHARGE_TOKEN_KEY, generated into DATA_DIR when unset). A token is bound to one run id,
 * the provider who may charge it (owner) and the source fingerprint or entry, and expires at `exp`.
 */
export interface ChargeTokenClaims {
  /** `verification` (event verification before a submission) or `run` (a market run). */
  kind: 'verification' | 'run';
  runId: string;
  /** The provider's user id: only their API key may charge with this token. */
  providerId: string;
  sourceFingerprint?: string;
  entryId?: string;
  /** Expiry, unix milliseconds. */
  exp: number;
}

const PREFIX = 'mct1';

export type TokenCheck =
  { ok: true; claims: ChargeTokenClaims } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

/**
 * The key as a KeyObject, made once per key buffer: an HMAC keyed by a Buffer makes one on every
 * call, which costs several times the HMAC itself (every charge request checks a token).
 */
const keyObjects = new WeakMap<Buffer, KeyObject>();

function mac(key: Buffer, signed: string): Buffer {
  let keyObject = keyObjects.get(key);
  if (!keyObject) {
    keyObject = createSecretKey(key);
    keyObjects.set(key, keyObject);
  }
  return createHmac('sha256', keyObject).update(signed).digest();
}

export function signChargeToken(key: Buffer, claims: ChargeTokenClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signed = `${PREFIX}.${payload}`;
  return `${signed}.${mac(key, signed).toString('base64url')}`;
}

export function verifyChargeToken(key: Buffer, token: string, now = Date.now()): TokenCheck {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX || !parts[1] || !parts[2]) return { ok: false, reason: 'malformed' };
  const expected = mac(key, `${parts[0]}.${parts[1]}`);
  const given = Buffer.from(parts[2], 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'bad_signature' };
  let claims: ChargeTokenClaims;
  try {
    claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as ChargeTokenClaims;
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (typeof claims.exp !== 'number' || typeof claims.runId !== 'string' || typeof claims.providerId !== 'string')
    return { ok: false, reason: 'malformed' };
  if (claims.exp <= now) return { ok: false, reason: 'expired' };
  return { ok: true, claims };
}
