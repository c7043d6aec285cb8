import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startWebhookReceiver } from '../support/fakes/webhook-receiver';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { GATED_SECRET, SPA_SENTENCE } from '../support/fakes/fixture-site';
import { workflowIdOf } from '../support/ledger-checks';

describe('POST /scrape (async) and GET /scrape/status', function () {
  let h: Harness;
  let apiKey: string;
  let userId: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey, userId } = await h.createUser({ creditUsd: 5 }));
  });

  async function scrape(body: Record<string, unknown>, key = apiKey) {
    const accepted = await h.http('POST', '/api/v1/scrape', { apiKey: key, body });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal(accepted.body.status, 'pending');
    return h.waitForJob(key, `/api/v1/scrape/status/${accepted.body.jobId}`);
  }

  it('scrapes a static page over plain HTTP into markdown, metadata and the default output', async function () {
    const job = await scrape({ url: `${h.site.url}/static` });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.userId, userId);
    assert.equal(job.result.renderedWith, 'http');
    assert.equal(job.result.metadata.title, 'Field Guide to Urban Beekeeping');
    assert.match(job.result.metadata.description, /rooftops/);
    assert.match(job.result.markdown, /# Field Guide to Urban Beekeeping/);
    assert.ok(Array.isArray(job.result.data.key_points));
    assert.equal(typeof job.result.data.summary, 'string');
    assert.deepEqual(Object.keys(job).sort(), [
      'createdAt',
      'error',
      'id',
      'logs',
      'request',
      'result',
      'status',
      'updatedAt',
      'userId',
      'webhookUrl',
    ]);
    assert.equal(job.request.llm_provider, 'service');
    assert.equal(job.request.llm_model, 'gpt-4o-mini');
    assert.equal(job.request.async, true);
    assert.equal(job.request.mobile_proxy_country, 'US');
    assert.ok(
      job.logs.some((l: string) => /fetched .* over HTTP: 200/.test(l)),
      job.logs.join('\n'),
    );
    assert.ok(job.logs.some((l: string) => /charged \$/.test(l)));
  });

  it('renders a script-built page in Chromium, decided by the content', async function () {
    const job = await scrape({ url: `${h.site.url}/spa` });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.renderedWith, 'browser');
    assert.ok(job.result.markdown.includes(SPA_SENTENCE));
    assert.ok(job.result.usage.browserSeconds > 0);
  });
});

