import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { pipeline, Transform, Writable, type TransformCallback } from 'node:stream';
import tls from 'node:tls';
import zlib from 'node:zlib';

import { bracketHost, unbracketHost } from './host';
import { proxyAuthorization, proxyHost, proxyPort, type ProxyConfig } from './proxy';
import {
  createGuardedLookup,
  resolveAllowedAddresses,
  SsrfBlockedError,
  resolverOf,
  type NetworkPolicy,
  type ResolvedAddress,
  type Resolver,
} from './ssrf';

export interface SafeFetchOptions {
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
  /** CA certificates trusted in addition to Node's bundled roots. */
  extraCa?: string | Buffer | ReadonlyArray<string | Buffer>;
}

export interface SafeResponse {
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

export type SafeFetchErrorCode = 'timeout' | 'too_large' | 'too_many_redirects' | 'bad_scheme' | 'network';

export class SafeFetchError extends Error {
  readonly code: SafeFetchErrorCode;

  constructor(code: SafeFetchErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SafeFetchError';
    this.code = code;
  }
}

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const REQUEST_BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
const ORIGIN_BOUND_HEADERS = ['authorization', 'cookie', 'proxy-authorization', 'host'];
const SUPPORTED_ENCODINGS = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

interface Hop {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

interface FetchContext {
  policy: NetworkPolicy;
  resolver: Resolver;
  lookup: LookupFunction;
  proxy: ProxyConfig | null;
  ca: Array<string | Buffer> | undefined;
  maxBytes: number;
  budget: ByteBudget | undefined;
  signal: AbortSignal;
}

export async function safeFetch(input: string | URL, options: SafeFetchOptions): Promise<SafeResponse> {
  const url = httpUrl(new URL(input));
  const resolver = options.resolver ?? resolverOf(options.policy);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = startDeadline(timeoutMs, `Fetching ${url.origin} timed out after ${timeoutMs} ms`, options.signal);
  const context: FetchContext = {
    policy: options.policy,
    resolver,
    lookup: createGuardedLookup(options.policy, resolver),
    proxy: options.proxy ?? null,
    ca: options.extraCa === undefined ? undefined : [...tls.rootCertificates, ...[options.extraCa].flat()],
    maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    budget: options.budget,
    signal: deadline.signal,
  };
  const headers = lowerCaseKeys(options.headers ?? {});
  headers['accept-encoding'] ??= 'gzip, deflate, br';
  const firstHop: Hop = {
    url,
    method: (options.method ?? 'GET').toUpperCase(),
    headers,
    body: options.body === undefined ? undefined : Buffer.from(options.body),
  };
  try {
    return await followRedirects(firstHop, options.maxRedirects ?? DEFAULT_MAX_REDIRECTS, context);
  } finally {
    deadline.dispose();
  }
}

async function followRedirects(firstHop: Hop, maxRedirects: number, context: FetchContext): Promise<SafeResponse> {
  const redirects: string[] = [];
  let hop = firstHop;
  for (;;) {
    const response = await openResponse(hop, context);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (maxRedirects > 0 && REDIRECT_STATUSES.has(status) && location) {
      response.destroy();
      if (redirects.length >= maxRedirects) {
        throw new SafeFetchError('too_many_redirects', `Gave up after ${maxRedirects} redirects (last at ${hop.url.origin})`);
      }
      redirects.push(displayUrl(hop.url));
      hop = redirectedHop(hop, status, location);
      continue;
    }
    const { body, decoded } = await readBody(response, hop, context);
    const { headers, setCookies } = flattenHeaders(response);
    if (decoded) {
      delete headers['content-encoding'];
      delete headers['content-length'];
    }
    return { url: displayUrl(hop.url), status, headers, setCookies, body, redirects };
  }
}

function redirectedHop(hop: Hop, status: number, location: string): Hop {
  let url: URL;
  try {
    url = new URL(location, hop.url);
  } catch {
    throw new SafeFetchError('network', `${hop.url.origin} redirected to an invalid Location`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SafeFetchError('bad_scheme', `${hop.url.origin} redirected to a ${url.protocol} URL; only http: and https: are followed`);
  }
  const becomesGet = status === 303 ? hop.method !== 'HEAD' : (status === 301 || status === 302) && hop.method === 'POST';
  const headers = { ...hop.headers };
  if (becomesGet) REQUEST_BODY_HEADERS.forEach((name) => delete headers[name]);
  if (url.origin !== hop.url.origin) ORIGIN_BOUND_HEADERS.forEach((name) => delete headers[name]);
  return { url, method: becomesGet ? 'GET' : hop.method, headers, body: becomesGet ? undefined : hop.body };
}

async function openResponse(hop: Hop, context: FetchContext): Promise<IncomingMessage> {
  const { url } = hop;
  const host = unbracketHost(url.hostname);
  if (!context.proxy) {
    // Node skips `lookup` for IP literals, so those are checked here; names are checked by the guarded lookup,
    // which hands the socket the very address it checked.
    if (isIP(host)) await checkedAddresses(host, context);
    const transport = url.protocol === 'https:' ? https : http;
    return send(transport, { ...targetRequestOptions(hop), lookup: context.lookup, agent: false, ca: context.ca }, hop, context);
  }
  // A proxy given a name would resolve it again (DNS rebinding, split horizon), so it is given the checked address.
  const [pinned] = await checkedAddresses(host, context);
  const authority = `${bracketHost(pinned.address)}:${targetPort(url)}`;
  if (url.protocol === 'http:') return sendToProxy(hop, context.proxy, authority, context);
  const tunnel = await openTunnel(context.proxy, authority, context.signal);
  const overTunnel = () => {
    // SNI and certificate verification use the name from the URL, not the address the tunnel goes to.
    const secureSocket = tls.connect({ socket: tunnel, host, servername: isIP(host) ? undefined : host, ca: context.ca });
    secureSocket.once('close', () => tunnel.destroy());
    return secureSocket;
  };
  return send(https, { ...targetRequestOptions(hop), createConnection: overTunnel }, hop, context).catch((error: unknown) => {
    tunnel.destroy();
    throw error;
  });
}

function checkedAddresses(host: string, context: FetchContext): Promise<ResolvedAddress[]> {
  return abortable<ResolvedAddress[]>(context.signal, (resolve, reject) => {
    resolveAllowedAddresses(host, context.policy, context.resolver).then(resolve, reject);
    return () => {};
  });
}

function targetRequestOptions(hop: Hop): https.RequestOptions {
  const { url } = hop;
  return {
    method: hop.method,
    protocol: url.protocol,
    hostname: unbracketHost(url.hostname),
    port: targetPort(url),
    path: url.pathname + url.search,
    headers: withContentLength(hop),
    auth: url.username || url.password ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
  };
}

/** Plain http through the proxy: absolute-form request line to the checked address, the name in the Host header. */
function sendToProxy(hop: Hop, proxy: ProxyConfig, authority: string, context: FetchContext): Promise<IncomingMessage> {
  const target = targetRequestOptions(hop);
  const authorization = proxyAuthorization(proxy);
  return send(
    http,
    {
      method: hop.method,
      hostname: proxyHost(proxy),
      port: proxyPort(proxy),
      path: `http://${authority}${hop.url.pathname}${hop.url.search}`,
      headers: { ...target.headers, host: hop.url.host, ...(authorization ? { 'proxy-authorization': authorization } : {}) },
      auth: target.auth,
      agent: false,
    },
    hop,
    context,
  );
}

function openTunnel(proxy: ProxyConfig, authority: string, signal: AbortSignal): Promise<Socket> {
  const authorization = proxyAuthorization(proxy);
  return abortable<Socket>(signal, (resolve, reject) => {
    let tunnel: Socket | undefined;
    const request = http.request({
      method: 'CONNECT',
      hostname: proxyHost(proxy),
      port: proxyPort(proxy),
      path: authority,
      headers: { host: authority, ...(authorization ? { 'proxy-authorization': authorization } : {}) },
      agent: false,
    });
    request.once('connect', (response: IncomingMessage, socket: Socket, head: Buffer) => {
      if (response.statusCode !== 200) {
        socket.destroy();
        reject(new SafeFetchError('network', `Proxy refused to tunnel to ${authority} (HTTP ${response.statusCode})`));
        return;
      }
      if (head.length > 0) socket.unshift(head);
      tunnel = socket;
      resolve(socket);
    });
    request.once('error', (error) => reject(new SafeFetchError('network', `Could not reach the proxy: ${error.message}`, { cause: error })));
    request.end();
    return () => {
      request.destroy();
      tunnel?.destroy();
    };
  });
}

function send(transport: typeof http | typeof https, options: https.RequestOptions, hop: Hop, context: FetchContext): Promise<IncomingMessage> {
  return abortable<IncomingMessage>(context.signal, (resolve, reject) => {
    const request = transport.request(options);
    request.once('response', resolve);
    request.once('error', (error) => reject(asFetchError(error, `Request to ${hop.url.origin} failed`)));
    request.end(hop.body);
    return () => request.destroy();
  });
}

async function readBody(response: IncomingMessage, hop: Hop, context: FetchContext): Promise<{ body: Buffer; decoded: boolean }> {
  const status = response.statusCode ?? 0;
  const bodyless = hop.method === 'HEAD' || status === 204 || status === 304 || (status >= 100 && status < 200);
  const encodings = bodyless ? [] : contentEncodings(response.headers['content-encoding']);
  const tooLarge = () => new SafeFetchError('too_large', `Response from ${hop.url.origin} exceeds ${context.maxBytes} bytes`);
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
          callback(new SafeFetchError('too_large', `Response from ${hop.url.origin} exceeds the ${budget.limit} bytes shared with related responses`));
          return;
        }
        chunks.push(chunk);
        callback();
      },
    });
    pipeline([response, byteLimit(context.maxBytes, tooLarge), ...decoders, byteLimit(context.maxBytes, tooLarge), collector], (error) => {
      if (!error) return resolve(Buffer.concat(chunks));
      const failure = isZlibError(error)
        ? new SafeFetchError('network', `Could not decode the ${encodings?.join(', ')} body from ${hop.url.origin}`, { cause: error })
        : asFetchError(error, `Reading the response from ${hop.url.origin} failed`);
      reject(failure);
    });
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

