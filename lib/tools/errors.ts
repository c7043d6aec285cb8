import { findFetchError, type FetchError } from '../net/transport';

/** Why a tool source could not be discovered or opened. */
export type ToolSourceErrorCode =
  /** The request names no usable source (no URL, no document, a malformed URL). */
  | 'invalid_source'
  /** The SSRF guard refused a destination (loopback, private, metadata, ... or a redirect there). */
  | 'ssrf_blocked'
  /** Plain http to a host NETWORK_ALLOWLIST does not open. */
  | 'insecure_url'
  /** Not a valid Swagger 2.0 / OpenAPI 3.x document. */
  | 'invalid_openapi'
  | 'source_too_large'
  /** DNS has no address for the URL's host (NXDOMAIN or no A/AAAA record): the caller's error. */
  | 'host_not_found'
  /** Connection refused, DNS failure (the resolver did not answer), host unreachable. */
  | 'upstream_unreachable'
  | 'upstream_timeout'
  /** The upstream answered with an error status or broke off. */
  | 'upstream_error'
  | 'tls_error'
  /** Something answered, but not an MCP server. */
  | 'not_mcp_server'
  /** The upstream wants (other) credentials: HTTP 401/403. */
  | 'auth_required'
  /**
   * A value of someone who is not the source's owner (a market consumer's param) may not go where it
   * would: an undeclared name, a reserved header, a server URL variable outside its enum. Nothing was sent.
   */
  | 'invalid_params';

export class ToolSourceError extends Error {
  constructor(
    readonly code: ToolSourceErrorCode,
    message: string,
    /** Worth trying again later (the upstream may come back); false for refusals and bad input. */
    readonly transient = false,
  ) {
    super(message);
    this.name = 'ToolSourceError';
  }
}

/**
 * The one HTTP answer for each tool-source error, wherever the API reports one (custom-agent and tool discovery,
 * market discovery and validation): refusals and bad sources are the caller's (400), an upstream that cannot be
 * used is a bad gateway (502), a silent one a timeout (504).
 */
const SOURCE_ERROR_STATUS: Record<ToolSourceErrorCode, 400 | 502 | 504> = {
  invalid_source: 400,
  ssrf_blocked: 400,
  insecure_url: 400,
  invalid_openapi: 400,
  source_too_large: 400,
  host_not_found: 400,
  invalid_params: 400,
  upstream_unreachable: 502,
  upstream_error: 502,
  tls_error: 502,
  not_mcp_server: 502,
  auth_required: 502,
  upstream_timeout: 504,
};

export function sourceErrorStatus(code: ToolSourceErrorCode): 400 | 502 | 504 {
  return SOURCE_ERROR_STATUS[code] ?? 502;
}

/** Why a tool call failed without a tool result. */
export type ToolCallFailureKind =
  /** Connection refused, DNS failure, host unreachable: nothing was sent. */
  | 'not_delivered'
  /** The SSRF guard or the https rule refused the destination; nothing was sent. */
  | 'refused_by_policy'
  /** The source could not be opened (its tools could not be listed); the tool was not invoked. */
  | 'source_unavailable'
  | 'timeout'
  | 'connection_lost'
  | 'auth_required'
  | 'unknown_tool'
  | 'invalid_arguments'
  /** The upstream answered with a server error instead of a tool result. */
  | 'upstream_error'
  | 'too_large'
  | 'protocol_error';

const TRANSIENT: ReadonlySet<ToolCallFailureKind> = new Set([
  'not_delivered',
  'source_unavailable',
  'timeout',
  'connection_lost',
  'upstream_error',
]);

export class ToolCallError extends Error {
  /**
   * Whether the call may be sent again automatically: the failure is transient AND either the request
   * provably never reached the upstream, or the tool is read-only/idempotent. Anything else goes back to
   * the model as an error result, never silently resent.
   */
  readonly retryable: boolean;

