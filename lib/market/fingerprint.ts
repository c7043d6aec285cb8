import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json';
import type { MarketSourceType } from './discovery';

/**
 * The identity of a tool source.
 *
 *   sourceFingerprint = lowercase hex SHA-256 of the UTF-8 bytes of
 *     canonicalJson({ version: 1, type, source, tools })
 *
 * where (canonicalJson: sorted keys, no whitespace, see canonical-json.ts)
 * - type    `remote_mcp` or `openapi`;
 * - source  remote_mcp: `{ url }`, the endpoint normalised by the WHATWG URL parser (scheme and
 *           host lower-cased, IDN to punycode, default port dropped, dot segments resolved, an
 *           empty path becomes "/", an empty query "?" and the #fragment dropped);
 *           openapi: `{ document, baseUrl }`, the document as a JSON value (YAML text, JSON text and
 *           an object give the same value; see lib/tools/openapi/document.ts) and openapiBaseUrl normalised
 *           as above, or null;
 * - tools   every tool as `{ name, description, inputSchema }` (missing description or schema is
 *           null), sorted by name (UTF-16 code units; equal names by their canonical form).
 *
 * The same source therefore always has the same fingerprint, and any change to the address, the
 * document or a tool's name, description or input schema gives a different one.
 */
export const FINGERPRINT_VERSION = 1;

export type SourceIdentity =
  { type: 'remote_mcp'; url: string } | { type: 'openapi'; document: Record<string, unknown>; baseUrl: string | null };

export interface FingerprintTool {
  name: string;
  description?: string | null;
  inputSchema?: Record<string, unknown> | null;
}

export interface NormalisedTool {
  name: string;
  description: string | null;
  inputSchema: Record<string, unknown> | null;
}

export function normaliseSourceUrl(url: string): string {
  const parsed = new URL(url);
  parsed.hash = '';
  // An empty query (a lone "?") reads as ""; assigning it drops the "?".
  if (parsed.search === '') parsed.search = '';
  return parsed.href;
}

/** name, description, inputSchema of each tool, sorted: the tool list the fingerprint and approval hash cover. */
export function normaliseTools(tools: readonly FingerprintTool[]): NormalisedTool[] {
  return tools
    .map((tool) => ({ name: tool.name, description: tool.description ?? null, inputSchema: tool.inputSchema ?? null }))
    .map((tool) => ({ tool, key: canonicalJson(tool) }))
    .sort((a, b) =>
      a.tool.name < b.tool.name ? -1 : a.tool.name > b.tool.name ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
    )
    .map(({ tool }) => tool);
}

export function canonicalSourceForm(source: SourceIdentity, tools: readonly FingerprintTool[]): string {
  const sourcePart =
    source.type === 'remote_mcp'
      ? { url: normaliseSourceUrl(source.url) }
      : { document: source.document, baseUrl: source.baseUrl ? normaliseSourceUrl(source.baseUrl) : null };
  const type: MarketSourceType = source.type;
  return canonicalJson({ version: FINGERPRINT_VERSION, type, source: sourcePart, tools: normaliseTools(tools) });
}

export function sourceFingerprint(source: SourceIdentity, tools: readonly FingerprintTool[]): string {
  return sha256Hex(canonicalSourceForm(source, tools));
}

/** Hash of an approved tool list (rug-pull detection compares it with the upstream's current list). */
export function toolListHash(tools: readonly FingerprintTool[]): string {
  return sha256Hex(canonicalJson(normaliseTools(tools)));
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export const FINGERPRINT_PATTERN = /^[0-9a-f]{64}$/;
