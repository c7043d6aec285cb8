import type { IncomingMessage } from 'node:http';
import { Readable, Transform } from 'node:stream';

import type { NetworkPolicy, Resolver } from './ssrf';
import { classifyFailure, createTransport, exchange, FetchError, type CaCertificates, type Hop } from './transport';

export { KEEP_ALIVE_IDLE_MS } from './transport';

/**
 * The streaming HTTP client: a WHATWG-`fetch`-shaped function whose responses are web streams, for libraries that
 * take a custom `fetch` (the MCP SDK) and for streamed responses (SSE). Its transport (SSRF guard on every hop,
 * redirects, origin-bound headers, trusted CAs, errors) is lib/net/transport.ts, shared with the buffered client
 * (buffered-fetch.ts). No proxy: tool traffic goes straight to the upstream.
 */
export interface StreamingFetchOptions {
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
   * Whether `redirect: 'follow'` follows a redirect to another origin (default true, dropping the origin-bound
   * headers, see lib/net/transport.ts). False: a redirect that leaves the request's origin is returned as the
   * response, unfollowed, so no header of the request (whatever credential it carries) reaches another origin;
   * only an upgrade from http to https on the same host and default ports counts as the same origin.
   */
  crossOriginRedirects?: boolean;
  /** Refuse plain `http:` except to hosts the network allowlist opens (checked at every hop). */
  requireHttps?: boolean;
  /** CA certificates trusted in addition to the default store (Node's roots and NODE_EXTRA_CA_CERTS). */
  extraCa?: CaCertificates;
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

export type StreamingFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const DEFAULT_HEADERS_TIMEOUT_MS = 30_000;
const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 5;
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

export function createStreamingFetch(options: StreamingFetchOptions): StreamingFetch {
  const transport = createTransport({
    policy: options.policy,
    resolver: options.resolver,
    extraCa: options.extraCa,
    requireHttps: options.requireHttps ?? false,
    headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    keepAlive: options.keepAlive,
    onConnected: options.onConnected,
  });
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const redirects = {
    maxRedirects: options.maxRedirects ?? DEFAULT_MAX_REDIRECTS,
    crossOrigin: options.crossOriginRedirects ?? true,
  };

  return async (input, init = {}) => {
    const first = await toHop(input, init);
    const mode = init.redirect ?? (input instanceof Request ? input.redirect : 'follow');
    const signal = init.signal ?? (input instanceof Request ? input.signal : undefined);
    const { response, hop } = await exchange(transport, first, { ...redirects, mode }, signal);
    return toWebResponse(response, hop.method, hop.url, maxResponseBytes);
  };
}

async function toHop(input: string | URL | Request, init: RequestInit): Promise<Hop> {
  const base = input instanceof Request ? input : undefined;
  const url = new URL(base ? base.url : input.toString());
  const headers: Record<string, string> = {};
  new Headers(init.headers ?? base?.headers).forEach((value, name) => (headers[name] = value));
  const method = (init.method ?? base?.method ?? 'GET').toUpperCase();
  const rawBody = init.body !== undefined ? init.body : base && base.body ? await base.arrayBuffer() : undefined;
  return { url, method, headers, body: await bodyBuffer(rawBody, headers) };
}

async function bodyBuffer(
  body: BodyInit | ArrayBuffer | null | undefined,
  headers: Record<string, string>,
): Promise<Buffer | undefined> {
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
  throw new TypeError(
    'The streaming fetch sends string, URLSearchParams, ArrayBuffer, typed-array or Blob bodies only',
  );
}

function toWebResponse(incoming: IncomingMessage, method: string, url: URL, maxBytes: number): Response {
  const status = incoming.statusCode ?? 502;
  const headers = new Headers();
  for (const [name, values] of Object.entries(incoming.headersDistinct)) {
    for (const value of values ?? []) headers.append(name, value);
  }
  if (method === 'HEAD' || NULL_BODY_STATUSES.has(status)) {
    incoming.resume();
    return new Response(null, {
      status: status === 101 || status === 103 ? 502 : status,
      statusText: incoming.statusMessage,
      headers,
    });
  }
  let seen = 0;
  const limited = incoming.pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        seen += chunk.length;
        if (seen > maxBytes)
          callback(new FetchError('too_large', `The response from ${url.origin} exceeds ${maxBytes} bytes`, true));
        else callback(null, chunk);
      },
    }),
  );
  incoming.on('error', (error) => limited.destroy(classifyFailure(error, url, true)));
  incoming.once('close', () => {
    if (!incoming.complete && !limited.destroyed)
      limited.destroy(new FetchError('reset', `${url.origin} closed the connection mid-response`, true));
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
