import { readFileSync } from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import tls from 'node:tls';

import { HOST_NOT_FOUND } from './dns';
import { bracketHost, unbracketHost } from './host';
import { proxyAuthorization, proxyHost, proxyPort, type ProxyConfig } from './proxy';
import {
  createGuardedLookup,
  resolveAllowedAddresses,
  resolverOf,
  SsrfBlockedError,
  type NetworkPolicy,
  type Resolver,
} from './ssrf';
import { judgeUrlEntry } from './url-entry';

/**
 * The one guarded transport under both HTTP clients (buffered-fetch.ts reads whole bodies, streaming-fetch.ts hands
 * them on as web streams): every hop passes the URL entry check and the SSRF guard, and the socket connects to
 * exactly the address that was checked (directly, or through the operator's proxy, which is handed that address and
 * never the name); one redirect rule; one list of origin-bound headers; one set of trusted CAs; one error type.
 */

/**
 * What went wrong, and whether the request can have reached the upstream: `blocked`, `bad_scheme`, `insecure`,
 * `host_not_found`, `dns`, `refused`, `unreachable`, `tls` and `proxy` happen before any byte of the request reaches
 * the upstream. `host_not_found`: DNS answered that the name does not exist or has no address (the URL's fault);
 * `dns`: DNS could not answer (a temporary failure of the resolver); `proxy`: the operator's proxy could not be
 * reached or refused the request (the platform's trouble, not the target's: retrying the target does not help).
 */
export type FetchErrorCode =
  | 'blocked'
  | 'bad_scheme'
  | 'insecure'
  | 'host_not_found'
  | 'dns'
  | 'refused'
  | 'unreachable'
  | 'tls'
  | 'proxy'
  | 'timeout'
  | 'reset'
  | 'too_large'
  | 'too_many_redirects'
  | 'network';

export class FetchError extends Error {
  constructor(
    readonly code: FetchErrorCode,
    message: string,
    /** False only when the request provably never left this host (no connection to the upstream was up). */
    readonly reached: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FetchError';
  }
}

