import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { useHarness, type Harness, type IsolatedStack } from '../support/stack/harness';
import { AGENT_GOLDEN_TICKET } from '../support/fakes/fixture-site';
import { act, actMany, elementIndex, onPage } from '../support/agent-script';
import { startMcpServer } from '../support/fakes/mcp-server';
import { assertSettledOnce, workflowIdOf } from '../support/ledger-checks';

/** The runs of one workflow id, oldest first, following each run back to the one it continued. */
async function runChain(h: Harness, workflowId: string): Promise<{ runId: string; status: string }[]> {
  const chain: { runId: string; status: string }[] = [];
  let runId: string | undefined;
  for (;;) {
    const handle = h.client.workflow.getHandle(workflowId, runId);
    const description = await handle.describe();
    chain.unshift({ runId: description.runId, status: description.status.name });
    const history = await handle.fetchHistory();
    const previous = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!previous) return chain;
    runId = previous;
  }
}

describe('long agent runs continue as new before their history grows too large', function () {
  let h: Harness;
  let base: string;
  let stack: IsolatedStack;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    // A threshold this low makes every run of a few steps continue as new at least once.
    stack = await h.startIsolatedStack({
      taskQueues: { platform: 'can-platform', browser: 'can-browser' },
      overrides: { agent: { maxSteps: 30, deadlineMs: 600_000, historyEventsLimit: 40 } },
    });
    base = stack.baseUrl;
    h.forum.addCommunity('long_runs', [{ title: 'First' }, { title: 'Second' }, { title: 'Third' }]);
  });

  after(() => stack?.stop());

  it('a browser agent continues as new and finishes with the same session, the same steps and one debit', async function () {
    this.timeout(180_000);
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const list = (page: number) => `${h.site.url}/agent/list?page=${page}`;
    h.llm.enqueue(
      act('navigate', { url: list(1) }, 'Open the list'),
      act('navigate', { url: list(2) }, 'Look at page 2'),
      act('navigate', { url: list(1) }, 'Back to page 1'),
      onPage((o) => act('click', { index: elementIndex(o, /Next page/) }, 'Go to page 2')),
      onPage((o) => act('click', { index: elementIndex(o, /Next page/) }, 'Go to page 3')),
      onPage((o) => act('done', { success: true, answer: o.includes(AGENT_GOLDEN_TICKET) ? 'item 13' : 'not found' })),
    );
    const accepted = await h.http('POST', `${base}/api/v1/agentscraper`, {
      apiKey,
      body: { task: 'Find the golden ticket', headless: true },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const job = await h.waitForJob(
      apiKey,
      `${base}/api/v1/agentscraper/status/${accepted.body.jobId}`,
      undefined,
      150_000,
    );
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'item 13');
    assert.deepEqual(
      job.result.steps.map((s: any) => s.step),
      [1, 2, 3, 4, 5, 6],
    );
    assert.match(job.result.steps[4].url, /page=2/);

    const workflowId = await workflowIdOf(h, job.id);
    // The job turns completed inside the workflow's last activities; the workflow closes just after.
    await h.client.workflow.getHandle(workflowId).result();
    const chain = await runChain(h, workflowId);
    assert.ok(chain.length >= 2, `continued as new at least once: ${JSON.stringify(chain)}`);
    assert.ok(chain.slice(0, -1).every((run) => run.status === 'CONTINUED_AS_NEW'));
    assert.equal(chain[chain.length - 1].status, 'COMPLETED');

    const logs: string[] = job.logs;
    assert.equal(logs.filter((l) => /browser session opened/.test(l)).length, 1, logs.join('\n'));
    assert.ok(!logs.some((l) => /reopen|worker lost/.test(l)), logs.join('\n'));
    assert.equal(logs.filter((l) => /^\S+ processing started$/.test(l)).length, 1);
    await assertSettledOnce(h, job.id);
  });

  it('a scheduled social run continues as new and finishes once', async function () {
    this.timeout(180_000);
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const credentials = {
      forumClientId: 'can-client',
      forumClientSecret: 'can-secret-zzz',
      forumUsername: 'can_reader',
      forumPassword: 'can-pass-yyy',
    };
    h.forum.addApp({ clientId: credentials.forumClientId, clientSecret: credentials.forumClientSecret });
    h.forum.addUser({ username: credentials.forumUsername, password: credentials.forumPassword });
    const account = await h.http('POST', `${base}/api/v1/social-accounts`, {
      apiKey,
      body: { platform: 'forum', name: 'Reader', credentials },
    });
    assert.equal(account.status, 201, JSON.stringify(account.body));
    h.llm.enqueue(
      ...[1, 2, 3, 4, 5].map((limit) => act('list_community', { community: 'long_runs', sort: 'new', limit })),
      act('done', { success: true, answer: 'read it all' }),
    );
    const created = await h.http('POST', `${base}/api/v1/automations`, {
      apiKey,
      body: {
        name: 'Long reader',
        cron: '0 9 * * 1',
        task: 'Read the community',
        automation_type: 'forum-agent',
        forum: { mode: 'saved', accountIds: [account.body.account.id] },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const automationId = created.body.automation.id;
    let run;
    try {
      const deadline = Date.now() + 120_000;
      for (;;) {
        [run] = await h.db
          .selectFrom('jobs')
          .selectAll()
          .where('kind', '=', 'automation')
          .where(sql`request->>'automationId'`, '=', automationId)
          .execute();
        if (run && (run.status === 'completed' || run.status === 'failed')) break;
        if (Date.now() > deadline) throw new Error(`the run did not finish: ${JSON.stringify(run ?? null)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      await h.client.schedule.getHandle(`automation-${automationId}`).delete();
    }
    assert.equal(run.status, 'completed', run.error ?? '');
    await h.client.workflow.getHandle(run.workflow_id).result();
    assert.deepEqual(
      (run.result as any).tasks.map((t: any) => t.answer),
      ['read it all'],
    );
    assert.equal((run.result as any).steps.length, 6);
    const chain = await runChain(h, run.workflow_id);
    assert.ok(chain.length >= 2, `continued as new at least once: ${JSON.stringify(chain)}`);
    assert.equal(chain[chain.length - 1].status, 'COMPLETED');
    await assertSettledOnce(h, run.id);
  });

  it('a custom agent continues as new and keeps its conversation, its tool-call count and one settlement', async function () {
    this.timeout(180_000);
    const mcp = await startMcpServer();
    try {
      const { apiKey } = await h.createUser({ creditUsd: 5 });
      const since = h.llm.requests.length;
      // Seven decisions of one echo each, max_tool_calls 6: the seventh call is not sent, then done.
      h.llm.enqueue(
        ...[1, 2, 3, 4, 5, 6, 7].map((i) => act('echo', { message: `call ${i}` })),
        act('done', { success: true, answer: 'echoed six times' }),
      );
      const accepted = await h.http('POST', `${base}/api/v1/agents/run`, {
        apiKey,
        body: {
          task: 'Echo seven times',
          llm_model: 'gpt-4o-mini',
          max_tool_calls: 6,
          custom_mcps: [{ type: 'remote_mcp', name: 'Echo', source_url: mcp.url, tool_names: ['echo'] }],
        },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const job = await h.waitForJob(apiKey, `${base}/api/v1/agents/runs/${accepted.body.jobId}`, undefined, 150_000);
      assert.equal(job.status, 'completed', job.error);
      assert.equal(job.result.answer, 'echoed six times');
      assert.deepEqual(
        job.toolCalls.map((c: any) => [c.index, c.status]),
        [1, 2, 3, 4, 5, 6, 7].map((i) => [i, i <= 6 ? 'completed' : 'not_sent']),
      );
      assert.equal(mcp.toolRuns('echo'), 6, 'the seventh call never reached the server');

      const workflowId = await workflowIdOf(h, job.id);
      await h.client.workflow.getHandle(workflowId).result();
      const chain = await runChain(h, workflowId);
      assert.ok(chain.length >= 2, `continued as new at least once: ${JSON.stringify(chain)}`);
      assert.ok(chain.slice(0, -1).every((run) => run.status === 'CONTINUED_AS_NEW'));
      assert.equal(chain[chain.length - 1].status, 'COMPLETED');

      // Every run went on with the same conversation: the last decision still holds the task and every earlier result.
      const decisions = h.llm.requests.slice(since).filter((r) => r.kind === 'chat' && Array.isArray(r.body.tools));
      assert.equal(decisions.length, 8);
      const last = decisions[decisions.length - 1].body.messages ?? [];
      assert.equal(last.filter((m) => m.role === 'system').length, 1);
      assert.ok(last.some((m) => m.role === 'user' && m.content === 'Task: Echo seven times'));
      const results = last.filter((m) => m.role === 'tool').map((m) => String(m.content));
      assert.deepEqual(
        results.slice(0, 6),
        [1, 2, 3, 4, 5, 6].map((i) => `echo: call ${i}`),
      );
      assert.match(results[6], /^Not sent: .*max_tool_calls/);
      assert.equal(job.logs.filter((l: string) => /^\S+ processing started$/.test(l)).length, 1);
      await assertSettledOnce(h, job.id);
    } finally {
      await mcp.close();
    }
  });

  it('a social run with MCP tools carries its tool-call count across continue-as-new: call 21 is not sent', async function () {
    this.timeout(180_000);
    const mcp = await startMcpServer();
    try {
      const { apiKey } = await h.createUser({ creditUsd: 5 });
      const credentials = {
        forumClientId: 'can-tools-client',
        forumClientSecret: 'can-tools-secret-zzz',
        forumUsername: 'can_tools',
        forumPassword: 'can-tools-pass-yyy',
      };
      h.forum.addApp({ clientId: credentials.forumClientId, clientSecret: credentials.forumClientSecret });
      h.forum.addUser({ username: credentials.forumUsername, password: credentials.forumPassword });
      const account = await h.http('POST', `${base}/api/v1/social-accounts`, {
        apiKey,
        body: { platform: 'forum', name: 'Tools', credentials },
      });
      assert.equal(account.status, 201, JSON.stringify(account.body));
      // Five echo calls per step: 20 in four steps (the default max_tool_calls), then one more, then done.
      const five = (step: number) =>
        actMany([1, 2, 3, 4, 5].map((i) => ['echo', { message: `step ${step} call ${i}` }] as [string, object]));
      h.llm.enqueue(
        five(1),
        five(2),
        five(3),
        five(4),
        act('echo', { message: 'one too many' }),
        act('done', { success: true, answer: 'echoed' }),
      );
      const created = await h.http('POST', `${base}/api/v1/automations`, {
        apiKey,
        body: {
          name: 'Long echo',
          cron: '0 9 * * 1',
          task: 'Echo twenty messages',
          automation_type: 'forum-agent',
          forum: { mode: 'saved', accountIds: [account.body.account.id] },
          custom_mcps: [{ type: 'remote_mcp', name: 'Echo', source_url: mcp.url, tool_names: ['echo'], params: {} }],
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const automationId = created.body.automation.id;
      let run;
      try {
        const deadline = Date.now() + 150_000;
        for (;;) {
          [run] = await h.db
            .selectFrom('jobs')
            .selectAll()
            .where('kind', '=', 'automation')
            .where(sql`request->>'automationId'`, '=', automationId)
            .execute();
          if (run && (run.status === 'completed' || run.status === 'failed')) break;
          if (Date.now() > deadline) throw new Error(`the run did not finish: ${JSON.stringify(run ?? null)}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        await h.client.schedule.getHandle(`automation-${automationId}`).delete();
      }
      assert.equal(run.status, 'completed', run.error ?? '');
      const chain = await runChain(h, run.workflow_id);
      assert.ok(chain.length >= 3, `continued as new between the tool calls: ${JSON.stringify(chain)}`);
      const calls = await h.db
        .selectFrom('agent_tool_calls')
        .select(['call_index', 'status'])
        .where('job_id', '=', run.id)
        .orderBy('call_index')
        .execute();
      assert.deepEqual(
        calls.map((c) => c.call_index),
        Array.from({ length: 21 }, (_, i) => i + 1),
        'one row per call, numbered across runs',
      );
      assert.ok(calls.slice(0, 20).every((c) => c.status === 'completed'));
      assert.equal(calls[20].status, 'not_sent');
      assert.equal(mcp.toolRuns('echo'), 20, 'the 21st call never reached the server');
      await assertSettledOnce(h, run.id);
    } finally {
      await mcp.close();
    }
  });
});
