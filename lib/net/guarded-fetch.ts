import { readFileSync } from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import { Readable, Transform } from 'node:stream';
import tls from 'node:tls';

import { HOST_NOT_FOUND } from './dns';
import { createGuardedLookup, resolveAllowedAddresses, SsrfBlockedError, resolverOf, type NetworkPolicy, type Resolver } from './ssrf';
import { judgeUrlEntry } from './url-entry';

/**
 * A WHATWG-`fetch`-shaped function over the SSRF guard, for libraries that take a custom `fetch`
 * (the MCP SDK) and for streamed responses (SSE), which `safeFetch` buffers. Same guarantees as
 * `safeFetch`: every hop is resolved and checked by `lib/net/ssrf.ts` and the socket connects to
 * exactly the address that was checked; redirects (`redirect: 'follow'`) are re-checked hop by hop.
 * No proxy: tool traffic goes straight to the upstream.
 */
export interface GuardedFetchOptions {
  policy: NetworkPolicy;
  resolver?: Resolver;
  /** Budget from sending the request to receiving the response headers (connect and TLS included). */
  headersTimeoutMs?: number;
  /** A body (streamed or not) that stays silent this long is cut. */
  idleTimeoutMs?: number;
  /** Cap on each response body; a longer body errors with `too_large` while it is read. */
  maxResponseBytes?: number;
  /** Hops followed for `redirect: 'follow'` (the default of `fetch`). */
  maxRedirects?: number;
  /**
   * Whether `redirect: 'follow'` follows a redirect to another origin (default true, dropping the
   * Authorization, Cookie and Proxy-Authorization headers). False: a redirect that leaves the request's
   * origin is returned as the response, unfollowed, so no header of the request (whatever credential
   * it carries) reaches another origin; only an upgrade from http to https on the same host and
   * default ports counts as the same origin.
   */
  crossOriginRedirects?: boolean;
  /** Refuse plain `http:` except to hosts the network allowlist opens (checked at every hop). */
  requireHttps?: boolean;
  /**
   * CA certificates trusted in addition to the default store. Without it the default store is used as
   * is, which includes `NODE_EXTRA_CA_CERTS`; with it, Node's roots, the `NODE_EXTRA_CA_CERTS` file and
   * these certificates (an explicit `ca` replaces the default store, so the extra file is re-added).
   */
  extraCa?: string | Buffer | ReadonlyArray<string | Buffer>;
  /** Called once per request when the connection to the upstream is up (TCP, and TLS for https, or a kept-alive one is reused): from here on the request may have reached it. */
  onConnected?: (request: { url: URL; method: string }) => void;
  /**
   * Keep connections open between requests of this fetch (a tool source's session makes many): an
   * idle connection is reused for the same origin for up to KEEP_ALIVE_IDLE_MS (less when the server
   * hints a shorter Keep-Alive timeout), then closed. Each kept connection goes to the address the
   * guard checked when it was opened. Default false: a connection per request.
   */
  keepAlive?: boolean;
}

