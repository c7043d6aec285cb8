import type { IncomingMessage } from 'node:http';
import type { Next } from 'koa';
import type { AppContext } from '../context';
import { ApiError } from '../errors';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Deeper JSON is refused: no request schema nests anywhere near this, and deep values are costly to store and walk. */
export const MAX_JSON_DEPTH = 64;

/**
 * Reads a JSON body for methods that carry one. Non-JSON, oversize, malformed, too deeply nested and unstorable
 * (NUL, lone surrogates) bodies are 4xx, never 5xx. Mount it after authentication, so anonymous callers never get
 * a body read and parsed.
 */
export function jsonBody(limitBytes = BODY_LIMIT_BYTES) {
  return async (ctx: AppContext, next: Next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limitBytes) throw new ApiError(413, 'payload_too_large', `The body exceeds ${limitBytes} bytes`);
    const raw = (await readBody(ctx.req, limitBytes)).toString('utf8');
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
    const problem = findUnstorableValue(parsed);
    if (problem)
      throw new ApiError(400, 'validation_failed', problem.message, [{ path: problem.path, message: problem.detail }]);
    ctx.state.body = parsed;
    return next();
  };
}

/**
 * The request's body, refused (413) as soon as it passes `limitBytes`; the request stream is then
 * destroyed, as leaving a `for await` loop over it does. Listeners rather than an async iterator:
 * this runs on every API request with a body, and the iterator costs more than reading.
 */
function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (error: Error | null) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (error) reject(error);
      else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        settle(new ApiError(413, 'payload_too_large', `The body exceeds ${limitBytes} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => settle(null);
    const onError = (err: Error) => settle(err);
    const onClose = () => settle(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    if (req.readableEnded) return resolve(Buffer.alloc(0));
    if (req.destroyed) return onClose();
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

export interface UnstorableValue {
  path: string;
  message: string;
  detail: string;
}

interface Visit {
  value: unknown;
  key: string | null;
  parent: Visit | null;
  depth: number;
}

/** U+0000, and UTF-16 surrogates that are not part of a pair (JSON allows both as escapes, PostgreSQL stores neither). */
const UNSTORABLE_CHARACTER = /\u0000|\p{Cs}/u;

function stringProblem(text: string): string | null {
  const found = UNSTORABLE_CHARACTER.exec(text);
  if (!found) return null;
  return found[0] === '\u0000' ? 'contains a NUL character' : 'contains a lone UTF-16 surrogate (not valid Unicode)';
}

/** The JSON pointer of a value, with lone surrogates in keys shown as U+FFFD so the error body itself is valid Unicode. */
function pathOf(visit: Visit, lastKey?: string): string {
  const keys: string[] = lastKey === undefined ? [] : [lastKey];
  for (let at: Visit | null = visit; at && at.key !== null; at = at.parent) keys.push(at.key);
  return ['body', ...keys.reverse()].join('/').replace(/\p{Cs}/gu, '\ufffd');
}

/**
 * Walks a parsed JSON value without recursion (so no input can overflow the stack) and reports the first string or
 * key PostgreSQL could not store, or nesting deeper than MAX_JSON_DEPTH.
 */
export function findUnstorableValue(root: unknown): UnstorableValue | null {
  const pending: Visit[] = [{ value: root, key: null, parent: null, depth: 0 }];
  while (pending.length > 0) {
    const visit = pending.pop()!;
    const { value } = visit;
    if (typeof value === 'string') {
      const detail = stringProblem(value);
      if (detail)
        return {
          path: pathOf(visit),
          message: 'Strings must be valid Unicode without NUL (\\u0000) characters',
          detail,
        };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (visit.depth >= MAX_JSON_DEPTH) {
      return {
        path: pathOf(visit),
        message: `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
        detail: 'is nested too deeply',
      };
    }
    const entries: [string, unknown][] = Array.isArray(value)
      ? value.map((item, index) => [String(index), item])
      : Object.entries(value);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, inner] = entries[i];
      if (!Array.isArray(value)) {
        const detail = stringProblem(key);
        if (detail)
          return {
            path: pathOf(visit, key),
            message: 'Keys must be valid Unicode without NUL (\\u0000) characters',
            detail: `key ${detail}`,
          };
      }
      pending.push({ value: inner, key, parent: visit, depth: visit.depth + 1 });
    }
  }
  return null;
}
