import fc from 'fast-check';
import { arbitraryFor, edgeString, type JsonSchema, type RefResolver } from './schema-arbitrary';

/** One operation of the served OpenAPI document. */
export interface Operation {
  id: string;
  method: string;
  /** The path template under the server URL, e.g. `/scrape/status/{jobId}`. */
  path: string;
  pathParams: { name: string; schema: JsonSchema }[];
  queryParams: { name: string; schema: JsonSchema; required: boolean }[];
  headerParams: { name: string; schema: JsonSchema }[];
  bodySchema: JsonSchema | null;
}

/** Every operation of an OpenAPI 3.1 document, and a resolver for its `#/components/...` references. */
export function operationsOf(doc: any): { operations: Operation[]; resolve: RefResolver; serverUrl: string } {
  const resolve: RefResolver = (ref) => {
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: any, part) => node?.[part], doc);
    if (!target) throw new Error(`unresolvable $ref ${ref}`);
    return target;
  };
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const params: any[] = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) =>
        p.$ref ? resolve(p.$ref) : p,
      );
      operations.push({
        id: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        queryParams: params
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, schema: p.schema ?? {}, required: !!p.required })),
        headerParams: params.filter((p) => p.in === 'header').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        bodySchema: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  return { operations, resolve, serverUrl: doc.servers?.[0]?.url ?? '' };
}

/** What the fuzzer sends; `notes` says which mutations made it (shown with a failing case). */
export interface FuzzRequest {
  method: string;
  /** The request target: path and query, percent-encoded as sent. */
  target: string;
  headers: Record<string, string>;
  body: Buffer | null;
  notes: string[];
}

export interface FuzzContext {
  apiKey: string;
  /** A valid key of another account (its resources must stay invisible). */
  otherApiKey: string;
  /**
   * Ids that exist for the fuzzing account, by the operation path up to and including the parameter
   * (`/scrape/status/{jobId}`, `/agents/{id}`): each operation gets ids of its own kind of resource.
   */
  knownIds: Record<string, string[]>;
  /**
   * Values that pass a documented header parameter, by its lower-case name (the fixtures' real
   * `x-service-charge-token`): without one an operation that checks the header first never gets past it.
   */
  knownHeaders?: Record<string, string[]>;
  /**
   * Bodies its fixtures accept, by operation id (`POST /provider/runs/{runId}/charge`), for operations
   * whose schema-valid bodies are all refused by what the schema cannot say (an event of the run).
   */
  knownBodies?: Record<string, unknown[]>;
}

// ---------- encoding ----------

/** Percent-encodes the UTF-8 bytes of a string (lone surrogates become U+FFFD, as a client would send them). */
export function percentEncode(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** `arb` in `percent` of the cases, otherwise undefined. */
const sometimes = <T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: percent, arbitrary: arb }, { weight: 100 - percent, arbitrary: fc.constant(undefined) });

/** Header values Node will put on the wire: printable Latin-1, no CR/LF. */
const headerString = (maxLength: number) =>
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c)),
    maxLength,
  });

// ---------- JSON value mutations ----------

type PathPart = string | number;

function nodePaths(value: unknown, limit = 60): PathPart[][] {
  const out: PathPart[][] = [];
  const walk = (node: unknown, at: PathPart[]) => {
    if (out.length >= limit) return;
    out.push(at);
    if (Array.isArray(node)) node.forEach((child, i) => walk(child, [...at, i]));
    else if (node && typeof node === 'object')
      for (const [key, child] of Object.entries(node)) walk(child, [...at, key]);
  };
  walk(value, []);
  return out;
}

function clone<T>(value: T): T {
  return value === undefined ? value : JSON.parse(JSON.stringify(value));
}

function setAt(root: unknown, at: PathPart[], replace: (current: unknown) => unknown): unknown {
  if (at.length === 0) return replace(root);
  const copy = clone(root) as any;
  let parent = copy;
  for (const part of at.slice(0, -1)) parent = parent[part];
  const last = at[at.length - 1];
  const next = replace(parent[last]);
  if (next === REMOVE) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else {
    parent[last] = next;
  }
  return copy;
}

const REMOVE = Symbol('remove');

const deepValue = (depth: number, kind: 'array' | 'object') => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = kind === 'array' ? [value] : { a: value };
  return value;
};

