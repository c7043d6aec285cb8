import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { maskSecretsIn, resolvePlaceholders } from '../../activities/agent/sensitive-data';
import { seal, unseal } from '../../lib/crypto';
import { act } from '../support/agent-script';
import { useHarness, type Harness } from '../support/stack/harness';
import { capturedOutput } from '../support/stack/output-capture';
import { startWebhookReceiver } from '../support/fakes/webhook-receiver';
import { stringsIn, workflowsHolding } from '../support/workflow-history';

function assertNowhere(
  surfaces: Record<string, string>,
  secrets: Record<string, string>,
  skip: (surface: string, name: string) => boolean = () => false,
) {
  for (const [surface, text] of Object.entries(surfaces)) {
    for (const [name, secret] of Object.entries(secrets)) {
      if (skip(surface, name)) continue;
      assert.ok(!text.includes(secret), `${name} appears in ${surface}`);
    }
  }
}

async function assertNotInHistories(h: Harness, workflowIds: string[], secrets: Record<string, string>) {
  for (const [name, secret] of Object.entries(secrets)) {
    assert.deepEqual(await workflowsHolding(h.client, workflowIds, secret), [], `${name} is in a workflow history`);
  }
}

describe('secrets never leak', function () {
  describe('sealing (AES-256-GCM)', function () {
    const key = randomBytes(32);

    it('round-trips and binds the value to its associated data', function () {
      const sealed = seal(key, 'the plaintext', 'job:1');
      assert.equal(unseal(key, sealed, 'job:1'), 'the plaintext');
      assert.throws(() => unseal(key, sealed, 'job:2'), /unable to authenticate data/);
    });

    it('refuses a sealed value whose authentication tag was shortened', function () {
      const [version, nonce, tag, body] = seal(key, 'the plaintext', 'aad').split('.');
      for (const bytes of [4, 8, 12, 15]) {
        const shortTag = Buffer.from(tag, 'base64url').subarray(0, bytes).toString('base64url');
        assert.throws(
          () => unseal(key, [version, nonce, shortTag, body].join('.'), 'aad'),
          { code: 'ERR_CRYPTO_INVALID_AUTH_TAG' },
          `a ${bytes}-byte tag was accepted`,
        );
      }
    });
  });

  describe('sensitive-data placeholders', function () {
    const items = [{ id: 'pw', value: 'hunter2"\\x', domain_pattern: '127.0.0.1' }];

    it('resolves placeholders with whitespace around the id, and only on the allowed host', function () {
      assert.deepEqual(resolvePlaceholders('a <secret> pw </secret> b', items, 'http://127.0.0.1/login'), {
        text: 'a hunter2"\\x b',
        secretIds: ['pw'],
      });
      assert.match(
        (resolvePlaceholders('<secret>pw</secret>', items, 'http://localhost/') as { error: string }).error,
        /only allowed on 127\.0\.0\.1/,
      );
    });

    it('leaves unclosed placeholders with long runs of spaces as they are (their CPU time: npm run bench:hostile-inputs)', function () {
      const text = `<secret>${' '.repeat(5_000)}x`.repeat(3);
      assert.deepEqual(resolvePlaceholders(text, items, 'http://127.0.0.1/'), { text, secretIds: [] });
    });

    it('masks values inside JSON values, including ones JSON escapes', function () {
      assert.deepEqual(maskSecretsIn({ text: 'say hunter2"\\x now', list: ['hunter2"\\x'] }, items), {
        text: 'say <secret>pw</secret> now',
        list: ['<secret>pw</secret>'],
      });
    });
  });

  describe('the workflow-history check', function () {
    it('finds a secret planted in a workflow input, which the raw history JSON never shows', async function () {
      this.timeout(60_000);
      const h = await useHarness();
      const planted = `planted-${randomBytes(8).toString('hex')}`;
      const workflowId = `secret-check-${randomUUID()}`;
      // No worker polls this queue: the start event alone holds the input, as any workflow's history does.
      const handle = await h.client.workflow.start('scrapeWorkflow', {
        taskQueue: `secret-check-${randomUUID()}`,
        workflowId,
        args: [{ jobId: randomUUID(), plantedForTheCheck: { note: planted } }],
      });
      try {
        const history = await handle.fetchHistory();
        assert.ok(
          !JSON.stringify(history).includes(planted),
          'the raw history shows payloads in plain text; this check would be pointless',
        );
        assert.ok(stringsIn(history).includes(planted));
        assert.deepEqual(await workflowsHolding(h.client, [workflowId], planted), [
          `${workflowId} (run ${handle.firstExecutionRunId})`,
        ]);
        assert.deepEqual(await workflowsHolding(h.client, [workflowId], 'not-planted-anywhere'), []);
      } finally {
        await handle.terminate('secret check done');
      }
    });
  });

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
      const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`, (j) =>
        j.logs.some((l: string) => /webhook delivered/.test(l)),
      );
      assert.equal(job.status, 'completed', job.error);
      // A failing run as well, so error paths are covered.
      const failing = await h.http('POST', '/api/v1/scrape', {
        apiKey,
        body: { url: `${h.site.url}/redirect-to-private`, cookies: { session: cookieValue } },
      });
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
        jobRecords: JSON.stringify([
          job,
          (await h.http('GET', `/api/v1/scrape/status/${failing.body.jobId}`, { apiKey })).body,
        ]),
        logs: JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey })).body),
        transactions: JSON.stringify((await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey })).body),
        account: JSON.stringify((await h.http('GET', '/api/v1/account', { apiKey })).body),
        webhookBodies: receiver.bodies().join('\n'),
        jobRows: JSON.stringify(await h.db.selectFrom('jobs').selectAll().where('user_id', '=', userId).execute()),
        processOutput: capturedOutput(),
        llmRequests: JSON.stringify(h.llm.requests.map((r) => r.body)),
      };
      // the page shows no cookie (checked just below), but its text reaches the model
      assertNowhere(surfaces, secrets, (surface, name) => name === 'cookieValue' && surface === 'llmRequests');
      assert.ok(!surfaces.llmRequests.includes(`session=${cookieValue}`));
      assert.ok(!surfaces.jobRows.includes(cookieValue));
      await assertNotInHistories(h, [`scrape-${accepted.body.jobId}`, `scrape-${failing.body.jobId}`], secrets);
    } finally {
      await receiver.close();
    }
  });

  it('masks a sensitive value the model echoes (goal, tool arguments, extract answer, final answer) before anything is stored', async function () {
    this.timeout(120_000);
    const h = await useHarness();
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });
    const secretValue = `Quartz-Otter-${randomBytes(4).toString('hex')}`;
    const fromRequest = h.llm.requests.length;
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/static` }, `Open the page; I will need ${secretValue} later`),
      act('extract', { question: `Does the page mention ${secretValue}?` }, `Look for ${secretValue}`),
      { content: `No, ${secretValue} is not on this page.` },
      act('done', { success: true, answer: `Done. The code was ${secretValue}.` }, `Report ${secretValue}`),
    );
    const accepted = await h.http('POST', '/api/v1/agentscraper', {
      apiKey,
      body: { task: 'Read the page', headless: true, sensitive_data: [{ id: 'code', value: secretValue }] },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const job = await h.waitForJob(apiKey, `/api/v1/agentscraper/status/${accepted.body.jobId}`);
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'Done. The code was <secret>code</secret>.');
    assert.ok(
      job.result.steps.some((s: { goal: string | null }) => s.goal?.includes('<secret>code</secret>')),
      JSON.stringify(job.result.steps),
    );

    const jobId = accepted.body.jobId;
    const surfaces: Record<string, string> = {
      statusResponse: JSON.stringify(job),
      logs: JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey })).body),
      jobRow: JSON.stringify(await h.db.selectFrom('jobs').selectAll().where('user_id', '=', userId).execute()),
      stepRows: JSON.stringify(await h.db.selectFrom('agent_steps').selectAll().where('job_id', '=', jobId).execute()),
      taskResultRows: JSON.stringify(
        await h.db.selectFrom('agent_task_results').selectAll().where('job_id', '=', jobId).execute(),
      ),
      processOutput: capturedOutput(),
      // the model said it, but what the service sends back to the model (earlier goals, extract results) must not
      llmRequests: JSON.stringify(h.llm.requests.slice(fromRequest).map((r) => r.body)),
    };
    assertNowhere(surfaces, { secretValue });
    await assertNotInHistories(h, [`agentic-${jobId}`], { secretValue });
  });
});
