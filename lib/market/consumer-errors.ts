import { scrubSecrets, ToolCallError, ToolSourceError } from '../tools/errors';
import type { SourceParamValues, ToolCallResult, ToolContentBlock } from '../tools/types';

/**
 * What a market consumer is told when a call of someone else's tool fails: what happened, in the
 * provider's terms ("the provider's server refused the connection"), never where the provider's server
 * is, what its staticConfig holds, or an upstream text that echoes either. The runtime's own messages
 * name hosts and ports (they are written for a source's owner); a consumer gets these instead.
 */

/** What an entry reveals about where and how its upstream is reached. */
export interface UpstreamPrivacy {
  remoteMcpUrl: string | null;
  openapiBaseUrl: string | null;
  openapiSpec: Record<string, unknown> | null;
  staticConfig: SourceParamValues;
}

const SOURCE_PHRASES: Record<ToolSourceError['code'], string | null> = {
  upstream_unreachable: "the provider's server refused the connection or could not be reached",
  host_not_found: "the provider's server refused the connection or could not be reached",
  ssrf_blocked: "the provider's server address is not allowed by the platform's network rules",
  insecure_url: "the provider's server address is not allowed by the platform's network rules",
  tls_error: "a secure connection to the provider's server could not be made",
  upstream_timeout: "the provider's server did not answer in time",
  upstream_error: "the provider's server failed",
  not_mcp_server: "the provider's server did not answer as an MCP server",
  auth_required: "the provider's server refused the credentials",
  invalid_source: "the provider's server configuration could not be used",
  invalid_openapi: "the provider's API description could not be used",
  source_too_large: "the provider's server offers more than the platform can load",
  // Written by the platform about the consumer's own values: shown as it is.
  invalid_params: null,
};

const CALL_PHRASES: Record<ToolCallError['kind'], string | null> = {
  not_delivered: "the provider's server refused the connection or could not be reached",
  refused_by_policy: "the provider's server address is not allowed by the platform's network rules",
  source_unavailable: "the provider's server could not be opened",
  timeout: "the provider's server did not answer in time",
  connection_lost: "the connection to the provider's server broke off",
  auth_required: "the provider's server refused the credentials",
  upstream_error: "the provider's server failed",
  too_large: "the provider's answer was too large",
  // About the call's own tool and arguments (the text is scrubbed like any other).
  unknown_tool: null,
  invalid_arguments: null,
  protocol_error: null,
};

/** The consumer's account of a runtime failure: a fixed phrase, or the runtime's own text where it is about the call itself. */
export function failurePhrase(error: ToolCallError | ToolSourceError): string {
  const phrase = error instanceof ToolCallError ? CALL_PHRASES[error.kind] : SOURCE_PHRASES[error.code];
  return phrase ?? error.message;
}

/**
 * Scrubs what a consumer reads: every staticConfig value (and `extra` secrets such as the run's charge
 * token) becomes [redacted] in any text; in error texts the provider's hosts become [provider host] too.
 * `answer` scrubs a whole tool answer (scrubbedAnswer).
 */
export function consumerText(
  entry: UpstreamPrivacy,
  extra: readonly unknown[] = [],
): {
  result: (text: string) => string;
  error: (text: string) => string;
  answer: (answer: ToolCallResult) => ToolCallResult;
  /** Every string (and key) of a JSON value scrubbed as `result` does. */
  value: (value: unknown) => unknown;
} {
  const secrets = [...Object.values(entry.staticConfig), ...extra].filter((value) => String(value ?? '').length >= 4);
  const hosts = upstreamHosts(entry);
  const result = (text: string) => (secrets.length ? scrubSecrets(text, secrets) : text);
  const error = (text: string) => scrubHosts(result(text), hosts);
  return {
    result,
    error,
    answer: (answer) =>
      answer.isError
        ? secrets.length || hosts.length
          ? scrubbedAnswer(answer, error)
          : answer
        : secrets.length
          ? scrubbedAnswer(answer, result)
          : answer,
    value: (value) => (secrets.length ? deepScrub(value, result) : value),
  };
}