describe('scrape pipeline details', function () {
  const stacks = stoppedAfter();
  let h: Harness;
  let apiKey: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
  });

  async function run(body: Record<string, unknown>, options: { key?: string; base?: string } = {}) {
    const key = options.key ?? apiKey;
    const base = options.base ?? '';
    const accepted = await h.http('POST', `${base}/api/v1/scrape`, { apiKey: key, body });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    return h.waitForJob(key, `${base}/api/v1/scrape/status/${accepted.body.jobId}`);
  }

  for (const [form, cookies] of [
    ['a Cookie header string', 'theme=dark; session=letmein'],
    ['an object', { session: 'letmein' }],
    ['an array of cookie objects', [{ name: 'session', value: 'letmein', path: '/' }]],
  ] as const) {
    it(`sends cookies given as ${form} and never echoes their values`, async function () {
      const job = await run({ url: `${h.site.url}/cookie-gated`, cookies });
      assert.equal(job.status, 'completed', job.error);
      assert.ok(job.result.markdown.includes(GATED_SECRET), job.result.markdown);
      assert.ok(!JSON.stringify(job.request).includes('letmein'), JSON.stringify(job.request));
      assert.match(JSON.stringify(job.request.cookies), /session/);
    });
  }

  it('without cookies the gated page shows the login prompt', async function () {
    const job = await run({ url: `${h.site.url}/cookie-gated` });
    assert.equal(job.status, 'completed', job.error);
    assert.ok(!job.result.markdown.includes(GATED_SECRET));
  });

  it('refuses a redirect to a private address and nothing reaches it', async function () {
    const before = h.site.privateConnections();
    const job = await run({ url: `${h.site.url}/redirect-to-private` });
    assert.equal(job.status, 'failed');
    assert.match(job.error, /SSRF guard/);
    assert.match(job.error, /127\.0\.0\.2/);
    assert.equal(h.site.privateConnections(), before);
    assert.equal(h.site.privateHits(), 0);
  });

  it('follows redirect chains hop by hop', async function () {
    const job = await run({ url: `${h.site.url}/redirect-chain` });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.finalUrl, `${h.site.url}/static`);
  });

  it('extracts a field list with structured outputs, honouring llm_model and system_prompt', async function () {
    h.llm.enqueue({ json: { headline: 'Field Guide to Urban Beekeeping', hive_count: 3, tips: ['water', 'shade'] } });
    const seen = h.llm.requests.length;
    const job = await run({
      url: `${h.site.url}/static`,
      llm_model: 'gpt-4o',
      system_prompt: 'Answer like a beekeeper.',
      structured_output: [
        { id: 'headline', type: 'string' },
        { id: 'hive_count', type: 'integer' },
        { id: 'tips', type: 'string[]' },
      ],
    });
    assert.equal(job.status, 'completed', job.error);
    assert.deepEqual(job.result.data, {
      headline: 'Field Guide to Urban Beekeeping',
      hive_count: 3,
      tips: ['water', 'shade'],
    });
    const request = h.llm.requests.slice(seen).find((r) => r.kind === 'chat')!;
    assert.equal(request.body.model, 'gpt-4o');
    const format = request.body.response_format as any;
    assert.equal(format.type, 'json_schema');
    assert.deepEqual(Object.keys(format.json_schema.schema.properties), ['headline', 'hive_count', 'tips']);
    assert.deepEqual(format.json_schema.schema.properties.tips, { type: 'array', items: { type: 'string' } });
    const system = request.body.messages!.find((m) => m.role === 'system')!;
    assert.match(String(system.content), /Answer like a beekeeper\./);
    assert.equal(job.result.usage.llmModel, 'gpt-4o');
  });

  it('accepts a JSON Schema as structured_output', async function () {
    h.llm.enqueue({ json: { price: 12.5 } });
    const job = await run({
      url: `${h.site.url}/static`,
      structured_output: {
        type: 'object',
        properties: { price: { type: 'number' } },
        required: ['price'],
        additionalProperties: false,
      },
    });
    assert.equal(job.status, 'completed', job.error);
    assert.deepEqual(job.result.data, { price: 12.5 });
  });

  it('re-asks once when the answer does not match the schema', async function () {
    h.llm.enqueue({ json: { hive_count: 'three' } }, { json: { hive_count: 3 } });
    const job = await run({ url: `${h.site.url}/static`, structured_output: [{ id: 'hive_count', type: 'integer' }] });
    assert.equal(job.status, 'completed', job.error);
    assert.deepEqual(job.result.data, { hive_count: 3 });
    assert.ok(
      job.logs.some((l: string) => /after one re-ask/.test(l)),
      job.logs.join('\n'),
    );
  });

  it('fails after a second invalid answer and still charges the tokens, exactly once', async function () {
    const { apiKey: key, userId } = await h.createUser({ creditUsd: 1 });
    h.llm.enqueue({ json: { hive_count: 'three' } }, { json: { hive_count: 'still three' } });
    const job = await run(
      { url: `${h.site.url}/static`, structured_output: [{ id: 'hive_count', type: 'integer' }] },
      { key },
    );
    assert.equal(job.status, 'failed');
    assert.match(job.error, /Extraction failed/);
    const tx = await h.http('GET', '/api/v1/transactions', { apiKey: key });
    assert.equal(tx.body.transactions.length, 1);
    const [charge] = tx.body.transactions;
    assert.equal(charge.jobId, job.id);
    assert.equal(charge.result, 'failed');
    assert.equal(charge.agentName, 'scrape');
    assert.equal(charge.payload.llm[0].calls, 2);
    assert.ok(charge.cost > 0);
    const debits = await h.db
      .selectFrom('ledger_entries')
      .selectAll()
      .where('user_id', '=', userId)
      .where('kind', '=', 'usage')
      .execute();
    assert.equal(debits.length, 1);
    assert.equal(debits[0].amount_micros, -Math.round(charge.cost * 1e6));
  });

  it('goes through the configured proxy with the requested country', async function () {
    const before = h.proxy.requests.length;
    const job = await run({
      url: `${h.site.url}/static?via=proxy`,
      mobile_proxy_enabled: true,
      mobile_proxy_country: 'de',
    });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.request.mobile_proxy_country, 'DE');
    const seen = h.proxy.requests.slice(before);
    assert.ok(
      seen.some((r) => r.target === `${h.site.url}/static?via=proxy`),
      JSON.stringify(seen),
    );
    const auth = Buffer.from(seen[0].authorization!.replace(/^Basic /, ''), 'base64').toString();
    assert.match(auth, /^user-DE:proxy-pass$/i);
  });

  it('solves a captcha through the solver adapter when asked to', async function () {
    const job = await run({ url: `${h.site.url}/captcha`, captcha_solver_enabled: true });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.renderedWith, 'browser');
    assert.ok(job.result.markdown.includes('hidden price list'), job.result.markdown);
    assert.ok(h.captchaSolver.tasks.some((t) => t.siteKey === 'fixture-site-key' && t.method === 'userrecaptcha'));
  });

  it('fails at once, naming the proxy, when the proxy refuses the request (407) or cannot be reached', async function () {
    const asked: string[] = [];
    const refusing = http.createServer((request, response) => {
      asked.push(request.url ?? '');
      response.writeHead(407, { 'proxy-authenticate': 'Basic realm="proxy"' }).end();
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    const unused = http.createServer();
    await new Promise<void>((resolve) => unused.listen(0, '127.0.0.1', resolve));
    const closedPort = (unused.address() as AddressInfo).port;
    await new Promise((resolve) => unused.close(resolve));
    try {
      const cases = [
        {
          name: 'refusing',
          port: (refusing.address() as AddressInfo).port,
          error: /proxy refused the request .*\(HTTP 407/i,
        },
        { name: 'closed', port: closedPort, error: /Could not reach the proxy/ },
      ];
      for (const { name, port, error } of cases) {
        const stack = stacks.add(
          await h.startIsolatedStack({
            taskQueues: { platform: `platform-proxy-${name}`, browser: `browser-proxy-${name}` },
            overrides: { proxyUrlTemplate: `http://user-{country}:proxy-pass@127.0.0.1:${port}` },
            queues: ['platform'],
          }),
        );
        const job = await run(
          { url: `${h.site.url}/static?proxy=${name}`, mobile_proxy_enabled: true, mobile_proxy_country: 'de' },
          { base: stack.baseUrl },
        );
        assert.equal(job.status, 'failed', name);
        assert.match(job.error, error, name);
        assert.doesNotMatch(job.error, /page answered|ECONNREFUSED 127/, name);
        assert.doesNotMatch(job.error, /proxy-pass/, name);
        // One attempt: a proxy failure is not the site's and retrying the fetch would not help.
        const history = await h.client.workflow.getHandle(await workflowIdOf(h, job.id)).fetchHistory();
        const attempts = (history.events ?? []).flatMap((event) =>
          event.activityTaskStartedEventAttributes ? [event.activityTaskStartedEventAttributes.attempt] : [],
        );
        assert.ok(
          attempts.length > 0 && attempts.every((attempt) => attempt === 1),
          `${name}: attempts ${JSON.stringify(attempts)}`,
        );
      }
      assert.deepEqual(asked, [`${h.site.url}/static?proxy=refusing`]);
    } finally {
      refusing.closeAllConnections();
      await new Promise((resolve) => refusing.close(resolve));
    }
  });

  it('fails clearly when the request asks for a proxy or captcha solver that is not configured', async function () {
    const stack = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'platform-bare', browser: 'browser-bare' },
        overrides: { proxyUrlTemplate: null, captcha: null },
      }),
    );
    const proxied = await run({ url: `${h.site.url}/static`, mobile_proxy_enabled: true }, { base: stack.baseUrl });
    assert.equal(proxied.status, 'failed');
    assert.match(proxied.error, /mobile_proxy_enabled was requested but this service has no proxy configured/);
    const solved = await run({ url: `${h.site.url}/captcha`, captcha_solver_enabled: true }, { base: stack.baseUrl });
    assert.equal(solved.status, 'failed');
    assert.match(solved.error, /no captcha solver configured/);
  });
});

