import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import Ajv from 'ajv';
import fc from 'fast-check';
import { useHarness, type Harness } from '../support/stack/harness';
import { DEFAULT_FUZZ_REQUESTS, fuzzBudget } from '../support/fuzz/budget';
import { createFixtures, type Fixtures } from '../support/fuzz/fixtures';
import {
  describeRequest,
  knownIdsFor,
  operationsOf,
  requestArbitrary,
  type FuzzRequest,
  type Operation,
} from '../support/fuzz/requests';
import { sendRaw, type RawResponse } from '../support/fuzz/raw-http';

/**
 * Schema-driven fuzzing of the public API. The cases come from the served OpenAPI document, so a
 * new operation is fuzzed without touching this file: fast-check builds schema-valid requests
 * from each operation's parameters and body schema, then mutates them (wrong types, missing and
 * extra fields, huge, deep and unicode edge values, malformed JSON, bad path ids and query
 * values, odd content-type / idempotency-key / x-api-key headers).
 *
 * Every answer must be below 500, and every 4xx must carry the documented ErrorResponse body
 * with the request id of the X-Request-Id header. FUZZ_SEED reproduces a run; FUZZ_REQUESTS
 * sets the budget (default 5,200 requests; printed, and never lowered under CI: see fuzzBudget).
 */
const TOTAL_REQUESTS =
  Number(process.env.FUZZ_REQUESTS) > 0 ? Number(process.env.FUZZ_REQUESTS) : DEFAULT_FUZZ_REQUESTS;
const SEED = Number(process.env.FUZZ_SEED ?? randomBytes(4).readUInt32LE(0) >>> 1);
const PARALLEL_OPERATIONS = 6;

interface Failure {
  operation: string;
  problem: string;
  request: string;
  shrunkFrom: number;
}

function problemWith(
  request: FuzzRequest,
  response: RawResponse,
  isErrorBody: (body: unknown) => boolean,
): string | null {
  if (response.status >= 500) return `answered ${response.status}: ${response.text.slice(0, 500)}`;
  if (response.status < 400 || request.method === 'HEAD') return null;
  let body: unknown;
  try {
    body = JSON.parse(response.text);
  } catch {
    return `answered ${response.status} with a body that is not JSON: ${response.text.slice(0, 200)}`;
  }
  if (!isErrorBody(body))
    return `answered ${response.status} with a body that is not an ErrorResponse: ${response.text.slice(0, 300)}`;
  const requestId = (body as { error: { requestId: string } }).error.requestId;
  if (requestId !== response.headers['x-request-id'])
    return `error.requestId ${requestId} differs from X-Request-Id ${response.headers['x-request-id']}`;
  return null;
}

/** Methods the document does not list on a path: the router must answer 405 (or 404) with the error body. */
function undocumentedMethodRequests(
  operations: Operation[],
  build: (op: Operation) => fc.Arbitrary<FuzzRequest>,
): fc.Arbitrary<FuzzRequest> {
  const byPath = new Map<string, Operation[]>();
  for (const op of operations) byPath.set(op.path, [...(byPath.get(op.path) ?? []), op]);
  return fc.constantFrom(...byPath.values()).chain((ops) => {
    const others = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE'].filter(
      (m) => !ops.some((op) => op.method === m),
    );
    const bare: Operation = { ...ops[0], bodySchema: null, queryParams: [], headerParams: [] };
    return fc
      .tuple(build(bare), fc.constantFrom(...others))
      .map(([request, method]) => ({ ...request, method, notes: [`undocumented method ${method}`, ...request.notes] }));
  });
}

/**
 * Operations with a path parameter whose fixture cannot give them an answer below 400, and why. Every
 * other operation with a path parameter must be answered below 400 at least once (past its lookup).
 */
const UNANSWERABLE: Record<string, string> = {
  'POST /agent-market/agents/{agentId}/run':
    'the fuzzed job-starting operations use up the three operations left under the monthly limit (429)',
};