/** A value of some other JSON type than `current`. */
function otherType(current: unknown, pick: number): unknown {
  const options: unknown[] = ['text', 12345, -1.5, true, null, [], {}, ['x'], { x: 1 }].filter(
    (candidate) => typeOf(candidate) !== typeOf(current),
  );
  return options[pick % options.length];
}

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Boundary and hostile values: huge, deep, unicode edge cases, extreme numbers. */
export const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: edgeString },
  {
    weight: 3,
    arbitrary: fc.constantFrom<unknown>(
      null,
      true,
      false,
      0,
      -1,
      1.5,
      1e308,
      -1e308,
      2 ** 53 + 1,
      2 ** 63,
      5e-324,
      [],
      {},
      [null],
      { '': null },
    ),
  },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(1_000, 100_000, 900_000)
      .chain((n) => fc.constantFrom('a'.repeat(n), '😀'.repeat(n / 4), ' '.repeat(n))),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(64, 1_000, 3_000)
      .chain((d) => fc.constantFrom(deepValue(d, 'array'), deepValue(d, 'object'))),
  },
  { weight: 1, arbitrary: fc.constantFrom(10_000, 50_000).map((n) => new Array(n).fill(null)) },
);

const weirdKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    '',
    '\u0000',
    '$where',
    'a'.repeat(5_000),
    '😀',
    'toString',
    'hasOwnProperty',
  ),
  edgeString,
  fc.string({ maxLength: 10 }),
);

type Mutation =
  | { op: 'set'; at: number; value: unknown }
  | { op: 'wrongType'; at: number; pick: number }
  | { op: 'delete'; at: number }
  | { op: 'addKey'; at: number; key: string; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), at: fc.nat(), value: weirdValue }),
  fc.record({ op: fc.constant('wrongType' as const), at: fc.nat(), pick: fc.nat() }),
  fc.record({ op: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('addKey' as const), at: fc.nat(), key: weirdKey, value: weirdValue }),
);

function applyMutation(value: unknown, m: Mutation): { value: unknown; note: string } {
  const paths = nodePaths(value);
  const at = paths[m.at % paths.length];
  const where = `/${at.join('/')}`;
  switch (m.op) {
    case 'set':
      return { value: setAt(value, at, () => m.value), note: `set ${where}` };
    case 'wrongType':
      return { value: setAt(value, at, (current) => otherType(current, m.pick)), note: `wrong type at ${where}` };
    case 'delete':
      return at.length === 0
        ? { value: undefined, note: 'dropped the whole body' }
        : { value: setAt(value, at, () => REMOVE), note: `deleted ${where}` };
    case 'addKey': {
      const objects = paths.filter((p) => {
        const node = p.reduce((n: any, part) => n?.[part], value);
        return node && typeof node === 'object' && !Array.isArray(node);
      });
      if (objects.length === 0) return { value, note: 'no object to extend' };
      const target = objects[m.at % objects.length];
      return {
        value: setAt(value, target, (node) =>
          Object.defineProperty({ ...(node as object) }, m.key, {
            value: m.value,
            enumerable: true,
            writable: true,
            configurable: true,
          }),
        ),
        note: `extra key ${JSON.stringify(m.key.slice(0, 20))} at /${target.join('/')}`,
      };
    }
  }
}

// ---------- bodies ----------

