import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';
import { compileUntrustedSchema, UntrustedSchemaError } from '../../lib/json-schema/untrusted';
import { toRe2Syntax } from '../../lib/json-schema/linear-regexp';
import { startApiProcess } from '../support/stack/api-process';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { approvedEntry, storeValidation } from '../support/market';
import { act } from '../support/agent-script';
import { startWorkerProcess } from '../support/stack/worker-process';

/**
 * Issue 20, "provider-written schemas cannot hurt the platform". Schemas written by providers (a
 * listing's requiredUserParamsSchema, an agent's inputSchema, an MCP server's outputSchema) and by
 * users (structured_output) run on the platform: a pattern like ^(a+)+$ against 'a'×40 + '!' takes
 * a backtracking engine longer than the universe has; here it must answer at once while the API
 * keeps serving others, and a schema's $id must never break another schema or a second request.
 *
 * The API (and, for structured_output, the worker) under attack run as their own processes, so a
 * stalled event loop shows as a test that times out instead of a frozen test runner.
 */
const EVIL = `${'a'.repeat(40)}!`;
const CATASTROPHIC = '^(a+)+$';

describe('market trust: provider-written schemas cannot hurt the platform', function () {
  const stacks = stoppedAfter();
  this.timeout(120_000);
  let h: Harness;
  let api: { child: ChildProcess; baseUrl: string };
  let provider: { userId: string; apiKey: string };
  let consumer: { userId: string; apiKey: string };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    api = await startApiProcess(h.env);
    provider = await h.createUser({ creditUsd: 0 });
    consumer = await h.createUser({ creditUsd: 5 });
  });

  after(() => {
    // SIGKILL: a process whose event loop is stuck cannot run a SIGTERM handler.
    if (api?.child.exitCode === null) api.child.kill('SIGKILL');
  });

  /** The attack through the API process, and a /health request sent while it is in flight: both must answer. */
  async function whileServingOthers<T>(attack: () => Promise<T>): Promise<T> {
    const pending = attack();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const [result, health] = await Promise.all([pending, fetch(`${api.baseUrl}/health`)]);
    assert.equal(health.status, 200, 'the API kept serving other requests');
    return result;
  }

  const apiHttp = async (method: string, path: string, apiKey: string, body?: unknown) => {
    const response = await fetch(`${api.baseUrl}${path}`, {
      method,
      headers: { 'x-api-key': apiKey, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  it("a provider's params pattern checks a consumer's credential values in linear time", async function () {
    const schema = {
      type: 'object',
      properties: { code: { type: 'string', pattern: CATASTROPHIC } },
      required: ['code'],
    };
    const { entryId } = await approvedEntry(h, provider, { requiredUserParamsSchema: schema });
    const refused = await whileServingOthers(() =>
      apiHttp('POST', `/api/v1/mcp-market/mcps/${entryId}/credentials`, consumer.apiKey, { params: { code: EVIL } }),
    );
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'invalid_params');
    assert.deepEqual(
      refused.body.error.details.map((d: { path: string }) => d.path),
      ['body/params/code'],
    );
    const accepted = await apiHttp('POST', `/api/v1/mcp-market/mcps/${entryId}/credentials`, consumer.apiKey, {
      params: { code: 'aaaa' },
    });
    assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
  });

  it("an agent-market inputSchema pattern checks a run's inputs in linear time", async function () {
    const created = await h.http('POST', '/api/v1/agent-market/submissions', {
      apiKey: provider.apiKey,
      body: {
        name: `Code checker ${randomBytes(3).toString('hex')}`,
        suggestedLlmProvider: 'service',
        suggestedLlmModel: 'gpt-4o-mini',
        runMode: 'template',
        systemPrompt: 'Check the code.',
        promptTemplate: 'Check {{code}}',
        inputSchema: {
          type: 'object',
          properties: { code: { type: 'string', pattern: CATASTROPHIC } },
          required: ['code'],
        },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(
      (await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, { apiKey: provider.apiKey }))
        .status,
      200,
    );
    const reviewed = await h.http('POST', `/admin/market/agent/submissions/${created.body.id}/review`, {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { action: 'approve' },
    });
    assert.equal(reviewed.status, 200, JSON.stringify(reviewed.body));
    const refused = await whileServingOthers(() =>
      apiHttp('POST', `/api/v1/agent-market/agents/${created.body.publicId}/run`, consumer.apiKey, {
        inputs: { code: EVIL },
      }),
    );
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'invalid_inputs');
  });

  describe('in the worker', function () {
    let worker: ChildProcess | undefined;
    let baseUrl: string;
    let upstream: http.Server;
    let upstreamUrl: string;

    before(async function () {
      this.timeout(180_000);
      const suffix = randomBytes(3).toString('hex');
      const taskQueues = { platform: `trust-platform-${suffix}`, browser: `trust-browser-${suffix}` };
      ({ baseUrl } = stacks.add(await h.startIsolatedStack({ taskQueues, queues: ['browser'] })));
      worker = await startWorkerProcess({
        ...h.env,
        PLATFORM_TASK_QUEUE: taskQueues.platform,
        BROWSER_TASK_QUEUE: taskQueues.browser,
        WORKER_QUEUES: 'platform',
      });
      // A user's own MCP server whose tool declares a catastrophic pattern in its outputSchema and answers a value that trips it.
      const build = () => {
        const server = new Server({ name: 'hostile-output', version: '1.0.0' }, { capabilities: { tools: {} } });
        server.setRequestHandler('tools/list', async () => ({
          tools: [
            {
              name: 'lookup_code',
              description: 'Returns the code registered for a product name.',
              inputSchema: {
                type: 'object' as const,
                properties: { product: { type: 'string', description: 'Product name' } },
                required: ['product'],
              },
              outputSchema: {
                type: 'object' as const,
                properties: { code: { type: 'string', pattern: CATASTROPHIC } },
                required: ['code'],
              },
            },
          ],
        }));
        server.setRequestHandler('tools/call', async () => ({
          content: [{ type: 'text' as const, text: EVIL }],
          structuredContent: { code: EVIL },
        }));
        return server;
      };
      const handler = toNodeHandler(createMcpHandler(build));
      upstream = http.createServer((req, res) => void handler(req, res));
      await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
      upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
    });

    after(async () => {
      if (worker?.exitCode === null) worker.kill('SIGKILL');
      h.llm.reset();
      upstream?.closeAllConnections();
      await new Promise((resolve) => upstream?.close(resolve));
    });

    it("a structured_output pattern checks the model's answer in linear time", async function () {
      const { apiKey } = await h.createUser({ creditUsd: 1 });
      h.llm.enqueue({ json: { code: EVIL } }, { json: { code: EVIL } });
      const structured_output = {
        type: 'object',
        properties: { code: { type: 'string', pattern: CATASTROPHIC } },
        required: ['code'],
        additionalProperties: false,
      };
      const accepted = await h.http('POST', `${baseUrl}/api/v1/scrape`, {
        apiKey,
        body: { url: `${h.site.url}/static`, structured_output },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const job = await h.waitForJob(apiKey, `${baseUrl}/api/v1/scrape/status/${accepted.body.jobId}`);
      assert.equal(job.status, 'failed', 'two answers that miss the pattern');
      assert.match(job.error, /Extraction failed/);
    });

    it("an MCP server's outputSchema pattern checks its tool's result in linear time", async function () {
      const { apiKey } = await h.createUser({ creditUsd: 1 });
      h.llm.enqueue(act('lookup_code', { product: 'widget' }), act('done', { success: true, answer: 'looked up' }));
      const accepted = await h.http('POST', `${baseUrl}/api/v1/agents/run`, {
        apiKey,
        body: {
          task: 'Look up the code of the widget',
          llm_model: 'gpt-4o-mini',
          custom_mcps: [{ type: 'remote_mcp', name: 'codes', source_url: upstreamUrl }],
        },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const run = await h.waitForJob(apiKey, `${baseUrl}/api/v1/agents/runs/${accepted.body.jobId}`);
      assert.equal(run.status, 'completed', run.error);
      assert.equal(run.toolCalls.length, 1, JSON.stringify(run.toolCalls));
      assert.notEqual(
        run.toolCalls[0].status,
        'completed',
        'an answer that misses its own outputSchema is not a result',
      );
    });
  });

  it('refuses at submission, with a clear 400, patterns that cannot run in linear time', async function () {
    const validation = await storeValidation(h, provider.userId);
    const submit = (pattern: string) =>
      h.http('POST', '/api/v1/mcp-market/submissions', {
        apiKey: provider.apiKey,
        body: {
          validationId: validation.id,
          sourceFingerprint: validation.sourceFingerprint,
          type: 'remote_mcp',
          name: `Weather ${randomBytes(3).toString('hex')}`,
          description: 'Current weather, forecasts and air quality for any city',
          remoteMcpUrl: validation.url,
          monetizationStrategy: 'free',
          requiredUserParamsSchema: { type: 'object', properties: { code: { type: 'string', pattern } } },
        },
      });
    const backreference = await submit('^(a)\\1$');
    assert.equal(backreference.status, 400, JSON.stringify(backreference.body));
    assert.equal(backreference.body.error.code, 'invalid_params_schema');
    assert.match(backreference.body.error.message, /backreferences are not supported/);
    const lookahead = await submit('^(?=a)a$');
    assert.equal(lookahead.body.error.code, 'invalid_params_schema');
    assert.match(lookahead.body.error.message, /lookahead and lookbehind are not supported/);
    assert.equal(
      (await submit('^[A-Z]{2}-\\u0041\\d{3}$')).status,
      201,
      'the usual ECMA-262 syntax, \\u escapes included',
    );

    const scrape = await h.http('POST', '/api/v1/scrape', {
      apiKey: consumer.apiKey,
      body: {
        url: `${h.site.url}/static`,
        structured_output: { type: 'object', properties: { a: { type: 'string', pattern: '(?<!x)a' } } },
      },
    });
    assert.equal(scrape.status, 400);
    assert.match(JSON.stringify(scrape.body.error.details), /lookahead and lookbehind are not supported/);
  });

  it("compiles each schema on its own: a second credential and another provider's same $id never fail, and no schema reaches another", async function () {
    const shared = 'https://schemas.example/params.json';
    const first = await approvedEntry(h, provider, {
      requiredUserParamsSchema: {
        $id: shared,
        type: 'object',
        properties: { region: { type: 'string' } },
        required: ['region'],
      },
    });
    const other = await h.createUser({ creditUsd: 0 });
    const second = await approvedEntry(h, other, {
      requiredUserParamsSchema: {
        $id: shared,
        type: 'object',
        properties: { city: { type: 'string', maxLength: 20 } },
        required: ['city'],
      },
    });
    for (let i = 0; i < 2; i++) {
      const one = await apiHttp('POST', `/api/v1/mcp-market/mcps/${first.entryId}/credentials`, consumer.apiKey, {
        params: { region: 'eu' },
      });
      assert.equal(one.status, 201, `credential ${i + 1} of the first entry: ${JSON.stringify(one.body)}`);
      const two = await apiHttp('POST', `/api/v1/mcp-market/mcps/${second.entryId}/credentials`, consumer.apiKey, {
        params: { city: 'Lisbon' },
      });
      assert.equal(two.status, 201, `credential ${i + 1} of the second entry: ${JSON.stringify(two.body)}`);
    }
    const tooLong = await apiHttp('POST', `/api/v1/mcp-market/mcps/${second.entryId}/credentials`, consumer.apiKey, {
      params: { city: 'x'.repeat(21) },
    });
    assert.equal(tooLong.body.error.code, 'invalid_params', 'each entry is checked by its own schema');

    // A third schema cannot borrow the first by its $id.
    const validation = await storeValidation(h, provider.userId);
    const borrowing = await h.http('POST', '/api/v1/mcp-market/submissions', {
      apiKey: provider.apiKey,
      body: {
        validationId: validation.id,
        sourceFingerprint: validation.sourceFingerprint,
        type: 'remote_mcp',
        name: `Weather ${randomBytes(3).toString('hex')}`,
        description: 'Current weather, forecasts and air quality for any city',
        remoteMcpUrl: validation.url,
        monetizationStrategy: 'free',
        requiredUserParamsSchema: {
          type: 'object',
          properties: { region: { type: 'string', $ref: `${shared}#/properties/region` } },
        },
      },
    });
    assert.equal(borrowing.status, 400);
    assert.equal(borrowing.body.error.code, 'invalid_params_schema');
    assert.match(borrowing.body.error.message, /only references inside the schema/);
  });

  it('refuses reference loops and reference bombs in a structured_output before anything runs', async function () {
    const post = (structured_output: unknown) =>
      h.http('POST', '/api/v1/scrape', {
        apiKey: consumer.apiKey,
        body: { url: `${h.site.url}/static`, structured_output },
      });
    const loop = await post({ type: 'object', allOf: [{ $ref: '#' }] });
    assert.equal(loop.status, 400);
    assert.match(JSON.stringify(loop.body.error.details), /refers back to itself/);
    const $defs: Record<string, unknown> = { d30: { type: 'string' } };
    for (let i = 0; i < 30; i++)
      $defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    const bomb = await post({ type: 'object', properties: { a: { $ref: '#/$defs/d0' } }, $defs });
    assert.equal(bomb.status, 400);
    assert.match(JSON.stringify(bomb.body.error.details), /expands, through its references, to more than/);
    const nested = await post({
      type: 'object',
      properties: { a: { $id: 'https://schemas.example/a', type: 'string' } },
    });
    assert.equal(nested.status, 400);
    assert.match(JSON.stringify(nested.body.error.details), /\$id is only allowed at the root/);
  });

  describe('compileUntrustedSchema', function () {
    it('keeps each pattern of a schema its own', () => {
      const validate = compileUntrustedSchema({
        type: 'object',
        properties: { a: { type: 'string', pattern: '^a$' }, b: { type: 'string', pattern: '^b$' } },
        patternProperties: { '^x-': { type: 'integer' } },
      });
      assert.equal(validate({ a: 'a', b: 'b', 'x-n': 1 }), true);
      assert.equal(validate({ a: 'b', b: 'b' }), false);
      assert.equal(validate({ a: 'a', b: 'a' }), false);
      assert.equal(validate({ a: 'a', b: 'b', 'x-n': 'one' }), false);
    });

    it('reuses the validator of the same content, and refuses a known bad schema again without compiling it', () => {
      const schema = () => ({
        type: 'object',
        properties: { n: { type: 'integer', minimum: 1 } },
        title: `cache-${randomBytes(4).toString('hex')}`,
      });
      const one = schema();
      const first = compileUntrustedSchema(one);
      assert.equal(compileUntrustedSchema(structuredClone(one)), first, 'same content, same validator');
      assert.equal(
        compileUntrustedSchema({ title: one.title, properties: one.properties, type: 'object' }),
        first,
        'key order does not matter',
      );
      assert.notEqual(compileUntrustedSchema(schema()), first);
      const bad = { type: 'object', properties: { a: { type: 'string', pattern: '(a)\\1' } } };
      assert.throws(() => compileUntrustedSchema(bad), UntrustedSchemaError);
      assert.throws(
        () => compileUntrustedSchema(bad),
        (error: unknown) => error instanceof UntrustedSchemaError && /backreferences/.test(error.message),
      );
    });

    it('keeps at most 500 validators', () => {
      const schemaOf = (i: number) => ({
        type: 'object',
        properties: { n: { type: 'integer', maximum: i } },
        title: `bound-${i}`,
      });
      const first = compileUntrustedSchema(schemaOf(0));
      for (let i = 1; i <= 500; i++) compileUntrustedSchema(schemaOf(i));
      assert.notEqual(compileUntrustedSchema(schemaOf(0)), first, 'the least recently used validator was dropped');
    });

    it('reads ECMA-262 \\u escapes', () => {
      assert.equal(toRe2Syntax('^\\u0041\\u{1F600}\\uD83D\\uDE00\\\\u0041$'), '^\\x{41}\\x{1F600}\\x{1f600}\\\\u0041$');
      const validate = compileUntrustedSchema({ type: 'string', pattern: '^[\\u0041-\\u005A]+\\uD83D\\uDE00$' });
      assert.equal(validate('ABC😀'), true);
      assert.equal(validate('abc😀'), false);
    });
  });
});