function byteLimit(maxBytes: number, tooLarge: () => SafeFetchError): Transform {
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

function asFetchError(error: unknown, context: string): Error {
  if (error instanceof SsrfBlockedError || error instanceof SafeFetchError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new SafeFetchError('network', `${context}: ${message}`, { cause: error });
}

function flattenHeaders(response: IncomingMessage): { headers: Record<string, string>; setCookies: string[] } {
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(response.headersDistinct)) {
    if (name !== 'set-cookie' && values) headers[name] = values.join(', ');
  }
  return { headers, setCookies: response.headersDistinct['set-cookie'] ?? [] };
}

function withContentLength(hop: Hop): Record<string, string> {
  return hop.body === undefined ? hop.headers : { ...hop.headers, 'content-length': String(hop.body.length) };
}

function httpUrl(url: URL): URL {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SafeFetchError('bad_scheme', `Only http: and https: URLs can be fetched, got ${url.protocol}`);
  }
  return url;
}

function targetPort(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

function displayUrl(url: URL): string {
  const shown = new URL(url);
  shown.username = '';
  shown.password = '';
  shown.hash = '';
  return shown.href;
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

function startDeadline(timeoutMs: number, timeoutMessage: string, callerSignal: AbortSignal | undefined) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new SafeFetchError('timeout', timeoutMessage)), timeoutMs);
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