/** Text that is not (quite) JSON. */
const malformedJson = (valid: unknown): fc.Arbitrary<{ text: string | Buffer; note: string }> => {
  const text = JSON.stringify(valid ?? {}) ?? '{}';
  return fc.oneof(
    fc.nat({ max: Math.max(0, text.length - 1) }).map((cut) => ({ text: text.slice(0, cut), note: 'truncated JSON' })),
    fc.constantFrom(
      { text: `${text}}`, note: 'trailing brace' },
      { text: `${text} garbage`, note: 'trailing garbage' },
      { text: text.replace(/"/g, "'"), note: 'single quotes' },
      { text: '{"a":1,"a":2}', note: 'duplicate keys' },
      { text: '{"url": NaN}', note: 'NaN literal' },
      { text: `\ufeff${text}`, note: 'byte order mark' },
      { text: 'null', note: 'null body' },
      { text: '"just a string"', note: 'string body' },
      { text: '12e999', note: 'overflowing number body' },
      { text: '['.repeat(50_000) + ']'.repeat(50_000), note: 'nested arrays, depth 50000' },
      { text: '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000), note: 'nested objects, depth 20000' },
      {
        text: Buffer.from([0x7b, 0x22, 0x75, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x22, 0x7d]),
        note: 'invalid UTF-8 bytes',
      },
      { text: '{"url":"\\ud800"}', note: 'escaped lone surrogate' },
      { text: '{"url":"\\u0000"}', note: 'escaped NUL' },
      { text: 'a'.repeat(1_100_000), note: 'over the body limit' },
    ),
  );
};

type BodyChoice = { body: unknown; text?: string | Buffer; note: string; present: boolean };

function bodyArbitrary(op: Operation, resolve: RefResolver): fc.Arbitrary<BodyChoice> {
  if (!op.bodySchema) {
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant<BodyChoice>({ body: undefined, note: 'no body', present: false }) },
      {
        weight: 1,
        arbitrary: weirdValue.map<BodyChoice>((body) => ({ body, note: 'unexpected body', present: true })),
      },
    );
  }
  const valid = arbitraryFor(op.bodySchema, resolve);
  return fc.oneof(
    { weight: 2, arbitrary: valid.map<BodyChoice>((body) => ({ body, note: 'schema-valid body', present: true })) },
    {
      weight: 7,
      arbitrary: fc
        .tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 }))
        .map<BodyChoice>(([body, mutations]) => {
          let value = body;
          const notes: string[] = [];
          for (const m of mutations) {
            const applied = applyMutation(value, m);
            value = applied.value;
            notes.push(applied.note);
          }
          return { body: value, note: notes.join('; '), present: value !== undefined };
        }),
    },
    { weight: 1, arbitrary: weirdValue.map<BodyChoice>((body) => ({ body, note: 'non-object body', present: true })) },
    {
      weight: 1,
      arbitrary: valid
        .chain((v) => malformedJson(v))
        .map<BodyChoice>(({ text, note }) => ({ body: undefined, text, note, present: true })),
    },
    { weight: 1, arbitrary: fc.constant<BodyChoice>({ body: undefined, note: 'missing body', present: false }) },
  );
}

// ---------- parameters ----------

const badUuids = fc.oneof(
  fc.constantFrom(
    '%ZZ',
    '%',
    '%00',
    '%2e%2e',
    '..',
    '%2F',
    'null',
    'undefined',
    '0',
    '-1',
    '00000000-0000-0000-0000-000000000000',
    'x'.repeat(5_000),
    '%E0%A4%A',
    '%C0%AF',
    '%F0%9F%98%80',
  ),
  fc.uuid({ version: 4 }).map((u) => u.toUpperCase()),
  fc.uuid({ version: 4 }).map((u) => `${u}x`),
  fc.uuid({ version: 4 }).map((u) => u.replace(/-/g, '')),
  fc.uuid({ version: 4 }).map((u) => `${u}%00`),
  edgeString.filter((s) => s.length > 0).map(percentEncode),
);

/**
 * The fixtures' ids for a path parameter: those of the operation alone when the fixtures have some
 * (`POST /mcp-market/submissions/{id}/revisions`: an approved entry; `PUT /mcp-market/submissions/{id}`: a draft
 * the other operations of the path would change first), else those of its method on the path up to the
 * parameter, else those of that path.
 */
export function knownIdsFor(
  op: Pick<Operation, 'path' | 'method'>,
  name: string,
  ctx: Pick<FuzzContext, 'knownIds'>,
): string[] {
  // The operation's own ids first (`POST /x/{id}/revisions`), then its method's (`PUT /x/{id}`), then the path's.
  const key = knownIdKey(op, name);
  for (const candidate of [`${op.method} ${op.path}`, `${op.method} ${key}`, key]) {
    const ids = ctx.knownIds[candidate] ?? [];
    if (ids.length) return ids;
  }
  return [];
}

/** The key of `FuzzContext.knownIds` for a path parameter of an operation: its path up to the parameter. */
export function knownIdKey(op: Pick<Operation, 'path'>, name: string): string {
  const at = op.path.indexOf(`{${name}}`);
  return op.path.slice(0, at + name.length + 2);
}