/**
 * A tool answer with `scrub` applied to every text a consumer can read in it: `text`, every string of
 * its blocks (text, a resource's text and URI, a link's URI, name and description, annotations and
 * `_meta`), of its structuredContent and of its `_meta`, keys and values. Binary payloads (image and
 * audio `data`, a resource's `blob`) are passed as they are: base64 is not text a secret can be read in.
 */
export function scrubbedAnswer(answer: ToolCallResult, scrub: (text: string) => string): ToolCallResult {
  const scrubbed: ToolCallResult = { ...answer, text: scrub(answer.text) };
  if (answer.content) scrubbed.content = answer.content.map((block) => scrubbedBlock(block, scrub));
  if (answer.structuredContent)
    scrubbed.structuredContent = deepScrub(answer.structuredContent, scrub) as Record<string, unknown>;
  if (answer.meta) scrubbed.meta = deepScrub(answer.meta, scrub) as Record<string, unknown>;
  return scrubbed;
}

function scrubbedBlock(block: ToolContentBlock, scrub: (text: string) => string): ToolContentBlock {
  if (block.type === 'image' || block.type === 'audio') {
    const { data, ...rest } = block;
    return { ...(deepScrub(rest, scrub) as object), data } as ToolContentBlock;
  }
  if (block.type === 'resource') {
    const { resource, ...rest } = block;
    const { blob, ...contents } = resource as typeof resource & { blob?: string };
    return {
      ...(deepScrub(rest, scrub) as object),
      resource: { ...(deepScrub(contents, scrub) as object), ...(blob !== undefined && { blob }) },
    } as ToolContentBlock;
  }
  return deepScrub(block, scrub) as ToolContentBlock;
}

/** A JSON value with every string (and key) that holds one of `secrets` scrubbed (see scrubSecrets). */
export function scrubbedValue(value: unknown, secrets: readonly unknown[]): unknown {
  const kept = secrets.filter((secret) => String(secret ?? '').length >= 4);
  return kept.length ? deepScrub(value, (text) => scrubSecrets(text, kept)) : value;
}

function deepScrub(value: unknown, scrub: (text: string) => string): unknown {
  if (typeof value === 'string') return scrub(value);
  if (Array.isArray(value)) return value.map((item) => deepScrub(item, scrub));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[scrub(key)] = deepScrub(item, scrub);
    return out;
  }
  return value;
}

function scrubHosts(text: string, hosts: string[]): string {
  let scrubbed = text;
  for (const host of hosts)
    scrubbed = scrubbed.replace(new RegExp(host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'), '[provider host]');
  return scrubbed;
}

/** The provider's hosts (with and without port), longest first: its MCP URL, base URL, and the literal parts of its OpenAPI server URLs. */
export function upstreamHosts(
  entry: Pick<UpstreamPrivacy, 'remoteMcpUrl' | 'openapiBaseUrl' | 'openapiSpec'>,
): string[] {
  const found = new Set<string>();
  const addUrl = (raw: unknown) => {
    if (typeof raw !== 'string') return;
    const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/?#]*)/.exec(raw)?.[1];
    if (!authority) return;
    // Around {variables}, the literal pieces of the host ("{region}.api.vendor.com" → "api.vendor.com").
    for (const piece of authority.split(/\{[^}]*\}/)) {
      const literal = piece.replace(/^[.:-]+|[.:-]+$/g, '');
      if (literal.length >= 4) {
        found.add(literal.toLowerCase());
        found.add(literal.replace(/:\d+$/, '').toLowerCase());
      }
    }
  };
  addUrl(entry.remoteMcpUrl);
  addUrl(entry.openapiBaseUrl);
  const spec = (entry.openapiSpec ?? {}) as Record<string, any>;
  if (typeof spec.host === 'string') addUrl(`https://${spec.host}`);
  const serversOf = (node: any) =>
    (Array.isArray(node?.servers) ? node.servers : []).forEach((server: any) => addUrl(server?.url));
  serversOf(spec);
  for (const item of Object.values<any>(spec.paths ?? {})) {
    serversOf(item);
    for (const operation of Object.values<any>(item ?? {}))
      if (operation && typeof operation === 'object') serversOf(operation);
  }
  return [...found].filter((host) => host.length >= 4).sort((a, b) => b.length - a.length);
}
