import assert from 'node:assert/strict';
import http from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { useHarness, type Harness, type IsolatedStack } from '../support/stack/harness';
import { ConfigError, loadConfig } from '../../lib/config';

type ToolResult = Awaited<ReturnType<Client['callTool']>>;

async function connect(
  url: string,
  options: ConstructorParameters<typeof Client>[1] = { versionNegotiation: { mode: 'auto' } },
): Promise<Client> {
  const client = new Client({ name: 'docs-mcp-test', version: '1.0.0' }, options);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const textOf = (result: ToolResult) =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');

/** A raw JSON-RPC POST, so headers and the client address can be chosen. */
function rawPost(
  url: string,
  options: { headers?: Record<string, string>; localAddress?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        localAddress: options.localAddress,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': Buffer.byteLength(body),
          ...options.headers,
        },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('docs-search MCP endpoint', function () {
  let h: Harness;
  let url: string;
  let client: Client;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    url = `${h.baseUrl}/docs-mcp`;
    client = await connect(url);
  });

  after(async function () {
    await client?.close();
  });

  it('serves the current protocol revision without an API key and lists four read-only tools with output schemas', async function () {
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.equal(client.getServerVersion()?.version, '1.0.0');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['get_operation', 'list_operations', 'read_doc', 'search_docs']);
    for (const tool of tools) {
      assert.equal(tool.annotations?.readOnlyHint, true, tool.name);
      assert.equal(tool.annotations?.destructiveHint, false, tool.name);
      assert.equal(tool.inputSchema.type, 'object', tool.name);
      assert.equal(tool.outputSchema?.type, 'object', tool.name);
      assert.ok(
        ['version', 'indexedAt'].every((key) => (tool.outputSchema?.required as string[]).includes(key)),
        tool.name,
      );
      assert.ok(tool.description && tool.description.length > 20, tool.name);
    }
  });

  describe('search_docs', function () {
    it('answers ranked hits with snippets, each saying which API version it describes', async function () {
      const result = await client.callTool({
        name: 'search_docs',
        arguments: { query: 'how do I verify a webhook signature', limit: 3 },
      });
      assert.ok(!result.isError, textOf(result));
      const answer = result.structuredContent as { hits: any[]; version: string; indexedAt: string };
      assert.deepEqual(JSON.parse(textOf(result)), answer, 'the text is the same answer');
      assert.equal(answer.hits.length, 3);
      const [top] = answer.hits;
      assert.deepEqual(
        { path: top.path, anchor: top.anchor, kind: top.kind, url: top.url },
        {
          path: 'docs/webhooks.md',
          anchor: 'verifying-the-signature',
          kind: 'guide',
          url: '/api/v1/docs/guides/webhooks#verifying-the-signature',
        },
      );
      assert.match(top.snippet, /signature|X-Webhook-Signature/i);
      for (const hit of answer.hits) {
        assert.equal(hit.version, '1.0.0');
        assert.ok(!Number.isNaN(Date.parse(hit.indexedAt)) && hit.indexedAt === answer.indexedAt);
        assert.ok(typeof hit.title === 'string' && hit.title.length > 0);
      }
      assert.ok(answer.hits[0].score >= answer.hits[1].score && answer.hits[1].score >= answer.hits[2].score);
    });

    it('finds API operations as well as guide sections', async function () {
      const result = await client.callTool({ name: 'search_docs', arguments: { query: 'list saved social accounts' } });
      const hits = (result.structuredContent as { hits: any[] }).hits;
      assert.ok(
        hits.some(
          (h) => h.kind === 'operation' && h.path === 'openapi.json' && h.anchor === 'operation/listSocialAccounts',
        ),
        JSON.stringify(hits),
      );
    });

    it('refuses an empty query or a limit out of range as a tool error', async function () {
      for (const args of [
        { query: '' },
        { query: 'webhooks', limit: 0 },
        { query: 'webhooks', limit: 500 },
        { limit: 3 },
      ]) {
        const result = await client.callTool({ name: 'search_docs', arguments: args });
        assert.equal(result.isError, true, JSON.stringify(args));
        assert.match(textOf(result), /query|limit/i);
      }
    });
  });

  describe('read_doc', function () {
    it('returns a whole guide with its sections, or one section', async function () {
      const whole = await client.callTool({ name: 'read_doc', arguments: { path: 'docs/browser-agent.md' } });
      const guide = whole.structuredContent as any;
      assert.match(guide.markdown, /^# The browser agent/);
      assert.ok(guide.sections.some((s: any) => s.anchor === 'follow-up-tasks'));
      assert.equal(guide.version, '1.0.0');
      const section = await client.callTool({
        name: 'read_doc',
        arguments: { path: 'browser-agent', anchor: 'follow-up-tasks' },
      });
      const one = section.structuredContent as any;
      assert.match(one.markdown, /^## Follow-up tasks\n/);
      assert.doesNotMatch(one.markdown, /## Vision/);
      assert.equal(one.url, '/api/v1/docs/guides/browser-agent#follow-up-tasks');
      assert.match(textOf(section), /^## Follow-up tasks/);
    });

    it('reads an operation in Markdown through openapi.json', async function () {
      const result = await client.callTool({
        name: 'read_doc',
        arguments: { path: 'openapi.json', anchor: 'operation/createAutomation' },
      });
      assert.match((result.structuredContent as any).markdown, /^## POST \/api\/v1\/automations/);
    });

    it('answers an unknown path or section with a tool error that lists what exists', async function () {
      const path = await client.callTool({ name: 'read_doc', arguments: { path: 'docs/billing-secrets.md' } });
      assert.equal(path.isError, true);
      assert.match(textOf(path), /docs\/getting-started\.md/);
      const anchor = await client.callTool({
        name: 'read_doc',
        arguments: { path: 'docs/webhooks.md', anchor: 'no-such-section' },
      });
      assert.equal(anchor.isError, true);
      assert.match(textOf(anchor), /delivery-and-retries/);
      const operation = await client.callTool({
        name: 'read_doc',
        arguments: { path: 'openapi.json', anchor: 'operation/nope' },
      });
      assert.equal(operation.isError, true);
      const tooLong = await client.callTool({ name: 'read_doc', arguments: { path: 'x'.repeat(400) } });
      assert.equal(tooLong.isError, true);
    });
  });

  describe('list_operations and get_operation', function () {
    it('lists every operation, or those of one tag', async function () {
      const all = (await client.callTool({ name: 'list_operations', arguments: {} })).structuredContent as any;
      const served = (await h.http('GET', '/api/v1/openapi.json')).body;
      const expected = Object.entries(served.paths).flatMap(([path, item]: [string, any]) =>
        Object.values(item).map((op: any) => `${op.operationId} ${path}`),
      );
      assert.deepEqual(
        all.operations.map((op: any) => `${op.operationId} ${op.path}`).sort(),
        expected.sort(),
        'the ids are those of the served document',
      );
      const skills = (await client.callTool({ name: 'list_operations', arguments: { tag: 'skills directory' } }))
        .structuredContent as any;
      assert.deepEqual(
        skills.operations.map((op: any) => op.operationId),
        ['searchSkills', 'searchSkillsWithAi'],
      );
      const unknown = await client.callTool({ name: 'list_operations', arguments: { tag: 'Billing' } });
      assert.equal(unknown.isError, true);
      assert.match(textOf(unknown), /One-off scrape/);
    });

    it('returns one operation with its schemas resolved inline, by id or by method and path', async function () {
      const byId = (
        await client.callTool({ name: 'get_operation', arguments: { operationId: 'createBrowserAgentJob' } })
      ).structuredContent as any;
      assert.equal(byId.version, '1.0.0');
      assert.equal(byId.operation.method, 'POST');
      assert.equal(byId.operation.serverUrl, '/api/v1');
      assert.doesNotMatch(JSON.stringify(byId), /\$ref/);
      const request = byId.operation.requestBody.content['application/json'].schema;
      assert.ok(request.properties.sensitive_data.items.properties.domain_pattern);
      const byPath = (
        await client.callTool({
          name: 'get_operation',
          arguments: { method: 'patch', path: '/api/v1/social-accounts/{id}' },
        })
      ).structuredContent as any;
      assert.equal(byPath.operation.operationId, 'updateSocialAccount');
      assert.equal(byPath.operation.responses['404'].content['application/json'].schema.title, 'ErrorResponse');
    });

    it('answers an unknown operation or missing arguments with a tool error', async function () {
      for (const args of [
        { operationId: 'deleteEverything' },
        { method: 'PUT', path: '/scrape' },
        { method: 'GET' },
        {},
      ]) {
        const result = await client.callTool({ name: 'get_operation', arguments: args });
        assert.equal(result.isError, true, JSON.stringify(args));
        assert.match(textOf(result), /operationId|createScrapeJob/);
      }
    });
  });

  it('exposes every guide as a Markdown resource', async function () {
    const { resources } = await client.listResources();
    const webhooks = resources.find((r) => r.uri === 'docs://guides/webhooks');
    assert.ok(webhooks, JSON.stringify(resources.map((r) => r.uri)));
    assert.equal(webhooks.mimeType, 'text/markdown');
    assert.match(webhooks.description ?? '', /signature/);
    assert.ok(resources.some((r) => r.uri === 'docs://readme'));
    assert.ok(resources.length >= 9);
    const { contents } = await client.readResource({ uri: 'docs://guides/webhooks' });
    assert.match((contents[0] as { text: string }).text, /^# Webhooks/);
  });

  it('serves clients of a 2025 protocol revision through the same endpoint', async function () {
    const legacy = await connect(url, { supportedProtocolVersions: ['2025-06-18'] });
    try {
      assert.equal(legacy.getProtocolEra(), 'legacy');
      assert.equal(legacy.getNegotiatedProtocolVersion(), '2025-06-18');
      assert.equal((await legacy.listTools()).tools.length, 4);
      const result = await legacy.callTool({
        name: 'search_docs',
        arguments: { query: 'cron expression with seconds', limit: 2 },
      });
      const hits = (result.structuredContent as { hits: any[] }).hits;
      assert.equal(hits[0].path, 'docs/automations.md');
      const error = await legacy.callTool({ name: 'get_operation', arguments: { operationId: 'nope' } });
      assert.equal(error.isError, true);
    } finally {
      await legacy.close();
    }
  });

  it("refuses requests whose Host or Origin is not the service's own", async function () {
    const host = await rawPost(url, { headers: { host: 'attacker.example' } });
    assert.equal(host.status, 403);
    assert.equal(JSON.parse(host.body).error.code, 'host_not_allowed');
    const origin = await rawPost(url, { headers: { origin: 'https://attacker.example' } });
    assert.equal(origin.status, 403);
    assert.equal(JSON.parse(origin.body).error.code, 'origin_not_allowed');
    const local = await rawPost(url, { headers: { origin: 'http://localhost:5173' } });
    assert.equal(local.status, 200, local.body);
  });

  it('answers a body that is not JSON with a JSON-RPC parse error and one over 256 KiB with 413, as the SDK does', async function () {
    const post = (body: string) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body,
      });
    const malformed = await post('{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(malformed.status, 400);
    assert.equal(((await malformed.json()) as { error: { code: number } }).error.code, -32700);
    const huge = await post(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(300_000) } }),
    );
    assert.equal(huge.status, 413);
    // The endpoint still answers a well-formed request afterwards.
    assert.equal((await client.listTools()).tools.length, 4);
  });

  describe('with a configured address and a low rate limit', function () {
    let isolated: IsolatedStack;

    before(async function () {
      isolated = await h.startIsolatedStack({
        taskQueues: { platform: 'docs-mcp-unused', browser: 'docs-mcp-unused-browser' },
        overrides: { docsMcp: { url: 'https://docs.example.test/docs-mcp', rateLimitPerMinute: 3 } },
        queues: [],
      });
    });

    after(() => isolated?.stop());

    it('answers 429 with Retry-After beyond the limit, per client address', async function () {
      const endpoint = `${isolated.baseUrl}/docs-mcp`;
      for (let i = 0; i < 3; i++) assert.equal((await rawPost(endpoint)).status, 200, `request ${i + 1}`);
      const limited = await rawPost(endpoint);
      assert.equal(limited.status, 429);
      const retryAfter = Number(limited.headers['retry-after']);
      assert.ok(
        Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
        String(limited.headers['retry-after']),
      );
      const body = JSON.parse(limited.body);
      assert.equal(body.error.code, 'rate_limited');
      assert.equal(body.error.requestId, limited.headers['x-request-id']);
      await assert.rejects(connect(endpoint), /429|Too Many|rate/i, 'an SDK client sees the refusal too');
      assert.equal(
        (await rawPost(endpoint, { localAddress: '127.0.0.3' })).status,
        200,
        'another address has its own allowance',
      );
    });

    it('accepts the configured host and advertises the configured address on the docs page', async function () {
      const configured = await rawPost(`${isolated.baseUrl}/docs-mcp`, {
        headers: { host: 'docs.example.test', origin: 'https://docs.example.test' },
        localAddress: '127.0.0.4',
      });
      assert.equal(configured.status, 200, configured.body);
      const page = await h.http('GET', `${isolated.baseUrl}/api/v1/docs`);
      assert.match(page.body, /https:\/\/docs\.example\.test\/docs-mcp/);
      const defaultPage = await h.http('GET', '/api/v1/docs');
      assert.ok(defaultPage.body.includes(`${h.baseUrl}/docs-mcp`));
    });
  });

  describe('configuration', function () {
    it('reads DOCS_MCP_URL and DOCS_MCP_RATE_LIMIT, 120 a minute by default, and names a bad value', function () {
      const base = { ADMIN_TOKEN: 'x'.repeat(32), MASTER_KEY: 'a'.repeat(64), DATA_DIR: h.env.DATA_DIR };
      assert.deepEqual(loadConfig(base).docsMcp, { url: null, rateLimitPerMinute: 120 });
      assert.deepEqual(
        loadConfig({ ...base, DOCS_MCP_URL: 'https://docs.example.com/mcp/', DOCS_MCP_RATE_LIMIT: '30' }).docsMcp,
        { url: 'https://docs.example.com/mcp', rateLimitPerMinute: 30 },
      );
      assert.throws(
        () => loadConfig({ ...base, DOCS_MCP_RATE_LIMIT: 'lots' }),
        (err: unknown) => err instanceof ConfigError && /DOCS_MCP_RATE_LIMIT/.test(err.message),
      );
      assert.throws(() => loadConfig({ ...base, DOCS_MCP_RATE_LIMIT: '0' }), /DOCS_MCP_RATE_LIMIT/);
      assert.throws(() => loadConfig({ ...base, DOCS_MCP_URL: 'ftp://docs' }), /DOCS_MCP_URL/);
    });
  });
});