export type GuardedFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * What went wrong, and whether the request can have reached the upstream: `blocked`, `bad_scheme`,
 * `insecure`, `host_not_found`, `dns`, `refused`, `unreachable` and `tls` happen before any byte of the request is
 * sent. `host_not_found`: DNS answered that the name does not exist or has no address (the URL's fault);
 * `dns`: DNS could not answer (a temporary failure of the resolver).
 */
export type GuardedFetchErrorCode =
  | 'blocked'
  | 'bad_scheme'
  | 'insecure'
  | 'host_not_found'
  | 'dns'
  | 'refused'
  | 'unreachable'
  | 'tls'
  | 'timeout'
  | 'reset'
  | 'too_large'
  | 'too_many_redirects'
  | 'network';

export class GuardedFetchError extends Error {
  constructor(
    readonly code: GuardedFetchErrorCode,
    message: string,
    /** False only when the request provably never left this host (no connection was up). */
    readonly reached: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'GuardedFetchError';
  }
}

/** The GuardedFetchError somewhere in an error's `cause` chain (libraries wrap what `fetch` throws). */
export function findGuardedFetchError(error: unknown): GuardedFetchError | undefined {
  for (let current = error, depth = 0; current && depth < 8; depth++) {
    if (current instanceof GuardedFetchError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** How long an idle kept-alive connection waits for the next request (below the common 5 s server default). */
export const KEEP_ALIVE_IDLE_MS = 2_000;
const DEFAULT_HEADERS_TIMEOUT_MS = 30_000;
const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
const ORIGIN_BOUND_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];

/** Throws unless the URL is http(s), and https when required (plain http only to hosts NETWORK_ALLOWLIST opens): the entry check of lib/net/url-entry.ts. */
export function assertFetchableUrl(url: URL, policy: NetworkPolicy, requireHttps: boolean): void {
  const refusal = judgeUrlEntry(url, policy, { requireHttps });
  // A literal internal address is refused by the SSRF guard when the connection is made.
  if (!refusal || refusal.code === 'blocked') return;
  throw new GuardedFetchError(refusal.code === 'insecure' ? 'insecure' : 'bad_scheme', refusal.message, false);
}

export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const resolver = options.resolver ?? resolverOf(options.policy);
  const settings: Settings = {
    policy: options.policy,
    resolver,
    lookup: createGuardedLookup(options.policy, resolver),
    headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    requireHttps: options.requireHttps ?? false,
    ca: options.extraCa === undefined ? undefined : trustedCas(options.extraCa),
    onConnected: options.onConnected,
    agents: options.keepAlive
      ? { http: new http.Agent({ keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS, maxFreeSockets: 16 }), https: new https.Agent({ keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS, maxFreeSockets: 16 }) }
      : null,
  };
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const crossOrigin = options.crossOriginRedirects ?? true;

  return async (input, init = {}) => {
    let request = await toOutgoing(input, init);
    const mode = init.redirect ?? (input instanceof Request ? input.redirect : 'follow');
    for (let followed = 0; ; followed++) {
      const response = await sendOnce(request, settings, init.signal ?? (input instanceof Request ? input.signal : undefined));
      const location = response.headers.get('location');
      if (!REDIRECT_STATUSES.has(response.status) || !location || mode === 'manual') return response;
      if (mode !== 'error' && !crossOrigin && !staysWithinOrigin(request.url, location)) return response;
      await response.body?.cancel().catch(() => {});
      if (mode === 'error') throw new GuardedFetchError('network', `${request.url.origin} answered with a redirect and redirects are not allowed here`, true);
      if (followed >= maxRedirects) throw new GuardedFetchError('too_many_redirects', `Gave up after ${maxRedirects} redirects (last at ${request.url.origin})`, true);
      request = redirected(request, response.status, location);
    }
  };
}

interface Settings {
  policy: NetworkPolicy;
  resolver: Resolver;
  lookup: ReturnType<typeof createGuardedLookup>;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  maxResponseBytes: number;
  requireHttps: boolean;
  ca: string[] | undefined;
  onConnected: GuardedFetchOptions['onConnected'];
  /** Keep-alive agents (GuardedFetchOptions.keepAlive), else a connection per request. */
  agents: { http: http.Agent; https: https.Agent } | null;
}

interface Outgoing {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

function trustedCas(extra: string | Buffer | ReadonlyArray<string | Buffer>): string[] {
  const fromEnv = process.env.NODE_EXTRA_CA_CERTS ? readExtraCaFile(process.env.NODE_EXTRA_CA_CERTS) : [];
  return [...tls.rootCertificates, ...fromEnv, ...[extra].flat().map((ca) => ca.toString())];
}

function readExtraCaFile(file: string): string[] {
  try {
    return [readFileSync(file, 'utf8')];
  } catch {
    return []; // Node itself only warns about an unreadable NODE_EXTRA_CA_CERTS.
  }
}

async function toOutgoing(input: string | URL | Request, init: RequestInit): Promise<Outgoing> {
  const base = input instanceof Request ? input : undefined;
  const url = new URL(base ? base.url : input.toString());
  const headers: Record<string, string> = {};
  new Headers(init.headers ?? base?.headers).forEach((value, name) => (headers[name] = value));
  const method = (init.method ?? base?.method ?? 'GET').toUpperCase();
  const rawBody = init.body !== undefined ? init.body : base && base.body ? await base.arrayBuffer() : undefined;
  return { url, method, headers, body: await bodyBuffer(rawBody, headers) };
}

async function bodyBuffer(body: BodyInit | ArrayBuffer | null | undefined, headers: Record<string, string>): Promise<Buffer | undefined> {
  if (body === null || body === undefined) return undefined;
  if (typeof body === 'string') {
    headers['content-type'] ??= 'text/plain;charset=UTF-8';
    return Buffer.from(body);
  }
  if (body instanceof URLSearchParams) {
    headers['content-type'] ??= 'application/x-www-form-urlencoded;charset=UTF-8';
    return Buffer.from(body.toString());
  }
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof Blob) return Buffer.from(await body.arrayBuffer());
  throw new TypeError('The guarded fetch sends string, URLSearchParams, ArrayBuffer, typed-array or Blob bodies only');
}

/** Whether a redirect's Location stays on the request's origin (or only upgrades http to https on the same host and default ports). */
function staysWithinOrigin(from: URL, location: string): boolean {
  let to: URL;
  try {
    to = new URL(location, from);
  } catch {
    return true; // an invalid Location fails as such when followed
  }
  if (to.origin === from.origin) return true;
  return from.protocol === 'http:' && to.protocol === 'https:' && from.hostname === to.hostname && !from.port && !to.port;
}

function redirected(request: Outgoing, status: number, location: string): Outgoing {
  let url: URL;
  try {
    url = new URL(location, request.url);
  } catch {
    throw new GuardedFetchError('network', `${request.url.origin} redirected to an invalid Location`, true);
  }
  const becomesGet = status === 303 ? request.method !== 'HEAD' : (status === 301 || status === 302) && request.method === 'POST';
  const headers = { ...request.headers };
  if (becomesGet) BODY_HEADERS.forEach((name) => delete headers[name]);
  if (url.origin !== request.url.origin) ORIGIN_BOUND_HEADERS.forEach((name) => delete headers[name]);
  return { url, method: becomesGet ? 'GET' : request.method, headers, body: becomesGet ? undefined : request.body };
}

function sendOnce(request: Outgoing, settings: Settings, signal: AbortSignal | null | undefined): Promise<Response> {
  const { url, method } = request;
  assertFetchableUrl(url, settings.policy, settings.requireHttps);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const secure = url.protocol === 'https:';
  return new Promise<Response>((resolve, reject) => {
    let connected = false;
    let settled = false;
    let response: IncomingMessage | undefined;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      signal?.removeEventListener('abort', onAbort);
      clientRequest?.destroy();
      reject(classify(error, url, connected));
    };
    const onAbort = () => {
      const reason = signal?.reason ?? new DOMException('This operation was aborted', 'AbortError');
      if (!settled) return fail(reason);
      response?.destroy(reason instanceof Error ? reason : new Error(String(reason)));
    };
    const headersTimer = setTimeout(
      () => fail(new GuardedFetchError('timeout', `${url.origin} did not answer within ${settings.headersTimeoutMs} ms`, connected)),
      settings.headersTimeoutMs,
    );
    const cleanup = () => clearTimeout(headersTimer);
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });

    let clientRequest: http.ClientRequest | undefined;
    // Node skips `lookup` for IP literals, so those are checked here; names are checked by the lookup at connect time.
    const checked = isIP(host) ? resolveAllowedAddresses(host, settings.policy, settings.resolver) : Promise.resolve();
    const send = () => {
      if (settled) return;
      const transport = secure ? https : http;
      clientRequest = transport.request({
        method,
        protocol: url.protocol,
        hostname: host,
        port: Number(url.port || (secure ? 443 : 80)),
        path: url.pathname + url.search,
        headers: request.body === undefined ? request.headers : { ...request.headers, 'content-length': String(request.body.length) },
        auth: url.username || url.password ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
        lookup: settings.lookup,
        agent: settings.agents ? settings.agents[secure ? 'https' : 'http'] : false,
        ca: settings.ca,
        servername: secure && !isIP(host) ? host : undefined,
      });
      const outgoing = clientRequest;
      outgoing.once('socket', (socket: Socket) => {
        // This request's silence bound; a kept-alive socket outlives the request, so the listener goes with it.
        const onSilent = () => socket.destroy(new GuardedFetchError('timeout', `${url.origin} went silent for ${settings.idleTimeoutMs} ms`, true));
        socket.setTimeout(settings.idleTimeoutMs);
        socket.on('timeout', onSilent);
        outgoing.once('close', () => socket.off('timeout', onSilent));
        const up = () => {
          connected = true;
          settings.onConnected?.({ url, method });
        };
        if (outgoing.reusedSocket) up();
        else socket.once(secure ? 'secureConnect' : 'connect', up);
      });
      clientRequest.on('error', fail);
      clientRequest.once('response', (incoming: IncomingMessage) => {
        if (settled) return incoming.destroy();
        settled = true;
        cleanup();
        response = incoming;
        incoming.once('close', () => signal?.removeEventListener('abort', onAbort));
        resolve(toWebResponse(incoming, method, url, settings.maxResponseBytes));
      });
      clientRequest.end(request.body);
    };
    checked.then(() => {
      try {
        send();
      } catch (error) {
        fail(error); // e.g. an invalid header value, refused by Node before anything is sent
      }
    }, fail);
  });
}

