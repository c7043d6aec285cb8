// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import { networkPolicyFromConfig } from '../../lib/net/policy';
import { platformActivities } from '../../workers/activities';
import { useHarness, type Harness, type IsolatedStack } from '../support/stack/harness';
import { act } from '../support/agent-script';
import type { RecordedRequest } from '../support/fakes/fake-openai';
import { assertSettledOnce, workflowIdOf } from '../support/ledger-checks';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { assertReplaysViolateDeterminism, commandsOf, historyFromFixture } from '../support/workflow-history';

/**
 * Histories recorded on the code before the one agent loop (commit 44b2fdb: customAgentWorkflow was a loop
 * of its own; the agent loop composed a tool call's outcome itself), by running each case in this harness
 * with the fake OpenAI server and saving `handle.fetchHistory()` with historyToFixture.
 */
const FIXTURES = path.join(__dirname, '..', 'support', 'fixtures', 'workflow-histories');
const fixtures = readdirSync(FIXTURES)
  .filter((name) => name.endsWith('.json'))
  .sort();
const customAgentFixtures = fixtures.filter((name) => name.startsWith('custom-agent-'));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function toolMessages(request: RecordedRequest): string[] {
  return (request.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

const bundle = (workflowsPath: string) => bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN') });

describe('agent runs begun before the one agent loop', function () {
  this.timeout(300_000);
  let h: Harness;

  before(async () => {
    h = await useHarness();
  });

  it('replay their recorded histories on the current workflows: custom agents, a browser run, a social run continuing as new', async () => {
    assert.deepEqual(customAgentFixtures, [
      'custom-agent-cancelled.json',
      'custom-agent-failed.json',
      'custom-agent-max-tool-calls.json',
      'custom-agent-scheduled.json',
      'custom-agent-stopped-by-budget.json',
      'custom-agent-structured.json',
    ]);
    assert.ok(
      fixtures.includes('agent-browser.json') &&
        fixtures.includes('one-loop-tool-calls.json') &&
        fixtures.filter((name) => name.startsWith('automation-social-tools-run')).length === 3,
    );
    for (const name of fixtures) {
      const history = historyFromFixture(path.join(FIXTURES, name));
      await Worker.runReplayHistory(
        { workflowBundle: h.workflowBundle, replayName: name.replace(/\W/g, '-') },
        history,
      ).catch((err) => {
        throw new Error(`${name} does not replay: ${(err as Error).message}`);
      });
    }
  });

  it('replay a one-loop run that called its tools before they were recorded with the call: callTool, then recordAgentToolCall', async () => {
    // Recorded on the code before TOOL_CALL_RECORDED_WITH_CALL (a custom agent: echo and fail in one
    // answer, a non-idempotent increment, a tool it does not have, then done).
    const history = historyFromFixture(path.join(FIXTURES, 'one-loop-tool-calls.json'));
    const commands = commandsOf(history);
    assert.deepEqual(
      commands.filter((c) => /Tool|patch/.test(c)),
      [
        'marker:core_patch',
        'prepareAgentToolbox',
        'callTool',
        'recordAgentToolCall',
        'callTool',
        'recordAgentToolCall',
        'callTool',
        'recordAgentToolCall',
        'recordAgentToolCall',
      ],
    );
    await Worker.runReplayHistory({ workflowBundle: h.workflowBundle, replayName: 'one-loop-tool-calls' }, history);
  });

  it('would not replay on the one loop: the version guard keeps them on the code they began on', async () => {
    const unguarded: WorkflowBundle = await bundle(
      require.resolve('../support/fixtures/workflows-without-version-guard'),
    );
    await assertReplaysViolateDeterminism(unguarded, FIXTURES, customAgentFixtures);
  });

  describe('a custom-agent run begun on a worker with the old code', () => {
    const taskQueues = { platform: 'versions-platform', browser: 'versions-browser' };
    let baseUrl: string;
    let connection: NativeConnection;
    let mcp: TestMcpServer;
    let apiKey: string;
    let activities: ReturnType<typeof platformActivities>;
    let stack: IsolatedStack;

    before(async () => {
      stack = await h.startIsolatedStack({ taskQueues, queues: [] });
      baseUrl = stack.baseUrl;
      activities = platformActivities({
        db: h.db,
        config: stack.config,
        policy: networkPolicyFromConfig(stack.config),
      });
      connection = await NativeConnection.connect({ address: h.temporalAddress });
      mcp = await startMcpServer();
      ({ apiKey } = await h.createUser({ creditUsd: 5 }));
    });
    after(async () => {
      h.llm.reset();
      await mcp?.close();
      await connection?.close();
      await stack?.stop();
    });

    const startWorker = async (workflowBundle: WorkflowBundle, identity: string) => {
      const worker = await Worker.create({
        connection,
        namespace: h.config.temporalNamespace,
        taskQueue: taskQueues.platform,
        workflowBundle,
        activities,
        identity,
        shutdownGraceTime: '30s',
      });
      const running = worker.run();
      return {
        stop: async () => {
          worker.shutdown();
          await running;
        },
      };
    };

    const run = (task: string, tool: string) =>
      h.http('POST', `${baseUrl}/api/v1/agents/run`, {
        apiKey,
        body: {
          task,
          llm_model: 'gpt-4o-mini',
          custom_mcps: [{ type: 'remote_mcp', name: 'tools', source_url: mcp.url, tool_names: [tool] }],
        },
      });

    it('finishes on a worker with the new code, on the code it began on; a run begun there takes the one loop', async () => {
      const oldWorker = await startWorker(
        await bundle(require.resolve('../support/fixtures/workflows-before-one-loop')),
        'old-code-worker',
      );
      const since = h.llm.requests.length;
      h.llm.enqueue(
        act('slow', { ms: 3_000 }, 'Wait first'),
        act('done', { success: true, answer: 'finished on the new worker' }),
      );
      const accepted = await run('Wait, then finish', 'slow');
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      for (const deadline = Date.now() + 60_000; mcp.toolRuns('slow') === 0; await sleep(50))
        assert.ok(Date.now() < deadline, 'the old worker never called the tool');
      // The old worker stops taking work in the middle of the run (the tool call in flight ends on it).
      await oldWorker.stop();

      const newWorker = await startWorker(h.workflowBundle, 'new-code-worker');
      try {
        const job = await h.waitForJob(
          apiKey,
          `${baseUrl}/api/v1/agents/runs/${accepted.body.jobId}`,
          undefined,
          120_000,
        );
        assert.equal(job.status, 'completed', job.error);
        assert.equal(job.result.answer, 'finished on the new worker');
        assert.equal(job.result.success, true);
        assert.deepEqual(
          job.toolCalls.map((c: any) => [c.tool, c.status]),
          [['slow', 'completed']],
        );
        const decisions = h.llm.requests.slice(since).filter((r) => r.kind === 'chat' && Array.isArray(r.body.tools));
        assert.equal(decisions.length, 2);
        assert.ok(
          toolMessages(decisions[1]).includes('waited 3000 ms'),
          'the tool result recorded on the new worker reached the model',
        );
        await assertSettledOnce(h, job.id);

        // The job is completed before its workflow ends (its last local activities settle and notify): the whole history.
        const handle = h.client.workflow.getHandle(await workflowIdOf(h, job.id));
        await handle.result();
        const history = await handle.fetchHistory();
        const workers = new Set(
          (history.events ?? []).map((e) => e.workflowTaskCompletedEventAttributes?.identity).filter(Boolean),
        );
        assert.deepEqual([...workers].sort(), ['new-code-worker', 'old-code-worker']);
        // No patch marker: the run kept the old commands to its end, on the activity names the new worker still serves.
        assert.deepEqual(commandsOf(history), [
          'marker:core_local_activity',
          'prepareCustomAgentToolbox',
          'decideCustomAgentStep',
          'callTool',
          'marker:core_local_activity',
          'decideCustomAgentStep',
          'acceptCustomAgentAnswer',
          'marker:core_local_activity',
          'marker:core_local_activity',
        ]);

        // A run begun on the new code takes the one loop: its patch marker, then the loop's activities
        // (a tool call with its record in one activity, after that patch's marker).
        h.llm.enqueue(act('echo', { message: 'new' }), act('done', { success: true, answer: 'one loop' }));
        const fresh = await run('Echo, then finish', 'echo');
        assert.equal(fresh.status, 202, JSON.stringify(fresh.body));
        const freshJob = await h.waitForJob(
          apiKey,
          `${baseUrl}/api/v1/agents/runs/${fresh.body.jobId}`,
          undefined,
          60_000,
        );
        assert.equal(freshJob.status, 'completed', freshJob.error);
        assert.equal(freshJob.result.answer, 'one loop');
        const freshHandle = h.client.workflow.getHandle(await workflowIdOf(h, freshJob.id));
        await freshHandle.result();
        const freshHistory = await freshHandle.fetchHistory();
        assert.deepEqual(commandsOf(freshHistory), [
          'marker:core_patch',
          'marker:core_local_activity',
          'prepareAgentToolbox',
          'decideNextActions',
          'marker:core_patch',
          'callAgentTool',
          'decideNextActions',
          'acceptFinalAnswer',
          'marker:core_local_activity',
          'finishAgentJob',
        ]);
      } finally {
        await newWorker.stop();
      }
    });
  });
});

/**
 * Histories recorded on the one agent loop before it was split into named steps and toolboxes (commit 1af4d10:
 * runAgentLoop one function choosing browser, social or tools at each step), by running
 * test/agents/continue-as-new.test.ts, agent-selection-tools.test.ts and custom-agents.test.ts and saving every
 * run's `fetchHistory()` with historyToFixture. They replay only while the loop issues the same commands in the
 * same order.
 */
const ONE_LOOP_FIXTURES = path.join(FIXTURES, 'one-loop');

describe('agent runs recorded on the one agent loop', function () {
  this.timeout(300_000);
  let h: Harness;

  before(async () => {
    h = await useHarness();
  });

  it('replay on the current workflows: browser, social and tool-only runs, continuing as new, with selection tools', async () => {
    const names = readdirSync(ONE_LOOP_FIXTURES)
      .filter((name) => name.endsWith('.json'))
      .sort();
    const commands = new Set<string>();
    for (const name of names) {
      const history = historyFromFixture(path.join(ONE_LOOP_FIXTURES, name));
      for (const command of commandsOf(history)) commands.add(command);
      await Worker.runReplayHistory(
        { workflowBundle: h.workflowBundle, replayName: `one-loop-${name.replace(/\W/g, '-')}` },
        history,
      ).catch((err) => {
        throw new Error(`one-loop/${name} does not replay: ${(err as Error).message}`);
      });
    }
    // Every toolbox and every way a run ends or goes on is among them.
    for (const command of [
      'marker:core_patch',
      'openBrowserSession',
      'holdBrowserSession',
      'observePage',
      'executeAction',
      'closeBrowserSession',
      'observeSocial',
      'executeSocialTool',
      'prepareAgentToolbox',
      'callAgentTool',
      'recordAgentToolCall',
      'acceptFinalAnswer',
      'recordStep',
      'saveTaskResult',
      'finishAgentJob',
      'startCustomAgentRun',
    ])
      assert.ok(commands.has(command), `the recorded runs include ${command}`);
    const ends = names.map((name) => historyFromFixture(path.join(ONE_LOOP_FIXTURES, name)).events?.at(-1)?.eventType);
    assert.ok(ends.includes(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW));
    assert.ok(ends.includes(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED));
  });
});
