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
    try {
      ctx.state.body = JSON.parse(raw);
    } catch (err) {
      throw new ApiError(400, 'invalid_json', `The body is not valid JSON: ${(err as Error).message}`);
    }
    return next();
  };
}