function toWebResponse(incoming: IncomingMessage, method: string, url: URL, maxBytes: number): Response {
  const status = incoming.statusCode ?? 502;
  const headers = new Headers();
  for (const [name, values] of Object.entries(incoming.headersDistinct)) {
    for (const value of values ?? []) headers.append(name, value);
  }
  if (method === 'HEAD' || NULL_BODY_STATUSES.has(status)) {
    incoming.resume();
    return new Response(null, { status: status === 101 || status === 103 ? 502 : status, statusText: incoming.statusMessage, headers });
  }
  let seen = 0;
  const limited = incoming.pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        seen += chunk.length;
        if (seen > maxBytes) callback(new GuardedFetchError('too_large', `The response from ${url.origin} exceeds ${maxBytes} bytes`, true));
        else callback(null, chunk);
      },
    }),
  );
  incoming.on('error', (error) => limited.destroy(classify(error, url, true)));
  incoming.once('close', () => {
    if (!incoming.complete && !limited.destroyed) limited.destroy(new GuardedFetchError('reset', `${url.origin} closed the connection mid-response`, true));
  });
  limited.once('close', () => incoming.destroy());
  return new Response(webStream(limited), { status, statusText: incoming.statusMessage, headers });
}

/**
 * A pull-based web stream over a Node stream. (Node 20's `Readable.toWeb` can enqueue after the
 * consumer cancelled, which throws an uncaught ERR_INVALID_STATE.)
 */
