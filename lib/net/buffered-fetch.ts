import type { IncomingMessage } from 'node:http';
import { pipeline, Transform, Writable, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';

import type { ProxyConfig } from './proxy';
import type { NetworkPolicy, Resolver } from './ssrf';
import {
  classifyFailure,
  createTransport,
  displayUrl,
  exchange,
  FetchError,
  type CaCertificates,
  type Hop,
} from './transport';

/**
 * The buffered HTTP client: the whole body is read (decoded, size-limited, optionally from a budget shared with
 * other fetches) before the response is returned. Scrapes, the browser's routed requests, webhooks and the social
 * adapters use it; it can go through the operator's proxy. Its transport (SSRF guard on every hop, redirects,
 * origin-bound headers, trusted CAs, errors) is lib/net/transport.ts, shared with the streaming client.
 */
export interface BufferedFetchOptions {
  policy: NetworkPolicy;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Budget for the whole fetch including redirects and body. */
  timeoutMs?: number;
  /** Limit on the body, counted both as received and after decoding. */
  maxBytes?: number;
  /** A limit shared with other fetches: every decoded body byte is taken from it (see createByteBudget). */
  budget?: ByteBudget;
  /** 0 returns a 3xx response as is. */
  maxRedirects?: number;
  proxy?: ProxyConfig | null;
  resolver?: Resolver;
  /** Aborting rejects with the signal's reason. */
  signal?: AbortSignal;
  /** CA certificates trusted in addition to the default store (Node's roots and NODE_EXTRA_CA_CERTS). */
  extraCa?: CaCertificates;
}

export interface BufferedResponse {
  /** Final URL, without credentials or fragment. */
  url: string;
  status: number;
  /** Lower-cased names; repeated headers joined with ", "; set-cookie is in `setCookies`. */
  headers: Record<string, string>;
  setCookies: string[];
  /** Decoded when the content-encoding was gzip/deflate/br (content-encoding and content-length are then dropped from `headers`). */
  body: Buffer;
  /** Each URL that answered with a redirect, in order; `url` is where the chain ended. */
  redirects: string[];
}

/** Bytes several fetches may buffer between them, e.g. all the subresources of one page. */
export interface ByteBudget {
  readonly limit: number;
  /** False, taking nothing, when `bytes` more would exceed the limit. */
  take(bytes: number): boolean;
}

export function createByteBudget(limit: number): ByteBudget {
  let used = 0;
  return {
    limit,
    take(bytes) {
      if (used + bytes > limit) return false;
      used += bytes;
      return true;
    },
  };
}

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 5;
const SUPPORTED_ENCODINGS = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

interface BodyContext {
  maxBytes: number;
  budget: ByteBudget | undefined;
  signal: AbortSignal;
}

export async function fetchBuffered(input: string | URL, options: BufferedFetchOptions): Promise<BufferedResponse> {
  const url = new URL(input);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new FetchError('bad_scheme', `Only http: and https: URLs can be fetched, got ${url.protocol}`, false);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = startDeadline(timeoutMs, `Fetching ${url.origin} timed out after ${timeoutMs} ms`, options.signal);
  const transport = createTransport({
    policy: options.policy,
    resolver: options.resolver,
    proxy: options.proxy,
    extraCa: options.extraCa,
  });
  const headers = lowerCaseKeys(options.headers ?? {});
  headers['accept-encoding'] ??= 'gzip, deflate, br';
  const firstHop: Hop = {
    url,
    method: (options.method ?? 'GET').toUpperCase(),
    headers,
    body: options.body === undefined ? undefined : Buffer.from(options.body),
  };
  try {
    const { response, hop, redirects } = await exchange(
      transport,
      firstHop,
      { maxRedirects: options.maxRedirects ?? DEFAULT_MAX_REDIRECTS, crossOrigin: true },
      deadline.signal,
    );
    const context: BodyContext = {
      maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
      budget: options.budget,
      signal: deadline.signal,
    };
    const { body, decoded } = await readBody(response, hop, context);
    const flattened = flattenHeaders(response);
    if (decoded) {
      delete flattened.headers['content-encoding'];
      delete flattened.headers['content-length'];
    }
    return {
      url: displayUrl(hop.url),
      status: response.statusCode ?? 0,
      headers: flattened.headers,
      setCookies: flattened.setCookies,
      body,
      redirects,
    };
  } finally {
    deadline.dispose();
  }
}

async function readBody(
  response: IncomingMessage,
  hop: Hop,
  context: BodyContext,
): Promise<{ body: Buffer; decoded: boolean }> {
  const status = response.statusCode ?? 0;
  const bodyless = hop.method === 'HEAD' || status === 204 || status === 304 || (status >= 100 && status < 200);
  const encodings = bodyless ? [] : contentEncodings(response.headers['content-encoding']);
  const tooLarge = () =>
    new FetchError('too_large', `The response from ${hop.url.origin} exceeds ${context.maxBytes} bytes`, true);
  const declaredLength = Number(response.headers['content-length']);
  if (!bodyless && encodings?.length === 0 && declaredLength > context.maxBytes) {
    response.destroy();
    throw tooLarge();
  }
  const decoders = (encodings ?? []).map(createDecoder).reverse();
  const chunks: Buffer[] = [];
  const body = await abortable<Buffer>(context.signal, (resolve, reject) => {
    const { budget } = context;
    const collector = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (budget && !budget.take(chunk.length)) {
          callback(
            new FetchError(
              'too_large',
              `The response from ${hop.url.origin} exceeds the ${budget.limit} bytes shared with related responses`,
              true,
            ),
          );
          return;
        }
        chunks.push(chunk);
        callback();
      },
    });
    pipeline(
      [response, byteLimit(context.maxBytes, tooLarge), ...decoders, byteLimit(context.maxBytes, tooLarge), collector],
      (error) => {
        if (!error) return resolve(Buffer.concat(chunks));
        const failure = isZlibError(error)
          ? new FetchError(
              'network',
              `Could not decode the ${encodings?.join(', ')} body from ${hop.url.origin}`,
              true,
              { cause: error },
            )
          : classifyFailure(error, hop.url, true);
        reject(failure);
      },
    );
    return () => response.destroy();
  });
  return { body, decoded: decoders.length > 0 };
}

