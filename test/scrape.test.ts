import assert from 'node:assert/strict';
import { useHarness, type Harness } from './support/harness';
import { GATED_SECRET, SPA_SENTENCE } from './support/fixture-site';

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
    assert.deepEqual(Object.keys(job).sort(), ['createdAt', 'error', 'id', 'logs', 'request', 'result', 'status', 'updatedAt', 'userId', 'webhookUrl']);
    assert.equal(job.request.llm_provider, 'service');
    assert.equal(job.request.llm_model, 'gpt-4o-mini');
    assert.equal(job.request.async, true);
    assert.equal(job.request.mobile_proxy_country, 'US');
    assert.ok(job.logs.some((l: string) => /fetched .* over HTTP: 200/.test(l)), job.logs.join('\n'));
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
