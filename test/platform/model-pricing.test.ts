import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  BROWSER_MICROS_PER_SECOND,
  CAPTCHA_MICROS_PER_SOLVE,
  DEFAULT_PRICE_TABLE,
  ModelNotPricedError,
  PROXY_MICROS_PER_REQUEST,
  checkLlmModel,
  createPriceTable,
  priceTableFromSetting,
} from '../../lib/billing/pricing';
import { ConfigError, loadConfig } from '../../lib/config';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { act } from '../support/agent-script';

describe('LLM price table', () => {
  const cost = DEFAULT_PRICE_TABLE.costMicros;

  it('prices known models in integer micro-USD per million tokens', () => {
    assert.deepEqual(DEFAULT_PRICE_TABLE.priceOf('gpt-4o-mini'), {
      inputMicrosPerMillion: 150_000,
      outputMicrosPerMillion: 600_000,
      vision: true,
    });
    assert.deepEqual(DEFAULT_PRICE_TABLE.priceOf('gpt-4o'), {
      inputMicrosPerMillion: 2_500_000,
      outputMicrosPerMillion: 10_000_000,
      vision: true,
    });
    assert.equal(cost('gpt-4o-mini', 1_000_000, 1_000_000), 750_000);
    assert.equal(cost('gpt-4o', 1_000_000, 0), 2_500_000);
    assert.equal(cost('gpt-4o', 0, 1_000_000), 10_000_000);
  });

  it('rounds every charge up to a whole micro and never goes negative', () => {
    assert.equal(cost('gpt-4o-mini', 1, 0), 1);
    assert.equal(cost('gpt-4o-mini', 1_000, 500), 450);
    assert.equal(cost('gpt-4o-mini', 1_001, 0), 151);
    assert.equal(cost('gpt-4o-mini', 0, 0), 0);
    assert.equal(cost('gpt-4o-mini', -50, -10), 0);
    for (const c of [cost('gpt-4.1-nano', 7, 3), cost('o4-mini', 12_345, 678)])
      assert.ok(Number.isSafeInteger(c) && c > 0);
    assert.throws(() => cost('gpt-4o', Number.NaN, 0), /finite/);
  });

  it('normalises provider prefixes and snapshot dates, and refuses to price a model it does not list', () => {
    const p = (m: string) => DEFAULT_PRICE_TABLE.priceOf(m);
    assert.equal(p('openai/gpt-4o-mini'), p('gpt-4o-mini'));
    assert.equal(p('gpt-4o-mini-2024-07-18'), p('gpt-4o-mini'));
    assert.equal(p('GPT-4.1-Mini'), p('gpt-4.1-mini'));
    assert.equal(p('claude-3-5-sonnet-20241022')!.inputMicrosPerMillion, 3_000_000);
    assert.equal(p('anthropic/claude-sonnet-4')!.outputMicrosPerMillion, 15_000_000);
    assert.equal(DEFAULT_PRICE_TABLE.accepts('router/auto'), true);
    assert.equal(p('some-new-model'), null);
    assert.equal(DEFAULT_PRICE_TABLE.accepts('some-new-model'), false);
    assert.throws(() => cost('some-new-model', 1_000_000, 1_000_000), ModelNotPricedError);
  });

  it('exposes integer unit prices for browser time, captchas and proxies', () => {
    for (const price of [BROWSER_MICROS_PER_SECOND, CAPTCHA_MICROS_PER_SOLVE, PROXY_MICROS_PER_REQUEST])
      assert.ok(Number.isSafeInteger(price) && price > 0);
  });

  it('is extended, overridden and narrowed by LLM_MODEL_PRICES in both spellings, exactly in micro-USD', () => {
    const listed = priceTableFromSetting('acme-large=2.5:10.125, gpt-4o-mini=0.2:0.8 ,gpt-4o=off');
    assert.deepEqual(listed.priceOf('acme-large'), {
      inputMicrosPerMillion: 2_500_000,
      outputMicrosPerMillion: 10_125_000,
      vision: false,
    });
    assert.deepEqual(
      listed.priceOf('gpt-4o-mini'),
      { inputMicrosPerMillion: 200_000, outputMicrosPerMillion: 800_000, vision: true },
      'a new price keeps the default vision flag',
    );
    assert.equal(listed.accepts('gpt-4o'), false);
    assert.equal(listed.accepts('gpt-4.1'), true, 'the rest of the default table stays');
    assert.ok(listed.models.includes('acme-large') && !listed.models.includes('gpt-4o'));
    const json = priceTableFromSetting(
      '{"Acme/Large": {"input": 0.000001, "output": 3}, "o3": [1, 4], "claude-opus-4": "off"}',
    );
    assert.deepEqual(json.priceOf('acme/large'), {
      inputMicrosPerMillion: 1,
      outputMicrosPerMillion: 3_000_000,
      vision: false,
    });
    assert.deepEqual(json.priceOf('o3'), {
      inputMicrosPerMillion: 1_000_000,
      outputMicrosPerMillion: 4_000_000,
      vision: true,
    });
    assert.equal(json.accepts('claude-opus-4'), false);
    assert.equal(priceTableFromSetting(null), DEFAULT_PRICE_TABLE);
    assert.equal(createPriceTable({}).accepts('gpt-4o'), false);
  });

  it('says which models accept images, and LLM_MODEL_PRICES sets or keeps the vision flag in both spellings', () => {
    for (const model of [
      'gpt-4o-mini',
      'openai/gpt-4o-2024-08-06',
      'gpt-4.1-nano',
      'o4-mini',
      'claude-sonnet-4-5',
      'anthropic/claude-haiku-4-5',
    ]) {
      assert.equal(DEFAULT_PRICE_TABLE.acceptsImages(model), true, model);
    }
    for (const model of ['o3-mini', 'claude-3-5-haiku', 'router/auto', 'some-new-model'])
      assert.equal(DEFAULT_PRICE_TABLE.acceptsImages(model), false, model);
    const listed = priceTableFromSetting(
      'acme-eye=1:2:vision, acme-text=1:2, gpt-4o=2.5:10:text, gpt-4o-mini=0.2:0.8, o3-mini=1.1:4.4:VISION',
    );
    assert.deepEqual(
      ['acme-eye', 'acme-text', 'gpt-4o', 'gpt-4o-mini', 'o3-mini'].map((m) => listed.acceptsImages(m)),
      [true, false, false, true, true],
    );
    const json = priceTableFromSetting(
      '{"acme-eye": {"input": 1, "output": 2, "vision": true}, "gpt-4.1": {"input": 2, "output": 8, "vision": false}, "o3": [1, 4]}',
    );
    assert.deepEqual(
      ['acme-eye', 'gpt-4.1', 'o3'].map((m) => json.acceptsImages(m)),
      [true, false, true],
    );
    assert.throws(() => priceTableFromSetting('acme=1:2:colour'), /:vision or :text/);
    assert.throws(
      () => priceTableFromSetting('{"acme": {"input": 1, "output": 2, "vision": "yes"}}'),
      /"acme" must be/,
    );
  });

  it('lets only service models from the table through, naming the accepted ones; router models are free text', () => {
    assert.equal(checkLlmModel(DEFAULT_PRICE_TABLE, { llm_provider: 'service', llm_model: 'gpt-4o-mini' }), null);
    assert.equal(checkLlmModel(DEFAULT_PRICE_TABLE, { llm_provider: 'service', llm_model: 'router/auto' }), null);
    assert.equal(checkLlmModel(DEFAULT_PRICE_TABLE, { llm_provider: 'router', llm_model: 'anything/goes-here' }), null);
    const problem = checkLlmModel(DEFAULT_PRICE_TABLE, { llm_provider: 'service', llm_model: 'cheap-clone-9000' });
    assert.equal(problem?.code, 'model_not_supported');
    assert.deepEqual(problem?.accepted, DEFAULT_PRICE_TABLE.models);
    assert.match(problem!.message, /"cheap-clone-9000".*gpt-4o-mini/);
  });

  describe('configuration', () => {
    let dataDir: string;
    before(() => (dataDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-config-'))));
    after(() => rmSync(dataDir, { recursive: true, force: true }));

    it('reads LLM_MODEL_PRICES at start', () => {
      const config = loadConfig({ DATA_DIR: dataDir, LLM_MODEL_PRICES: 'acme-large=2:8' });
      assert.equal(config.modelPrices.costMicros('acme-large', 1_000_000, 1_000_000), 10_000_000);
      assert.equal(loadConfig({ DATA_DIR: dataDir }).modelPrices, DEFAULT_PRICE_TABLE);
    });

    const invalid: [string, Record<string, string>, RegExp][] = [
      ['LLM_MODEL_PRICES', { LLM_MODEL_PRICES: 'acme-large=2' }, /model=input:output/],
      ['LLM_MODEL_PRICES', { LLM_MODEL_PRICES: 'acme-large=two:8' }, /two USD amounts/],
      ['LLM_MODEL_PRICES', { LLM_MODEL_PRICES: 'acme-large=0.0000001:1' }, /at most 6 decimals/],
      ['LLM_MODEL_PRICES', { LLM_MODEL_PRICES: 'acme-large=-1:1' }, /two USD amounts/],
      ['LLM_MODEL_PRICES', { LLM_MODEL_PRICES: 'a=1:1,A=2:2' }, /given twice/],
      ['LLM_MODEL_PRICES', { LLM_MODEL_PRICES: 'no-such-default=off' }, /does not have/],
      ['LLM_MODEL_PRICES', { LLM_MODEL_PRICES: '{"acme": 3}' }, /"acme" must be/],
      ['LLM_MODEL_PRICES', { LLM_MODEL_PRICES: '{"acme": ' }, /not valid JSON/],
      ['SKILLS_AI_MODEL', { SKILLS_AI_MODEL: 'unpriced-model' }, /not in the LLM price table/],
      ['SKILLS_AI_MODEL', { LLM_MODEL_PRICES: 'gpt-4o-mini=off' }, /"gpt-4o-mini" is not in the LLM price table/],
    ];
    for (const [variable, env, why] of invalid) {
      it(`stops with a ConfigError naming ${variable} for ${JSON.stringify(env)}`, () => {
        assert.throws(
          () => loadConfig({ DATA_DIR: dataDir, ...env }),
          (err: unknown) => err instanceof ConfigError && err.message.includes(variable) && why.test(err.message),
        );
      });
    }
  });
});

describe('service model allowlist on the API', function () {
  const stacks = stoppedAfter();
  let h: Harness;
  let apiKey: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
  });

  function assertModelRefused(
    response: { status: number; body: any },
    model: string,
    accepted = h.config.modelPrices.models,
  ) {
    assert.equal(response.status, 400, JSON.stringify(response.body));
    assert.equal(response.body.error.code, 'model_not_supported');
    assert.match(response.body.error.message, new RegExp(`"${model}"`));
    assert.deepEqual(response.body.error.details, [
      { path: 'body/llm_model', message: `must be one of: ${accepted.join(', ')}` },
    ]);
    assert.ok(response.body.error.requestId);
  }

  it('refuses an unknown service model with 400 model_not_supported on /scrape, /agentscraper and /automations, storing nothing', async function () {
    const jobsBefore = await h.db.selectFrom('jobs').select('id').execute();
    const automationsBefore = await h.db.selectFrom('automations').select('id').execute();
    assertModelRefused(
      await h.http('POST', '/api/v1/scrape', {
        apiKey,
        body: { url: `${h.site.url}/static`, llm_model: 'budget-clone-1' },
      }),
      'budget-clone-1',
    );
    assertModelRefused(
      await h.http('POST', '/api/v1/agentscraper', {
        apiKey,
        body: { task: 'Read the page', llm_provider: 'service', llm_model: 'budget-clone-2' },
      }),
      'budget-clone-2',
    );
    assertModelRefused(
      await h.http('POST', '/api/v1/automations', {
        apiKey,
        body: {
          name: 'n',
          cron: '0 9 * * 1',
          task: 't',
          automation_type: 'forum-agent',
          llm_model: 'budget-clone-3',
          forum: { mode: 'saved', useAll: true },
        },
      }),
      'budget-clone-3',
    );
    assert.equal((await h.db.selectFrom('jobs').select('id').execute()).length, jobsBefore.length);
    assert.equal((await h.db.selectFrom('automations').select('id').execute()).length, automationsBefore.length);
  });

  it("accepts the agent default 'router/auto' with the service provider, and any model id with the router provider", async function () {
    h.llm.enqueue(act('done', { success: true, answer: 'fine' }));
    const agent = await h.http('POST', '/api/v1/agentscraper', {
      apiKey,
      body: { task: `Open ${h.site.url}/static and stop`, llm_provider: 'service', headless: true },
    });
    assert.equal(agent.status, 202, JSON.stringify(agent.body));
    const job = await h.waitForJob(apiKey, `/api/v1/agentscraper/status/${agent.body.jobId}`);
    assert.equal(job.request.llm_model, 'router/auto');
    const routed = await h.http('POST', '/api/v1/scrape', {
      apiKey,
      body: { url: `${h.site.url}/static`, llm_provider: 'router', llm_model: 'some-vendor/brand-new-model' },
    });
    assert.equal(routed.status, 202, JSON.stringify(routed.body));
    await h.waitForJob(apiKey, `/api/v1/scrape/status/${routed.body.jobId}`);
  });

  it('accepts and bills a model added by the operator at the configured price, and refuses one withdrawn', async function () {
    const prices = priceTableFromSetting('acme-extract-1=1:2,gpt-4o=off');
    const stack = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'pricing-platform', browser: 'pricing-browser' },
        overrides: { modelPrices: prices },
      }),
    );
    const { apiKey: key } = await h.createUser({ creditUsd: 5 });
    assertModelRefused(
      await h.http('POST', `${stack.baseUrl}/api/v1/scrape`, {
        apiKey: key,
        body: { url: `${h.site.url}/static`, llm_model: 'gpt-4o' },
      }),
      'gpt-4o',
      prices.models,
    );
    assert.ok(prices.models.includes('acme-extract-1'));
    const accepted = await h.http('POST', `${stack.baseUrl}/api/v1/scrape`, {
      apiKey: key,
      body: { url: `${h.site.url}/static`, llm_model: 'acme-extract-1' },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const job = await h.waitForJob(key, `${stack.baseUrl}/api/v1/scrape/status/${accepted.body.jobId}`);
    assert.equal(job.status, 'completed', job.error);
    const rows = await h.db
      .selectFrom('job_usage')
      .selectAll()
      .where('job_id', '=', job.id)
      .where('kind', '=', 'llm')
      .execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].model, 'acme-extract-1');
    assert.ok(rows[0].prompt_tokens > 0);
    assert.equal(
      rows[0].cost_micros,
      prices.costMicros('acme-extract-1', rows[0].prompt_tokens, rows[0].completion_tokens),
    );
  });
});
