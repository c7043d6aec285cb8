import type { ErrorObject, ValidateFunction } from 'ajv';
import { compileUntrustedSchema } from '../json-schema/untrusted';

export type JsonSchema = Record<string, unknown>;

export const SCALAR_FIELD_TYPES = ['string', 'number', 'integer', 'boolean', 'object'] as const;
export type ScalarFieldType = (typeof SCALAR_FIELD_TYPES)[number];
export type FieldType = ScalarFieldType | `${ScalarFieldType}[]`;
export const FIELD_TYPES: readonly FieldType[] = [
  ...SCALAR_FIELD_TYPES,
  ...SCALAR_FIELD_TYPES.map((type) => `${type}[]` as const),
];

export interface FieldSpec {
  id: string;
  type: FieldType;
  description?: string;
}

/** What goes into OpenAI's `response_format.json_schema`. */
export interface ResponseSchema {
  name: string;
  schema: JsonSchema;
  strict: boolean;
}

export class StructuredOutputSpecError extends Error {
  override readonly name = 'StructuredOutputSpecError';
  constructor(readonly problems: readonly string[]) {
    super(`Invalid structured_output: ${problems.join('; ')}`);
  }
}

export const FIELD_ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_FIELDS = 100;
export const MAX_FIELD_DESCRIPTION_CHARS = 1_000;
export const MAX_JSON_SCHEMA_CHARS = 50_000;
const MAX_REPORTED_SCHEMA_ERRORS = 20;