function pathParamArbitrary(
  op: Operation,
  name: string,
  ctx: FuzzContext,
): fc.Arbitrary<{ value: string; note: string }> {
  const known = knownIdsFor(op, name, ctx);
  return fc.oneof(
    ...(known.length
      ? [{ weight: 3, arbitrary: fc.constantFrom(...known).map((value) => ({ value, note: `known ${name}` })) }]
      : []),
    { weight: 2, arbitrary: fc.uuid({ version: 4 }).map((value) => ({ value, note: `unknown ${name}` })) },
    { weight: 4, arbitrary: badUuids.map((value) => ({ value, note: `bad ${name}` })) },
  );
}

const weirdQueryValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1.5',
    '101',
    '1e20',
    '1e309',
    '99999999999999999999',
    'NaN',
    'Infinity',
    '-Infinity',
    '0x10',
    ' 1',
    '1 ',
    'true',
    'null',
    '[]',
    '{}',
    'a'.repeat(10_000),
  ),
  edgeString,
  fc.integer().map(String),
  fc.double().map(String),
);

function queryArbitrary(op: Operation, resolve: RefResolver): fc.Arbitrary<{ query: string; note: string }> {
  const encodePairs = (pairs: [string, string][]) =>
    pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&');
  const validPairs: fc.Arbitrary<[string, string][]> =
    op.queryParams.length === 0
      ? fc.constant([])
      : fc
          .tuple(
            ...op.queryParams.map((p) =>
              fc.option(
                arbitraryFor(p.schema, resolve).map(
                  (v) => [p.name, typeof v === 'string' ? v : JSON.stringify(v)] as [string, string],
                ),
                { nil: undefined, freq: p.required ? 20 : 2 },
              ),
            ),
          )
          .map((pairs) => pairs.filter((p): p is [string, string] => p !== undefined));
  const names = op.queryParams.map((p) => p.name);
  return fc.oneof(
    { weight: 3, arbitrary: validPairs.map((pairs) => ({ query: encodePairs(pairs), note: 'schema-valid query' })) },
    ...(names.length
      ? [
          {
            weight: 4,
            arbitrary: fc.tuple(validPairs, fc.constantFrom(...names), weirdQueryValue).map(([pairs, name, value]) => ({
              query: encodePairs([...pairs.filter(([k]) => k !== name), [name, value]]),
              note: `odd ${name}=${JSON.stringify(value.slice(0, 30))}`,
            })),
          },
          {
            weight: 1,
            arbitrary: fc.tuple(validPairs, fc.constantFrom(...names)).map(([pairs, name]) => ({
              query: encodePairs([...pairs, [name, '1'], [name, '2']]),
              note: `repeated ${name}`,
            })),
          },
        ]
      : []),
    {
      weight: 1,
      arbitrary: fc
        .tuple(validPairs, fc.string({ maxLength: 12 }), weirdQueryValue)
        .map(([pairs, k, v]) => ({ query: encodePairs([...pairs, [k, v]]), note: 'unknown query parameter' })),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('%ZZ', '=', '&&&', 'a=%', 'page[]=1', 'q=%00', 'page=1&page', '%E0%A4%A=1')
        .map((query) => ({ query, note: `raw query ${query}` })),
    },
  );
}

// ---------- headers ----------

const contentTypes = fc.oneof(
  { weight: 10, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/merge-patch+json',
      'application/json, text/html',
      ';;;',
      '*/*',
      'application/',
      'application/json; charset="',
    ),
  },
  { weight: 1, arbitrary: headerString(60) },
);

const idempotencyKeys = fc.oneof(
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
  fc.constantFrom('', ' ', 'a'.repeat(200), 'a'.repeat(201), 'a'.repeat(4_000), 'key with spaces', 'clé-été'),
  headerString(80),
);

