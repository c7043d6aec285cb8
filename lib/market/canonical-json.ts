/**
 * Canonical JSON: the one serialisation the market hashes.
 * - object keys sorted by UTF-16 code units (JavaScript's default sort), properties whose value is
 *   `undefined` dropped (as JSON.stringify does);
 * - no whitespace; strings and numbers exactly as JSON.stringify writes them (so 1.0 and 1 are the
 *   same, -0 is 0); `undefined` inside arrays becomes null;
 * - NaN, Infinity, bigint, functions and symbols are refused.
 * Two values that mean the same JSON document always give the same string.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} is not a JSON number`);
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value))
        return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
      const entries = Object.keys(value as object)
        .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
      return `{${entries.join(',')}}`;
    }
    default:
      throw new TypeError(`canonicalJson: a ${typeof value} is not JSON`);
  }
}