export interface DefaultScrapeOutput {
  summary: string;
  key_points: string[];
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

export const DEFAULT_SCRAPE_OUTPUT_SCHEMA: JsonSchema = deepFreeze({
  type: 'object',
  properties: {
    summary: { type: 'string', description: 'What the page is about, in two to four sentences.' },
    key_points: {
      type: 'array',
      items: { type: 'string' },
      description: 'The most important facts, figures or claims on the page, one per item.',
    },
  },
  required: ['summary', 'key_points'],
  additionalProperties: false,
});

export const DEFAULT_SCRAPE_OUTPUT: Readonly<ResponseSchema> = Object.freeze({
  name: 'page_summary',
  schema: DEFAULT_SCRAPE_OUTPUT_SCHEMA,
  strict: true,
});

const FIELD_LIST_SCHEMA_NAME = 'extraction';
const SCHEMA_NAME_MAX_CHARS = 64;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isFieldType(value: unknown): value is FieldType {
  return typeof value === 'string' && (FIELD_TYPES as readonly string[]).includes(value);
}

function scalarSchema(type: ScalarFieldType): JsonSchema {
  return type === 'object' ? { type: 'object', additionalProperties: true } : { type };
}

function fieldSchema(field: FieldSpec): JsonSchema {
  const schema = field.type.endsWith('[]')
    ? { type: 'array', items: scalarSchema(field.type.slice(0, -2) as ScalarFieldType) }
    : scalarSchema(field.type as ScalarFieldType);
  return field.description ? { ...schema, description: field.description } : schema;
}

export function fieldListToJsonSchema(fields: readonly FieldSpec[]): JsonSchema {
  return {
    type: 'object',
    properties: Object.fromEntries(fields.map((field) => [field.id, fieldSchema(field)])),
    required: fields.map((field) => field.id),
    additionalProperties: false,
  };
}

const STRICT_UNSUPPORTED_KEYWORDS = [
  'allOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'patternProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'contains',
  'prefixItems',
];
const STRICT_TYPE_KEYWORDS = ['type', 'anyOf', '$ref', 'enum', 'const'];
const SUBSCHEMA_MAP_KEYWORDS = ['properties', '$defs', 'definitions'];
const MAX_STRICT_CHECK_DEPTH = 64;

function describesObject(schema: Record<string, unknown>): boolean {
  const { type } = schema;
  return type === 'object' || (Array.isArray(type) && type.includes('object')) || 'properties' in schema;
}

function isStrictSubschema(schema: unknown, depth: number): boolean {
  if (!isPlainObject(schema) || depth > MAX_STRICT_CHECK_DEPTH) return false;
  if (STRICT_UNSUPPORTED_KEYWORDS.some((keyword) => keyword in schema)) return false;
  if (!STRICT_TYPE_KEYWORDS.some((keyword) => keyword in schema)) return false;
  if (describesObject(schema)) {
    if (schema.additionalProperties !== false) return false;
    const required = Array.isArray(schema.required) ? schema.required : [];
    const properties = isPlainObject(schema.properties) ? schema.properties : {};
    if (!Object.keys(properties).every((key) => required.includes(key))) return false;
  }
  const children: unknown[] = [];
  for (const keyword of SUBSCHEMA_MAP_KEYWORDS) {
    if (keyword in schema) {
      if (!isPlainObject(schema[keyword])) return false;
      children.push(...Object.values(schema[keyword] as Record<string, unknown>));
    }
  }
  if ('items' in schema) children.push(schema.items);
  if ('anyOf' in schema) {
    if (!Array.isArray(schema.anyOf)) return false;
    children.push(...schema.anyOf);
  }
  return children.every((child) => isStrictSubschema(child, depth + 1));
}

/** Whether OpenAI Structured Outputs accepts `schema` with `strict: true`. */
export function isStrictCompatible(schema: unknown): boolean {
  return isPlainObject(schema) && schema.type === 'object' && !('anyOf' in schema) && isStrictSubschema(schema, 0);
}

export function describeSchemaErrors(errors: readonly ErrorObject[] | null | undefined): string[] {
  const described = (errors ?? []).map((error) => {
    const at = error.instancePath || '(root)';
    if (error.keyword === 'additionalProperties') {
      return `${at} must not have additional property '${String(error.params.additionalProperty)}'`;
    }
    if (error.keyword === 'enum') return `${at} must be one of ${JSON.stringify(error.params.allowedValues)}`;
    return `${at} ${error.message ?? `fails "${error.keyword}"`}`;
  });
  const unique = [...new Set(described)];
  if (unique.length <= MAX_REPORTED_SCHEMA_ERRORS) return unique;
  return [...unique.slice(0, MAX_REPORTED_SCHEMA_ERRORS), `…and ${unique.length - MAX_REPORTED_SCHEMA_ERRORS} more`];
}

/**
 * Compiles `schema` once; the returned function lists the problems of a value (empty = valid).
 * Schemas here are users' and providers' (structured_output, an agent's inputSchema), so they are
 * compiled like every schema the platform does not own (lib/json-schema/untrusted.ts: linear-time
 * patterns, local references only, a bounded cache by content: most jobs share a handful of
 * schemas, so the worker compiles each once). Throws UntrustedSchemaError.
 */
export function compileSchemaValidator(schema: object): (value: unknown) => string[] {
  const validate: ValidateFunction = compileUntrustedSchema(schema);
  return (value) => (validate(value) ? [] : describeSchemaErrors(validate.errors));
}

function fieldListProblems(fields: readonly unknown[]): string[] {
  if (fields.length === 0) return ['structured_output field list is empty; add at least one field'];
  const problems: string[] = [];
  if (fields.length > MAX_FIELDS) {
    problems.push(`structured_output has ${fields.length} fields; at most ${MAX_FIELDS} are allowed`);
  }
  const seenIds = new Set<string>();
  fields.forEach((field, index) => {
    const at = `structured_output[${index}]`;
    if (!isPlainObject(field)) {
      problems.push(`${at} must be an object like {"id": "title", "type": "string"}`);
      return;
    }
    const { id, type, description } = field;
    if (typeof id !== 'string') {
      problems.push(`${at}.id is missing or not a string`);
    } else if (!FIELD_ID_PATTERN.test(id)) {
      problems.push(
        `${at}.id ${JSON.stringify(id)} is invalid: use up to 64 letters, digits or underscores, not starting with a digit`,
      );
    } else if (seenIds.has(id)) {
      problems.push(`${at}.id ${JSON.stringify(id)} is used by more than one field`);
    } else {
      seenIds.add(id);
    }
    if (typeof type !== 'string') {
      problems.push(`${at}.type is missing or not a string; use one of ${FIELD_TYPES.join(', ')}`);
    } else if (!isFieldType(type)) {
      problems.push(`${at}.type ${JSON.stringify(type)} is not supported; use one of ${FIELD_TYPES.join(', ')}`);
    }
    if (description !== undefined) {
      if (typeof description !== 'string') problems.push(`${at}.description must be a string`);
      else if (description.length > MAX_FIELD_DESCRIPTION_CHARS) {
        problems.push(`${at}.description is longer than ${MAX_FIELD_DESCRIPTION_CHARS} characters`);
      }
    }
  });
  return problems;
}

function jsonSchemaProblems(schema: Record<string, unknown>): string[] {
  if (JSON.stringify(schema).length > MAX_JSON_SCHEMA_CHARS) {
    return [`structured_output JSON Schema is larger than ${MAX_JSON_SCHEMA_CHARS} characters`];
  }
  if (schema.type !== 'object') {
    const wrapperHint = 'schema' in schema ? ' (pass the JSON Schema itself, not a {name, schema} wrapper)' : '';
    return [`structured_output JSON Schema must have "type": "object" at the root${wrapperHint}`];
  }
  try {
    compileUntrustedSchema(schema);
    return [];
  } catch (error) {
    return [`structured_output is not a valid JSON Schema: ${(error as Error).message}`];
  }
}

/** User-readable problems with a request's `structured_output` (empty = valid; absent = default output). */
export function validateStructuredOutputSpec(spec: unknown): string[] {
  if (spec === undefined || spec === null) return [];
  if (Array.isArray(spec)) return fieldListProblems(spec);
  if (isPlainObject(spec)) return jsonSchemaProblems(spec);
  return ['structured_output must be a list of fields or a JSON Schema object'];
}

function schemaNameFromTitle(title: unknown): string {
  if (typeof title !== 'string') return FIELD_LIST_SCHEMA_NAME;
  const name = title
    .trim()
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, SCHEMA_NAME_MAX_CHARS);
  return name || FIELD_LIST_SCHEMA_NAME;
}

/** Throws StructuredOutputSpecError when the spec is invalid. */
export function jsonSchemaForRequest(structuredOutput: unknown | undefined): ResponseSchema {
  const problems = validateStructuredOutputSpec(structuredOutput);
  if (problems.length > 0) throw new StructuredOutputSpecError(problems);
  if (structuredOutput === undefined || structuredOutput === null) {
    return { ...DEFAULT_SCRAPE_OUTPUT, schema: structuredClone(DEFAULT_SCRAPE_OUTPUT_SCHEMA) };
  }
  const schema = Array.isArray(structuredOutput)
    ? fieldListToJsonSchema(structuredOutput as FieldSpec[])
    : structuredClone(structuredOutput as JsonSchema);
  const name = Array.isArray(structuredOutput) ? FIELD_LIST_SCHEMA_NAME : schemaNameFromTitle(schema.title);
  return { name, schema, strict: isStrictCompatible(schema) };
}