/** The operation's own header parameters (not the idempotency key): a fixture's value, an odd one, or none. */
function documentedHeadersArbitrary(
  op: Operation,
  ctx: FuzzContext,
): fc.Arbitrary<{ headers: Record<string, string>; notes: string[] }> {
  const names = op.headerParams.map((p) => p.name.toLowerCase()).filter((name) => name !== 'idempotency-key');
  return fc
    .tuple(
      ...names.map((name) => {
        const known = ctx.knownHeaders?.[name] ?? [];
        return sometimes(
          fc.oneof(
            ...(known.length
              ? [{ weight: 3, arbitrary: fc.constantFrom(...known).map((value) => ({ value, note: `known ${name}` })) }]
              : []),
            {
              weight: 1,
              arbitrary: headerString(120).map((value) => ({
                value,
                note: `${name} ${JSON.stringify(value.slice(0, 20))}`,
              })),
            },
          ),
          75,
        );
      }),
    )
    .map((values) => {
      const headers: Record<string, string> = {};
      const notes: string[] = [];
      names.forEach((name, i) => {
        const value = values[i];
        if (value === undefined) notes.push(`no ${name}`);
        else {
          headers[name] = value.value;
          notes.push(value.note);
        }
      });
      return { headers, notes };
    });
}

function headersArbitrary(
  op: Operation,
  ctx: FuzzContext,
): fc.Arbitrary<{ headers: Record<string, string>; notes: string[] }> {
  const apiKey = fc.oneof(
    { weight: 14, arbitrary: fc.constant({ value: ctx.apiKey as string | undefined, note: '' }) },
    {
      weight: 1,
      arbitrary: fc.constant({ value: ctx.otherApiKey as string | undefined, note: "another account's key" }),
    },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom<string | undefined>(
            undefined,
            '',
            'sk_live_',
            `${ctx.apiKey}x`,
            ctx.apiKey.slice(0, -1),
            ctx.apiKey.toUpperCase(),
            'k'.repeat(257),
            'k'.repeat(8_000),
          ),
          headerString(300),
        )
        .map((value) => ({
          value,
          note: `api key ${value === undefined ? 'missing' : JSON.stringify(value.slice(0, 20))}`,
        })),
    },
  );
  const accepts = op.headerParams.some((p) => p.name.toLowerCase() === 'idempotency-key');
  return fc
    .record({
      documented: documentedHeadersArbitrary(op, ctx),
      apiKey,
      contentType: sometimes(contentTypes, 92),
      idempotencyKey: sometimes(idempotencyKeys, accepts ? 50 : 10),
      requestId: sometimes(
        fc.oneof(headerString(200), fc.constantFrom('short', 'a'.repeat(129), 'ok-request-id-123')),
        15,
      ),
      accept: sometimes(fc.constantFrom('text/html', '*/*', 'application/xml', 'garbage;;q=x'), 15),
    })
    .map(({ documented, apiKey: key, contentType, idempotencyKey, requestId, accept }) => {
      const headers: Record<string, string> = { ...documented.headers };
      const notes: string[] = [...documented.notes];
      if (key.value !== undefined) headers['x-api-key'] = key.value;
      if (key.note) notes.push(key.note);
      if (contentType !== undefined) {
        headers['content-type'] = contentType;
        if (contentType !== 'application/json') notes.push(`content-type ${JSON.stringify(contentType)}`);
      }
      if (idempotencyKey !== undefined) {
        headers['idempotency-key'] = idempotencyKey;
        notes.push(`idempotency-key ${JSON.stringify(idempotencyKey.slice(0, 20))}`);
      }
      if (requestId !== undefined) headers['x-request-id'] = requestId;
      if (accept !== undefined) headers.accept = accept;
      return { headers, notes };
    });
}

// ---------- the whole request ----------

/**
 * A request the operation should answer below 400: the fixtures' ids, the fuzzing account's key, a
 * fixture's (or a schema-valid) body, the fixtures' header values and a fresh idempotency key. Null when
 * a path parameter has no fixture.
 */
