import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import { ApiError, type ErrorDetail } from './errors';

function newAjv(coerceTypes: boolean) {
  // multipleOfPrecision: a USD amount in whole micro-USD (multipleOf 0.000001) divides to a whole number only up
  // to floating point (0.01 / 0.000001 is 9999.999999999998); a seventh decimal is off by 0.1 or more.
  const ajv = new Ajv({
    allErrors: true,
    useDefaults: true,
    coerceTypes,
    strict: false,
    discriminator: true,
    multipleOfPrecision: 3,
  });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = newAjv(false);
const queryAjv = newAjv(true);
const cache = new WeakMap<object, ValidateFunction>();

function describe(error: ErrorObject, prefix: string): ErrorDetail {
  const at = error.instancePath || '';
  switch (error.keyword) {
    case 'required':
      return { path: `${prefix}${at}/${error.params.missingProperty}`, message: 'is required' };
    case 'additionalProperties':
      return { path: `${prefix}${at}/${error.params.additionalProperty}`, message: 'is not a known field' };
    case 'enum':
      return {
        path: `${prefix}${at}`,
        message: `must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`,
      };
    case 'multipleOf':
      if (error.params.multipleOf === 0.000001)
        return { path: `${prefix}${at}`, message: 'must be a whole number of micro-USD (at most 6 decimals)' };
      return { path: `${prefix}${at}`, message: error.message ?? 'is invalid' };
    default:
      return { path: `${prefix}${at}`, message: error.message ?? 'is invalid' };
  }
}

function toDetails(errors: ErrorObject[] | null | undefined, prefix: string): ErrorDetail[] {
  const seen = new Set<string>();
  return (errors ?? [])
    .filter((e) => e.keyword !== 'if')
    .map((e) => describe(e, prefix))
    .filter((d) => !seen.has(d.path + d.message) && seen.add(d.path + d.message));
}

function compiled(schema: object, coerce: boolean): ValidateFunction {
  let validate = cache.get(schema);
  if (!validate) {
    validate = (coerce ? queryAjv : bodyAjv).compile(schema);
    cache.set(schema, validate);
  }
  return validate;
}

/** A JSON Schema object (an `as const` object of lib/schemas): what `parseBody` reads a body's type from. */
type SchemaObject = Exclude<JSONSchema, boolean>;

/**
 * Validates (and fills defaults into) a JSON body; throws a 400 ApiError listing every problem. The
 * body's type is read from the schema (`FromSchema`: a property with a `default` is always there, as
 * ajv's useDefaults leaves it), so a route states no type of its own.
 */
export function parseBody<const S extends SchemaObject>(schema: S, body: unknown): FromSchema<S>;
export function parseBody(schema: SchemaObject, body: unknown): unknown {
  return validBody(schema, body);
}

/**
 * `parseBody` for the few schemas whose type `FromSchema` cannot give: a schema built at run time
 * (`CustomAgentUpdateRequest`, a platform's credentials) or a body refined by checks after the schema
 * (structured_output's field types). T is asserted, as every body was before types came from schemas.
 */
export function parseBodyAs<T>(schema: object, body: unknown): T {
  return validBody(schema, body) as T;
}

function validBody(schema: object, body: unknown): unknown {
  if (body === undefined) throw new ApiError(400, 'validation_failed', 'A JSON request body is required');
  const validate = compiled(schema, false);
  if (!validate(body))
    throw new ApiError(400, 'validation_failed', 'The request body is invalid', toDetails(validate.errors, 'body'));
  return body;
}

/** Validates query parameters, coercing strings to the schema's types. Repeated parameters are refused. */
export function parseQuery<T>(schema: object, query: Record<string, string | string[] | undefined>): T {
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    if (Array.isArray(value)) {
      throw new ApiError(400, 'validation_failed', 'Invalid query parameters', [
        { path: `query.${key}`, message: 'must be given once' },
      ]);
    }
    // Postgres text cannot hold U+0000: refused here, like NUL in JSON bodies.
    if (key.includes('\u0000') || value?.includes('\u0000')) {
      throw new ApiError(400, 'validation_failed', 'Invalid query parameters', [
        { path: `query.${key.replace(/\u0000/g, '\\u0000')}`, message: 'must not contain NUL (\\u0000) characters' },
      ]);
    }
    copy[key] = value;
  }
  const validate = compiled(schema, true);
  if (!validate(copy)) {
    const details = toDetails(validate.errors, 'query').map((d) => ({
      ...d,
      path: d.path.replace(/^query\//, 'query.'),
    }));
    throw new ApiError(400, 'validation_failed', 'Invalid query parameters', details);
  }
  return copy as T;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function parseUuidParam(name: string, value: string | undefined): string {
  if (!value || !UUID.test(value)) {
    throw new ApiError(400, 'validation_failed', `Path parameter ${name} must be a UUID`, [
      { path: `path.${name}`, message: 'must be a UUID' },
    ]);
  }
  return value.toLowerCase();
}

export { bodyAjv };
