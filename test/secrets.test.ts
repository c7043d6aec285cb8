import assert from 'node:assert/strict';
import { useHarness } from './support/harness';
import { capturedOutput } from './support/output-capture';
import { startWebhookReceiver } from './support/webhook-receiver';

describe('secrets never leak', function () {
  it('keeps API keys, provider keys, the master key, webhook secrets and cookie values out of responses, logs, rows and run history', async function () {
    this.timeout(120_000);
    const h = await useHarness();
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });
    const webhookSecret = (await h.http('GET', '/api/v1/account/webhook-secret', { apiKey })).body.webhookSecret;
    const cookieValue = 'letmein';
    const receiver = await startWebhookReceiver();
    try {
      const webhook_url = receiver.url();
      const accepted = await h.http('POST', '/api/v1/scrape', {
        apiKey,
        body: { url: `${h.site.url}/cookie-gated`, cookies: `session=${cookieValue}`, webhook_url },
      });
      const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`, (j) => j.logs.some((l: string) => /webhook delivered/.test(l)));
      assert.equal(job.status, 'completed', job.error);
      // A failing run as well, so error paths are covered.
      const failing = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/redirect-to-private`, cookies: { session: cookieValue } } });
      await h.waitForJob(apiKey, `/api/v1/scrape/status/${failing.body.jobId}`);

      const secrets = {
        apiKey,
        serviceLlmKey: h.env.OPENAI_API_KEY,
        masterKey: h.env.MASTER_KEY,
        adminToken: h.env.ADMIN_TOKEN,
        webhookSecret,
        cookieValue,
      };
      const surfaces: Record<string, string> = {
        jobRecords: JSON.stringify([job, (await h.http('GET', `/api/v1/scrape/status/${failing.body.jobId}`, { apiKey })).body]),
        logs: JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey })).body),
        transactions: JSON.stringify((await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey })).body),
        account: JSON.stringify((await h.http('GET', '/api/v1/account', { apiKey })).body),
        webhookBodies: receiver.bodies().join('\n'),
        jobRows: JSON.stringify(await h.db.selectFrom('jobs').selectAll().where('user_id', '=', userId).execute()),
        processOutput: capturedOutput(),
        llmRequests: JSON.stringify(h.llm.requests.map((r) => r.body)),
      };
      for (const id of [accepted.body.jobId, failing.body.jobId]) {
        const history = await h.client.workflow.getHandle(`scrape-${id}`).fetchHistory();
        surfaces[`temporalHistory:${id}`] = JSON.stringify(history);
      }
      for (const [surface, text] of Object.entries(surfaces)) {
        for (const [name, secret] of Object.entries(secrets)) {
          if (name === 'cookieValue' && surface === 'llmRequests') continue; // the page shows no cookie; checked below
          assert.ok(!text.includes(secret), `${name} appears in ${surface}`);
        }
      }
      assert.ok(!surfaces.llmRequests.includes(`session=${cookieValue}`));
      assert.ok(!surfaces.jobRows.includes(cookieValue));
    } finally {
      await receiver.close();
    }
  });
});
