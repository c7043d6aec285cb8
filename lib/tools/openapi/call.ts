import type { StreamingFetch } from '../../net/streaming-fetch';
import { fillServerTemplate, isArgumentHeader, isDotSegment } from '../consumer-params';
import { callErrorFromNetwork, ToolCallError } from '../errors';
import type { OpenApiModel, OpenApiOperation, SecurityScheme } from './tools';
import { cappedResult } from '../result';
import type { SourceParamValues, ToolCallResult, ToolSourceSpec } from '../types';

/** Executes OpenAPI operations: arguments to an HTTP request, auth from the source's params, the answer to text. */

export interface OperationCallContext {
  model: OpenApiModel;
  /** Absolute base URL of the operation's API (see resolveBaseUrl), or null when none is known. */
  baseUrlOf: (operation: OpenApiOperation) => URL | null;
  /** The owner's params (credentials); they win over a consumer's. */
  params: SourceParamValues;
  /** A consumer's params (credentials the owner let them give), see ToolSourceSpec.consumerParams. */
  consumerParams?: SourceParamValues;
  /** A streaming fetch (lib/net/streaming-fetch.ts); `reached()` says whether a connection to the upstream was up during the call. */
  fetch: StreamingFetch;
  reached: () => boolean;
  timeoutMs: number;
  maxResultBytes: number;
  signal?: AbortSignal;
  /** Sent on every request besides what the operation and credentials set (the market's x-service-charge-* headers). */
  extraHeaders?: Record<string, string>;
}

/** Bodies beyond this are cut while reading (the result is cut further to the result cap). */
const MAX_READ_BYTES = 1024 * 1024;
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export function isRepeatableOperation(operation: OpenApiOperation): boolean {
  return IDEMPOTENT.has(operation.method);
}

/**
 * The base URL calls go to: the override when given, else the operation's or document's server
 * URL with its {variables} filled (fillServerTemplate: the owner's params, a consumer's confined to
 * the variable's enum and the template's host, else the defaults), resolved against the document's
 * own URL when relative. Null when no absolute URL can be formed; throws ToolSourceError
 * `invalid_params` for a consumer's value that may not fill a variable.
 */
export function resolveBaseUrl(
  model: OpenApiModel,
  operation: OpenApiOperation | null,
  override: string | undefined,
  values: Pick<ToolSourceSpec, 'params' | 'consumerParams' | 'consumerChoices'>,
  location: URL | null,
): URL | null {
  if (override) return new URL(override);
  const own = operation?.serverTemplate ? operation : null;
  const template = own ? own.serverTemplate! : model.serverTemplate;
  if (!template) return location ? new URL('/', location) : null;
  const filled = fillServerTemplate(template, own ? own.serverVariables : model.serverVariables, values, location);
  try {
    return location ? new URL(filled, location) : new URL(filled);
  } catch {
    return null;
  }
}

export async function callOperation(
  operation: OpenApiOperation,
  rawArgs: unknown,
  context: OperationCallContext,
): Promise<ToolCallResult> {
  const repeatable = isRepeatableOperation(operation);
  const args = argumentsOf(rawArgs, operation, repeatable);
  const base = context.baseUrlOf(operation);
  if (!base) {
    throw new ToolCallError(
      'refused_by_policy',
      'The API has no absolute server URL: set the OpenAPI base URL of this source',
      false,
      repeatable,
    );
  }
  const request = buildRequest(operation, args, base, context);
  const signal = context.signal
    ? AbortSignal.any([context.signal, AbortSignal.timeout(context.timeoutMs)])
    : AbortSignal.timeout(context.timeoutMs);
  let response: Response;
  try {
    response = await context.fetch(request.url, {
      method: operation.method,
      headers: request.headers,
      body: request.body,
      signal,
    });
  } catch (error) {
    throw callFailure(error, context, repeatable);
  }
  let body: { bytes: Buffer; cut: boolean };
  try {
    body = await readCapped(response, MAX_READ_BYTES);
  } catch (error) {
    throw callFailure(error, context, repeatable);
  }
  const status = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  if (response.status >= 300 && response.status < 400 && response.headers.has('location')) {
    // Only a redirect to another origin comes back unfollowed (toolFetch): the request's credentials stay home.
    return cappedResult(
      true,
      `${status}: the API redirected to another origin; tool calls do not follow redirects that leave the API's origin`,
      context.maxResultBytes,
    );
  }
  const text = responseText(response, body.bytes, body.cut);
  const isError = response.status >= 400;
  const shown = isError ? `${status}\n${text}` : text;
  return cappedResult(isError, shown, context.maxResultBytes, body.cut);
}

