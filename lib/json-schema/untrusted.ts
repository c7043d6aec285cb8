import { createHash } from 'node:crypto';
import Ajv, { type Options, type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { BoundedCache } from '../bounded-cache';
import { canonicalJson } from '../market/canonical-json';
import { linearRegExp } from './linear-regexp';

/**
 * The one way to validate with a JSON Schema the platform does not own: a provider's
 * requiredUserParamsSchema, an agent-market inputSchema, a user's structured_output, an MCP
 * server's tool outputSchema. Such a schema may be careless or hostile; it must not stall, crash or
 * grow a process, nor reach another schema:
 *
 * - regular expressions run on RE2 (linear-regexp.ts); patterns RE2 cannot run are refused;
 * - each schema is compiled in an ajv instance of its own, so one schema's `$id` can neither collide
 *   with another's ("schema with key or id already exists") nor be `$ref`-erenced by it;
 * - `$ref` is a local JSON pointer (`#` or `#/…`) that resolves inside the schema; `$id` only at the
 *   root; `$anchor`, `$dynamicRef`, `$dynamicAnchor`, `$recursiveRef` and `$recursiveAnchor` are
 *   refused (they only serve references this rule forbids);
 * - no reference loop that never descends into the value (`{"allOf": [{"$ref": "#"}]}` would
 *   recurse without end), and the schema expanded through its references stays under
 *   MAX_EXPANDED_SUBSCHEMAS (a chain of `anyOf: [{$ref: next}, {$ref: next}]` doubles the work at
 *   each step);
 * - at most MAX_UNTRUSTED_SCHEMA_CHARS of JSON, nested at most MAX_SCHEMA_DEPTH schemas deep;
 * - compiled validators are kept in a bounded cache keyed by the schema's content (canonical JSON),
 *   refusals too, so repeating a request neither recompiles nor grows memory.
 *
 * Anything refused or not compilable throws UntrustedSchemaError, whose message says why (callers
 * answer 400 with it).
 */
export class UntrustedSchemaError extends Error {
  override readonly name = 'UntrustedSchemaError';
  /** `at`: a JSON pointer into the schema ('' for the schema itself). */
  constructor(
    message: string,
    readonly at = '',
  ) {
    super(message);
  }
}

export type SchemaDialect = 'draft-07' | '2019-09' | '2020-12';

export const MAX_UNTRUSTED_SCHEMA_CHARS = 200_000;
export const MAX_SCHEMA_DEPTH = 64;
export const MAX_EXPANDED_SUBSCHEMAS = 20_000;

type SchemaObject = Record<string, unknown>;
const isObject = (value: unknown): value is SchemaObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const isSchema = (value: unknown): value is SchemaObject | boolean => typeof value === 'boolean' || isObject(value);

/** Keywords whose value is one subschema, a list of them, or a map of them; and which apply at the value itself (not at a part of it). */
const ONE = new Set([
  'additionalItems',
  'additionalProperties',
  'contains',
  'else',
  'if',
  'items',
  'not',
  'propertyNames',
  'then',
  'unevaluatedItems',
  'unevaluatedProperties',
]);
const LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items']);
const MAP = new Set(['$defs', 'definitions', 'dependentSchemas', 'dependencies', 'patternProperties', 'properties']);
const IN_PLACE = new Set(['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'dependentSchemas', 'dependencies']);
const DEFINITIONS = new Set(['$defs', 'definitions']);
const REFUSED_KEYWORDS = ['$anchor', '$dynamicAnchor', '$dynamicRef', '$recursiveAnchor', '$recursiveRef'];

const escapeToken = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1');

interface Child {
  at: string;
  schema: SchemaObject | boolean;
  /** Applies at the same value (allOf, not, if, ...), not at a part of it (properties, items, ...). */
  inPlace: boolean;
  /** Not applied unless referenced ($defs, definitions). */
  definition: boolean;
}

function childrenOf(node: SchemaObject, at: string): Child[] {
  const children: Child[] = [];
  for (const [keyword, value] of Object.entries(node)) {
    const here = `${at}/${escapeToken(keyword)}`;
    const inPlace = IN_PLACE.has(keyword);
    const definition = DEFINITIONS.has(keyword);
    if (ONE.has(keyword) && isSchema(value)) children.push({ at: here, schema: value, inPlace, definition });
    else if (LIST.has(keyword) && Array.isArray(value)) {
      value.forEach(
        (schema, i) => isSchema(schema) && children.push({ at: `${here}/${i}`, schema, inPlace, definition }),
      );
    } else if (MAP.has(keyword) && isObject(value)) {
      for (const [name, schema] of Object.entries(value))
        if (isSchema(schema)) children.push({ at: `${here}/${escapeToken(name)}`, schema, inPlace, definition });
    }
  }
  return children;
}

/** The subschema a local `$ref` names, or an UntrustedSchemaError. */
function resolveLocalRef(
  root: SchemaObject | boolean,
  ref: unknown,
  at: string,
): { target: string; schema: SchemaObject | boolean } {
  if (typeof ref !== 'string') throw new UntrustedSchemaError('$ref must be a string', at);
  if (ref !== '#' && !ref.startsWith('#/')) {
    throw new UntrustedSchemaError(
      `$ref ${JSON.stringify(ref)} is not supported: only references inside the schema ("#/$defs/name") are`,
      at,
    );
  }
  let tokens: string[];
  try {
    tokens =
      ref === '#'
        ? []
        : ref
            .slice(2)
            .split('/')
            .map((token) => decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~'));
  } catch {
    throw new UntrustedSchemaError(`$ref ${JSON.stringify(ref)} is not a valid JSON pointer`, at);
  }
  let current: unknown = root;
  for (const token of tokens) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, token)) {
      throw new UntrustedSchemaError(`$ref ${JSON.stringify(ref)} does not point into this schema`, at);
    }
    current = (current as Record<string, unknown>)[token];
  }
  if (!isSchema(current)) throw new UntrustedSchemaError(`$ref ${JSON.stringify(ref)} does not point to a schema`, at);
  return { target: `#${tokens.map((t) => `/${escapeToken(t)}`).join('')}`, schema: current };
}

interface Shape {
  /** Every referenced subschema, by its canonical pointer. */
  targets: Map<string, SchemaObject | boolean>;
}

/** Refused keywords, nested $id, depth, and every $ref resolved (pass 1). */
function checkKeywords(root: SchemaObject | boolean): Shape {
  const targets = new Map<string, SchemaObject | boolean>();
  const visit = (node: SchemaObject | boolean, at: string, depth: number) => {
    if (depth > MAX_SCHEMA_DEPTH)
      throw new UntrustedSchemaError(`the schema is nested more than ${MAX_SCHEMA_DEPTH} levels deep`, at);
    if (typeof node === 'boolean') return;
    for (const keyword of REFUSED_KEYWORDS) {
      if (keyword in node)
        throw new UntrustedSchemaError(
          `${keyword} is not supported: use "$ref": "#/$defs/name" for a reference inside the schema`,
          `${at}/${keyword}`,
        );
    }
    if ('$id' in node && at !== '')
      throw new UntrustedSchemaError('$id is only allowed at the root of the schema', `${at}/$id`);
    if ('$ref' in node) {
      const { target, schema } = resolveLocalRef(root, node.$ref, `${at}/$ref`);
      targets.set(target, schema);
    }
    for (const child of childrenOf(node, at)) visit(child.schema, child.at, depth + 1);
  };
  visit(root, '', 0);
  return { targets };
}

/** The references a subschema reaches without descending into a part of the value. */
function inPlaceRefs(
  root: SchemaObject | boolean,
  node: SchemaObject | boolean,
  at: string,
): { target: string; at: string }[] {
  if (typeof node === 'boolean') return [];
  const found: { target: string; at: string }[] = [];
  if ('$ref' in node) found.push({ target: resolveLocalRef(root, node.$ref, `${at}/$ref`).target, at: `${at}/$ref` });
  for (const child of childrenOf(node, at))
    if (child.inPlace && !child.definition) found.push(...inPlaceRefs(root, child.schema, child.at));
  return found;
}

/** A reference loop that never descends into the value would recurse without end (pass 2). */
function checkInPlaceLoops(root: SchemaObject | boolean, shape: Shape): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (target: string, schema: SchemaObject | boolean) => {
    state.set(target, 'visiting');
    for (const next of inPlaceRefs(root, schema, target.slice(1))) {
      const seen = state.get(next.target);
      if (seen === 'visiting')
        throw new UntrustedSchemaError(
          `$ref ${JSON.stringify(next.target)} refers back to itself without descending into the value, so validation would never end`,
          next.at,
        );
      if (!seen) visit(next.target, shape.targets.get(next.target)!);
    }
    state.set(target, 'done');
  };
  visit('#', root);
  for (const [target, schema] of shape.targets) if (!state.has(target)) visit(target, schema);
}

