// Network rule: every packet in this file goes to 127.0.0.0/8. Other names resolve only through stub resolvers.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

import { parseNetworkAllowlist, type Resolver } from '../../lib/net/ssrf';
import { discoverTools } from '../../lib/tools/discovery';
import { ToolCallError, ToolSourceError } from '../../lib/tools/errors';
import { openToolSource, openToolSourceForCall, type ToolRuntimeDeps } from '../../lib/tools/source';
import { selectionFromCustomMcp } from '../../lib/tools/selection';
import type { DiscoveryResult, ToolSourceSpec } from '../../lib/tools/types';
import { startInternalTarget } from '../support/fakes/mcp-internal-target';
import { LARGE_RESULT_BYTES, startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { startSseMcpServer, type TestSseMcpServer } from '../support/fakes/mcp-sse-server';
import { createTestCertificates, type TestCertificates } from '../support/mcp-tls';
import {
  API_KEY,
  BASIC_PASSWORD,
  BASIC_USER,
  BEARER_TOKEN,
  COOKIE_KEY,
  QUERY_KEY,
  startOpenApiServer,
  type TestOpenApiServer,
} from '../support/openapi-api';

const policy = parseNetworkAllowlist('127.0.0.1,localhost');
const deps: ToolRuntimeDeps = { policy };

async function rejection<T extends Error>(promise: Promise<unknown>, type: new (...args: any[]) => T): Promise<T> {
  try {
    await promise;
  } catch (error) {
    assert.ok(
      error instanceof type,
      `expected ${type.name}, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
    );
    return error as T;
  }
  assert.fail(`expected a ${type.name}`);
}

const toolNamed = (discovery: DiscoveryResult, name: string) => {
  const tool = discovery.tools.find((t) => t.name === name);
  assert.ok(tool, `no tool ${name} in ${discovery.tools.map((t) => t.name).join(', ')}`);
  return tool;
};

describe('tool runtime: remote MCP', () => {
  let current: TestMcpServer;
  let era2025: TestMcpServer;
  let guarded: TestMcpServer;
  let legacy: TestSseMcpServer;

  before(async () => {
    [current, era2025, guarded, legacy] = await Promise.all([
      startMcpServer({ era: 'current' }),
      startMcpServer({ era: '2025' }),
      startMcpServer({ bearerToken: 'mcp-token-31415' }),
      startSseMcpServer(),
    ]);
  });
  after(async () => Promise.all([current.close(), era2025.close(), guarded.close(), legacy.close()]));

  it('discovers a server of the current stateless revision over Streamable HTTP, with and without annotations', async () => {
    const discovery = await discoverTools({ type: 'remote_mcp', url: current.url }, deps);
    assert.equal(discovery.title, 'test-mcp-current');
    assert.equal(discovery.description, 'Test tools for the platform test-suite.');
    assert.deepEqual(discovery.source, {
      type: 'remote_mcp',
      transport: 'streamable_http',
      protocolVersion: '2026-07-28',
      server: { name: 'test-mcp-current', version: '1.0.0' },
      authRequired: false,
    });
    assert.deepEqual(discovery.tools.map((t) => t.name).sort(), ['add', 'echo', 'fail', 'increment', 'large', 'slow']);
    const echo = toolNamed(discovery, 'echo');
    assert.deepEqual(echo.annotations, { title: 'Echo', readOnlyHint: true, openWorldHint: false });
    assert.deepEqual(echo.inputSchema, {
      type: 'object',
      properties: { message: { type: 'string', description: 'Text to send back' } },
      required: ['message'],
    });
    assert.equal(toolNamed(discovery, 'add').annotations, undefined);
    assert.deepEqual(toolNamed(discovery, 'increment').annotations, {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
    });
    assert.deepEqual(discovery.params, []);
  });

  it('speaks the 2025 revisions to a server that knows only those', async () => {
    const discovery = await discoverTools({ type: 'remote_mcp', url: era2025.url }, deps);
    assert.equal(discovery.source.transport, 'streamable_http');
    assert.match(discovery.source.protocolVersion ?? '', /^2025-/);
    assert.equal(discovery.tools.length, 6);
    const source = await openToolSource({ type: 'remote_mcp', url: era2025.url }, deps);
    try {
      // The tool's structured content comes back as sent, beside the text.
      assert.deepEqual(await source.call('add', { a: 2, b: 40 }), {
        isError: false,
        text: '42',
        truncated: false,
        structuredContent: { sum: 42 },
      });
    } finally {
      await source.close();
    }
  });

  it('falls back to the legacy HTTP+SSE transport when the server offers only that', async () => {
    const discovery = await discoverTools({ type: 'remote_mcp', url: legacy.url }, deps);
    assert.equal(discovery.source.transport, 'sse');
    assert.equal(discovery.source.protocolVersion, '2024-11-05');
    assert.equal(discovery.title, 'legacy-sse-server');
    assert.deepEqual(
      discovery.tools.map((t) => t.name),
      ['legacy_echo', 'legacy_increment'],
    );
    assert.deepEqual(toolNamed(discovery, 'legacy_echo').annotations, { readOnlyHint: true });
    const source = await openToolSource({ type: 'remote_mcp', url: legacy.url }, deps);
    try {
      assert.equal((await source.call('legacy_echo', { message: 'over SSE' })).text, 'legacy echo: over SSE');
    } finally {
      await source.close();
    }
    assert.ok(legacy.requests.some((r) => r.method === 'GET' && r.path === '/sse'));
    assert.ok(legacy.requests.some((r) => r.method === 'POST' && r.path === '/messages'));
  });

  it('reports what an auth-protected server wants instead of failing, and uses the credential once given', async () => {
    for (const params of [undefined, { Authorization: 'Bearer not-the-token' }]) {
      const discovery = await discoverTools({ type: 'remote_mcp', url: guarded.url, params }, deps);
      assert.deepEqual(discovery.tools, []);
      assert.equal(discovery.source.authRequired, true);
      assert.equal(discovery.params.length, 1);
      assert.deepEqual(
        { ...discovery.params[0], description: undefined },
        { name: 'Authorization', in: 'header', required: true, secret: true, description: undefined },
      );
      assert.match(discovery.params[0].description, /Bearer/);
    }
    // A bare token gets the Bearer scheme.
    const discovery = await discoverTools(
      { type: 'remote_mcp', url: guarded.url, params: { Authorization: 'mcp-token-31415' } },
      deps,
    );
    assert.equal(discovery.source.authRequired, false);
    assert.equal(discovery.tools.length, 6);
    assert.deepEqual(
      discovery.params.map((p) => [p.name, p.in, p.secret]),
      [['Authorization', 'header', true]],
    );
    assert.equal(guarded.requests.at(-1)?.headers.authorization, 'Bearer mcp-token-31415');
  });

  it('returns tool results as text: errors flagged, structured content kept, big results cut with a note', async () => {
    const source = await openToolSource({ type: 'remote_mcp', url: current.url }, deps);
    try {
      assert.deepEqual(await source.call('echo', { message: 'hello' }), {
        isError: false,
        text: 'echo: hello',
        truncated: false,
      });
      assert.deepEqual(await source.call('fail', {}), {
        isError: true,
        text: 'the widget store is on fire',
        truncated: false,
      });
      const large = await source.call('large', {});
      assert.equal(large.truncated, true);
      assert.ok(Buffer.byteLength(large.text) < 51_500, `result is ${Buffer.byteLength(large.text)} bytes`);
      assert.match(
        large.text,
        new RegExp(`\\[Result cut: showing the first 51200 of ${LARGE_RESULT_BYTES} bytes\\.\\]$`),
      );
      assert.ok(!large.text.includes('END'));
      const unknown = await rejection(source.call('no_such_tool', {}), ToolCallError);
      assert.equal(unknown.kind, 'unknown_tool');
      assert.equal(unknown.retryable, false);
    } finally {
      await source.close();
    }
    const small = await openToolSource(
      { type: 'remote_mcp', url: current.url, toolNames: ['large'] },
      { ...deps, maxResultBytes: 1000 },
    );
    try {
      assert.deepEqual(
        small.tools.map((t) => t.name),
        ['large'],
      );
      const cut = await small.call('large', { bytes: 5000 });
      assert.ok(cut.text.startsWith('L'.repeat(1000) + '\n\n[Result cut: showing the first 1000 of 5000 bytes.]'));
    } finally {
      await small.close();
    }
  });
});

describe('tool runtime: OpenAPI', () => {
  let api: TestOpenApiServer;
  before(async () => (api = await startOpenApiServer()));
  after(() => api.close());

  it('turns an OpenAPI 3.1 YAML document into tools: names, parameters, body, descriptions, annotations', async () => {
    const discovery = await discoverTools({ type: 'openapi', specText: api.openapiYaml }, deps);
    assert.equal(discovery.title, 'Inventory API');
    assert.equal(discovery.description, 'Items of a small warehouse.');
    assert.deepEqual(discovery.source, {
      type: 'openapi',
      specification: 'OpenAPI 3.1.0',
      serverUrl: api.apiBase,
      authRequired: false,
    });
    const getItem = toolNamed(discovery, 'getItem');
    assert.equal(getItem.description, 'Read one item\n\nReturns the item with its stock level.');
    assert.deepEqual(getItem.inputSchema, {
      type: 'object',
      properties: {
        itemId: { type: 'string', description: "The item's id" },
        verbose: { type: 'boolean' },
        'X-Trace-Id': { type: 'string', description: 'Correlation id echoed back' },
      },
      required: ['itemId'],
      additionalProperties: false,
    });
    assert.deepEqual(getItem.annotations, { readOnlyHint: true, idempotentHint: true });
    // operationId "create item!" is sanitised; an operation without one is named by method and path.
    const create = toolNamed(discovery, 'create_item');
    assert.deepEqual((create.inputSchema as any).required, ['body']);
    assert.deepEqual((create.inputSchema as any).properties.body.required, ['name']);
    assert.deepEqual(create.annotations, { readOnlyHint: false, idempotentHint: false });
    assert.deepEqual(toolNamed(discovery, 'get_items').annotations, { readOnlyHint: true, idempotentHint: true });
    assert.deepEqual(toolNamed(discovery, 'replaceItem').annotations, { readOnlyHint: false, idempotentHint: true });
    assert.deepEqual(toolNamed(discovery, 'deleteItem').annotations, {
      readOnlyHint: false,
      idempotentHint: true,
      destructiveHint: true,
    });
    for (const tool of discovery.tools) assert.match(tool.name, /^[A-Za-z0-9_-]{1,64}$/);
    // A recursive schema is cut at its second occurrence and stays plain JSON.
    const category = (toolNamed(discovery, 'replaceCategory').inputSchema as any).properties.body;
    assert.equal(category.properties.children.items.description, 'Recursive Category (not expanded further)');
    assert.doesNotThrow(() => JSON.stringify(discovery));
    assert.deepEqual(
      discovery.params.map((p) => [p.name, p.in, p.required, p.secret]),
      [
        ['X-API-Key', 'header', true, true],
        ['api_key', 'query', true, true],
        ['session', 'cookie', true, true],
        ['Authorization', 'header', true, true],
      ],
    );
    assert.match(discovery.params[3].description, /Bearer token.*Or: HTTP Basic/s);
  });

  it('reads the same document as an object, as YAML by URL, and a Swagger 2.0 JSON document as text and by URL', async () => {
    const fromText = await discoverTools({ type: 'openapi', specText: api.openapiYaml }, deps);
    const fromObject = await discoverTools({ type: 'openapi', spec: parseYaml(api.openapiYaml) }, deps);
    const fromUrl = await discoverTools({ type: 'openapi', url: api.openapiYamlUrl }, deps);
    assert.deepEqual(fromObject.tools, fromText.tools);
    assert.deepEqual(fromUrl.tools, fromText.tools);

    for (const spec of [{ specText: api.swaggerJson }, { url: api.swaggerJsonUrl }]) {
      const swagger = await discoverTools({ type: 'openapi', ...spec }, deps);
      assert.equal(swagger.source.specification, 'Swagger 2.0');
      assert.equal(swagger.source.serverUrl, api.apiBase);
      assert.deepEqual(
        swagger.tools.map((t) => t.name),
        ['getItem', 'createItem', 'whoAmIQuery', 'whoAmIBasic'],
      );
      assert.deepEqual(Object.keys((toolNamed(swagger, 'getItem').inputSchema as any).properties), [
        'itemId',
        'verbose',
        'X-Trace-Id',
      ]);
      assert.deepEqual((toolNamed(swagger, 'createItem').inputSchema as any).properties.body.required, ['name']);
      assert.deepEqual(
        swagger.params.map((p) => [p.name, p.in, p.required]),
        [
          ['X-API-Key', 'header', true],
          ['api_key', 'query', true],
          ['Authorization', 'header', true],
        ],
      );
    }
  });

  it('makes names unique within 64 characters and lists server URL variables as params', async () => {
    const long = 'x'.repeat(80);
    const spec = {
      openapi: '3.0.3',
      info: { title: 'Names', version: '1' },
      servers: [
        {
          url: 'https://{region}.api.example.com/v1',
          variables: { region: { default: 'eu', enum: ['eu', 'us'], description: 'Data region' } },
        },
      ],
      paths: {
        '/a': {
          get: { operationId: long, responses: { 200: { description: 'ok' } } },
          post: { operationId: long, responses: { 200: { description: 'ok' } } },
        },
        '/b/{id}/c.json': {
          get: {
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
            responses: { 200: { description: 'ok' } },
          },
        },
      },
    };
    const discovery = await discoverTools({ type: 'openapi', spec }, deps);
    assert.deepEqual(
      discovery.tools.map((t) => t.name),
      ['x'.repeat(64), `${'x'.repeat(62)}_2`, 'get_b_id_c_json'],
    );
    assert.equal(discovery.source.serverUrl, 'https://eu.api.example.com/v1');
    assert.deepEqual(discovery.params, [
      {
        name: 'region',
        in: 'server',
        required: false,
        secret: false,
        description: 'Data region. Server URL variable {region}, default "eu". One of: eu, us.',
      },
    ]);
  });

  it('refuses what is not a valid Swagger 2.0 / OpenAPI 3.x document', async () => {
    for (const spec of [
      { specText: 'just: [some, yaml' },
      { specText: '{"openapi": "3.1.0"}' },
      { spec: { hello: 'world' } },
      { specText: 'openapi: 4.0.0\ninfo: {title: x, version: "1"}\npaths: {}' },
    ] as Partial<ToolSourceSpec>[]) {
      const error = await rejection(discoverTools({ type: 'openapi', ...spec }, deps), ToolSourceError);
      assert.equal(error.code, 'invalid_openapi', JSON.stringify(spec));
    }
  });

  it('reports a document URL that answers an error status as an upstream error', async () => {
    // The body of the 404 is dropped unread: cancelling a streamed response must not crash the process.
    const error = await rejection(
      discoverTools({ type: 'openapi', url: `${api.origin}/missing.yaml` }, deps),
      ToolSourceError,
    );
    assert.equal(error.code, 'upstream_error');
    assert.equal(error.message, 'The OpenAPI document URL answered HTTP 404');
    await new Promise((resolve) => setTimeout(resolve, 100));
  });

  it('calls operations with path, query, header and body arguments and each kind of credential', async () => {
    const source = await openToolSource(
      {
        type: 'openapi',
        specText: api.openapiYaml,
        params: {
          'X-API-Key': API_KEY,
          api_key: QUERY_KEY,
          session: COOKIE_KEY,
          Authorization: BEARER_TOKEN,
          basicAuth: `${BASIC_USER}:${BASIC_PASSWORD}`,
        },
      },
      deps,
    );
    const seen = () => api.apiRequests().at(-1)!;
    const item = await source.call('getItem', { itemId: 'shelf/7', verbose: true, 'X-Trace-Id': 'trace-1' });
    assert.deepEqual(JSON.parse(item.text), {
      id: 'shelf/7',
      name: 'Blue widget',
      stock: 12,
      verbose: 'true',
      trace: 'trace-1',
    });
    assert.equal(seen().path, '/api/items/shelf%2F7');
    assert.equal(seen().headers['x-api-key'], API_KEY);

    const created = await source.call('create_item', { body: { name: 'Red widget', tags: ['new'] } });
    assert.equal(created.isError, false);
    assert.deepEqual(JSON.parse(seen().body), { name: 'Red widget', tags: ['new'] });
    assert.equal(seen().headers['content-type'], 'application/json');

    await source.call('get_items', { tag: ['a', 'b'], limit: 5 });
    assert.deepEqual(seen().query, { tag: ['a', 'b'], limit: ['5'] });

    assert.equal((await source.call('whoAmIQuery', {})).text, '{"ok":true,"via":"query-key"}');
    assert.deepEqual(seen().query, { api_key: [QUERY_KEY] });
    assert.equal((await source.call('whoAmICookie', {})).text, '{"ok":true,"via":"cookie"}');
    assert.equal(seen().headers.cookie, `session=${COOKIE_KEY}`);
    assert.equal((await source.call('whoAmIBearer', {})).text, '{"ok":true,"via":"bearer"}');
    assert.equal(seen().headers.authorization, `Bearer ${BEARER_TOKEN}`);
    assert.equal((await source.call('whoAmIBasic', {})).text, '{"ok":true,"via":"basic"}');
    // An operation with `security: []` gets no credential at all.
    await source.call('health', {});
    assert.equal(seen().headers['x-api-key'], undefined);

    const swagger = await openToolSource(
      {
        type: 'openapi',
        specText: api.swaggerJson,
        params: { 'X-API-Key': API_KEY, Authorization: `${BASIC_USER}:${BASIC_PASSWORD}` },
      },
      deps,
    );
    assert.equal((await swagger.call('createItem', { body: { name: 'From Swagger' } })).isError, false);
    assert.deepEqual(JSON.parse(seen().body), { name: 'From Swagger' });
    assert.equal((await swagger.call('whoAmIBasic', {})).text, '{"ok":true,"via":"basic"}');
  });

  it('answers HTTP errors, binary and large bodies as text the model can use', async () => {
    const source = await openToolSource(
      { type: 'openapi', url: api.openapiYamlUrl, params: { 'X-API-Key': API_KEY } },
      deps,
    );
    const unauthorized = await source.call('whoAmIBearer', {});
    assert.deepEqual(unauthorized, {
      isError: true,
      text: 'HTTP 401 Unauthorized\n{"error":"missing or wrong credentials"}',
      truncated: false,
    });
    assert.deepEqual(await source.call('getLabel', {}), {
      isError: false,
      text: '[binary body: 29 bytes of image/png]',
      truncated: false,
    });
    const report = await source.call('getReport', { lines: 3000 });
    assert.equal(report.truncated, true);
    assert.match(report.text, /^line 1: stock/);
    assert.match(report.text, /\[Result cut: showing the first 51200 of \d+ bytes\.\]$/);
    const before = api.apiRequests().length;
    const missing = await rejection(source.call('getItem', {}), ToolCallError);
    assert.equal(missing.kind, 'invalid_arguments');
    assert.match(missing.message, /itemId/);
    const injected = await rejection(
      source.call('getItem', { itemId: '1', 'X-Trace-Id': 'a\r\nX-Admin: yes' }),
      ToolCallError,
    );
    assert.deepEqual([injected.kind, injected.retryable], ['invalid_arguments', false]);
    assert.equal(api.apiRequests().length, before, 'nothing was sent');
  });
});

describe('tool runtime: custom selections', () => {
  it('maps a CustomMcpSelectionRequest to a source: an inline document with source_url as its base URL, else source_url as the document', () => {
    const params = { 'X-API-Key': 'k' };
    assert.deepEqual(
      selectionFromCustomMcp(
        { type: 'remote_mcp', name: 'Tools', source_url: 'https://mcp.example.com/mcp', tool_names: ['echo'] },
        params,
      ),
      {
        type: 'remote_mcp',
        url: 'https://mcp.example.com/mcp',
        name: 'Tools',
        toolNames: ['echo'],
        params,
      },
    );
    assert.deepEqual(
      selectionFromCustomMcp({ type: 'openapi', source_url: 'https://api.example.com/openapi.yaml' }, {}),
      {
        type: 'openapi',
        url: 'https://api.example.com/openapi.yaml',
        name: undefined,
        toolNames: [],
        params: {},
      },
    );
    assert.deepEqual(
      selectionFromCustomMcp(
        { type: 'openapi', openapi_spec: 'openapi: 3.1.0', source_url: 'https://api.example.com/v1' },
        {},
      ),
      {
        type: 'openapi',
        specText: 'openapi: 3.1.0',
        baseUrl: 'https://api.example.com/v1',
        name: undefined,
        toolNames: [],
        params: {},
      },
    );
    assert.deepEqual(
      selectionFromCustomMcp({ type: 'openapi', openapi_spec: { openapi: '3.1.0' }, source_url: null }, {}).spec,
      { openapi: '3.1.0' },
    );
  });
});

describe('tool runtime: retries only what is safe', () => {
  it('tells a call that never reached the server from one that may have', async () => {
    const server = await startMcpServer();
    const source = await openToolSource({ type: 'remote_mcp', url: server.url }, { ...deps, callTimeoutMs: 400 });
    try {
      // In flight when the timeout hits: it reached the server.
      const slow = await rejection(source.call('slow', { ms: 2000 }), ToolCallError);
      assert.deepEqual(
        [slow.kind, slow.reached, slow.retryable],
        ['timeout', true, true],
        'read-only: may be repeated',
      );
      const increment = await rejection(source.call('increment', { delayMs: 2000 }), ToolCallError);
      assert.deepEqual(
        [increment.kind, increment.reached, increment.retryable],
        ['timeout', true, false],
        'not idempotent: never resent',
      );
      // The server goes away: the next call is refused at connect and never reaches anything.
      await server.close();
      const refused = await rejection(source.call('increment', {}), ToolCallError);
      assert.deepEqual([refused.kind, refused.reached, refused.retryable], ['not_delivered', false, true]);
      assert.equal(server.incrementCalls(), 1);
    } finally {
      await source.close();
    }
  });

  it('classifies a refused connection and a DNS failure as not delivered, before and during a call', async () => {
    const closed = await startMcpServer();
    const deadUrl = closed.url;
    await closed.close();
    const opening = await rejection(openToolSourceForCall({ type: 'remote_mcp', url: deadUrl }, deps), ToolCallError);
    assert.deepEqual([opening.kind, opening.reached, opening.retryable], ['not_delivered', false, true]);

    const noSuchHost: Resolver = async (hostname) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    };
    const dns = await rejection(
      openToolSourceForCall(
        { type: 'remote_mcp', url: 'https://mcp.unknown-host.test/mcp' },
        { ...deps, resolver: noSuchHost },
      ),
      ToolCallError,
    );
    assert.deepEqual([dns.kind, dns.reached, dns.retryable], ['not_delivered', false, true]);
    assert.match(dns.message, /Host not found: mcp\.unknown-host\.test does not resolve/);

    const api = await startOpenApiServer();
    const source = await openToolSource(
      { type: 'openapi', specText: api.openapiYaml, params: { 'X-API-Key': API_KEY } },
      deps,
    );
    await api.close();
    const post = await rejection(source.call('create_item', { body: { name: 'x' } }), ToolCallError);
    assert.deepEqual(
      [post.kind, post.reached, post.retryable],
      ['not_delivered', false, true],
      'a POST that never left may be retried',
    );
    assert.equal(source.isRepeatable('create_item'), false);
    assert.equal(source.isRepeatable('replaceItem'), true);
  });
});

describe('tool runtime: network rules', () => {
  let api: TestOpenApiServer;
  before(async () => (api = await startOpenApiServer()));
  after(() => api.close());

  it('never connects to an internal address: an MCP server URL, an OpenAPI server URL, a document URL or a redirect there', async () => {
    const internal = await startInternalTarget();
    const redirector = http.createServer((_req, res) =>
      res.writeHead(302, { location: internal.httpsUrl('/openapi.json') }).end(),
    );
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
    try {
      const attempts: [ToolSourceSpec, string][] = [
        [{ type: 'remote_mcp', url: internal.httpsUrl('/mcp') }, 'ssrf_blocked'],
        [{ type: 'remote_mcp', url: internal.httpUrl('/mcp') }, 'insecure_url'],
        [{ type: 'openapi', url: internal.httpsUrl('/openapi.json') }, 'ssrf_blocked'],
        [
          { type: 'openapi', url: `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/openapi.json` },
          'ssrf_blocked',
        ],
        [
          { type: 'openapi', spec: { ...parseYaml(api.openapiYaml), servers: [{ url: internal.httpsUrl('/api') }] } },
          'ssrf_blocked',
        ],
        [{ type: 'openapi', specText: api.openapiYaml, baseUrl: internal.httpsUrl('/api') }, 'ssrf_blocked'],
        [{ type: 'remote_mcp', url: 'https://[::ffff:127.0.0.2]/mcp' }, 'ssrf_blocked'],
      ];
      for (const [spec, code] of attempts) {
        const error = await rejection(discoverTools(spec, deps), ToolSourceError);
        assert.equal(error.code, code, JSON.stringify(spec).slice(0, 200));
      }
      assert.equal(internal.connections(), 0);
    } finally {
      redirector.close();
      await internal.close();
    }
  });

  it('leaves a remote $ref unresolved: zero hits on the address it names', async () => {
    const internal = await startInternalTarget();
    try {
      const spec = parseYaml(api.openapiYaml);
      spec.paths['/items'].get.parameters[0].schema = { $ref: internal.httpUrl('/schemas/tag.json') };
      spec.components.schemas.NewItem.properties.tags = { $ref: `${internal.httpUrl('/schemas/tags.yaml')}#/Tags` };
      const discovery = await discoverTools({ type: 'openapi', spec }, deps);
      assert.equal(
        (toolNamed(discovery, 'get_items').inputSchema as any).properties.tag.description,
        `External reference ${internal.httpUrl('/schemas/tag.json')} (not resolved)`,
      );
      assert.equal(internal.connections(), 0);
    } finally {
      await internal.close();
    }
  });

  it('requires https except for hosts NETWORK_ALLOWLIST opens', async () => {
    const error = await rejection(
      discoverTools({ type: 'remote_mcp', url: 'http://mcp.example.com/mcp' }, deps),
      ToolSourceError,
    );
    assert.equal(error.code, 'insecure_url');
    const closedPolicy = await rejection(
      discoverTools({ type: 'openapi', url: api.openapiYamlUrl }, { policy: parseNetworkAllowlist('') }),
      ToolSourceError,
    );
    assert.equal(closedPolicy.code, 'insecure_url');
  });
});