describe('the fuzz budget (FUZZ_REQUESTS)', function () {
  it('is the default unless FUZZ_REQUESTS sets it, and may be lowered only outside CI', function () {
    assert.equal(fuzzBudget({}), DEFAULT_FUZZ_REQUESTS);
    assert.equal(fuzzBudget({ FUZZ_REQUESTS: '' }), DEFAULT_FUZZ_REQUESTS);
    assert.equal(fuzzBudget({ FUZZ_REQUESTS: '200' }), 200);
    assert.equal(fuzzBudget({ FUZZ_REQUESTS: '20000', CI: 'true' }), 20_000);
    assert.equal(fuzzBudget({ FUZZ_REQUESTS: String(DEFAULT_FUZZ_REQUESTS), CI: 'true' }), DEFAULT_FUZZ_REQUESTS);
    assert.throws(() => fuzzBudget({ FUZZ_REQUESTS: '200', CI: 'true' }), /lower the fuzz budget/);
    assert.throws(() => fuzzBudget({ FUZZ_REQUESTS: '200', CI: '1' }), /lower the fuzz budget/);
    for (const bad of ['abc', '-5', '0', '1.5'])
      assert.throws(() => fuzzBudget({ FUZZ_REQUESTS: bad }), /not a positive integer/, bad);
  });
});

