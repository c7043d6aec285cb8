import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { useHarness, type IsolatedStack } from '../support/stack/harness';
import { startWorkerProcess } from '../support/stack/worker-process';
import { AGENT_GOLDEN_TICKET } from '../support/fakes/fixture-site';
import { act, elementIndex, onPage } from '../support/agent-script';

describe('a browser worker killed in the middle of an agent run', function () {
  const children: ChildProcess[] = [];
  let isolated: IsolatedStack | undefined;
  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await isolated?.stop();
  });

  it('reopens the session on another worker from the last checkpoint and completes', async function () {
    this.timeout(240_000);
    const h = await useHarness();
    const taskQueues = { platform: 'agent-crash-platform', browser: 'agent-crash-browser' };
    const stack = (isolated = await h.startIsolatedStack({ taskQueues, queues: ['platform'] }));
    const env = {
      ...h.env,
      PLATFORM_TASK_QUEUE: taskQueues.platform,
      BROWSER_TASK_QUEUE: taskQueues.browser,
      WORKER_QUEUES: 'browser',
    };
    const { apiKey } = await h.createUser({ creditUsd: 5 });

    const first = await startWorkerProcess(env);
    children.push(first);
    let killed = false;
    const nextPage = onPage((o) => act('click', { index: elementIndex(o, /Next page/) }, 'Next page'));
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/list?page=2` }, 'Open page 2'),
      async (request) => {
        if (!killed) {
          killed = true;
          first.kill('SIGKILL');
          await new Promise((resolve) => first.once('exit', resolve));
          children.push(await startWorkerProcess(env));
        }
        return (nextPage as (r: typeof request) => ReturnType<typeof act>)(request);
      },
      ...Array.from({ length: 4 }, () =>
        onPage((o) =>
          o.includes(AGENT_GOLDEN_TICKET)
            ? act('done', { success: true, answer: 'item 13' })
            : act('click', { index: elementIndex(o, /Next page/) }),
        ),
      ),
    );
    const accepted = await h.http('POST', `${stack.baseUrl}/api/v1/agentscraper`, {
      apiKey,
      body: { task: 'Find the golden ticket', headless: true },
    });
    assert.equal(accepted.status, 202);
    const job = await h.waitForJob(
      apiKey,
      `${stack.baseUrl}/api/v1/agentscraper/status/${accepted.body.jobId}`,
      undefined,
      200_000,
    );
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'item 13');
    assert.ok(killed);
    assert.ok(
      job.logs.some((l: string) => /browser worker lost .*reopening the session from the last checkpoint/.test(l)),
      job.logs.join('\n'),
    );
    assert.ok(job.logs.some((l: string) => /browser session reopened from the last checkpoint/.test(l)));
    h.llm.reset();
  });
});
