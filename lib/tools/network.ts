import { createStreamingFetch, type StreamingFetch } from '../net/streaming-fetch';
import type { NetworkPolicy, Resolver } from '../net/ssrf';
import { judgeUrlEntry } from '../net/url-entry';
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
 * pass `crossOriginRedirects: false`: a redirect to another origin is not followed (see StreamingFetchOptions).
 */
export function toolFetch(
  deps: ToolNetworkDeps,
  onConnected?: (request: { url: URL; method: string }) => void,
  options: { crossOriginRedirects?: boolean } = {},
): StreamingFetch {
  return createStreamingFetch({
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
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ToolSourceError('invalid_source', `${what} must be an http(s) URL`);
  return url;
}

/**
 * Refuses, without any DNS lookup or connection, what the transport would refuse anyway (lib/net/url-entry.ts, the
 * same check it runs at every hop): plain http to a host the allowlist does not open, literal internal addresses
 * and localhost names. Names are resolved and checked again at every connection.
 */
export function preflightSourceUrl(url: URL, policy: NetworkPolicy): void {
  const refusal = judgeUrlEntry(url, policy, { requireHttps: true });
  if (!refusal) return;
  const code =
    refusal.code === 'insecure' ? 'insecure_url' : refusal.code === 'blocked' ? 'ssrf_blocked' : 'invalid_source';
  throw new ToolSourceError(code, refusal.message);
}