describe('tool runtime: HTTPS with a private CA', () => {
  let certs: TestCertificates;
  let otherCa: TestCertificates;
  let server: TestMcpServer;
  before(async () => {
    certs = createTestCertificates();
    otherCa = createTestCertificates();
    server = await startMcpServer({ tls: { key: certs.key, cert: certs.cert } });
  });
  after(async () => {
    await server.close();
    certs.cleanup();
    otherCa.cleanup();
  });

  it('trusts a CA given to the runtime, and refuses the server without it', async () => {
    const discovery = await discoverTools({ type: 'remote_mcp', url: server.url }, { ...deps, extraCa: certs.caPem });
    assert.equal(discovery.tools.length, 6);
    const error = await rejection(discoverTools({ type: 'remote_mcp', url: server.url }, deps), ToolSourceError);
    assert.equal(error.code, 'tls_error');
  });

  it('trusts a CA from NODE_EXTRA_CA_CERTS (read at process start, so in a child process), also next to an explicit extra CA', async () => {
    const discoverInChild = (env: Record<string, string>) =>
      new Promise<{ ok: boolean; code?: string; result?: DiscoveryResult }>((resolve, reject) => {
        const { NODE_EXTRA_CA_CERTS: _inherited, ...parentEnv } = process.env;
        execFile(
          process.execPath,
          [
            '--require',
            'tsx/cjs',
            path.join(__dirname, '..', 'support', 'stack', 'mcp-discover-cli.ts'),
            JSON.stringify({ type: 'remote_mcp', url: server.url }),
          ],
          {
            cwd: path.join(__dirname, '..', '..'),
            env: { ...parentEnv, NETWORK_ALLOWLIST: '127.0.0.1', ...env },
            timeout: 60_000,
          },
          (error, stdout, stderr) =>
            error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
        );
      });
    const trusted = await discoverInChild({ NODE_EXTRA_CA_CERTS: certs.caFile });
    assert.equal(trusted.ok, true);
    assert.equal(trusted.result?.tools.length, 6);
    const alongside = await discoverInChild({ NODE_EXTRA_CA_CERTS: certs.caFile, EXTRA_CA: otherCa.caPem });
    assert.equal(alongside.ok, true, 'an explicit CA adds to NODE_EXTRA_CA_CERTS, it does not replace it');
    const untrusted = await discoverInChild({});
    assert.deepEqual([untrusted.ok, untrusted.code], [false, 'tls_error']);
  });
});