/** null when an encoding is not one we decode; the body is then returned as received. */
function contentEncodings(header: string | undefined): string[] | null {
  const tokens = (header ?? '')
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '' && token !== 'identity');
  return tokens.every((token) => SUPPORTED_ENCODINGS.has(token)) ? tokens : null;
}

function createDecoder(encoding: string): Transform {
  if (encoding === 'br') return new LazyDecoder(() => zlib.createBrotliDecompress());
  if (encoding === 'deflate') return new LazyDecoder(createInflater);
  return new LazyDecoder(() => zlib.createGunzip());
}

/** "deflate" is meant to be zlib-wrapped, but some servers send raw deflate; the first byte tells them apart. */
function createInflater(firstChunk: Buffer): Transform {
  return (firstChunk[0] & 0x0f) === 0x08 ? zlib.createInflate() : zlib.createInflateRaw();
}

/** Creates its decoder from the first chunk, so an empty body (e.g. a gzip-labelled 200 with no content) decodes to nothing. */
class LazyDecoder extends Transform {
  private decoder: Transform | undefined;

  constructor(private readonly chooseDecoder: (firstChunk: Buffer) => Transform) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (!this.decoder) {
      const decoder = this.chooseDecoder(chunk);
      decoder.on('data', (data: Buffer) => {
        if (!this.push(data)) decoder.pause();
      });
      decoder.on('error', (error) => this.destroy(error));
      this.decoder = decoder;
    }
    this.decoder.write(chunk, () => callback());
  }

  override _read(size: number): void {
    this.decoder?.resume();
    super._read(size);
  }

  override _flush(callback: TransformCallback): void {
    if (!this.decoder) return callback();
    this.decoder.once('end', () => callback());
    this.decoder.end();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.decoder?.destroy();
    callback(error);
  }
}

function byteLimit(maxBytes: number, tooLarge: () => FetchError): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > maxBytes) callback(tooLarge());
      else callback(null, chunk);
    },
  });
}

function isZlibError(error: NodeJS.ErrnoException): boolean {
  return typeof error.code === 'string' && error.code.startsWith('Z_');
}

function flattenHeaders(response: IncomingMessage): { headers: Record<string, string>; setCookies: string[] } {
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(response.headersDistinct)) {
    if (name !== 'set-cookie' && values) headers[name] = values.join(', ');
  }
  return { headers, setCookies: response.headersDistinct['set-cookie'] ?? [] };
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

function startDeadline(timeoutMs: number, timeoutMessage: string, callerSignal: AbortSignal | undefined) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new FetchError('timeout', timeoutMessage, true)), timeoutMs);
  const onCallerAbort = () => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) onCallerAbort();
  else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    dispose() {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    },
  };
}

/** Runs `start` until it settles or `signal` aborts; on abort, its teardown runs and the promise rejects with the abort reason. */
function abortable<T>(
  signal: AbortSignal,
  start: (resolve: (value: T) => void, reject: (error: unknown) => void) => () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    let teardown = () => {};
    const onAbort = () => {
      teardown();
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const stopListening = () => signal.removeEventListener('abort', onAbort);
    try {
      teardown = start(
        (value) => {
          stopListening();
          resolve(value);
        },
        (error) => {
          stopListening();
          reject(error);
        },
      );
    } catch (error) {
      stopListening();
      reject(error);
    }
  });
}
