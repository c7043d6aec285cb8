import type { Context, Next } from 'koa';
import { ApiError } from '../errors';

/** Reads a JSON body for methods that carry one. Non-JSON, oversize and malformed bodies are 4xx, never 5xx. */
export function jsonBody(limitBytes: number) {
  return async (ctx: Context, next: Next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limitBytes) throw new ApiError(413, 'payload_too_large', `The body exceeds ${limitBytes} bytes`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req) {
      size += (chunk as Buffer).length;
      if (size > limitBytes) throw new ApiError(413, 'payload_too_large', `The body exceeds ${limitBytes} bytes`);
      chunks.push(chunk as Buffer);
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    if (raw.trim() === '') {
      ctx.state.body = undefined;
      return next();
    }
    if (!ctx.is('application/json', 'application/*+json')) {
      throw new ApiError(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json');
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw new ApiError(400, 'invalid_json', `The body is not valid JSON: ${(err as Error).message}`);
    }
    const nulAt = findNulCharacter(parsed, 'body');
    if (nulAt) {
      throw new ApiError(400, 'validation_failed', 'Strings must not contain NUL (\\u0000) characters', [{ path: nulAt, message: 'contains a NUL character' }]);
    }
    ctx.state.body = parsed;
    return next();
  };
}

/** Postgres text cannot hold U+0000, so such input is refused at the door rather than failing later. */
function findNulCharacter(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNulCharacter(value[i], `${path}/${i}`);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key.includes('\u0000')) return `${path}/${key}`;
      const found = findNulCharacter(inner, `${path}/${key}`);
      if (found) return found;
    }
  }
  return null;
}