/** The FetchError somewhere in an error's `cause` chain (libraries wrap what `fetch` throws). */
export function findFetchError(error: unknown): FetchError | undefined {
  for (let current = error, depth = 0; current && depth < 8; depth++) {
    if (current instanceof FetchError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The SSRF guard's refusal behind an error (a FetchError `blocked` carries it as its cause), if that is what it is. */
export function ssrfRefusal(error: unknown): SsrfBlockedError | undefined {
  for (let current = error, depth = 0; current && depth < 8; depth++) {
    if (current instanceof SsrfBlockedError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export type CaCertificates = string | Buffer | ReadonlyArray<string | Buffer>;

/**
 * The CAs a connection trusts: without `extra`, Node's default store as is (its bundled roots plus
 * NODE_EXTRA_CA_CERTS); with it, the same plus `extra` (an explicit `ca` replaces the default store, so the
 * roots and the NODE_EXTRA_CA_CERTS file are added back).
 */
export function trustedCas(extra: CaCertificates | undefined): string[] | undefined {
  if (extra === undefined) return undefined;
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

/** One request of a chain: header names lower-cased. */
export interface Hop {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
/**
 * Headers that belong to the origin they were sent to and are dropped when a redirect leaves it: every credential
 * (Authorization, Cookie, Proxy-Authorization, X-API-Key), the Host, and the platform's own secrets (the market's
 * x-service-charge-* headers, a webhook's signature).
 */
const ORIGIN_BOUND_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'cookie',
  'proxy-authorization',
  'x-api-key',
  'host',
  'x-webhook-signature',
]);
const ORIGIN_BOUND_PREFIXES = ['x-service-charge-'];

export function isOriginBoundHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return ORIGIN_BOUND_HEADERS.has(lower) || ORIGIN_BOUND_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/** Whether a redirect stays on the request's origin (or only upgrades http to https on the same host and default ports). */
function staysWithinOrigin(from: URL, to: URL): boolean {
  if (to.origin === from.origin) return true;
  return (
    from.protocol === 'http:' && to.protocol === 'https:' && from.hostname === to.hostname && !from.port && !to.port
  );
}

/**
 * The one redirect rule: 303 (and 301/302 after a POST) become a GET without body; a hop to another origin loses
 * the origin-bound headers; only http: and https: are followed.
 */
export function redirectedHop(hop: Hop, status: number, location: string): Hop {
  let url: URL;
  try {
    url = new URL(location, hop.url);
  } catch {
    throw new FetchError('network', `${hop.url.origin} redirected to an invalid Location`, true);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new FetchError(
      'bad_scheme',
      `${hop.url.origin} redirected to a ${url.protocol} URL; only http: and https: are followed`,
      true,
    );
  }
  const becomesGet =
    status === 303 ? hop.method !== 'HEAD' : (status === 301 || status === 302) && hop.method === 'POST';
  const headers = { ...hop.headers };
  if (becomesGet) BODY_HEADERS.forEach((name) => delete headers[name]);
  if (url.origin !== hop.url.origin)
    Object.keys(headers)
      .filter(isOriginBoundHeader)
      .forEach((name) => delete headers[name]);
  return { url, method: becomesGet ? 'GET' : hop.method, headers, body: becomesGet ? undefined : hop.body };
}

export interface RedirectOptions {
  /** Hops followed; 0 returns a redirect as the response. */
  maxRedirects: number;
  /**
   * Whether a redirect to another origin is followed (dropping the origin-bound headers). False: it is returned as
   * the response, unfollowed, so no header of the request (whatever credential it carries) reaches another origin.
   */
  crossOrigin: boolean;
  /** `follow` (default), `manual`: every redirect is the response, `error`: a redirect is a failure. */
  mode?: 'follow' | 'manual' | 'error';
}

export interface Exchange {
  response: IncomingMessage;
  /** The request that was answered with `response`. */
  hop: Hop;
  /** Each URL that answered with a redirect, in order (without credentials or fragment). */
  redirects: string[];
}

/** Sends `first` and follows its redirects by the one redirect rule. */
export async function exchange(
  transport: Transport,
  first: Hop,
  options: RedirectOptions,
  signal?: AbortSignal | null,
): Promise<Exchange> {
  const redirects: string[] = [];
  const mode = options.mode ?? 'follow';
  let hop = first;
  for (;;) {
    const response = await transport.send(hop, signal);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (!REDIRECT_STATUSES.has(status) || !location || mode === 'manual' || options.maxRedirects === 0)
      return { response, hop, redirects };
    if (mode === 'follow' && !options.crossOrigin && !staysWithin(hop.url, location))
      return { response, hop, redirects };
    response.destroy();
    if (mode === 'error')
      throw new FetchError(
        'network',
        `${hop.url.origin} answered with a redirect and redirects are not allowed here`,
        true,
      );
    if (redirects.length >= options.maxRedirects)
      throw new FetchError(
        'too_many_redirects',
        `Gave up after ${options.maxRedirects} redirects (last at ${hop.url.origin})`,
        true,
      );
    redirects.push(displayUrl(hop.url));
    hop = redirectedHop(hop, status, location);
  }
}

function staysWithin(from: URL, location: string): boolean {
  try {
    return staysWithinOrigin(from, new URL(location, from));
  } catch {
    return true; // an invalid Location fails as such when followed
  }
}

/** A URL as shown to people: without credentials or fragment. */
export function displayUrl(url: URL): string {
  const shown = new URL(url);
  shown.username = '';
  shown.password = '';
  shown.hash = '';
  return shown.href;
}

export interface TransportOptions {
  policy: NetworkPolicy;
  resolver?: Resolver;
  /** The operator's forward proxy: plain http goes to it in absolute form, https through a CONNECT tunnel. */
  proxy?: ProxyConfig | null;
  /** CAs trusted besides the default store (see trustedCas). */
  extraCa?: CaCertificates;
  /** Refuse plain `http:` except to hosts the network allowlist opens (checked at every hop). */
  requireHttps?: boolean;
  /** Budget from sending a request to its response headers (connect and TLS included); none when absent. */
  headersTimeoutMs?: number;
  /** A connection that stays silent this long is cut; none when absent. */
  idleTimeoutMs?: number;
  /**
   * Keep direct connections open between requests: an idle connection is reused for the same origin for up to
   * KEEP_ALIVE_IDLE_MS, then closed. Each kept connection goes to the address the guard checked when it was opened.
   */
  keepAlive?: boolean;
  /** Called once per request when the connection to the upstream is up: from here on the request may have reached it. */
  onConnected?: (request: { url: URL; method: string }) => void;
}

export interface Transport {
  /**
   * Sends one request (no redirect is followed) and resolves with its response once the headers are in. Aborting
   * `signal` rejects with its reason before the headers, and destroys the response with it after.
   */
  send(hop: Hop, signal?: AbortSignal | null): Promise<IncomingMessage>;
}

/** How long an idle kept-alive connection waits for the next request (below the common 5 s server default). */
export const KEEP_ALIVE_IDLE_MS = 2_000;

interface Settings {
  policy: NetworkPolicy;
  resolver: Resolver;
  lookup: ReturnType<typeof createGuardedLookup>;
  proxy: ProxyConfig | null;
  ca: string[] | undefined;
  requireHttps: boolean;
  headersTimeoutMs: number | undefined;
  idleTimeoutMs: number | undefined;
  onConnected: TransportOptions['onConnected'];
  agents: { http: http.Agent; https: https.Agent } | null;
}

export function createTransport(options: TransportOptions): Transport {
  const resolver = options.resolver ?? resolverOf(options.policy);
  const keepAlive = { keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS, maxFreeSockets: 16 };
  const settings: Settings = {
    policy: options.policy,
    resolver,
    lookup: createGuardedLookup(options.policy, resolver),
    proxy: options.proxy ?? null,
    ca: trustedCas(options.extraCa),
    requireHttps: options.requireHttps ?? false,
    headersTimeoutMs: options.headersTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs,
    onConnected: options.onConnected,
    agents: options.keepAlive ? { http: new http.Agent(keepAlive), https: new https.Agent(keepAlive) } : null,
  };
  return { send: (hop, signal) => sendHop(hop, settings, signal ?? undefined) };
}

/** Throws unless the URL is http(s), and https when required: the entry check of lib/net/url-entry.ts, run at every hop. */
export function assertFetchableUrl(url: URL, policy: NetworkPolicy, requireHttps: boolean): void {
  const refusal = judgeUrlEntry(url, policy, { requireHttps });
  // A literal internal address is refused by the SSRF guard when the connection is made.
  if (!refusal || refusal.code === 'blocked') return;
  throw new FetchError(refusal.code === 'insecure' ? 'insecure' : 'bad_scheme', refusal.message, false);
}

function targetPort(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

function targetRequestOptions(hop: Hop): https.RequestOptions {
  const { url } = hop;
  return {
    method: hop.method,
    protocol: url.protocol,
    hostname: unbracketHost(url.hostname),
    port: targetPort(url),
    path: url.pathname + url.search,
    headers: hop.body === undefined ? hop.headers : { ...hop.headers, 'content-length': String(hop.body.length) },
    auth:
      url.username || url.password
        ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`
        : undefined,
  };
}

function proxyHeaders(proxy: ProxyConfig): Record<string, string> {
  const authorization = proxyAuthorization(proxy);
  return authorization ? { 'proxy-authorization': authorization } : {};
}

/** The proxy's own failure. Its address stays out of the message (it is the operator's); the cause keeps the detail. */
function proxyFailure(message: string, cause?: unknown): FetchError {
  return new FetchError('proxy', message, false, cause === undefined ? undefined : { cause });
}

function proxyRefusal(response: IncomingMessage, what: string): FetchError {
  const status = `HTTP ${response.statusCode}${response.statusMessage ? ` ${response.statusMessage}` : ''}`;
  return proxyFailure(`The proxy refused ${what} (${status})`);
}

function sendHop(hop: Hop, settings: Settings, signal: AbortSignal | undefined): Promise<IncomingMessage> {
  const { url, method } = hop;
  try {
    assertFetchableUrl(url, settings.policy, settings.requireHttps);
  } catch (error) {
    return Promise.reject(error);
  }
  const host = unbracketHost(url.hostname);
  const secure = url.protocol === 'https:';
  const { proxy } = settings;
  return new Promise<IncomingMessage>((resolve, reject) => {
    /** Whether a connection to the upstream is (or was) up: the request may have reached it. */
    let connected = false;
    /** While talking to the proxy before it carries the request, failures are the proxy's. */
    let awaitingProxy = false;
    let settled = false;
    let response: IncomingMessage | undefined;
    let request: http.ClientRequest | undefined;
    let connectRequest: http.ClientRequest | undefined;
    let tunnel: Socket | undefined;
    const stop = () => {
      settled = true;
      if (headersTimer) clearTimeout(headersTimer);
      signal?.removeEventListener('abort', onAbort);
      request?.destroy();
      connectRequest?.destroy();
      tunnel?.destroy();
    };
    const fail = (error: unknown) => {
      if (settled) return;
      stop();
      reject(classifyFailure(error, url, connected, awaitingProxy));
    };
    const onAbort = () => {
      const reason: unknown = signal?.reason ?? new DOMException('This operation was aborted', 'AbortError');
      if (settled) return response?.destroy(reason instanceof Error ? reason : new Error(String(reason)));
      stop();
      reject(reason);
    };
    const headersTimer =
      settings.headersTimeoutMs === undefined
        ? undefined
        : setTimeout(
            () =>
              fail(
                new FetchError(
                  'timeout',
                  `${url.origin} did not answer within ${settings.headersTimeoutMs} ms`,
                  connected,
                ),
              ),
            settings.headersTimeoutMs,
          );
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });

    const watch = (outgoing: http.ClientRequest, upEvent: 'connect' | 'secureConnect') => {
      outgoing.once('socket', (socket: Socket) => {
        if (settings.idleTimeoutMs !== undefined) {
          // This request's silence bound; a kept-alive socket outlives the request, so the listener goes with it.
          const onSilent = () =>
            socket.destroy(
              new FetchError('timeout', `${url.origin} went silent for ${settings.idleTimeoutMs} ms`, true),
            );
          socket.setTimeout(settings.idleTimeoutMs);
          socket.on('timeout', onSilent);
          outgoing.once('close', () => socket.off('timeout', onSilent));
        }
        const up = () => {
          connected = true;
          awaitingProxy = false;
          settings.onConnected?.({ url, method });
        };
        if (outgoing.reusedSocket) up();
        else socket.once(upEvent, up);
      });
      outgoing.on('error', fail);
      outgoing.once('response', (incoming: IncomingMessage) => {
        if (settled) return incoming.destroy();
        // Only a proxy answers 407: it wants (other) credentials for itself, whatever the target would say.
        if (proxy && !secure && incoming.statusCode === 407) {
          incoming.destroy();
          return fail(proxyRefusal(incoming, `the request for ${url.origin}`));
        }
        settled = true;
        if (headersTimer) clearTimeout(headersTimer);
        response = incoming;
        incoming.once('close', () => signal?.removeEventListener('abort', onAbort));
        resolve(incoming);
      });
      outgoing.end(hop.body);
    };

    const start = async () => {
      if (!proxy) {
        // Node skips `lookup` for IP literals, so those are checked here; names are checked by the guarded lookup,
        // which hands the socket the very address it checked.
        if (isIP(host)) await resolveAllowedAddresses(host, settings.policy, settings.resolver);
        if (settled) return;
        request = (secure ? https : http).request({
          ...targetRequestOptions(hop),
          lookup: settings.lookup,
          agent: settings.agents ? settings.agents[secure ? 'https' : 'http'] : false,
          ca: settings.ca,
          servername: secure && !isIP(host) ? host : undefined,
        });
        return watch(request, secure ? 'secureConnect' : 'connect');
      }
      // A proxy given a name would resolve it again (DNS rebinding, split horizon), so it is given the checked address.
      const [pinned] = await resolveAllowedAddresses(host, settings.policy, settings.resolver);
      if (settled) return;
      const authority = `${bracketHost(pinned.address)}:${targetPort(url)}`;
      awaitingProxy = true;
      if (!secure) {
        // Plain http: absolute-form request line to the checked address, the name in the Host header.
        const target = targetRequestOptions(hop);
        request = http.request({
          method: hop.method,
          hostname: proxyHost(proxy),
          port: proxyPort(proxy),
          path: `http://${authority}${url.pathname}${url.search}`,
          headers: { ...target.headers, host: url.host, ...proxyHeaders(proxy) },
          auth: target.auth,
          agent: false,
        });
        return watch(request, 'connect');
      }
      const socket = await openTunnel(proxy, authority, (outgoing) => (connectRequest = outgoing));
      if (settled) return socket.destroy();
      tunnel = socket;
      awaitingProxy = false;
      const overTunnel = () => {
        // SNI and certificate verification use the name from the URL, not the address the tunnel goes to.
        const secureSocket = tls.connect({ socket, host, servername: isIP(host) ? undefined : host, ca: settings.ca });
        secureSocket.once('close', () => socket.destroy());
        return secureSocket;
      };
      request = https.request({ ...targetRequestOptions(hop), createConnection: overTunnel });
      watch(request, 'secureConnect');
    };
    start().catch(fail);
  });
}

function openTunnel(
  proxy: ProxyConfig,
  authority: string,
  track: (request: http.ClientRequest) => void,
): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const request = http.request({
      method: 'CONNECT',
      hostname: proxyHost(proxy),
      port: proxyPort(proxy),
      path: authority,
      headers: { host: authority, ...proxyHeaders(proxy) },
      agent: false,
    });
    track(request);
    request.once('connect', (response: IncomingMessage, socket: Socket, head: Buffer) => {
      if (response.statusCode !== 200) {
        socket.destroy();
        reject(proxyRefusal(response, `to tunnel to ${authority}`));
        return;
      }
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    request.once('error', reject);
    request.end();
  });
}

const TLS_ERROR =
  /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH|ERR_CERT)/;

