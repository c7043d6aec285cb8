import { isIP } from 'node:net';
import { assertFetchableUrl, createGuardedFetch, GuardedFetchError, type GuardedFetch } from '../net/guarded-fetch';
import { checkAddress, type NetworkPolicy, type Resolver } from '../net/ssrf';
import { ToolSourceError } from './errors';

/** What the tool runtime needs to reach tool sources. */
export interface ToolNetworkDeps {
  policy: NetworkPolicy;
  resolver?: Resolver;
  /**
   * CA certificates to trust besides the default store. Usually unnecessary: the default store already
   * includes NODE_EXTRA_CA_CERTS, which is how servers with certificates from a private CA are reached.
   */
  extraCa?: string | Buffer | ReadonlyArray<string | Buffer>;
  /** Cap on every response body from a tool source (default 8 MB). */
  maxResponseBytes?: number;
  /** Budget for connect + response headers of each request (default 30 s). */
  headersTimeoutMs?: number;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/**
 * The one fetch every tool-source request uses: SSRF guard on every hop, https except for allowlisted
 * hosts, size and time limits. Requests that carry a source's credentials (tool calls, an MCP session)
 * pass `crossOriginRedirects: false`: a redirect to another origin is not followed (see GuardedFetchOptions).
 */
export function toolFetch(deps: ToolNetworkDeps, onConnected?: (request: { url: URL; method: string }) => void, options: { crossOriginRedirects?: boolean } = {}): GuardedFetch {
  return createGuardedFetch({
    policy: deps.policy,
    resolver: deps.resolver,
    extraCa: deps.extraCa,
    requireHttps: true,
    maxResponseBytes: deps.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    headersTimeoutMs: deps.headersTimeoutMs,
    onConnected,
    keepAlive: true,
    crossOriginRedirects: options.crossOriginRedirects,
  });
}

export function parseSourceUrl(value: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ToolSourceError('invalid_source', `${what} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolSourceError('invalid_source', `${what} must be an http(s) URL`);
  return url;
}

/**
 * Refuses, without any DNS lookup or connection, what the guard would refuse anyway: plain http to a host
 * the allowlist does not open, literal internal addresses and localhost names. Names are resolved and
 * checked again at every connection.
 */
export function preflightSourceUrl(url: URL, policy: NetworkPolicy): void {
  try {
    assertFetchableUrl(url, policy, true);
  } catch (error) {
    if (error instanceof GuardedFetchError) throw new ToolSourceError(error.code === 'insecure' ? 'insecure_url' : 'invalid_source', error.message);
    throw error;
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host) ? host : /^localhost\.?$|\.localhost\.?$/i.test(host) ? '127.0.0.1' : null;
  if (literal === null) return;
  const verdict = checkAddress(literal, host, policy);
  if (!verdict.allowed) throw new ToolSourceError('ssrf_blocked', `Refused to connect to ${host}: ${verdict.reason}`);
}
