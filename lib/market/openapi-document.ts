import { parse as parseYaml } from 'yaml';

export class OpenApiDocumentError extends Error {}

/**
 * An OpenAPI document given as an object, or as JSON or YAML text, read into a plain object.
 * Text is read as YAML 1.2 (core schema), of which JSON is a subset, so the same document as
 * YAML, as JSON text or as an object is the same value. Duplicate keys are refused, and aliases
 * are capped (no "billion laughs").
 */
export function readOpenApiDocument(input: { spec?: unknown; specText?: string | null }): Record<string, unknown> {
  let document: unknown = input.spec ?? null;
  if (document === null && typeof input.specText === 'string') {
    try {
      document = parseYaml(input.specText, { schema: 'core', uniqueKeys: true, maxAliasCount: 100, prettyErrors: false });
    } catch (err) {
      throw new OpenApiDocumentError(`The document is neither valid JSON nor valid YAML: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new OpenApiDocumentError('The OpenAPI document must be an object');
  }
  // One round trip through JSON: what YAML can express beyond JSON (non-finite numbers) is refused here.
  try {
    return JSON.parse(JSON.stringify(document, (_key, value) => {
      if (typeof value === 'number' && !Number.isFinite(value)) throw new Error(`${value} is not a JSON number`);
      if (typeof value === 'bigint') throw new Error('integers beyond 2^53 are not supported');
      return value;
    })) as Record<string, unknown>;
  } catch (err) {
    throw new OpenApiDocumentError(`The OpenAPI document is not plain JSON data: ${(err as Error).message}`);
  }
}
