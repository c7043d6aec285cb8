// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { useHarness, type Harness, type IsolatedStack } from '../support/stack/harness';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { startWorkerProcess } from '../support/stack/worker-process';
import { act, actMany } from '../support/agent-script';
import type { RecordedRequest } from '../support/fakes/fake-openai';

function toolMessages(request: RecordedRequest): string[] {
  return (request.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The platform worker (workflow and activities) runs as its own process, killed with SIGKILL in the
 * middle of a custom-agent run; a new worker process takes over from the workflow history.
 */
describe('a platform worker killed in the middle of a custom-agent run', function () {
  this.timeout(300_000);
  const children: ChildProcess[] = [];
  let h: Harness;
  let mcp: TestMcpServer;
  let stack: IsolatedStack;
  let env: Record<string, string>;
  let apiKey: string;

  before(async () => {
    h = await useHarness();
    const taskQueues = { platform: 'custom-agent-crash-platform', browser: 'custom-agent-crash-browser' };
    stack = await h.startIsolatedStack({ taskQueues, queues: [] });
    env = {
      ...h.env,
      PLATFORM_TASK_QUEUE: taskQueues.platform,
      BROWSER_TASK_QUEUE: taskQueues.browser,
      WORKER_QUEUES: 'platform',
    };
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
    mcp = await startMcpServer();
    children.push(await startWorkerProcess(env));
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    h.llm.reset();
    await mcp.close();
    await stack?.stop();
  });

  const current = () => children[children.length - 1];
  const replaceWorker = async () => {
    const dying = current();
    dying.kill('SIGKILL');
    await new Promise((resolve) => dying.once('exit', resolve));
    children.push(await startWorkerProcess(env));
  };

  const run = (body: object) =>
    h.http('POST', `${stack.baseUrl}/api/v1/agents/run`, {
      apiKey,
      body: {
        llm_model: 'gpt-4o-mini',
        custom_mcps: [{ type: 'remote_mcp', name: 'tools', source_url: mcp.url }],
        ...body,
      },
    });

  it('does not call a non-idempotent tool twice: the call in flight is reported to the model, not resent', async () => {
    const since = h.llm.requests.length;
    h.llm.enqueue(act('increment', { delayMs: 4_000 }), act('done', { success: true, answer: 'checked' }));
    const accepted = await run({ task: 'Increment the counter once' });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    for (const deadline = Date.now() + 60_000; mcp.toolRuns('increment') === 0; await sleep(50))
      assert.ok(Date.now() < deadline, 'the tool was never called');
    await replaceWorker();
    const job = await h.waitForJob(
      apiKey,
      `${stack.baseUrl}/api/v1/agents/runs/${accepted.body.jobId}`,
      undefined,
      200_000,
    );
    assert.equal(job.status, 'completed', job.error);
    assert.equal(mcp.toolRuns('increment'), 1, 'the non-idempotent tool ran exactly once');
    assert.deepEqual(
      job.toolCalls.map((c: any) => [c.tool, c.status]),
      [['increment', 'failed']],
    );
    assert.match(job.toolCalls[0].error, /may have reached the tool/);
    const last = h.llm.requests
      .slice(since)
      .filter((r) => r.kind === 'chat')
      .at(-1)!;
    assert.ok(
      toolMessages(last).some((m) => /not sent again/.test(m)),
      'the model is told the call was not resent',
    );
  });

  it('keeps the max_tool_calls count across the crash: the call past the bound is not sent', async () => {
    const before = mcp.toolRuns('echo');
    let killed = false;
    h.llm.enqueue(
      act('echo', { message: 'a' }),
      async () => {
        if (!killed) {
          killed = true;
          await replaceWorker();
        }
        return act('echo', { message: 'lost with the worker' });
      },
      actMany([
        ['echo', { message: 'b' }],
        ['echo', { message: 'c' }],
      ]),
      act('echo', { message: 'd' }),
      act('done', { success: true, answer: 'three echoes' }),
    );
    const accepted = await run({ task: 'Echo four times', max_tool_calls: 3 });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const job = await h.waitForJob(
      apiKey,
      `${stack.baseUrl}/api/v1/agents/runs/${accepted.body.jobId}`,
      undefined,
      200_000,
    );
    assert.equal(job.status, 'completed', job.error);
    assert.ok(killed);
    assert.equal(mcp.toolRuns('echo') - before, 3, 'exactly max_tool_calls calls reached the tool');
    assert.deepEqual(
      job.toolCalls.map((c: any) => c.status),
      ['completed', 'completed', 'completed', 'not_sent'],
    );
    assert.equal(job.usage.toolCalls, 3);
    assert.equal(job.result.answer, 'three echoes');
  });
});
