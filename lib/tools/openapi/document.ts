import { createHash } from 'node:crypto';
import { compileErrors, validate } from '@readme/openapi-parser';
import { BoundedCache } from '../../bounded-cache';
import type { StreamingFetch } from '../../net/streaming-fetch';
import { sourceErrorFromNetwork, ToolSourceError } from '../errors';
import { MAX_OPENAPI_BYTES, OpenApiDocumentError, readOpenApiDocument } from './reader';

export type OpenApiVersion = 'swagger-2.0' | 'openapi-3.0' | 'openapi-3.1';

/** A validated Swagger 2.0 / OpenAPI 3.x document, still with its (internal) `$ref`s. */
export interface OpenApiDocument {
  doc: Record<string, any>;
  version: OpenApiVersion;
  /** e.g. "OpenAPI 3.1.0", "Swagger 2.0". */
  label: string;
  /** Where the document was fetched from (relative server URLs resolve against it), or null when given inline. */
  location: URL | null;
}

export { MAX_OPENAPI_BYTES };

export interface OpenApiSource {
  url?: string;
  spec?: Record<string, unknown>;
  specText?: string;
}

/**
 * Loads a document given as an object, as JSON/YAML text, or by URL (fetched with the given guarded
 * fetch), and validates it with @readme/openapi-parser — with external `$ref` resolution disabled
 * (a remote `$ref` would make the server fetch an attacker-chosen URL) and file access off. The
 * parser is only ever given an object, never a string (which it would read as a path or URL).
 */
export async function loadOpenApiDocument(
  source: OpenApiSource,
  fetch: StreamingFetch,
  timeoutMs: number,
): Promise<OpenApiDocument> {
  let location: URL | null = null;
  let input: { spec?: unknown; specText?: string };
  if (source.spec !== undefined) input = { spec: source.spec };
  else if (source.specText !== undefined) input = { specText: source.specText };
  else if (source.url !== undefined) {
    location = new URL(source.url);
    input = { specText: await fetchDocument(location, fetch, timeoutMs) };
  } else {
    throw new ToolSourceError('invalid_source', 'An OpenAPI source needs spec, specText or url');
  }
  const record = read(input) as Record<string, any>;
  const version = versionOf(record);
  await validateDocument(record);
  return {
    doc: record,
    version,
    label: version === 'swagger-2.0' ? 'Swagger 2.0' : `OpenAPI ${record.openapi}`,
    location,
  };
}

/** The one reader (reader.ts), its refusals as the tool runtime's. */
function read(input: { spec?: unknown; specText?: string }): Record<string, unknown> {
  try {
    return readOpenApiDocument(input);
  } catch (error) {
    if (error instanceof OpenApiDocumentError)
      throw new ToolSourceError(error.reason === 'too_large' ? 'source_too_large' : 'invalid_openapi', error.message);
    throw error;
  }
}

function tooLarge(): ToolSourceError {
  return new ToolSourceError('source_too_large', `The OpenAPI document exceeds ${MAX_OPENAPI_BYTES} bytes`);
}

async function fetchDocument(url: URL, fetch: StreamingFetch, timeoutMs: number): Promise<string> {
  try {
    const response = await fetch(url, {
      headers: {
        accept: 'application/json, application/yaml, application/x-yaml, text/yaml, text/plain;q=0.9, */*;q=0.5',
      },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new ToolSourceError(
        'upstream_error',
        `The OpenAPI document URL answered HTTP ${response.status}`,
        response.status >= 500,
      );
    }
    return await response.text();
  } catch (error) {
    if (error instanceof ToolSourceError) throw error;
    const network = sourceErrorFromNetwork(error);
    if (network?.code === 'source_too_large') throw tooLarge();
    if (network) throw network;
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
      throw new ToolSourceError('upstream_timeout', `The OpenAPI document did not arrive within ${timeoutMs} ms`, true);
    }
    throw new ToolSourceError(
      'upstream_error',
      `Could not read the OpenAPI document: ${(error as Error).message}`,
      true,
    );
  }
}

function versionOf(doc: Record<string, any>): OpenApiVersion {
  if (doc.swagger === '2.0') return 'swagger-2.0';
  if (typeof doc.openapi === 'string' && /^3\.0\.\d+/.test(doc.openapi)) return 'openapi-3.0';
  if (typeof doc.openapi === 'string' && /^3\.1\.\d+/.test(doc.openapi)) return 'openapi-3.1';
  throw new ToolSourceError(
    'invalid_openapi',
    'Not a Swagger 2.0, OpenAPI 3.0 or OpenAPI 3.1 document (no "swagger": "2.0" or "openapi": "3.x.y")',
  );
}

/** Rules real-world documents often break without becoming unusable are warnings; duplicate operationIds are renamed anyway. */
const LENIENT_RULES = {
  'array-without-items': 'warning',
  'duplicate-operation-id': 'warning',
  'path-parameters-not-in-path': 'warning',
  'unknown-required-schema-property': 'warning',
} as const;

/**
 * Documents this process has already validated, by SHA-256 of their JSON: validation compiles the
 * specification's JSON Schema each time (~0.5 s), and every tool call opens its source again.
 */
const validatedDocuments = new BoundedCache<true>({ maxEntries: 200 });

async function validateDocument(doc: Record<string, any>): Promise<void> {
  const digest = createHash('sha256').update(JSON.stringify(doc)).digest('hex');
  if (validatedDocuments.get(digest)) return;
  await validateWithParser(doc);
  validatedDocuments.set(digest, true);
}

async function validateWithParser(doc: Record<string, any>): Promise<void> {
  let result;
  try {
    result = await validate(structuredClone(doc) as never, {
      resolve: { external: false, file: false },
      validate: { rules: { openapi: LENIENT_RULES, swagger: LENIENT_RULES } },
      timeoutMs: 20_000,
    });
  } catch (error) {
    throw new ToolSourceError(
      'invalid_openapi',
      `The OpenAPI document is invalid: ${(error as Error).message.slice(0, 1000)}`,
    );
  }
  if (!result.valid) {
    const text = compileErrors(result).replace(/\s+\n/g, '\n').trim();
    throw new ToolSourceError('invalid_openapi', text.length > 2000 ? `${text.slice(0, 2000)}…` : text);
  }
}