function argumentsOf(raw: unknown, operation: OpenApiOperation, repeatable: boolean): Record<string, unknown> {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new ToolCallError('invalid_arguments', 'Tool arguments must be a JSON object', false, repeatable);
  const args = raw as Record<string, unknown>;
  const missing = [
    ...operation.parameters.filter((p) => p.required).map((p) => p.property),
    ...(operation.body?.required ? [operation.body.property] : []),
  ].filter((property) => args[property] === undefined || args[property] === null);
  if (missing.length > 0)
    throw new ToolCallError(
      'invalid_arguments',
      `Missing required argument${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`,
      false,
      repeatable,
    );
  return args;
}

interface BuiltRequest {
  url: URL;
  headers: Record<string, string>;
  body: string | undefined;
}

function buildRequest(
  operation: OpenApiOperation,
  args: Record<string, unknown>,
  base: URL,
  context: OperationCallContext,
): BuiltRequest {
  const repeatable = isRepeatableOperation(operation);
  let path = operation.path;
  const query: [string, string][] = [];
  const headers: Record<string, string> = { accept: 'application/json, text/*;q=0.9, */*;q=0.5' };
  const cookies: string[] = [];
  for (const parameter of operation.parameters) {
    const value = args[parameter.property];
    if (value === undefined || value === null) continue;
    switch (parameter.in) {
      case 'path':
        path = path.split(`{${parameter.name}}`).join(pathSegment(parameter.property, scalar(value, ','), repeatable));
        break;
      case 'query':
        for (const item of Array.isArray(value) ? value : [value]) query.push([parameter.name, scalar(item, ',')]);
        break;
      case 'header':
        // Host, Cookie, Content-Length, hop-by-hop, Accept, Content-Type, Authorization and charge headers are never set by an argument.
        if (isArgumentHeader(parameter.name))
          headers[parameter.name.toLowerCase()] = headerValue(parameter.property, scalar(value, ','), repeatable);
        break;
      case 'cookie':
        cookies.push(`${parameter.name}=${encodeURIComponent(scalar(value, ','))}`);
        break;
    }
  }
  const url = new URL(base.href.replace(/\/+$/, '') + path);
  for (const [name, value] of query) url.searchParams.append(name, value);
  let body: string | undefined;
  if (operation.body && args[operation.body.property] !== undefined && args[operation.body.property] !== null) {
    const value = args[operation.body.property];
    const mediaType = operation.body.mediaType;
    headers['content-type'] = mediaType;
    if (mediaType.includes('json')) body = JSON.stringify(value);
    else if (mediaType.startsWith('application/x-www-form-urlencoded')) body = formEncode(value);
    else body = typeof value === 'string' ? value : JSON.stringify(value);
  }
  applyCredentials(operation, context, url, headers, cookies);
  if (cookies.length > 0) headers.cookie = cookies.join('; ');
  for (const [name, value] of Object.entries(context.extraHeaders ?? {})) headers[name.toLowerCase()] = value;
  return { url, headers, body };
}

/** One percent-encoded path segment: "." and ".." (in any encoding) and empty values are refused, so a call never leaves its operation's path. */
function pathSegment(property: string, value: string, repeatable: boolean): string {
  if (value === '' || isDotSegment(value)) {
    throw new ToolCallError(
      'invalid_arguments',
      `Argument ${property} cannot be empty, "." or ".." (in any encoding): it goes into the request path`,
      false,
      repeatable,
    );
  }
  return encodeURIComponent(value);
}

function headerValue(property: string, value: string, repeatable: boolean): string {
  if (/[\r\n\0]/.test(value))
    throw new ToolCallError(
      'invalid_arguments',
      `Argument ${property} goes into an HTTP header and cannot contain line breaks`,
      false,
      repeatable,
    );
  return value;
}

