import { normalizeHostname } from '../../lib/net/ssrf';

export type SensitiveItem = {
  id: string;
  value: string;
  /**
   * Hosts the value may be typed into: `example.com` (exactly that host), `*.example.com` (the apex and every
   * subdomain), an IP address, or `*` (anywhere). Scheme, port and path are ignored. Absent means anywhere.
   */
  domain_pattern?: string;
};

export type PlaceholderResolution = { text: string; secretIds: string[] } | { error: string };

/** Linear: the id cannot contain `<`, so each match scans at most to the next `<` (whitespace around the id is trimmed). */
const PLACEHOLDER = /<secret>([^<>]*)<\/secret>/g;
const SECRET_ID = /^[A-Za-z0-9_.:-]{1,100}$/;

export function secretPlaceholder(id: string): string {
  return `<secret>${id}</secret>`;
}

export function validateSensitiveItems(items: readonly SensitiveItem[]): void {
  const seen = new Set<string>();
  for (const item of items) {
    if (!SECRET_ID.test(item.id)) {
      throw new Error(
        `Invalid sensitive data id ${JSON.stringify(item.id)}: use 1-100 letters, digits, "_", ".", ":" or "-"`,
      );
    }
    if (seen.has(item.id)) throw new Error(`Duplicate sensitive data id ${JSON.stringify(item.id)}`);
    if (typeof item.value !== 'string' || item.value.length === 0)
      throw new Error(`Sensitive data "${item.id}" has an empty value`);
    seen.add(item.id);
  }
}

function patternHost(pattern: string): string {
  const withoutScheme = pattern
    .trim()
    .toLowerCase()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//, '');
  const authority = withoutScheme.split(/[/?#]/, 1)[0].replace(/^[^@]*@/, '');
  if (authority.startsWith('[')) return normalizeHostname(authority.slice(0, authority.indexOf(']') + 1));
  return normalizeHostname(authority.replace(/:\d*$/, ''));
}

export function hostMatchesDomainPattern(host: string, pattern: string): boolean {
  const target = normalizeHostname(host);
  const wanted = patternHost(pattern);
  if (!target || !wanted) return false;
  if (wanted === '*') return true;
  if (wanted.startsWith('*.')) {
    const apex = wanted.slice(2);
    return apex.length > 0 && (target === apex || target.endsWith(`.${apex}`));
  }
  return target === wanted;
}

function webHostOf(pageUrl: string): string | null {
  try {
    const url = new URL(pageUrl);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.hostname : null;
  } catch {
    return null;
  }
}

/** Substitutes `<secret>ID</secret>` placeholders, refusing any whose domain_pattern does not match the page's host. */
export function resolvePlaceholders(
  text: string,
  items: readonly SensitiveItem[],
  pageUrl: string,
): PlaceholderResolution {
  const ids = [...text.matchAll(PLACEHOLDER)].map((match) => match[1].trim());
  if (ids.length === 0) return { text, secretIds: [] };
  const host = webHostOf(pageUrl);
  const byId = new Map(items.map((item) => [item.id, item]));
  for (const id of ids) {
    const item = byId.get(id);
    if (!item) {
      const known = items.map((entry) => entry.id).join(', ') || 'none';
      return { error: `Unknown secret placeholder ${secretPlaceholder(id)}; available secret ids: ${known}` };
    }
    if (host === null)
      return {
        error: `Secret ${secretPlaceholder(id)} can only be typed into a web page, not ${pageUrl.split(/[?#]/)[0]}`,
      };
    if (item.domain_pattern !== undefined && !hostMatchesDomainPattern(host, item.domain_pattern)) {
      return {
        error: `Secret ${secretPlaceholder(id)} may not be used on ${host}; it is only allowed on ${item.domain_pattern}`,
      };
    }
  }
  const resolved = text.replace(PLACEHOLDER, (_match, id: string) => byId.get(id.trim())!.value);
  return { text: resolved, secretIds: [...new Set(ids)] };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function encodedForms(value: string): string[] {
  const uriEncoded = encodeURIComponent(value);
  const formEncoded = new URLSearchParams({ v: value }).toString().slice(2);
  const htmlEscaped = value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const jsonEscaped = JSON.stringify(value).slice(1, -1);
  return [value, uriEncoded, formEncoded, htmlEscaped, jsonEscaped];
}

/** Replaces every occurrence of a secret value (also URL-, form-, HTML- or JSON-encoded) with its placeholder. */
export function maskSecrets(text: string, items: readonly SensitiveItem[]): string {
  const placeholderByForm = new Map<string, string>();
  for (const item of items) {
    if (!item.value) continue;
    for (const form of encodedForms(item.value)) {
      if (!placeholderByForm.has(form)) placeholderByForm.set(form, secretPlaceholder(item.id));
    }
  }
  if (placeholderByForm.size === 0 || !text) return text;
  const forms = [...placeholderByForm.keys()].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(forms.map(escapeRegExp).join('|'), 'g');
  return text.replace(pattern, (match) => placeholderByForm.get(match)!);
}

/** maskSecrets over every string of a JSON value (e.g. a model's tool-call arguments); the value keeps its shape. */
export function maskSecretsIn<T>(value: T, items: readonly SensitiveItem[]): T {
  if (value === undefined || items.length === 0) return value;
  return JSON.parse(maskSecrets(JSON.stringify(value), items)) as T;
}
