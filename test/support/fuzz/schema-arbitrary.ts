import fc from 'fast-check';

/** A JSON Schema node as the served OpenAPI document carries it (3.1: plain JSON Schema, `$ref` to components). */
export type JsonSchema = Record<string, any>;
export type RefResolver = (ref: string) => JsonSchema;

const MAX_DEPTH = 4;
/** Generated valid strings and arrays stay small; the mutations make the huge ones. */
const MAX_STRING = 40;
const MAX_ITEMS = 4;

/** Strings that often break parsers, databases and renderers. */
export const EDGE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\u202eRTL override',
  '\u200f\u200e',
  '\ufeffBOM',
  '😀',
  '👩‍👩‍👧‍👦',
  'e\u0301\u0301\u0301',
  '\uffff\ufffe',
  '𝕏𝔂𝔷',
  '\u2028\u2029',
  '\t\r\n',
  'null',
  'true',
  '-0',
  '1e309',
  'NaN',
  "'; drop table jobs; --",
  '%00%ZZ',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
  '{{7*7}}',
  '__proto__',
];

/** A string built from edge pieces and random text, including lone surrogates and control characters. */
export const edgeString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...EDGE_STRINGS),
  fc
    .array(
      fc.oneof(
        fc.constantFrom(...EDGE_STRINGS),
        fc.string({ unit: 'binary', maxLength: 8 }),
        fc.string({ unit: 'grapheme', maxLength: 8 }),
      ),
      { maxLength: 6 },
    )
    .map((parts) => parts.join('')),
);

function stringFor(schema: JsonSchema): fc.Arbitrary<string> {
  const minLength = Math.min(schema.minLength ?? 0, MAX_STRING);
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? MAX_STRING, MAX_STRING));
  switch (schema.format) {
    case 'uuid':
      return fc.uuid({ version: 4 });
    case 'email':
      return fc.emailAddress();
    case 'date-time':
      return fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString());
    case 'uri':
    case 'url':
      return fc.webUrl({ validSchemes: ['http', 'https'] });
  }
  if (typeof schema.pattern === 'string') {
    try {
      return fc.stringMatching(new RegExp(schema.pattern)).map((s) => s.slice(0, Math.max(maxLength, minLength)));
    } catch {
      /* a pattern fast-check cannot generate from: plain strings below */
    }
  }
  return fc.string({ unit: 'grapheme', minLength, maxLength });
}

function numberFor(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const min =
    schema.minimum ??
    (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + (integer ? 1 : 1e-6) : -1_000_000);
  const max =
    schema.maximum ??
    (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - (integer ? 1 : 1e-6) : 1_000_000);
  if (!integer && typeof schema.multipleOf === 'number') {
    // A declared step (whole micro-USD: 0.000001): a whole number of steps within the bounds.
    const step = schema.multipleOf;
    const int32 = 2 ** 31 - 1; // fc.integer's range: steps past it are not drawn
    return fc
      .integer({ min: Math.max(Math.ceil(min / step), -int32), max: Math.min(Math.floor(max / step), int32) })
      .map((steps) => Number((steps * step).toFixed(12)));
  }
  return integer
    ? fc.integer({ min: Math.ceil(Math.max(min, -1e9)), max: Math.floor(Math.min(max, 1e9)) })
    : fc.double({ min: Math.max(min, -1e9), max: Math.min(max, 1e9), noNaN: true, noDefaultInfinity: true });
}

function objectFor(schema: JsonSchema, resolve: RefResolver, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties: Record<string, JsonSchema> = schema.properties ?? {};
  const names = Object.keys(properties);
  if (names.length === 0) return fc.dictionary(fc.string({ maxLength: 12 }), anyJson(depth + 1), { maxKeys: 4 });
  const model = Object.fromEntries(names.map((name) => [name, arbitraryFor(properties[name], resolve, depth + 1)]));
  const required = (schema.required ?? []).filter((name: string) => name in model);
  return fc.record(model, { requiredKeys: required }) as fc.Arbitrary<Record<string, unknown>>;
}