/** The FetchError for what a request to `url` failed with (FetchErrors and abort reasons pass through). */
export function classifyFailure(error: unknown, url: URL, connected: boolean, atProxy = false): Error {
  if (error instanceof FetchError) return error;
  if (error instanceof SsrfBlockedError) return new FetchError('blocked', error.message, false, { cause: error });
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return error;
  const code = String((error as NodeJS.ErrnoException)?.code ?? '');
  const message = error instanceof Error ? error.message : String(error);
  const where = url.origin;
  if (atProxy) return proxyFailure(`Could not reach the proxy${code ? ` (${code})` : `: ${message}`}`, error);
  if (!connected) {
    if (code === 'ECONNREFUSED')
      return new FetchError('refused', `${where} refused the connection (ECONNREFUSED)`, false, { cause: error });
    if (HOST_NOT_FOUND.has(code)) {
      const host = unbracketHost(url.hostname);
      return new FetchError(
        'host_not_found',
        `Host not found: ${host} does not resolve (DNS has no address for it: ${code} ${host})`,
        false,
        { cause: error },
      );
    }
    if (code === 'EAI_AGAIN' || code === 'EAI_FAIL') {
      return new FetchError('dns', `Could not resolve ${url.hostname} (${code}: DNS did not answer)`, false, {
        cause: error,
      });
    }
    if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EADDRNOTAVAIL') {
      return new FetchError('unreachable', `${where} is unreachable (${code})`, false, { cause: error });
    }
    if (TLS_ERROR.test(code) || /certificate|ssl|tls/i.test(message)) {
      return new FetchError('tls', `TLS with ${where} failed: ${message}`, false, { cause: error });
    }
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') {
    return new FetchError('reset', `${where} closed the connection (${code})`, connected, { cause: error });
  }
  return new FetchError('network', `Request to ${where} failed: ${message}`, connected, { cause: error });
}
