// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { startInternalTarget, type InternalTarget } from '../support/fakes/mcp-internal-target';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { createTestCertificates, type TestCertificates } from '../support/mcp-tls';
import {
  API_KEY,
  BEARER_TOKEN,
  COOKIE_KEY,
  QUERY_KEY,
  startOpenApiServer,
  type TestOpenApiServer,
} from '../support/openapi-api';
import { capturedOutput } from '../support/stack/output-capture';
import { startWorkerProcess } from '../support/stack/worker-process';

/** Every string in a workflow history, payload bytes decoded. */
function historyText(value: unknown, out: string[] = []): string[] {
  if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => historyText(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => historyText(v, out));
  return out;
}

/** A loopback server (allowlisted 127.0.0.1) that redirects every request to `target(path)`. */
async function startRedirector(
  target: (path: string) => string,
): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => res.writeHead(307, { location: target(req.url ?? '/') }).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const TIDES = (base: string) => ({
  openapi: '3.1.0',
  info: { title: 'Tides', version: '1.0.0', description: 'Tide tables of harbours' },
  servers: [{ url: base }],
  paths: {
    '/tides/{harbour}': {
      get: {
        operationId: 'get_tides',
        summary: 'Tide times for a harbour',
        description: 'Returns the times and heights of the next high and low tides for a harbour.',
        parameters: [
          {
            name: 'harbour',
            in: 'path',
            required: true,
            description: 'Harbour name, e.g. Porto',
            schema: { type: 'string' },
          },
        ],
        responses: { 200: { description: 'The tides' } },
      },
    },
  },
});

