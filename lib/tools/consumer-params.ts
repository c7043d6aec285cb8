import { ToolSourceError } from './errors';
import type { ToolSourceSpec } from './types';

/**
 * Where the values of a source's owner and of its consumers may go. A source's `params` are its
 * owner's (a user's own source, a market provider's staticConfig); `consumerParams` come from someone
 * else (a market consumer) and only go through the doors the owner opened:
 *
 * - remote MCP params are HTTP headers of every request. Names compare case-insensitively; the
 *   platform's own headers (the market's x-service-charge-*) win over the owner's, the owner's over
 *   the consumer's, so no value is ever doubled or joined. Nobody sets a header the HTTP client or the
 *   MCP transport manages (Host, Content-Length, hop-by-hop headers, Mcp-Session-Id, ...); a consumer
 *   never sets Cookie or an x-service-charge-* header either.
 * - OpenAPI server URL variables take a consumer value only from the variable's enum (the document's,
 *   else the owner's declared choices), and only when the filled URL keeps the template's literal host.
 *
 * A consumer value that may not go where it would refuses the source (ToolSourceError
 * `invalid_params`) before anything is sent.
 */

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

/** Headers the HTTP client and the MCP transport manage (hop-by-hop headers among them): no param sets them. */
const MANAGED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'expect',
]);

/** The market's charge headers: the platform sets them (lib/market/relay/forward.ts chargeHeaders). */
export const CHARGE_HEADER_PREFIX = 'x-service-charge-';

/** Whether a consumer's value may never set this header, whatever the owner declared. */
export function isReservedForConsumers(name: string): boolean {
  const lower = name.toLowerCase();
  return MANAGED_HEADERS.has(lower) || lower === 'cookie' || lower.startsWith(CHARGE_HEADER_PREFIX);
}

/** Whether an OpenAPI header argument may set this header (the OpenAPI rule ignores Accept, Content-Type and Authorization ones). */
export function isArgumentHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return !isReservedForConsumers(lower) && lower !== 'authorization';
}

type HeaderLayers = Pick<ToolSourceSpec, 'params' | 'consumerParams' | 'headers'>;

/**
 * The HTTP headers of every request to a remote MCP source: `consumerParams`, then `params`, then
 * `headers`, each winning over the ones before it name for name (case-insensitively). A bare
 * Authorization value gets the Bearer scheme.
 */
export function mcpHeaders(layers: HeaderLayers): Record<string, string> {
  const merged = new Map<string, [string, string]>();
  for (const [name, raw] of Object.entries(layers.consumerParams ?? {})) {
    if (!HEADER_NAME.test(name))
      throw new ToolSourceError('invalid_params', `The parameter ${name} cannot be sent as an HTTP header`);
    if (isReservedForConsumers(name))
      throw new ToolSourceError(
        'invalid_params',
        `The parameter ${name} cannot be sent: a consumer's value never sets the ${name} header`,
      );
    merged.set(name.toLowerCase(), [name, headerValue(name, raw, 'invalid_params')]);
  }
  for (const layer of [layers.params, layers.headers]) {
    for (const [name, raw] of Object.entries(layer ?? {})) {
      if (!HEADER_NAME.test(name) || MANAGED_HEADERS.has(name.toLowerCase())) {
        throw new ToolSourceError('invalid_source', `params.${name} cannot be sent as an HTTP header of an MCP server`);
      }
      merged.set(name.toLowerCase(), [name, headerValue(name, raw, 'invalid_source')]);
    }
  }
  return Object.fromEntries(merged.values());
}

function headerValue(name: string, raw: string | number | boolean, code: 'invalid_source' | 'invalid_params'): string {
  const value = String(raw).trim();
  if (/[\r\n\0]/.test(value)) throw new ToolSourceError(code, `params.${name} contains a line break`);
  // What an HTTP header value can carry: visible ASCII, space, tab and Latin-1 (fetch refuses anything else).
  if (/[^\t\x20-\x7e\x80-\xff]/.test(value))
    throw new ToolSourceError(
      code,
      `params.${name} contains characters an HTTP header cannot carry (control characters, or beyond Latin-1)`,
    );
  return name.toLowerCase() === 'authorization' && !/\s/.test(value) ? `Bearer ${value}` : value;
}

// ---- OpenAPI server URL variables ---------------------------------------------------------------

export interface ServerVariableRule {
  default: string;
  enum?: string[];
}

type ServerValues = Pick<ToolSourceSpec, 'params' | 'consumerParams' | 'consumerChoices'>;

/**
 * A server URL template with its {variables} filled: the owner's value, else a consumer's (confined
 * as above), else the variable's default. Returns the filled text (the caller parses it).
 */
export function fillServerTemplate(
  template: string,
  variables: Record<string, ServerVariableRule>,
  values: ServerValues,
  location: URL | null,
): string {
  let consumerFilled = false;
  const filled = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const owner = values.params?.[name];
    if (owner !== undefined) return String(owner);
    const consumer = values.consumerParams?.[name];
    if (consumer === undefined) return variables[name]?.default ?? '';
    const value = String(consumer);
    const allowed = variables[name]?.enum ?? values.consumerChoices?.[name];
    if (!allowed)
      throw new ToolSourceError(
        'invalid_params',
        `The server URL variable {${name}} has no list of allowed values, so a consumer's value cannot fill it (the provider declares an enum for it)`,
      );
    if (!allowed.includes(value))
      throw new ToolSourceError(
        'invalid_params',
        `The value given for {${name}} is not one the provider allows (${allowed.join(', ')})`,
      );
    consumerFilled = true;
    return value;
  });
  if (consumerFilled && !keepsTemplateHost(template, filled, location)) {
    throw new ToolSourceError(
      'invalid_params',
      "A consumer's value for a server URL variable would leave the host of the provider's server URL",
    );
  }
  return filled;
}

/** Whether a filled server URL has the scheme and the host (port included) the template spells out, its variables standing for host characters only. */
function keepsTemplateHost(template: string, filled: string, location: URL | null): boolean {
  let url: URL;
  try {
    url = location ? new URL(filled, location) : new URL(filled);
  } catch {
    return false;
  }
  if (template.startsWith('/') && !template.startsWith('//'))
    return location !== null && url.host === location.host && url.protocol === location.protocol;
  const head = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/.exec(template);
  if (!head) return false; // the scheme or the whole authority is a variable: no literal host to keep
  if (url.protocol !== `${head[1].toLowerCase()}:`) return false;
  const pattern = new RegExp(
    `^${head[2]
      .split(/(\{[^}]+\})/)
      .map((part) => (/^\{[^}]+\}$/.test(part) ? '[a-z0-9.-]+' : escapeRegExp(part)))
      .join('')}$`,
    'i',
  );
  const defaultPort = url.protocol === 'https:' ? '443' : '80';
  return (
    !url.username &&
    !url.password &&
    (pattern.test(url.host) || pattern.test(`${url.hostname}:${url.port || defaultPort}`))
  );
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---- path arguments -----------------------------------------------------------------------------

/**
 * Whether a path argument would be read as "." or ".." by someone on the way: after percent-decoding
 * (repeatedly), cut at a ";" (path parameters) or NUL, and trimmed. Such values, and empty ones, are
 * refused; every other value is percent-encoded into one path segment.
 */
export function isDotSegment(value: string): boolean {
  let current = value;
  for (let i = 0; i < 5; i++) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(current);
    } catch {
      break;
    }
    if (decoded === current) break;
    current = decoded;
  }
  const segment = current.split(/[;\0]/)[0].trim();
  return segment === '.' || segment === '..';
}