function scalar(value: unknown, separator: string): string {
  if (Array.isArray(value)) return value.map((item) => scalar(item, separator)).join(separator);
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function formEncode(value: unknown): string {
  const form = new URLSearchParams();
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, field] of Object.entries(value)) {
      for (const item of Array.isArray(field) ? field : [field])
        if (item !== undefined && item !== null) form.append(key, scalar(item, ','));
    }
  }
  return form.toString();
}

/** The first security alternative whose every scheme has a value in params; credentials win over arguments of the same name. */
function applyCredentials(
  operation: OpenApiOperation,
  context: OperationCallContext,
  url: URL,
  headers: Record<string, string>,
  cookies: string[],
): void {
  // A value keyed by the scheme's own name wins, for documents where two schemes share a header (bearer and basic);
  // the owner's values win over a consumer's.
  const consumer = context.consumerParams ?? {};
  const valueOf = (scheme: SecurityScheme) =>
    context.params[scheme.key] ?? context.params[scheme.name] ?? consumer[scheme.key] ?? consumer[scheme.name];
  const alternative = operation.security.find((keys) =>
    keys.every((key) => context.model.schemes.has(key) && valueOf(context.model.schemes.get(key)!) !== undefined),
  );
  for (const key of alternative ?? []) {
    const scheme = context.model.schemes.get(key)!;
    const value = String(valueOf(scheme));
    if (scheme.kind === 'apiKey') {
      if (scheme.in === 'header') headers[scheme.name.toLowerCase()] = value;
      else if (scheme.in === 'query') url.searchParams.set(scheme.name, value);
      else {
        const prefix = `${scheme.name}=`;
        const others = cookies.filter((cookie) => !cookie.startsWith(prefix));
        cookies.splice(0, cookies.length, ...others, `${prefix}${encodeURIComponent(value)}`);
      }
    } else if (scheme.kind === 'bearer') {
      headers.authorization = /\s/.test(value.trim()) ? value.trim() : `Bearer ${value.trim()}`;
    } else {
      headers.authorization = /^basic\s/i.test(value)
        ? value
        : `Basic ${value.includes(':') ? Buffer.from(value).toString('base64') : value}`;
    }
  }
}

async function readCapped(response: Response, maxBytes: number): Promise<{ bytes: Buffer; cut: boolean }> {
  if (!response.body) return { bytes: Buffer.alloc(0), cut: false };
  const reader = response.body.getReader();
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(chunks), cut: false };
    chunks.push(Buffer.from(value));
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return { bytes: Buffer.concat(chunks).subarray(0, maxBytes), cut: true };
    }
  }
}

const TEXTUAL =
  /^(text\/|application\/(json|xml|yaml|x-yaml|javascript|x-www-form-urlencoded|graphql|problem\+json|ld\+json|.*\+(json|xml|yaml)))/i;

function responseText(response: Response, bytes: Buffer, cut: boolean): string {
  if (bytes.length === 0) return `(empty body, HTTP ${response.status})`;
  const contentType = (response.headers.get('content-type') ?? '').toLowerCase();
  const looksTextual = TEXTUAL.test(contentType) || (contentType === '' && !bytes.subarray(0, 512).includes(0));
  if (!looksTextual) return `[binary body: ${bytes.length}${cut ? '+' : ''} bytes of ${contentType || 'unknown type'}]`;
  const text = decode(bytes, contentType);
  if (!cut && /json/.test(contentType)) {
    try {
      return JSON.stringify(JSON.parse(text));
    } catch {
      return text;
    }
  }
  return text;
}

function decode(bytes: Buffer, contentType: string): string {
  const charset = /charset="?([\w-]+)/.exec(contentType)?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

function callFailure(error: unknown, context: OperationCallContext, repeatable: boolean): ToolCallError {
  const network = callErrorFromNetwork(error, repeatable);
  if (network) return network;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return new ToolCallError(
      'timeout',
      `The API did not answer within ${context.timeoutMs} ms`,
      context.reached(),
      repeatable,
    );
  }
  return new ToolCallError(
    'connection_lost',
    `The request failed: ${error instanceof Error ? error.message : String(error)}`,
    context.reached(),
    repeatable,
  );
}
