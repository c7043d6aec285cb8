import { createHmac } from 'node:crypto';

const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const MIN_SECRET_LENGTH = 16;
const STEP_SECONDS = 30;
const ONE_TIME_CODE = /^\d{6,8}$/;

export type TotpDigits = 6 | 7 | 8;

/** Upper-cases and strips whitespace and `=` padding. */
export function normalizeBase32(value: string): string {
  return value.replace(/[\s=]/g, '').toUpperCase();
}

/** RFC 4648 Base32, case-insensitive; whitespace and padding are ignored. Throws on any other character. */
export function base32Decode(value: string): Buffer {
  const normalized = normalizeBase32(value);
  const bytes: number[] = [];
  let buffer = 0;
  let bufferedBits = 0;
  for (const character of normalized) {
    const index = BASE32_ALPHABET.indexOf(character);
    if (index === -1) throw new Error('Value is not Base32: only A-Z and 2-7 are allowed');
    buffer = ((buffer << 5) | index) & 0xffff;
    bufferedBits += 5;
    if (bufferedBits >= 8) {
      bufferedBits -= 8;
      bytes.push((buffer >> bufferedBits) & 0xff);
    }
  }
  return Buffer.from(bytes);
}

/** True for a plausible authenticator setup key; a 6-8 digit one-time code is not a secret. */
export function isBase32Secret(value: string): boolean {
  if (ONE_TIME_CODE.test(value.trim())) return false;
  const normalized = normalizeBase32(value);
  return (
    normalized.length >= MIN_SECRET_LENGTH && [...normalized].every((character) => BASE32_ALPHABET.includes(character))
  );
}

export function hotp(key: Buffer, counter: number, digits: TotpDigits = 6): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const digest = createHmac('sha1', key).update(message).digest();
  const offset = digest[digest.length - 1] & 0x0f;
  const binary = digest.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** RFC 6238 TOTP with HMAC-SHA1 and 30-second steps. */
export function totp(secret: string, now: number = Date.now(), digits: TotpDigits = 6): string {
  return hotp(base32Decode(secret), Math.floor(now / 1000 / STEP_SECONDS), digits);
}
