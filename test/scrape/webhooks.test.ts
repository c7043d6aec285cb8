import assert from 'node:assert/strict';
import { useHarness, type Harness } from '../support/stack/harness';
import { verifyWebhookSignature } from '../../lib/crypto';
import { startWebhookReceiver as startReceiver } from '../support/fakes/webhook-receiver';

describe('completion webhooks', function () {
  let h: Harness;
  let apiKey: string;
  let secret: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
    secret = (await h.http('GET', '/api/v1/account/webhook-secret', { apiKey })).body.webhookSecret;
    assert.match(secret, /^whsec_/);
  });

  it('delivers the signed job record, retrying with backoff after a failure', async function () {
    this.timeout(60_000);
    const receiver = await startReceiver([500, 200]);
    try {
      const accepted = await h.http('POST', '/api/v1/scrape', {
        apiKey,
        body: { url: `${h.site.url}/static`, webhook_url: receiver.url('/hooks/scrape') },
      });
      const statusPath = `/api/v1/scrape/status/${accepted.body.jobId}`;
      const job = await h.waitForJob(
        apiKey,
        statusPath,
        (j) => j.logs.some((l: string) => /webhook delivered/.test(l)),
        45_000,
      );
      assert.equal(job.status, 'completed');
      assert.equal(job.webhookUrl, receiver.url('/hooks/scrape'));
      assert.equal(receiver.deliveries.length, 2);
      assert.ok(job.logs.some((l: string) => /webhook attempt answered HTTP 500; will retry/.test(l)));
      for (const delivery of receiver.deliveries) {
        const signature = String(delivery.headers['x-webhook-signature']);
        assert.ok(verifyWebhookSignature(secret, delivery.body, signature), signature);
        assert.ok(!verifyWebhookSignature(secret, delivery.body + ' ', signature));
        assert.equal(delivery.headers['x-webhook-id'], `${job.id}:completed`);
        assert.equal(delivery.headers['x-webhook-event'], 'job.completed');
        assert.match(signature, new RegExp(`^t=${delivery.headers['x-webhook-timestamp']},v1=[0-9a-f]{64}$`));
      }
      const payload = JSON.parse(receiver.deliveries[1].body);
      assert.equal(payload.event, 'job.completed');
      assert.equal(payload.job.id, job.id);
      assert.equal(payload.job.result.metadata.title, 'Field Guide to Urban Beekeeping');
    } finally {
      await receiver.close();
    }
  });

  it('reports failed jobs too', async function () {
    const receiver = await startReceiver([204]);
    try {
      const accepted = await h.http('POST', '/api/v1/scrape', {
        apiKey,
        body: { url: `${h.site.url}/redirect-to-private`, webhook_url: receiver.url('/hooks/scrape') },
      });
      const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`, (j) =>
        j.logs.some((l: string) => /webhook delivered/.test(l)),
      );
      assert.equal(job.status, 'failed');
      const payload = JSON.parse(receiver.deliveries[0].body);
      assert.equal(payload.event, 'job.failed');
      assert.match(payload.job.error, /SSRF guard/);
    } finally {
      await receiver.close();
    }
  });

  it('never delivers to an address the SSRF guard refuses', async function () {
    const accepted = await h.http('POST', '/api/v1/scrape', {
      apiKey,
      body: { url: `${h.site.url}/static`, webhook_url: `${h.site.privateUrl}/hook` },
    });
    assert.equal(accepted.status, 400);
    assert.equal(accepted.body.error.details[0].path, 'body/webhook_url');
    assert.equal(h.site.privateHits(), 0);
  });
});
