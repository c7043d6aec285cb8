import assert from 'node:assert/strict';
import { CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { microsToUsd } from '../../lib/money';
import { useHarness, type Harness } from '../support/stack/harness';
import { startPingSite, type PingSite } from '../support/fakes/ping-site';
import { assertSettledOnce, workflowIdOf } from '../support/ledger-checks';
import { act } from '../support/agent-script';

describe('a run cancelled through Temporal is still settled', function () {
  let h: Harness;
  let site: PingSite;
  let apiKey: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    site = await startPingSite();
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
  });

  after(async () => {
    await site?.close();
  });

  async function cancelAndAwait(jobId: string) {
    const handle = h.client.workflow.getHandle(await workflowIdOf(h, jobId));
    await handle.cancel();
    // The workflow itself ends as cancelled, after its cleanup.
    await assert.rejects(
      handle.result(),
      (err: unknown) => err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure,
    );
  }

  it('a scrape cancelled while its page renders ends failed, charged once, with its browser context closed', async function () {
    this.timeout(150_000);
    const accepted = await h.http('POST', '/api/v1/scrape', {
      apiKey,
      body: { url: site.pageUrl('scrape-cancel', { hang: true }), async: true },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const jobId = accepted.body.jobId;
    await site.waitForPing('scrape-cancel');

    await cancelAndAwait(jobId);
    const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${jobId}`);
    assert.equal(job.status, 'failed');
    assert.equal(job.error, 'run was cancelled');
    assert.ok(
      job.logs.some((l: string) => /charged \$/.test(l)),
      job.logs.join('\n'),
    );
    assert.ok(await site.becomesQuiet('scrape-cancel'), 'the page of the cancelled render stopped calling home');
    const used = await assertSettledOnce(h, jobId);
    assert.ok(used > 0, 'the browser time of the cancelled render is charged');
  });

  it('an agent run cancelled mid-step ends failed, charged once, with its browser session closed', async function () {
    this.timeout(150_000);
    let atSecondDecision!: () => void;
    const reachedSecondDecision = new Promise<void>((resolve) => (atSecondDecision = resolve));
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    h.llm.enqueue(act('navigate', { url: site.pageUrl('agent-cancel') }, 'Open the page'), async () => {
      atSecondDecision();
      await gate;
      return act('wait', { seconds: 0 });
    });
    const accepted = await h.http('POST', '/api/v1/agentscraper', {
      apiKey,
      body: { task: 'Watch the page', headless: true },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const jobId = accepted.body.jobId;
    await site.waitForPing('agent-cancel');
    await reachedSecondDecision;

    const cancelled = cancelAndAwait(jobId);
    // The model's answer to the step in flight still arrives (and is charged) before the run settles.
    setTimeout(openGate, 500);
    await cancelled;
    const job = await h.waitForJob(apiKey, `/api/v1/agentscraper/status/${jobId}`);
    assert.equal(job.status, 'failed');
    assert.equal(job.error, 'run was cancelled');
    assert.ok(await site.becomesQuiet('agent-cancel'), 'the session of the cancelled run was closed');
    const used = await assertSettledOnce(h, jobId);
    assert.ok(used > 0);
    assert.equal(job.result.summary.costUsd, microsToUsd(used));
    h.llm.reset();
  });
});