/** How many subschemas validating one value may apply, references expanded (recursion counted once) (pass 3). */
function checkExpandedSize(root: SchemaObject | boolean, shape: Shape): void {
  const sizes = new Map<string, number>();
  const limit = MAX_EXPANDED_SUBSCHEMAS + 1;
  const sizeOf = (node: SchemaObject | boolean, at: string): number => {
    if (typeof node === 'boolean') return 1;
    let size = 1;
    if ('$ref' in node) size += sizeOfTarget(resolveLocalRef(root, node.$ref, at).target);
    for (const child of childrenOf(node, at))
      if (!child.definition) size = Math.min(limit, size + sizeOf(child.schema, child.at));
    return Math.min(limit, size);
  };
  const sizeOfTarget = (target: string): number => {
    const known = sizes.get(target);
    if (known !== undefined) return known;
    sizes.set(target, 1); // a recursive reference counts once
    const size = sizeOf(shape.targets.get(target)!, target.slice(1));
    sizes.set(target, size);
    return size;
  };
  if (sizeOf(root, '') > MAX_EXPANDED_SUBSCHEMAS) {
    throw new UntrustedSchemaError(
      `the schema expands, through its references, to more than ${MAX_EXPANDED_SUBSCHEMAS} subschemas: simplify it`,
    );
  }
}

