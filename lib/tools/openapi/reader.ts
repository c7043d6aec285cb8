import { parse as parseYaml } from 'yaml';

/**
 * The one reader of OpenAPI documents: market submission and validation (fingerprints, stored documents) and the
 * tool runtime (discovery and every call) read a document given as an object, as JSON or YAML text, or fetched
 * from a URL with it, so a document cannot read one way when it is checked and another when it is used.
 *
 * Text is YAML 1.2 (core schema), of which JSON is a subset, so the same document as YAML, as JSON text or as an
 * object is the same value. JSON text takes a fast path (JSON.parse) with the same result. Duplicate keys are
 * refused, aliases are capped (no "billion laughs"), and what YAML can express beyond JSON (non-finite numbers,
 * integers beyond 2^53) is refused: the document is plain JSON data.
 */
export class OpenApiDocumentError extends Error {
  constructor(
    /** `too_large`: over MAX_OPENAPI_BYTES; `invalid`: not readable as one JSON object. */
    readonly reason: 'too_large' | 'invalid',
    message: string,
  ) {
    super(message);
    this.name = 'OpenApiDocumentError';
  }
}

export const MAX_OPENAPI_BYTES = 5 * 1024 * 1024;

const YAML_OPTIONS = { schema: 'core', uniqueKeys: true, maxAliasCount: 100, prettyErrors: false } as const;

export function readOpenApiDocument(input: { spec?: unknown; specText?: string | null }): Record<string, unknown> {
  let document: unknown = input.spec ?? null;
  if (document === null && typeof input.specText === 'string') document = parseText(input.specText);
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new OpenApiDocumentError('invalid', 'The OpenAPI document must be an object');
  }
  // One round trip through JSON: what YAML can express beyond JSON (non-finite numbers) is refused here.
  let json: string;
  try {
    json = JSON.stringify(document, (_key, value) => {
      if (typeof value === 'number' && !Number.isFinite(value)) throw new Error(`${value} is not a JSON number`);
      if (typeof value === 'bigint') throw new Error('integers beyond 2^53 are not supported');
      return value;
    });
  } catch (err) {
    throw new OpenApiDocumentError('invalid', `The OpenAPI document is not plain JSON data: ${(err as Error).message}`);
  }
  if (Buffer.byteLength(json) > MAX_OPENAPI_BYTES) throw tooLarge();
  return JSON.parse(json) as Record<string, unknown>;
}

function tooLarge(): OpenApiDocumentError {
  return new OpenApiDocumentError('too_large', `The OpenAPI document exceeds ${MAX_OPENAPI_BYTES} bytes`);
}

function parseText(text: string): unknown {
  if (Buffer.byteLength(text) > MAX_OPENAPI_BYTES) throw tooLarge();
  const trimmed = text.trim();
  if (trimmed === '') throw new OpenApiDocumentError('invalid', 'The OpenAPI document is empty');
  let asJson: string | undefined;
  if (trimmed.startsWith('{')) {
    try {
      const value: unknown = JSON.parse(trimmed);
      const duplicate = firstDuplicateKey(trimmed);
      if (duplicate !== undefined)
        throw new OpenApiDocumentError(
          'invalid',
          `The OpenAPI document is neither valid JSON nor valid YAML: Map keys must be unique (${JSON.stringify(duplicate)} repeats)`,
        );
      return value;
    } catch (err) {
      if (err instanceof OpenApiDocumentError) throw err;
      asJson = (err as Error).message; // perhaps YAML in flow style: read on as YAML
    }
  }
  try {
    return parseYaml(trimmed, YAML_OPTIONS);
  } catch (err) {
    const detail = (err as Error).message.split('\n')[0];
    throw new OpenApiDocumentError(
      'invalid',
      `The OpenAPI document is neither valid JSON nor valid YAML: ${detail}${asJson ? ` (as JSON: ${asJson})` : ''}`,
    );
  }
}

/**
 * The first key that repeats within one object of valid JSON text (JSON.parse keeps the last silently; YAML
 * refuses it), or undefined.
 */
function firstDuplicateKey(text: string): string | undefined {
  const objects: Array<Set<string> | null> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      let end = i + 1;
      let escaped = false;
      while (text[end] !== '"') {
        if (text[end] === '\\') {
          escaped = true;
          end++;
        }
        end++;
      }
      const keys = objects[objects.length - 1];
      if (expectKey && keys) {
        const key = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end);
        if (keys.has(key)) return key;
        keys.add(key);
        expectKey = false;
      }
      i = end;
    } else if (char === '{') {
      objects.push(new Set());
      expectKey = true;
    } else if (char === '[') {
      objects.push(null);
      expectKey = false;
    } else if (char === '}' || char === ']') {
      objects.pop();
      expectKey = false;
    } else if (char === ',') {
      expectKey = objects[objects.length - 1] instanceof Set;
    }
  }
  return undefined;
}