  constructor(
    readonly kind: ToolCallFailureKind,
    message: string,
    /** False only when the request provably did not reach the upstream tool. */
    readonly reached: boolean,
    safeToRepeat: boolean,
    /** The MCP server answered the call with this JSON-RPC error (its code and data), when it did. */
    readonly rpc?: { code: number; data?: unknown },
  ) {
    super(message);
    this.name = 'ToolCallError';
    this.retryable = TRANSIENT.has(kind) && (!reached || safeToRepeat);
  }
}

/** The source-level meaning of a network failure (see FetchError), or undefined when it is not one. */
export function sourceErrorFromNetwork(error: unknown): ToolSourceError | undefined {
  const failure = findFetchError(error);
  if (!failure) return undefined;
  return new ToolSourceError(SOURCE_CODE_OF[failure.code], failure.message, TRANSIENT_NETWORK.has(failure.code));
}

const SOURCE_CODE_OF: Record<FetchError['code'], ToolSourceErrorCode> = {
  blocked: 'ssrf_blocked',
  bad_scheme: 'invalid_source',
  insecure: 'insecure_url',
  host_not_found: 'host_not_found',
  dns: 'upstream_unreachable',
  refused: 'upstream_unreachable',
  unreachable: 'upstream_unreachable',
  tls: 'tls_error',
  proxy: 'upstream_unreachable',
  timeout: 'upstream_timeout',
  reset: 'upstream_error',
  too_large: 'source_too_large',
  too_many_redirects: 'upstream_error',
  network: 'upstream_error',
};

const TRANSIENT_NETWORK: ReadonlySet<FetchError['code']> = new Set([
  'dns',
  'refused',
  'unreachable',
  'timeout',
  'reset',
  'network',
]);

/** The call-level meaning of a network failure, or undefined when it is not one. */
export function callErrorFromNetwork(error: unknown, safeToRepeat: boolean): ToolCallError | undefined {
  const failure = findFetchError(error);
  if (!failure) return undefined;
  const kind: ToolCallFailureKind = (() => {
    switch (failure.code) {
      case 'blocked':
      case 'bad_scheme':
      case 'insecure':
        return 'refused_by_policy';
      case 'host_not_found':
      case 'dns':
      case 'refused':
      case 'unreachable':
      case 'proxy':
        return 'not_delivered';
      case 'tls':
        return 'source_unavailable';
      case 'timeout':
        return 'timeout';
      case 'too_large':
        return 'too_large';
      default:
        return 'connection_lost';
    }
  })();
  // A TLS failure happens before the request is sent, but it will not heal on its own.
  if (failure.code === 'tls') return new ToolCallError('refused_by_policy', failure.message, false, safeToRepeat);
  return new ToolCallError(kind, failure.message, failure.reached, safeToRepeat);
}

/** A call could not even start because its source could not be opened: the tool itself was never invoked. */
export function callErrorFromSource(error: ToolSourceError): ToolCallError {
  const kind: ToolCallFailureKind =
    error.code === 'auth_required'
      ? 'auth_required'
      : error.code === 'ssrf_blocked' ||
          error.code === 'insecure_url' ||
          error.code === 'tls_error' ||
          error.code === 'invalid_params'
        ? 'refused_by_policy'
        : error.code === 'upstream_unreachable' || error.code === 'host_not_found'
          ? 'not_delivered'
          : error.transient
            ? 'source_unavailable'
            : 'protocol_error';
  return new ToolCallError(kind, error.message, false, true);
}

/** Replaces every parameter value (credentials) that appears in a text, so no message can leak one. */
export function scrubSecrets(text: string, values: Iterable<unknown>): string {
  let scrubbed = text;
  for (const value of values) {
    const secret = String(value ?? '');
    if (secret.length < 4) continue;
    scrubbed = scrubbed.split(secret).join('[redacted]');
    const bare = secret.replace(/^(Bearer|Basic)\s+/i, '');
    if (bare !== secret && bare.length >= 4) scrubbed = scrubbed.split(bare).join('[redacted]');
  }
  return scrubbed;
}