/** The structural rules above, without compiling. */
export function checkUntrustedSchemaShape(schema: unknown): void {
  if (!isSchema(schema)) throw new UntrustedSchemaError('a JSON Schema is an object (or true / false)');
  const shape = checkKeywords(schema);
  checkInPlaceLoops(schema, shape);
  checkExpandedSize(schema, shape);
}

type AjvInstance = Ajv | Ajv2019 | Ajv2020;

function newAjv(dialect: SchemaDialect, options: Options): AjvInstance {
  const ajv =
    dialect === '2020-12' ? new Ajv2020(options) : dialect === '2019-09' ? new Ajv2019(options) : new Ajv(options);
  addFormats(ajv as Ajv);
  return ajv;
}

/**
 * One platform-owned instance per dialect checks schemas against the dialect's meta-schema (the
 * schema is its data, never added to it); each schema is then compiled in a fresh instance of its
 * own, without repeating that check (the costly part of a new instance).
 */
const metaCheckers = new Map<SchemaDialect, AjvInstance>();
function metaChecker(dialect: SchemaDialect): AjvInstance {
  let ajv = metaCheckers.get(dialect);
  if (!ajv) metaCheckers.set(dialect, (ajv = newAjv(dialect, { allErrors: true, strict: false, logger: false })));
  return ajv;
}

const COMPILE_OPTIONS: Options = {
  allErrors: true,
  strict: false,
  logger: false,
  validateSchema: false,
  code: { regExp: linearRegExp },
};

export function dialectOf(schema: unknown, fallback: SchemaDialect = 'draft-07'): SchemaDialect {
  const declared = isObject(schema) && typeof schema.$schema === 'string' ? schema.$schema : null;
  if (declared === null) return fallback;
  return declared.includes('2020-12') ? '2020-12' : declared.includes('2019-09') ? '2019-09' : 'draft-07';
}

const compiled = new BoundedCache<{ validate: ValidateFunction } | { error: UntrustedSchemaError }>({
  maxEntries: 500,
  idleMs: 60 * 60_000,
});

function compileChecked(schema: SchemaObject | boolean, dialect: SchemaDialect): ValidateFunction {
  checkUntrustedSchemaShape(schema);
  const checker = metaChecker(dialect);
  let valid: boolean;
  try {
    valid = checker.validateSchema(schema) as boolean;
  } catch (error) {
    throw new UntrustedSchemaError((error as Error).message);
  }
  if (!valid) throw new UntrustedSchemaError(checker.errorsText(checker.errors, { dataVar: 'schema' }));
  try {
    return newAjv(dialect, COMPILE_OPTIONS).compile(schema);
  } catch (error) {
    throw new UntrustedSchemaError((error as Error).message);
  }
}

/**
 * The validator of a schema the platform does not own (see above), from the cache when this
 * content was compiled before. `defaultDialect` applies when the schema names no `$schema`.
 * Throws UntrustedSchemaError.
 */
export function compileUntrustedSchema(
  schema: unknown,
  options: { defaultDialect?: SchemaDialect } = {},
): ValidateFunction {
  if (!isSchema(schema)) throw new UntrustedSchemaError('a JSON Schema is an object (or true / false)');
  let text: string;
  try {
    text = canonicalJson(schema);
  } catch {
    throw new UntrustedSchemaError('the schema is not a JSON document (or is nested too deeply)');
  }
  if (text.length > MAX_UNTRUSTED_SCHEMA_CHARS)
    throw new UntrustedSchemaError(`the schema is larger than ${MAX_UNTRUSTED_SCHEMA_CHARS} characters of JSON`);
  const dialect = dialectOf(schema, options.defaultDialect);
  const key = createHash('sha256').update(`${dialect}\n${text}`).digest('base64url');
  const known = compiled.get(key);
  if (known) {
    if ('error' in known) throw known.error;
    return known.validate;
  }
  try {
    const validate = compileChecked(schema, dialect);
    compiled.set(key, { validate });
    return validate;
  } catch (error) {
    const refused = error instanceof UntrustedSchemaError ? error : new UntrustedSchemaError((error as Error).message);
    compiled.set(key, { error: refused });
    throw refused;
  }
}
