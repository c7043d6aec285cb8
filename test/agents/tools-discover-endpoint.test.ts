// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import { useHarness, type Harness } from '../support/stack/harness';
import { startInternalTarget, type InternalTarget } from '../support/fakes/mcp-internal-target';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { startSseMcpServer, type TestSseMcpServer } from '../support/fakes/mcp-sse-server';
import { capturedOutput } from '../support/stack/output-capture';
import { API_KEY, startOpenApiServer, type TestOpenApiServer } from '../support/openapi-api';

const PATH = '/api/v1/agents/discover-mcp';

/** A workflow history with every payload decoded to text (fetchHistory gives them base64-encoded), as an operator reads them in the Temporal UI. */
function decodedHistory(history: unknown): string {
  return JSON.stringify(history, (key, value) =>
    (key === 'data' || key === 'encoding') && typeof value === 'string'
      ? Buffer.from(value, 'base64').toString('utf8')
      : value,
  );
}

describe('POST /agents/discover-mcp', function () {
  this.timeout(120_000);
  let h: Harness;
  let apiKey: string;
  let userId: string;
  let mcp: TestMcpServer;
  let guarded: TestMcpServer;
  let legacy: TestSseMcpServer;
  let api: TestOpenApiServer;
  let internal: InternalTarget;

  before(async () => {
    h = await useHarness();
    ({ apiKey, userId } = await h.createUser());
    [mcp, guarded, legacy, api, internal] = await Promise.all([
      startMcpServer(),
      startMcpServer({ bearerToken: 'discover-token-16180' }),
      startSseMcpServer(),
      startOpenApiServer(),
      startInternalTarget(),
    ]);
  });
  after(async () => Promise.all([mcp.close(), guarded.close(), legacy.close(), api.close(), internal.close()]));

  const discover = (body: unknown, key: string | null = apiKey) =>
    h.http('POST', PATH, { apiKey: key ?? undefined, body });

  it('needs an API key', async () => {
    for (const key of [null, 'sk_live_not-a-real-key']) {
      const response = await discover({ type: 'remote_mcp', url: mcp.url }, key);
      assert.equal(response.status, 401);
      assert.equal(response.body.error.code, 'unauthorized');
    }
  });

  it('answers invalid bodies with 400 and the error body', async () => {
    const cases: [unknown, string][] = [
      [{}, 'body/type'],
      [{ type: 'graphql', url: mcp.url }, 'body/type'],
      [{ type: 'remote_mcp' }, 'body/url'],
      [{ type: 'remote_mcp', url: 'ftp://example.com/mcp' }, 'body/url'],
      [{ type: 'remote_mcp', url: mcp.url, params: { Authorization: { nested: true } } }, 'body/params/Authorization'],
      [{ type: 'remote_mcp', url: mcp.url, extra: 1 }, 'body/extra'],
      [{ type: 'remote_mcp', url: mcp.url, specText: 'openapi: 3.1.0' }, 'body/type'],
      [{ type: 'openapi' }, 'body'],
      [{ type: 'openapi', url: api.openapiYamlUrl, specText: api.openapiYaml }, 'body'],
    ];
    for (const [body, path] of cases) {
      const response = await discover(body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.body.error.code, 'validation_failed');
      assert.ok(response.body.error.requestId);
      assert.ok(
        response.body.error.details?.some((d: { path: string }) => d.path === path),
        `${JSON.stringify(body)} → ${JSON.stringify(response.body.error.details)}`,
      );
    }
  });

  it('discovers a remote MCP server (Streamable HTTP) and a legacy SSE one', async () => {
    const modern = await discover({ type: 'remote_mcp', url: mcp.url });
    assert.equal(modern.status, 200, JSON.stringify(modern.body));
    assert.equal(modern.body.title, 'test-mcp-current');
    assert.equal(modern.body.source.transport, 'streamable_http');
    const echo = modern.body.tools.find((t: { name: string }) => t.name === 'echo');
    assert.deepEqual(echo.annotations.readOnlyHint, true);
    assert.equal(echo.inputSchema.properties.message.type, 'string');
    assert.deepEqual(modern.body.params, []);

    const old = await discover({ type: 'remote_mcp', url: legacy.url });
    assert.equal(old.status, 200);
    assert.equal(old.body.source.transport, 'sse');
    assert.deepEqual(
      old.body.tools.map((t: { name: string }) => t.name),
      ['legacy_echo', 'legacy_increment'],
    );
  });

  it('discovers OpenAPI 3.1 YAML text, a Swagger 2.0 object and a document URL', async () => {
    const fromText = await discover({ type: 'openapi', specText: api.openapiYaml });
    assert.equal(fromText.status, 200, JSON.stringify(fromText.body));
    assert.equal(fromText.body.source.specification, 'OpenAPI 3.1.0');
    assert.ok(fromText.body.tools.some((t: { name: string }) => t.name === 'getItem'));
    assert.deepEqual(fromText.body.params[0], {
      name: 'X-API-Key',
      in: 'header',
      required: true,
      secret: true,
      description: 'API key (security scheme "headerKey"), sent as the X-API-Key header.',
    });

    const swagger = await discover({ type: 'openapi', spec: JSON.parse(api.swaggerJson) });
    assert.equal(swagger.status, 200);
    assert.equal(swagger.body.source.specification, 'Swagger 2.0');

    const byUrl = await discover({ type: 'openapi', url: api.openapiYamlUrl, openapiBaseUrl: `${api.origin}/v2` });
    assert.equal(byUrl.status, 200);
    assert.equal(byUrl.body.source.serverUrl, `${api.origin}/v2`);
    assert.deepEqual(byUrl.body.tools, fromText.body.tools);
  });

  it('answers 200 with the needed credential for a server that wants one, and never echoes, logs or records params', async () => {
    const missing = await discover({ type: 'remote_mcp', url: guarded.url });
    assert.equal(missing.status, 200);
    assert.deepEqual(missing.body.tools, []);
    assert.equal(missing.body.source.authRequired, true);
    assert.deepEqual(
      missing.body.params.map((p: Record<string, unknown>) => [p.name, p.in, p.required, p.secret]),
      [['Authorization', 'header', true, true]],
    );

    const secret = 'discover-token-16180';
    const given = await discover({
      type: 'remote_mcp',
      url: guarded.url,
      params: { Authorization: `Bearer ${secret}` },
    });
    assert.equal(given.status, 200);
    assert.equal(given.body.tools.length, 6);
    const openapiKey = await discover({ type: 'openapi', specText: api.openapiYaml, params: { 'X-API-Key': API_KEY } });
    assert.equal(openapiKey.status, 200);
    // Upstream failure with params: the message must not carry them either.
    const failing = await discover({
      type: 'openapi',
      url: `${api.origin}/missing.yaml`,
      params: { 'X-API-Key': API_KEY },
    });
    assert.equal(failing.status, 502);

    const histories: string[] = [];
    const query = `JobKind = "tools-discovery" AND UserId = "${userId}"`;
    for await (const execution of h.client.workflow.list({ query })) {
      histories.push(decodedHistory(await h.client.workflow.getHandle(execution.workflowId).fetchHistory()));
    }
    assert.ok(histories.length >= 4, `found ${histories.length} discovery workflows`);
    assert.ok(
      histories.some((history) => history.includes(guarded.url)),
      'histories are decoded and readable',
    );
    const surfaces = {
      responses: JSON.stringify([given.body, openapiKey.body, failing.body]),
      histories: histories.join('\n'),
      logs: JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey })).body),
      processOutput: capturedOutput(),
    };
    for (const [surface, text] of Object.entries(surfaces)) {
      for (const value of [secret, API_KEY]) assert.ok(!text.includes(value), `a param value appears in ${surface}`);
    }
  });

  it('refuses internal destinations with a clear 400 and zero hits there', async () => {
    const spec = parseYaml(api.openapiYaml);
    spec.servers = [{ url: internal.httpsUrl('/api') }];
    const refusals: [unknown, string][] = [
      [{ type: 'remote_mcp', url: internal.httpsUrl('/mcp') }, 'ssrf_blocked'],
      [{ type: 'remote_mcp', url: 'https://127.0.0.2:1/mcp' }, 'ssrf_blocked'],
      [{ type: 'remote_mcp', url: internal.httpUrl('/mcp') }, 'insecure_url'],
      [{ type: 'openapi', url: internal.httpsUrl('/openapi.yaml') }, 'ssrf_blocked'],
      [{ type: 'openapi', spec }, 'ssrf_blocked'],
      [{ type: 'openapi', specText: api.openapiYaml, openapiBaseUrl: internal.httpsUrl('/api') }, 'ssrf_blocked'],
    ];
    for (const [body, code] of refusals) {
      const response = await discover(body);
      assert.equal(response.status, 400, JSON.stringify(body).slice(0, 200));
      assert.equal(response.body.error.code, code);
      assert.match(response.body.error.message, /127\.0\.0\.2|http/);
    }
    // A remote $ref pointing there is simply not followed.
    const withRef = parseYaml(api.openapiYaml);
    withRef.components.schemas.NewItem.properties.tags = { $ref: internal.httpUrl('/tags.json') };
    const ref = await discover({ type: 'openapi', spec: withRef });
    assert.equal(ref.status, 200);
    assert.equal(internal.connections(), 0);
  });

  it('reports upstream failures as 4xx/502 with a code', async () => {
    const dead = await startMcpServer();
    await dead.close();
    const unreachable = await discover({ type: 'remote_mcp', url: dead.url });
    assert.deepEqual([unreachable.status, unreachable.body.error.code], [502, 'upstream_unreachable']);
    const notMcp = await discover({ type: 'remote_mcp', url: `${api.origin}/api/health` });
    assert.deepEqual([notMcp.status, notMcp.body.error.code], [502, 'not_mcp_server']);
    const invalid = await discover({ type: 'openapi', specText: 'openapi: 3.1.0\ninfo: {}\n' });
    assert.deepEqual([invalid.status, invalid.body.error.code], [400, 'invalid_openapi']);
  });

  it('is documented in the served OpenAPI document', async () => {
    const document = (await h.http('GET', '/api/v1/openapi.json')).body;
    const operation = document.paths['/agents/discover-mcp'].post;
    assert.equal(
      operation.requestBody.content['application/json'].schema.$ref,
      '#/components/schemas/McpDiscoveryRequest',
    );
    assert.equal(
      operation.responses[200].content['application/json'].schema.$ref,
      '#/components/schemas/McpDiscoveryResponse',
    );
    assert.deepEqual(Object.keys(operation.responses).sort(), ['200', '400', '401', '502', '503', '504']);
    assert.ok(document.components.schemas.DiscoveredTool && document.components.schemas.ToolSourceParam);
  });
});