function webStream(source: Readable): ReadableStream<Uint8Array> {
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      source.pause();
      source.on('data', (chunk: Buffer) => {
        if (done) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) source.pause();
      });
      source.once('end', () => {
        if (done) return;
        done = true;
        controller.close();
      });
      source.once('error', (error) => {
        if (done) return;
        done = true;
        controller.error(error);
      });
    },
    pull() {
      source.resume();
    },
    cancel() {
      done = true;
      source.destroy();
    },
  });
}

const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH|ERR_CERT)/;

function classify(error: unknown, url: URL, connected: boolean): Error {
  if (error instanceof GuardedFetchError) return error;
  if (error instanceof SsrfBlockedError) return new GuardedFetchError('blocked', error.message, false, { cause: error });
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return error;
  const code = String((error as NodeJS.ErrnoException)?.code ?? '');
  const message = error instanceof Error ? error.message : String(error);
  const where = url.origin;
  if (!connected) {
    if (code === 'ECONNREFUSED') return new GuardedFetchError('refused', `${where} refused the connection`, false, { cause: error });
    if (HOST_NOT_FOUND.has(code)) {
      return new GuardedFetchError('host_not_found', `Host not found: ${url.hostname} does not resolve (DNS has no address for it)`, false, { cause: error });
    }
    if (code === 'EAI_AGAIN' || code === 'EAI_FAIL') {
      return new GuardedFetchError('dns', `Could not resolve ${url.hostname} (${code}: DNS did not answer)`, false, { cause: error });
    }
    if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EADDRNOTAVAIL') {
      return new GuardedFetchError('unreachable', `${where} is unreachable (${code})`, false, { cause: error });
    }
    if (TLS_ERROR.test(code) || /certificate|ssl|tls/i.test(message)) {
      return new GuardedFetchError('tls', `TLS with ${where} failed: ${message}`, false, { cause: error });
    }
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') {
    return new GuardedFetchError('reset', `${where} closed the connection (${code})`, connected, { cause: error });
  }
  return new GuardedFetchError('network', `Request to ${where} failed: ${message}`, connected, { cause: error });
}
