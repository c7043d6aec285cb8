import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { startWorkerProcess } from '../support/stack/worker-process';

describe('a worker process killed mid-scrape', function () {
  const stacks = stoppedAfter();
  let h: Harness;
  const children: ChildProcess[] = [];

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  after(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('completes on a new worker with exactly one debit', async function () {
    this.timeout(240_000);
    const taskQueues = { platform: 'crash-platform', browser: 'crash-browser' };
    const stack = stacks.add(await h.startIsolatedStack({ taskQueues, queues: [] }));
    const workerEnv = { ...h.env, PLATFORM_TASK_QUEUE: taskQueues.platform, BROWSER_TASK_QUEUE: taskQueues.browser };
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });

    const first = await startWorkerProcess(workerEnv);
    children.push(first);
    const held = h.llm.hold();
    const accepted = await h.http('POST', `${stack.baseUrl}/api/v1/scrape`, {
      apiKey,
      body: { url: `${h.site.url}/static?crash=1` },
    });
    assert.equal(accepted.status, 202);
    const statusPath = `${stack.baseUrl}/api/v1/scrape/status/${accepted.body.jobId}`;
    await held.reached;
    const midway = (await h.http('GET', statusPath, { apiKey })).body;
    assert.equal(midway.status, 'processing');
    assert.ok(midway.logs.some((l: string) => /extracting with/.test(l)));

    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    held.release();

    children.push(await startWorkerProcess(workerEnv));
    const job = await h.waitForJob(apiKey, statusPath, undefined, 150_000);
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.metadata.title, 'Field Guide to Urban Beekeeping');

    const transactions = await h.db.selectFrom('agent_transactions').selectAll().where('job_id', '=', job.id).execute();
    assert.equal(transactions.length, 1);
    const debits = await h.db
      .selectFrom('ledger_entries')
      .selectAll()
      .where('user_id', '=', userId)
      .where('kind', '=', 'usage')
      .execute();
    assert.equal(debits.length, 1);
    assert.equal(debits[0].job_id, job.id);
    assert.equal(debits[0].amount_micros, -transactions[0].cost_micros);
  });

  it("charges the model calls of one extraction once when its worker dies after the first answer (the retry's calls are the platform's)", async function () {
    this.timeout(240_000);
    const taskQueues = { platform: 'crash-reask-platform', browser: 'crash-reask-browser' };
    const stack = stacks.add(await h.startIsolatedStack({ taskQueues, queues: [] }));
    const workerEnv = { ...h.env, PLATFORM_TASK_QUEUE: taskQueues.platform, BROWSER_TASK_QUEUE: taskQueues.browser };
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const first = await startWorkerProcess(workerEnv);
    children.push(first);

    // The first answer lacks a required field, so the extraction records it and re-asks; the re-ask is still
    // unanswered when the worker dies. The retried step on the next worker asks both questions again.
    const missingTitle = { json: { price: 19.99 } };
    const complete = { json: { title: 'Field Guide', price: 19.99 } };
    let reasked!: () => void;
    const atReask = new Promise<void>((resolve) => (reasked = resolve));
    let answerLate!: () => void;
    const late = new Promise<void>((resolve) => (answerLate = resolve));
    h.llm.enqueue(missingTitle, async () => {
      reasked();
      await late;
      return complete;
    });
    try {
      const accepted = await h.http('POST', `${stack.baseUrl}/api/v1/scrape`, {
        apiKey,
        body: {
          url: `${h.site.url}/static?crash=reask`,
          structured_output: {
            type: 'object',
            properties: { title: { type: 'string' }, price: { type: 'number' } },
            required: ['title', 'price'],
            additionalProperties: false,
          },
        },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const jobId = accepted.body.jobId as string;
      await atReask;
      const llmUsage = () =>
        h.db
          .selectFrom('job_usage')
          .select(['usage_key', 'cost_micros'])
          .where('job_id', '=', jobId)
          .where('kind', '=', 'llm')
          .execute();
      const firstAnswer = await llmUsage();
      assert.equal(firstAnswer.length, 1, 'the first answer is recorded before the re-ask');

      first.kill('SIGKILL');
      await new Promise((resolve) => first.once('exit', resolve));
      h.llm.enqueue(missingTitle, complete);
      children.push(await startWorkerProcess(workerEnv));
      const job = await h.waitForJob(apiKey, `${stack.baseUrl}/api/v1/scrape/status/${jobId}`, undefined, 150_000);
      assert.equal(job.status, 'completed', job.error);
      assert.deepEqual(job.result.data, { title: 'Field Guide', price: 19.99 });

      // Charged as one extraction with one re-ask, as without the fault: two calls, not three.
      const charged = await llmUsage();
      assert.equal(charged.length, 2, JSON.stringify(charged));
      const debit = await h.db
        .selectFrom('ledger_entries')
        .select('amount_micros')
        .where('job_id', '=', jobId)
        .where('kind', '=', 'usage')
        .executeTakeFirstOrThrow();
      const usage = await h.db.selectFrom('job_usage').select('cost_micros').where('job_id', '=', jobId).execute();
      assert.equal(
        -Number(debit.amount_micros),
        usage.reduce((sum, u) => sum + Number(u.cost_micros), 0),
      );
    } finally {
      answerLate();
    }
  });
});