function anyJson(depth: number): fc.Arbitrary<unknown> {
  return fc.jsonValue({ maxDepth: Math.max(0, MAX_DEPTH - depth) });
}

/** `if: {properties: {x: {const: v}}}, then, else`: one branch per outcome, with the condition made true or false. */
function conditionalBranches(schema: JsonSchema): JsonSchema[] | null {
  if (!schema.if || (!schema.then && !schema.else)) return null;
  const { if: condition, then: whenTrue, else: whenFalse, ...base } = schema;
  const merge = (branch: JsonSchema | undefined, extra: Record<string, JsonSchema>) => ({
    ...base,
    properties: { ...(base.properties ?? {}), ...extra, ...(branch?.properties ?? {}) },
    required: [...new Set([...(base.required ?? []), ...(branch?.required ?? [])])],
  });
  const forced = Object.entries((condition.properties ?? {}) as Record<string, JsonSchema>).filter(
    ([, s]) => 'const' in s,
  );
  const truthy = Object.fromEntries(forced.map(([name, s]) => [name, { const: s.const }]));
  const falsy = Object.fromEntries(
    forced.map(([name, s]) => [name, { ...(base.properties?.[name] ?? {}), not: { const: s.const } }]),
  );
  return [merge(whenTrue, truthy), merge(whenFalse, falsy)];
}

/**
 * Values that (mostly) satisfy the schema: the starting point the mutations break. Handles what the
 * service's schemas use: $ref, const, enum, type (and type lists), oneOf/anyOf/allOf, if/then/else,
 * properties/required/additionalProperties, items/minItems/maxItems, string formats and patterns,
 * numeric bounds.
 */
export function arbitraryFor(
  schema: JsonSchema | boolean | undefined,
  resolve: RefResolver,
  depth = 0,
): fc.Arbitrary<unknown> {
  if (schema === undefined || schema === true || (typeof schema === 'object' && Object.keys(schema).length === 0))
    return anyJson(depth);
  if (schema === false) return fc.constant(undefined);
  if (schema.$ref) return arbitraryFor(resolve(schema.$ref), resolve, depth);
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) {
    const allowed =
      schema.not && 'const' in schema.not ? schema.enum.filter((v: unknown) => v !== schema.not.const) : schema.enum;
    return allowed.length ? fc.constantFrom(...allowed) : fc.constant(schema.enum[0]);
  }
  const branches = conditionalBranches(schema);
  if (branches) return fc.oneof(...branches.map((b) => arbitraryFor(b, resolve, depth)));
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(schema[key])) {
      const { [key]: options, ...rest } = schema;
      return fc.oneof(...options.map((option: JsonSchema) => arbitraryFor({ ...rest, ...option }, resolve, depth)));
    }
  }
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema;
    return arbitraryFor(
      Object.assign({}, rest, ...allOf.map((s: JsonSchema) => (s.$ref ? resolve(s.$ref) : s))),
      resolve,
      depth,
    );
  }
  if (depth > MAX_DEPTH) return fc.constant(null);
  const types: string[] = Array.isArray(schema.type)
    ? schema.type
    : schema.type
      ? [schema.type]
      : schema.properties
        ? ['object']
        : [];
  if (types.length === 0) return anyJson(depth);
  return fc.oneof(
    ...types.map((type): fc.Arbitrary<unknown> => {
      switch (type) {
        case 'string':
          return stringFor(schema);
        case 'integer':
          return numberFor(schema, true);
        case 'number':
          return numberFor(schema, false);
        case 'boolean':
          return fc.boolean();
        case 'null':
          return fc.constant(null);
        case 'array': {
          const minLength = Math.min(schema.minItems ?? 0, MAX_ITEMS);
          const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? MAX_ITEMS, MAX_ITEMS));
          const items = arbitraryFor(schema.items, resolve, depth + 1);
          return schema.uniqueItems
            ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
            : fc.array(items, { minLength, maxLength });
        }
        case 'object':
          return objectFor(schema, resolve, depth);
        default:
          return anyJson(depth);
      }
    }),
  );
}