describe('synchronous scrape (async: false)', function () {
  const stacks = stoppedAfter();
  let h: Harness;
  let apiKey: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
  });

  it('answers 200 with the result object', async function () {
    const response = await h.http('POST', '/api/v1/scrape', {
      apiKey,
      body: { url: `${h.site.url}/static`, async: false },
    });
    assert.equal(response.status, 200);
    assert.equal(response.body.metadata.title, 'Field Guide to Urban Beekeeping');
    assert.equal(typeof response.body.data.summary, 'string');
  });

  it('answers the fallback {jobId, status, error} when the run fails', async function () {
    const response = await h.http('POST', '/api/v1/scrape', {
      apiKey,
      body: { url: `${h.site.url}/redirect-to-private`, async: false },
    });
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys(response.body).sort(), ['error', 'jobId', 'status']);
    assert.equal(response.body.status, 'failed');
    assert.match(response.body.error, /SSRF guard/);
  });

  it('answers the result as soon as the job ends, not after its webhook is delivered', async function () {
    // The webhook endpoint fails every attempt, so the run goes on retrying it (5 s, then 10 s, ...) after
    // the job ended: the answer must not wait for those retries (it waited for the whole workflow, then
    // answered "not finished" with the job completed).
    const receiver = await startWebhookReceiver(Array(10).fill(500));
    const stack = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'platform-sync-hook', browser: 'browser-sync-hook' },
        overrides: { syncScrapeTimeoutMs: 12_000 },
      }),
    );
    try {
      const response = await h.http('POST', `${stack.baseUrl}/api/v1/scrape`, {
        apiKey,
        body: { url: `${h.site.url}/static`, async: false, webhook_url: receiver.url() },
      });
      assert.equal(response.status, 200);
      assert.equal(response.body.metadata?.title, 'Field Guide to Urban Beekeeping', JSON.stringify(response.body));
      assert.ok(
        receiver.deliveries.length <= 1,
        `answered after ${receiver.deliveries.length} webhook attempts: it waited for the retries`,
      );
    } finally {
      // The run would retry its webhook for an hour: end it here, not in a later file.
      const jobs = await h.db
        .selectFrom('jobs')
        .select('workflow_id')
        .where('webhook_url', '=', receiver.url())
        .execute();
      for (const { workflow_id } of jobs)
        await h.client.workflow
          .getHandle(workflow_id)
          .terminate('test over')
          .catch(() => undefined);
      await receiver.close();
    }
  });

  it('answers the fallback when the run takes longer than the wait limit', async function () {
    const stack = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'platform-slow', browser: 'browser-slow' },
        overrides: { syncScrapeTimeoutMs: 1000 },
      }),
    );
    const held = h.llm.hold();
    try {
      const response = await h.http('POST', `${stack.baseUrl}/api/v1/scrape`, {
        apiKey,
        body: { url: `${h.site.url}/static`, async: false },
      });
      assert.equal(response.status, 200);
      assert.ok(['pending', 'processing'].includes(response.body.status), response.body.status);
      assert.match(response.body.error, /not finished after 1s; poll/);
    } finally {
      held.release();
    }
  });
});

describe('Idempotency-Key on POST /scrape', function () {
  it('returns the same job for a retried request and starts one run', async function () {
    const h = await useHarness();
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });
    const send = () =>
      h.http('POST', '/api/v1/scrape', {
        apiKey,
        body: { url: `${h.site.url}/static` },
        headers: { 'idempotency-key': 'order-77' },
      });
    const responses = await Promise.all([send(), send(), send()]);
    for (const r of responses) assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(new Set(responses.map((r) => r.body.jobId)).size, 1);
    const jobs = await h.db.selectFrom('jobs').select('id').where('user_id', '=', userId).execute();
    assert.equal(jobs.length, 1);
    const usage = await h.db
      .selectFrom('monthly_usage')
      .select('operations')
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    assert.equal(usage.operations, 1);
  });
});