describe('fuzzing every operation of the OpenAPI document', function () {
  let h: Harness;
  let apiKey: string;
  let userId: string;
  let otherApiKey: string;
  let fixtures: Fixtures;
  /** Ids of the fixtures, by the path up to the parameter (`/scrape/status/{jobId}`); see FuzzContext. */
  const knownIds: Record<string, string[]> = {};

  before(async function () {
    this.timeout(300_000);
    // Refuses a budget lowered under CI before anything starts; says which budget this run uses.
    const budget = fuzzBudget(process.env);
    assert.equal(budget, TOTAL_REQUESTS);
    console.log(
      `      fuzz budget: ${budget} requests (${process.env.FUZZ_REQUESTS ? `FUZZ_REQUESTS=${process.env.FUZZ_REQUESTS}` : 'the default'}; default ${DEFAULT_FUZZ_REQUESTS})`,
    );
    h = await useHarness();
    const adminAuth = { authorization: `Bearer ${h.config.adminToken}` };
    // Room for the fixtures first; the limits are lowered once they exist (below).
    const created = await h.http('POST', '/admin/users', {
      headers: adminAuth,
      body: {
        email: `fuzz-${randomBytes(5).toString('hex')}@example.com`,
        creditUsd: 5,
        monthlyOperationLimit: 50,
        automationLimit: 10,
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ({ apiKey, userId } = created.body);
    otherApiKey = (await h.createUser()).apiKey;
    const provider = await h.createUser();
    fixtures = await createFixtures(h, { userId, apiKey }, provider);
    Object.assign(knownIds, fixtures.knownIds);

    // Job-starting operations are capped by the monthly limit (429 after it) and automations by the
    // automation limit, so valid bodies cannot start thousands of runs or schedules: three more of each.
    const limits = await h.http('PATCH', `/admin/users/${userId}/subscription`, {
      headers: adminAuth,
      body: {
        monthlyOperationLimit: fixtures.operationsUsed + 3,
        automationLimit: fixtures.automationsUsed + 1,
      },
    });
    assert.equal(limits.status, 200, JSON.stringify(limits.body));
  });

  after(async function () {
    this.timeout(60_000);
    // A valid automation body may have created a Schedule: stop it firing during the rest of the suite.
    const automations = await h.db
      .selectFrom('automations')
      .select('schedule_id')
      .where('user_id', '=', userId)
      .execute();
    for (const { schedule_id } of automations)
      await h.client.schedule
        .getHandle(schedule_id)
        .delete()
        .catch(() => undefined);
  });

  // Inputs earlier fuzz runs found answered with a 5xx, replayed on every run.
  const REGRESSIONS: { request: Omit<FuzzRequest, 'notes'>; status: number; code?: string }[] = [
    // koa-router answered 501 to a method it does not know.
    {
      request: { method: 'TRACE', target: '/api/v1/logs', headers: {}, body: null },
      status: 405,
      code: 'method_not_allowed',
    },
    {
      request: { method: 'PROPFIND', target: '/api/v1/scrape', headers: {}, body: null },
      status: 405,
      code: 'method_not_allowed',
    },
    // A query with no term of 3+ letters compared an integer 0 with the similarity threshold passed untyped ("0.5" is not an integer).
    {
      request: { method: 'GET', target: '/api/v1/skills/directory/search?q=%210', headers: {}, body: null },
      status: 200,
    },
    {
      request: { method: 'GET', target: '/api/v1/skills/directory/search?q=ab%200', headers: {}, body: null },
      status: 200,
    },
    // A request line beyond Node's header limit was answered by Node's parser with an empty 431.
    {
      request: {
        method: 'GET',
        target: `/api/v1/skills/directory/search?=${'a'.repeat(20_000)}`,
        headers: {},
        body: null,
      },
      status: 431,
      code: 'request_too_large',
    },
    // NUL in a query value reached Postgres text.
    {
      request: { method: 'GET', target: '/api/v1/skills/directory/ai-search?q=%00', headers: {}, body: null },
      status: 400,
      code: 'validation_failed',
    },
    {
      request: { method: 'GET', target: '/api/v1/skills/directory/search?q=a%00b', headers: {}, body: null },
      status: 400,
      code: 'validation_failed',
    },
    // A host that does not resolve (NXDOMAIN from the harness's fake DNS) was a 502 upstream_unreachable: it is the caller's error.
    ...['validate', 'discover'].map((what) => ({
      request: {
        method: 'POST',
        target: `/api/v1/mcp-market/${what}`,
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify({ type: 'remote_mcp', url: 'https://a.aa', spec: { '': 'text' } })),
      },
      status: 400,
      code: 'host_not_found',
    })),
    // A remote MCP param beyond Latin-1 reached fetch as a header value ("Cannot convert argument to a ByteString"): 502 not_mcp_server.
    ...['validate', 'discover'].map((what) => ({
      request: {
        method: 'POST',
        target: `/api/v1/mcp-market/${what}`,
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify({ type: 'remote_mcp', url: 'https://a.aa', params: { $where: 'Ā' } })),
      },
      status: 400,
      code: 'invalid_source',
    })),
    {
      request: {
        method: 'POST',
        target: '/api/v1/agents/discover-mcp',
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify({ type: 'remote_mcp', url: 'https://a.aa', params: { 'X-Token': 'snow ☃' } })),
      },
      status: 400,
      code: 'invalid_source',
    },
  ];

  it('answers the inputs that earlier fuzz runs found failing', async function () {
    for (const { request, status, code } of REGRESSIONS) {
      const response = await sendRaw(h.baseUrl, {
        ...request,
        headers: { 'x-api-key': apiKey, ...request.headers },
        notes: [],
      });
      const label = `${request.method} ${request.target}`;
      assert.equal(response.status, status, `${label}: ${response.text.slice(0, 300)}`);
      if (code) assert.equal(JSON.parse(response.text).error.code, code, label);
    }
  });

  it(`answers ${TOTAL_REQUESTS}+ generated requests without a 5xx, each 4xx with the documented error body`, async function () {
    this.timeout(600_000);
    const doc = (await h.http('GET', '/api/v1/openapi.json')).body;
    const { operations, resolve, serverUrl } = operationsOf(doc);
    assert.ok(operations.length >= 10, `only ${operations.length} operations in the document`);
    // Every path parameter has an id of a fixture, so its operation is fuzzed past the 404 too.
    const withoutFixture = operations.flatMap((op) =>
      op.pathParams.filter((p) => !knownIdsFor(op, p.name, { knownIds }).length).map((p) => `${op.id} {${p.name}}`),
    );
    assert.deepEqual(withoutFixture, [], 'add a fixture for each (test/support/fuzz/fixtures.ts)');
    // Every documented body (POST, PUT and PATCH alike) is generated from its schema.
    const unparsedBodies = operations.filter(
      (op) => doc.paths[op.path][op.method.toLowerCase()].requestBody && !op.bodySchema,
    );
    assert.deepEqual(
      unparsedBodies.map((op) => op.id),
      [],
      'operations whose request body the fuzzer does not read',
    );
    const isErrorBody = new Ajv({ strict: false }).compile(resolve('#/components/schemas/ErrorResponse'));
    const ctx = {
      apiKey,
      otherApiKey,
      knownIds,
      knownHeaders: fixtures.knownHeaders,
      knownBodies: fixtures.knownBodies,
    };
    const build = (op: Operation) => requestArbitrary(op, resolve, serverUrl, ctx);
    // Nine tenths of the budget for the documented operations, one tenth for methods they do not have.
    const runsPerOperation = Math.ceil((TOTAL_REQUESTS * 0.9) / operations.length);
    const targets = [
      ...operations.map((op) => ({ id: op.id, arbitrary: build(op), runs: runsPerOperation })),
      {
        id: 'undocumented methods',
        arbitrary: undocumentedMethodRequests(operations, build),
        runs: Math.ceil(TOTAL_REQUESTS * 0.1),
      },
    ];

    let sent = 0;
    const statuses = new Map<number, number>();
    const failures: Failure[] = [];
    const crashes: unknown[] = [];
    const onCrash = (err: unknown) => crashes.push(err);
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);

    // The statuses of requests naming fixtures' ids only, with the fuzzing account's key: some must get past the lookup.
    const pastLookup: Record<string, number[]> = {};
    const pathParamsOf = (id: string) => operations.find((op) => op.id === id)?.pathParams.length ?? -1;
    const seconds = new Map<string, number>();
    const fuzzTarget = async (target: (typeof targets)[number]) => {
      const started = Date.now();
      const run = await fc.check(
        fc.asyncProperty(target.arbitrary, async (request) => {
          sent += 1;
          const response = await sendRaw(h.baseUrl, request);
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (
            request.headers['x-api-key'] === apiKey &&
            request.notes.filter((note) => note.startsWith('known ')).length === pathParamsOf(target.id)
          )
            (pastLookup[target.id] ??= []).push(response.status);
          const problem = problemWith(request, response, (body) => isErrorBody(body) as boolean);
          if (problem) throw new Error(problem);
        }),
        { numRuns: target.runs, seed: SEED, endOnFailure: false },
      );
      seconds.set(target.id, (Date.now() - started) / 1000);
      if (run.failed && run.counterexample) {
        failures.push({
          operation: target.id,
          problem: (run.errorInstance as Error | undefined)?.message ?? String(run.errorInstance),
          request: describeRequest(run.counterexample[0]),
          shrunkFrom: run.numRuns,
        });
      }
    };

    // DELETE operations last, once every other operation has had the fixtures they remove.
    const isDelete = (target: (typeof targets)[number]) => target.id.startsWith('DELETE ');
    for (const batch of [targets.filter((t) => !isDelete(t)), targets.filter(isDelete)]) {
      const queue = [...batch];
      await Promise.all(
        Array.from({ length: PARALLEL_OPERATIONS }, async () => {
          for (let target = queue.shift(); target; target = queue.shift()) await fuzzTarget(target);
        }),
      );
    }
    process.removeListener('uncaughtException', onCrash);
    process.removeListener('unhandledRejection', onCrash);

    const summary = [...statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, n]) => `${status}×${n}`)
      .join(' ');
    const slowest = [...seconds.entries()]
      .sort(([, a], [, b]) => b - a)
      .slice(0, 4)
      .map(([id, s]) => `${id} ${s.toFixed(0)}s`)
      .join(', ');
    console.log(
      `      fuzz seed ${SEED}: ${sent} requests over ${targets.length} targets; statuses ${summary}; slowest: ${slowest}`,
    );
    const report = failures.map((f) => `• ${f.operation}: ${f.problem}\n  ${f.request}`).join('\n');
    assert.equal(failures.length, 0, `seed ${SEED} (rerun with FUZZ_SEED=${SEED}):\n${report}`);
    assert.deepEqual(crashes, [], 'the process saw uncaught errors while fuzzing');
    // Past the lookup means answered: a 400/401/403 can come before the id is looked up at all
    // (the charge endpoint checks its headers and token first), so only a status below 400 counts.
    const neverAnswered = operations
      .filter((op) => op.pathParams.length > 0 && !(op.id in UNANSWERABLE))
      .filter((op) => !(pastLookup[op.id] ?? []).some((status) => status < 400))
      .map((op) => `${op.id}: ${[...new Set(pastLookup[op.id] ?? [])].sort().join(',')}`);
    assert.deepEqual(neverAnswered, [], "operations never answered below 400 with a fixture's id");
    assert.ok(sent >= TOTAL_REQUESTS, `only ${sent} requests were sent`);
    const health = await h.http('GET', '/health');
    assert.equal(health.status, 200, 'the service is not healthy after fuzzing');
  });
});
