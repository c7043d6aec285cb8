import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { NativeConnection, Worker } from '@temporalio/worker';
import { compileErrors, validate as validateOpenApi } from '@readme/openapi-parser';
import { stringify as toYaml } from 'yaml';
import { createMarketActivities } from '../../activities/market';
import { buildOpenApiDocument } from '../../api/openapi/document';
import { DiscoveryError, type Discover, type DiscoveryRequest } from '../../lib/market/discovery';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { weatherTools } from '../support/market';

/** Every string in a workflow history, payload bytes decoded (JSON.stringify would show them as numbers). */
function historyText(value: unknown, out: string[] = []): string[] {
  if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => historyText(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => historyText(v, out));
  return out;
}

const OPENAPI = {
  openapi: '3.1.0',
  info: { title: 'Tides', version: '1.0.0' },
  servers: [{ url: 'https://api.tides.example' }],
  paths: {
    '/tides': {
      get: { operationId: 'get_tides', summary: 'Tide times for a harbour', responses: { 200: { description: 'ok' } } },
    },
  },
};

describe('discover and validate endpoints', function () {
  const stacks = stoppedAfter();
  let h: Harness;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  describe('refused at the door (rule 4), before any workflow or connection', function () {
    let internal: Server;
    let hits = 0;

    before(async function () {
      internal = createServer((_req, res) => {
        hits++;
        res.end('{}');
      });
      await new Promise<void>((resolve) => internal.listen(8443, '127.0.0.2', resolve));
    });
    after(() => new Promise<void>((resolve) => internal.close(() => resolve())));

    const cases: [string, Record<string, unknown>, string][] = [
      ['a remote MCP source without url', { type: 'remote_mcp' }, 'source_required'],
      [
        'plain http to a host the allowlist does not open',
        { type: 'remote_mcp', url: 'http://mcp.provider.example/mcp' },
        'insecure_url',
      ],
      ['an internal loopback address', { type: 'remote_mcp', url: 'https://127.0.0.2:8443/mcp' }, 'ssrf_blocked'],
      [
        'plain http to an internal loopback address',
        { type: 'remote_mcp', url: 'http://127.0.0.2:8443/mcp' },
        'insecure_url',
      ],
      ['a private address', { type: 'remote_mcp', url: 'https://10.1.2.3/mcp' }, 'ssrf_blocked'],
      ['IPv6 loopback', { type: 'remote_mcp', url: 'https://[::1]/mcp' }, 'ssrf_blocked'],
      ['the metadata address', { type: 'remote_mcp', url: 'https://169.254.169.254/latest' }, 'ssrf_blocked'],
      ['the unspecified address', { type: 'remote_mcp', url: 'https://0.0.0.0/mcp' }, 'ssrf_blocked'],
      [
        'credentials in the URL',
        { type: 'remote_mcp', url: 'https://user:pw@mcp.provider.example/mcp' },
        'credentials_in_url',
      ],
      ['a non-http scheme', { type: 'remote_mcp', url: 'ftp://mcp.provider.example/mcp' }, 'validation_failed'],
      ['an OpenAPI source without a document', { type: 'openapi' }, 'source_required'],
      [
        'an OpenAPI document given twice',
        { type: 'openapi', spec: OPENAPI, specText: JSON.stringify(OPENAPI) },
        'source_conflict',
      ],
      [
        'an OpenAPI text that does not parse',
        { type: 'openapi', specText: 'openapi: [3.1' },
        'invalid_openapi_document',
      ],
      [
        'an http OpenAPI base URL',
        { type: 'openapi', spec: OPENAPI, openapiBaseUrl: 'http://api.tides.example' },
        'insecure_url',
      ],
      [
        'an OpenAPI base URL on a private address',
        { type: 'openapi', spec: OPENAPI, openapiBaseUrl: 'https://192.168.1.10' },
        'ssrf_blocked',
      ],
      [
        'non-scalar params',
        { type: 'remote_mcp', url: 'https://mcp.provider.example/mcp', params: { auth: { nested: true } } },
        'validation_failed',
      ],
    ];

    for (const [what, body, code] of cases) {
      it(`refuses ${what} with 400 ${code}`, async function () {
        const { apiKey } = await h.createUser();
        for (const path of ['/api/v1/mcp-market/discover', '/api/v1/mcp-market/validate']) {
          const response = await h.http('POST', path, { apiKey, body });
          assert.equal(response.status, 400, `${path}: ${JSON.stringify(response.body)}`);
          assert.equal(response.body.error.code, code);
        }
      });
    }

    it('sent nothing to the internal address', function () {
      assert.equal(hits, 0);
    });
  });

  describe('through the workflow, with the discovery function handed to the activities', function () {
    let baseUrl: string;
    let worker: Worker;
    let running: Promise<void>;
    let connection: NativeConnection;
    const seen: DiscoveryRequest[] = [];
    const discover: Discover = async (request) => {
      seen.push(request);
      if (request.url?.includes('refused.example'))
        throw new DiscoveryError('ssrf_blocked', 'mcp.refused.example resolves to 10.0.0.8, a private address', 400);
      if (request.url?.includes('locked.example') && !request.params?.['X-Api-Key']) {
        return {
          title: null,
          description: null,
          tools: [],
          params: [{ name: 'X-Api-Key', in: 'header', required: true, secret: true }],
          authRequired: true,
        };
      }
      return {
        title: 'Weather',
        description: 'Weather tools',
        tools: weatherTools(),
        params: [{ name: 'X-Api-Key', in: 'header', required: false, secret: true }],
      };
    };

    before(async function () {
      this.timeout(120_000);
      const taskQueues = { platform: 'market-discovery-test', browser: 'market-discovery-test-browser' };
      const stack = stacks.add(await h.startIsolatedStack({ taskQueues, queues: [] }));
      baseUrl = stack.baseUrl;
      connection = await NativeConnection.connect({ address: h.temporalAddress });
      worker = await Worker.create({
        connection,
        namespace: h.config.temporalNamespace,
        taskQueue: taskQueues.platform,
        workflowBundle: h.workflowBundle,
        activities: createMarketActivities({ db: h.db, config: stack.config, discover }),
      });
      running = worker.run();
    });

    after(async function () {
      this.timeout(60_000);
      worker.shutdown();
      await running;
      await connection.close();
    });

    const post = (path: string, apiKey: string, body: unknown) =>
      h.http('POST', `${baseUrl}/api/v1/mcp-market/${path}`, { apiKey, body });

    it('discovers without storing anything', async function () {
      const { apiKey, userId } = await h.createUser();
      const response = await post('discover', apiKey, { type: 'remote_mcp', url: 'https://mcp.weather.example/mcp' });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.deepEqual(
        response.body.tools.map((t: any) => t.name),
        ['get_weather', 'get_forecast', 'air_quality'],
      );
      assert.equal(response.body.params[0].name, 'X-Api-Key');
      assert.equal(
        (await h.db.selectFrom('market_validations').select('id').where('owner_id', '=', userId).execute()).length,
        0,
      );
    });

    it('validates and stores the validation for the caller; params reach discovery but are never stored or kept in history', async function () {
      const { apiKey, userId } = await h.createUser();
      const secret = `param-secret-${Date.now()}`;
      const response = await post('validate', apiKey, {
        type: 'remote_mcp',
        url: 'https://mcp.weather.example/mcp',
        params: { 'X-Api-Key': secret },
      });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.equal(response.body.status, 'valid');
      assert.match(response.body.sourceFingerprint, /^[0-9a-f]{64}$/);
      assert.equal(response.body.report.qualityScore, 100);
      assert.equal(response.body.report.toolCount, 3);
      assert.equal(seen.at(-1)!.params!['X-Api-Key'], secret, 'the discovery call got the params');
      const row = await h.db
        .selectFrom('market_validations')
        .selectAll()
        .where('id', '=', response.body.validationId)
        .executeTakeFirstOrThrow();
      assert.equal(row.owner_id, userId);
      assert.ok(!JSON.stringify(row).includes(secret));
      assert.ok(!JSON.stringify(response.body).includes(secret));
      const history = historyText(
        await h.client.workflow.getHandle(`market-validation-${response.body.validationId}`).fetchHistory(),
      ).join('\n');
      assert.ok(history.includes('mcp.weather.example'), 'the history text is readable (the check below can fail)');
      assert.ok(!history.includes(secret), 'the param value is sealed in the workflow history');
    });

    it('answers needs_parameters when the source wants credentials, and valid once they are given', async function () {
      const { apiKey } = await h.createUser();
      const locked = await post('validate', apiKey, { type: 'remote_mcp', url: 'https://mcp.locked.example/mcp' });
      assert.equal(locked.body.status, 'needs_parameters');
      assert.equal(locked.body.parametersRequired, true);
      assert.deepEqual(
        locked.body.requiredParameters.map((p: any) => p.name),
        ['X-Api-Key'],
      );
      const open = await post('validate', apiKey, {
        type: 'remote_mcp',
        url: 'https://mcp.locked.example/mcp',
        params: { 'X-Api-Key': 'k' },
      });
      assert.equal(open.body.status, 'valid');
    });

    it('turns a refusal of the discovery into a 400 with its code', async function () {
      const { apiKey } = await h.createUser();
      const response = await post('validate', apiKey, { type: 'remote_mcp', url: 'https://mcp.refused.example/mcp' });
      assert.equal(response.status, 400);
      assert.equal(response.body.error.code, 'ssrf_blocked');
      assert.match(response.body.error.message, /private address/);
    });

    it('fingerprints an OpenAPI document the same as YAML text, and accepts a submission of it as an object', async function () {
      const { apiKey } = await h.createUser();
      const fromYaml = await post('validate', apiKey, { type: 'openapi', specText: toYaml(OPENAPI) });
      const fromObject = await post('validate', apiKey, { type: 'openapi', spec: OPENAPI });
      assert.equal(fromYaml.status, 200, JSON.stringify(fromYaml.body));
      assert.equal(fromYaml.body.sourceFingerprint, fromObject.body.sourceFingerprint);
      const withBase = await post('validate', apiKey, {
        type: 'openapi',
        spec: OPENAPI,
        openapiBaseUrl: 'https://eu.tides.example',
      });
      assert.notEqual(withBase.body.sourceFingerprint, fromObject.body.sourceFingerprint);
      const submission = await h.http('POST', `${baseUrl}/api/v1/mcp-market/submissions`, {
        apiKey,
        body: {
          validationId: fromYaml.body.validationId,
          sourceFingerprint: fromYaml.body.sourceFingerprint,
          type: 'openapi',
          name: `Tides ${Date.now()}`,
          openapiSpec: OPENAPI,
          monetizationStrategy: 'free',
        },
      });
      assert.equal(submission.status, 201, JSON.stringify(submission.body));
      assert.deepEqual(submission.body.openapiSpec, OPENAPI);
      const asText = await h.http('PUT', `${baseUrl}/api/v1/mcp-market/submissions/${submission.body.id}`, {
        apiKey,
        body: {
          validationId: fromObject.body.validationId,
          sourceFingerprint: fromObject.body.sourceFingerprint,
          type: 'openapi',
          name: 'Tides',
          slug: submission.body.slug,
          openapiSpecText: JSON.stringify(OPENAPI),
          monetizationStrategy: 'free',
        },
      });
      assert.equal(asText.status, 200, JSON.stringify(asText.body));
    });
  });

  it('documents every market endpoint in a valid OpenAPI document', async function () {
    const document = buildOpenApiDocument();
    const result = await validateOpenApi(structuredClone(document) as never);
    assert.ok(result.valid, compileErrors(result));
    const paths = Object.keys(document.paths);
    for (const path of [
      '/mcp-market/discover',
      '/mcp-market/validate',
      '/mcp-market/event-verifications',
      '/mcp-market/event-verifications/{id}',
      '/market/icons',
      '/market/icons/{key}.png',
      '/mcp-market/submissions',
      '/mcp-market/submissions/{id}',
      '/mcp-market/submissions/{id}/submit',
      '/mcp-market/submissions/{id}/revisions',
      '/mcp-market/mcps',
      '/mcp-market/mcps/{id}',
      '/provider/runs/{runId}/charge',
    ]) {
      assert.ok(paths.includes(path), path);
    }
    const charge = (document.paths as any)['/provider/runs/{runId}/charge'].post;
    assert.deepEqual(Object.keys(charge.responses).sort(), ['200', '400', '401', '403', '404', '409']);
    const served = await h.http('GET', '/api/v1/openapi.json');
    assert.ok(served.body.components.schemas.McpMarketSubmissionRequest);
  });
});