/** An HTTPS server (certificate from the test CA) serving an OpenAPI document at /openapi.yaml. */
async function startHttpsDocument(tls: { key: string; cert: string }) {
  let yaml = '';
  const server = https.createServer(tls, (req, res) => {
    if (req.url === '/openapi.yaml') return void res.writeHead(200, { 'content-type': 'application/yaml' }).end(yaml);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  yaml = toYaml(TIDES(`${origin}/api`));
  return {
    url: `${origin}/openapi.yaml`,
    yaml,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe('market discovery and validation over the tool runtime', function () {
  const stacks = stoppedAfter();
  this.timeout(180_000);
  let h: Harness;
  let mcp: TestMcpServer;
  let guarded: TestMcpServer;
  let api: TestOpenApiServer;
  let internal: InternalTarget;
  const TOKEN = 'market-bearer-31415926';

  before(async function () {
    h = await useHarness();
    [mcp, guarded, api, internal] = await Promise.all([
      startMcpServer(),
      startMcpServer({ bearerToken: TOKEN }),
      startOpenApiServer(),
      startInternalTarget(),
    ]);
  });
  after(async () => Promise.all([mcp.close(), guarded.close(), api.close(), internal.close()]));

  const post = (path: 'discover' | 'validate', apiKey: string, body: unknown, base = h.baseUrl) =>
    h.http('POST', `${base}/api/v1/mcp-market/${path}`, { apiKey, body });

  it('discovers a remote MCP server: its tools, params and how it was reached; nothing is stored', async function () {
    const { apiKey, userId } = await h.createUser();
    const response = await post('discover', apiKey, { type: 'remote_mcp', url: mcp.url });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.title, 'test-mcp-current');
    assert.deepEqual(response.body.tools.map((t: any) => t.name).sort(), [
      'add',
      'echo',
      'fail',
      'increment',
      'large',
      'slow',
    ]);
    const echo = response.body.tools.find((t: any) => t.name === 'echo');
    assert.equal(echo.inputSchema.properties.message.description, 'Text to send back');
    assert.equal(echo.annotations.readOnlyHint, true);
    assert.deepEqual(response.body.params, []);
    assert.equal(response.body.source.transport, 'streamable_http');
    assert.equal(response.body.source.server.name, 'test-mcp-current');
    assert.equal(
      (await h.db.selectFrom('market_validations').select('id').where('owner_id', '=', userId).execute()).length,
      0,
    );
  });

  it('validates it: a stable fingerprint, a report with issues and a quality score, stored under the caller', async function () {
    const { apiKey, userId } = await h.createUser();
    const first = await post('validate', apiKey, { type: 'remote_mcp', url: mcp.url });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.status, 'valid');
    assert.match(first.body.sourceFingerprint, /^[0-9a-f]{64}$/);
    assert.equal(first.body.report.toolCount, 6);
    assert.ok(
      first.body.report.qualityScore > 0 && first.body.report.qualityScore < 100,
      `score ${first.body.report.qualityScore}`,
    );
    assert.ok(first.body.report.issues.some((i: any) => i.code === 'short_description' && i.tool === 'add'));
    assert.ok(first.body.report.issues.every((i: any) => i.severity !== 'error'));
    const again = await post('validate', apiKey, { type: 'remote_mcp', url: `${mcp.url}#fragment` });
    assert.equal(again.body.sourceFingerprint, first.body.sourceFingerprint, 'the same source, the same fingerprint');
    assert.notEqual(again.body.validationId, first.body.validationId);
    const other = await startMcpServer({ era: '2025' });
    try {
      const different = await post('validate', apiKey, { type: 'remote_mcp', url: other.url });
      assert.notEqual(different.body.sourceFingerprint, first.body.sourceFingerprint);
    } finally {
      await other.close();
    }
    const row = await h.db
      .selectFrom('market_validations')
      .selectAll()
      .where('id', '=', first.body.validationId)
      .executeTakeFirstOrThrow();
    assert.equal(row.owner_id, userId);
    assert.equal(row.status, 'valid');
  });

  it('answers needs_parameters for a server that wants a bearer token, and valid once given; the token is never stored, returned, logged or kept in a history', async function () {
    const { apiKey, userId } = await h.createUser();
    const locked = await post('validate', apiKey, { type: 'remote_mcp', url: guarded.url });
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
    assert.equal(locked.body.status, 'needs_parameters');
    assert.equal(locked.body.parametersRequired, true);
    assert.deepEqual(
      locked.body.requiredParameters.map((p: any) => [p.name, p.in, p.required, p.secret]),
      [['Authorization', 'header', true, true]],
    );
    assert.equal(locked.body.discovery.authRequired, true);

    const open = await post('validate', apiKey, {
      type: 'remote_mcp',
      url: guarded.url,
      params: { Authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(open.body.status, 'valid', JSON.stringify(open.body.report));
    assert.equal(open.body.report.toolCount, 6);
    assert.ok(
      guarded.requests.some((r) => r.headers.authorization === `Bearer ${TOKEN}`),
      'the token reached the server',
    );
    const discovered = await post('discover', apiKey, {
      type: 'remote_mcp',
      url: guarded.url,
      params: { Authorization: TOKEN },
    });
    assert.equal(discovered.body.tools.length, 6, 'a bare token is sent with the Bearer scheme');

    const history = historyText(
      await h.client.workflow.getHandle(`market-validation-${open.body.validationId}`).fetchHistory(),
    ).join('\n');
    assert.ok(history.includes(guarded.url), 'the history is readable, so the check below can fail');
    const rows = await h.db.selectFrom('market_validations').selectAll().where('owner_id', '=', userId).execute();
    const surfaces = {
      responses: JSON.stringify([locked.body, open.body, discovered.body]),
      rows: JSON.stringify(rows),
      history,
      logs: JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey })).body),
      processOutput: capturedOutput(),
    };
    for (const [surface, text] of Object.entries(surfaces))
      assert.ok(!text.includes(TOKEN), `the token appears in ${surface}`);
  });

  it('fingerprints an OpenAPI document fetched from its URL like the same document as YAML, JSON or an object, and accepts its submission', async function () {
    const { apiKey } = await h.createUser();
    // The document's operations need four credentials between them.
    const params = { 'X-API-Key': API_KEY, api_key: QUERY_KEY, session: COOKIE_KEY, Authorization: BEARER_TOKEN };
    const byUrl = await post('validate', apiKey, { type: 'openapi', url: api.openapiYamlUrl, params });
    assert.equal(byUrl.status, 200, JSON.stringify(byUrl.body));
    assert.equal(
      byUrl.body.status,
      'valid',
      JSON.stringify(byUrl.body.report.issues.filter((i: any) => i.severity === 'error')),
    );
    assert.equal(byUrl.body.discovery.source.specification, 'OpenAPI 3.1.0');
    const document = parseYaml(api.openapiYaml);
    for (const body of [
      { specText: api.openapiYaml },
      { specText: JSON.stringify(document, null, 2) },
      { spec: document },
    ]) {
      const inline = await post('validate', apiKey, { type: 'openapi', ...body, params });
      assert.equal(inline.body.sourceFingerprint, byUrl.body.sourceFingerprint, Object.keys(body)[0]);
    }
    const changed = await post('validate', apiKey, {
      type: 'openapi',
      spec: { ...document, info: { ...document.info, version: '2.4.1' } },
      params,
    });
    assert.notEqual(
      changed.body.sourceFingerprint,
      byUrl.body.sourceFingerprint,
      'any change to the document changes the fingerprint',
    );

    const withoutKeys = await post('validate', apiKey, { type: 'openapi', url: api.openapiYamlUrl });
    assert.equal(withoutKeys.body.status, 'needs_parameters');
    assert.deepEqual(withoutKeys.body.requiredParameters.map((p: any) => p.name).sort(), [
      'Authorization',
      'X-API-Key',
      'api_key',
      'session',
    ]);
    const { session: _missing, ...threeKeys } = params;
    const oneMissing = await post('validate', apiKey, { type: 'openapi', url: api.openapiYamlUrl, params: threeKeys });
    assert.deepEqual(
      [oneMissing.body.status, oneMissing.body.requiredParameters.map((p: any) => [p.name, p.in])],
      ['needs_parameters', [['session', 'cookie']]],
    );

    const submission = await h.http('POST', '/api/v1/mcp-market/submissions', {
      apiKey,
      body: {
        validationId: byUrl.body.validationId,
        sourceFingerprint: byUrl.body.sourceFingerprint,
        type: 'openapi',
        name: `Inventory ${Date.now()}`,
        openapiSpecText: api.openapiYaml,
        monetizationStrategy: 'free',
      },
    });
    assert.equal(submission.status, 201, JSON.stringify(submission.body));
    assert.equal(submission.body.tools.length, byUrl.body.report.toolCount);
    for (const value of Object.values(params))
      assert.equal(JSON.stringify([submission.body, byUrl.body]).includes(value), false);
  });

  it('never returns or stores a server URL variable given in params', async function () {
    const { apiKey } = await h.createUser();
    const tenant = 'tenant-7c41e2aa';
    const spec = {
      ...TIDES('https://{tenant}.tides.example/v1'),
      servers: [
        {
          url: 'https://{tenant}.tides.example/v1',
          variables: { tenant: { default: '', description: 'Your tenant' } },
        },
      ],
    };
    const needs = await post('validate', apiKey, { type: 'openapi', spec });
    assert.deepEqual(
      [needs.body.status, needs.body.requiredParameters.map((p: any) => [p.name, p.in])],
      ['needs_parameters', [['tenant', 'server']]],
    );
    for (const path of ['discover', 'validate'] as const) {
      const response = await post(path, apiKey, { type: 'openapi', spec, params: { tenant } });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      const discovery = path === 'discover' ? response.body : response.body.discovery;
      assert.equal(discovery.source.serverUrl, 'https://[redacted].tides.example/v1');
      assert.ok(!JSON.stringify(response.body).includes(tenant));
      if (path === 'validate') {
        assert.equal(response.body.status, 'valid');
        const row = await h.db
          .selectFrom('market_validations')
          .selectAll()
          .where('id', '=', response.body.validationId)
          .executeTakeFirstOrThrow();
        assert.ok(!JSON.stringify(row).includes(tenant));
      }
    }
  });

  it('refuses internal destinations, redirects to them and plain http with a clear 400, and nothing reaches 127.0.0.2', async function () {
    const { apiKey } = await h.createUser();
    const toInternal = await startRedirector((path) => internal.httpsUrl(path));
    const toPlainInternal = await startRedirector((path) => internal.httpUrl(path));
    const elsewhere = await startRedirector((path) => `https://mcp.elsewhere.example${path}`);
    try {
      const spec = parseYaml(api.openapiYaml);
      spec.servers = [{ url: internal.httpsUrl('/api') }];
      const refusals: [string, unknown, string][] = [
        ['an internal MCP endpoint', { type: 'remote_mcp', url: internal.httpsUrl('/mcp') }, 'ssrf_blocked'],
        ['plain http to it', { type: 'remote_mcp', url: internal.httpUrl('/mcp') }, 'insecure_url'],
        [
          'plain http to a host the allowlist does not open',
          { type: 'remote_mcp', url: 'http://mcp.provider.example/mcp' },
          'insecure_url',
        ],
        [
          'an MCP endpoint redirecting to an internal address',
          { type: 'remote_mcp', url: `${toInternal.origin}/mcp` },
          'ssrf_blocked',
        ],
        [
          'an MCP endpoint redirecting to plain http on an internal address',
          { type: 'remote_mcp', url: `${toPlainInternal.origin}/mcp` },
          'insecure_url',
        ],
        [
          'an MCP endpoint redirecting to another origin (never followed)',
          { type: 'remote_mcp', url: `${elsewhere.origin}/mcp` },
          'invalid_source',
        ],
        [
          'an OpenAPI document URL redirecting to an internal address',
          { type: 'openapi', url: `${toInternal.origin}/openapi.yaml` },
          'ssrf_blocked',
        ],
        ['an OpenAPI document whose server is internal', { type: 'openapi', spec }, 'ssrf_blocked'],
        [
          'an OpenAPI base URL on an internal address',
          { type: 'openapi', specText: api.openapiYaml, openapiBaseUrl: internal.httpsUrl('/api') },
          'ssrf_blocked',
        ],
      ];
      for (const [what, body, code] of refusals) {
        for (const path of ['discover', 'validate'] as const) {
          const response = await post(path, apiKey, body);
          assert.equal(response.status, 400, `${what} (${path}): ${JSON.stringify(response.body)}`);
          assert.equal(response.body.error.code, code, what);
          assert.ok(response.body.error.message.length > 10);
        }
      }
      // A remote $ref to it is not followed.
      const withRef = parseYaml(api.openapiYaml);
      withRef.components.schemas.NewItem.properties.tags = { $ref: internal.httpsUrl('/tags.json') };
      assert.equal((await post('discover', apiKey, { type: 'openapi', spec: withRef })).status, 200);
      assert.equal(internal.connections(), 0, 'nothing reached 127.0.0.2');
    } finally {
      await Promise.all([toInternal.close(), toPlainInternal.close(), elsewhere.close()]);
    }
  });

  it('answers an unreachable source, a server that is not MCP, an untrusted certificate and an invalid document with their codes', async function () {
    const { apiKey } = await h.createUser();
    const dead = await startMcpServer();
    await dead.close();
    const unreachable = await post('validate', apiKey, { type: 'remote_mcp', url: dead.url });
    assert.deepEqual([unreachable.status, unreachable.body.error.code], [502, 'upstream_unreachable']);
    const notMcp = await post('discover', apiKey, { type: 'remote_mcp', url: `${api.origin}/api/health` });
    assert.deepEqual([notMcp.status, notMcp.body.error.code], [502, 'not_mcp_server']);
    const certs = createTestCertificates();
    const untrusted = await startMcpServer({ tls: certs });
    try {
      const response = await post('discover', apiKey, { type: 'remote_mcp', url: untrusted.url });
      assert.deepEqual(
        [response.status, response.body.error.code],
        [502, 'tls_error'],
        'the platform worker does not trust the test CA',
      );
    } finally {
      await untrusted.close();
      certs.cleanup();
    }
    const invalid = await post('validate', apiKey, { type: 'openapi', specText: 'openapi: 3.1.0\ninfo: {}\n' });
    assert.deepEqual([invalid.status, invalid.body.error.code], [400, 'invalid_openapi_document']);
  });

  describe('HTTPS sources with a private CA, trusted by a worker process through NODE_EXTRA_CA_CERTS', function () {
    let certs: TestCertificates;
    let secureMcp: TestMcpServer;
    let secureDocument: Awaited<ReturnType<typeof startHttpsDocument>>;
    let worker: ChildProcess;
    let baseUrl: string;

    before(async function () {
      this.timeout(240_000);
      certs = createTestCertificates();
      [secureMcp, secureDocument] = await Promise.all([startMcpServer({ tls: certs }), startHttpsDocument(certs)]);
      const taskQueues = { platform: 'market-tls-platform', browser: 'market-tls-browser' };
      baseUrl = stacks.add(await h.startIsolatedStack({ taskQueues, queues: [] })).baseUrl;
      worker = await startWorkerProcess({
        ...h.env,
        PLATFORM_TASK_QUEUE: taskQueues.platform,
        BROWSER_TASK_QUEUE: taskQueues.browser,
        WORKER_QUEUES: 'platform',
        NODE_EXTRA_CA_CERTS: certs.caFile,
      });
    });

    after(async function () {
      if (worker && worker.exitCode === null) {
        worker.kill('SIGTERM');
        await new Promise((resolve) => worker.once('exit', resolve));
      }
      await Promise.all([secureMcp?.close(), secureDocument?.close()]);
      certs?.cleanup();
    });

    it('validates a remote MCP server and an OpenAPI document served over HTTPS', async function () {
      const { apiKey } = await h.createUser();
      const fromMcp = await post('validate', apiKey, { type: 'remote_mcp', url: secureMcp.url }, baseUrl);
      assert.equal(fromMcp.status, 200, JSON.stringify(fromMcp.body));
      assert.equal(fromMcp.body.status, 'valid');
      assert.equal(fromMcp.body.discovery.source.transport, 'streamable_http');
      const fromDocument = await post('validate', apiKey, { type: 'openapi', url: secureDocument.url }, baseUrl);
      assert.equal(fromDocument.status, 200, JSON.stringify(fromDocument.body));
      assert.equal(fromDocument.body.status, 'valid', JSON.stringify(fromDocument.body.report));
      assert.equal(fromDocument.body.report.qualityScore, 100);
      const inline = await post('validate', apiKey, { type: 'openapi', specText: secureDocument.yaml }, baseUrl);
      assert.equal(inline.body.sourceFingerprint, fromDocument.body.sourceFingerprint);
    });
  });
});