function wellFormedArbitrary(
  op: Operation,
  resolve: RefResolver,
  serverUrl: string,
  ctx: FuzzContext,
): fc.Arbitrary<FuzzRequest> | null {
  const ids = op.pathParams.map((p) => knownIdsFor(op, p.name, ctx));
  if (ids.some((known) => known.length === 0)) return null;
  const headerNames = op.headerParams.map((p) => p.name.toLowerCase());
  const fixtureBodies = ctx.knownBodies?.[op.id] ?? [];
  const body: fc.Arbitrary<unknown> = !op.bodySchema
    ? fc.constant(undefined)
    : fixtureBodies.length
      ? fc.constantFrom(...fixtureBodies)
      : arbitraryFor(op.bodySchema, resolve);
  const headerValues = fc.tuple(
    ...headerNames.map((name) =>
      name === 'idempotency-key'
        ? fc.uuid({ version: 4 }).map((id) => `fuzz-${id}`)
        : (ctx.knownHeaders?.[name] ?? []).length
          ? fc.constantFrom(...ctx.knownHeaders![name])
          : headerString(40),
    ),
  );
  return fc
    .record({ ids: fc.tuple(...ids.map((known) => fc.constantFrom(...known))), body, headerValues })
    .map(({ ids: chosen, body: value, headerValues: values }) => {
      let path = op.path;
      op.pathParams.forEach((p, i) => (path = path.replace(`{${p.name}}`, chosen[i])));
      const headers: Record<string, string> = { 'x-api-key': ctx.apiKey };
      headerNames.forEach((name, i) => (headers[name] = values[i]));
      if (op.bodySchema) headers['content-type'] = 'application/json';
      return {
        method: op.method,
        target: `${serverUrl}${path}`,
        headers,
        body: op.bodySchema ? Buffer.from(JSON.stringify(value) ?? '', 'utf8') : null,
        notes: [...op.pathParams.map((p) => `known ${p.name}`), 'well-formed request'],
      };
    });
}

/**
 * Generated malformed and boundary requests for one operation, derived from its OpenAPI description;
 * for an operation with path parameters, one in eight is well-formed (wellFormedArbitrary), so its
 * happy path behind the lookup is fuzzed too, not only what answers before it.
 */
export function requestArbitrary(
  op: Operation,
  resolve: RefResolver,
  serverUrl: string,
  ctx: FuzzContext,
): fc.Arbitrary<FuzzRequest> {
  const fuzzed = fuzzedArbitrary(op, resolve, serverUrl, ctx);
  const wellFormed = op.pathParams.length ? wellFormedArbitrary(op, resolve, serverUrl, ctx) : null;
  return wellFormed ? fc.oneof({ weight: 7, arbitrary: fuzzed }, { weight: 1, arbitrary: wellFormed }) : fuzzed;
}

function fuzzedArbitrary(
  op: Operation,
  resolve: RefResolver,
  serverUrl: string,
  ctx: FuzzContext,
): fc.Arbitrary<FuzzRequest> {
  const pathArb = fc.tuple(...op.pathParams.map((p) => pathParamArbitrary(op, p.name, ctx))).map((values) => {
    let path = op.path;
    const notes: string[] = [];
    op.pathParams.forEach((p, i) => {
      path = path.replace(`{${p.name}}`, values[i].value);
      notes.push(values[i].note);
    });
    return { path: `${serverUrl}${path}`, notes };
  });
  return fc
    .record({
      path: pathArb,
      query: queryArbitrary(op, resolve),
      body: bodyArbitrary(op, resolve),
      headers: headersArbitrary(op, ctx),
    })
    .map(({ path, query, body, headers }) => {
      const target = query.query ? `${path.path}?${query.query}` : path.path;
      let payload: Buffer | null = null;
      if (body.present)
        payload =
          body.text !== undefined ? Buffer.from(body.text) : Buffer.from(JSON.stringify(body.body) ?? '', 'utf8');
      const sent = { ...headers.headers };
      if (payload === null) delete sent['content-type'];
      return {
        method: op.method,
        target,
        headers: sent,
        body: payload,
        notes: [...path.notes, query.note, body.note, ...headers.notes],
      };
    });
}

/** A short, printable description of a request (failing cases are reported with it). */
export function describeRequest(request: FuzzRequest): string {
  const body =
    request.body === null
      ? '(no body)'
      : request.body.length > 300
        ? `${request.body.subarray(0, 300).toString('utf8')}… (${request.body.length} bytes)`
        : request.body.toString('utf8');
  const headers = Object.fromEntries(
    Object.entries(request.headers).map(([k, v]) => [
      k,
      k === 'x-api-key' ? `${v.slice(0, 12)}…` : v.length > 80 ? `${v.slice(0, 80)}…` : v,
    ]),
  );
  const target = request.target.length > 300 ? `${request.target.slice(0, 300)}…` : request.target;
  return `${request.method} ${target}\n  headers ${JSON.stringify(headers)}\n  body ${body}\n  mutations: ${request.notes.filter(Boolean).join(' | ')}`;
}
