// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { sql } from 'kysely';
import type { ActionOutcome, AgentToolCallRecord } from '../../activities/agent/brain';
import { createAgentToolCallActivities, type AgentToolCallInput } from '../../activities/agent/tool-call';
import {
  createToolActivities,
  TOOL_CALL_FAILED,
  type SelectionLoader,
  type ToolSelectionRef,
} from '../../activities/tools';
import { RunConnections } from '../../activities/tools/run-connections';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { ToolCallError } from '../../lib/tools/errors';
import type { ToolSource } from '../../lib/tools/source';
import { act, actMany } from '../support/agent-script';
import type { RecordedRequest } from '../support/fakes/fake-openai';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { assertSettledOnce, workflowIdOf } from '../support/ledger-checks';
import { useHarness, type Harness } from '../support/stack/harness';
import { commandsOf } from '../support/workflow-history';

const policy = parseNetworkAllowlist('127.0.0.1,localhost');
const masterKey = randomBytes(32);
const ref: ToolSelectionRef = { kind: 'custom_mcps', index: 0 };
const quiet = { logger: new DefaultLogger('ERROR') };

/** Runs an activity in a mock activity context (attempt, heartbeat details) and keeps its types. */
function runIn<I, O>(env: MockActivityEnvironment, activity: (input: I) => Promise<O>, input: I): Promise<O> {
  return env.run(activity as (input: I) => Promise<O>, input) as Promise<O>;
}

function toolMessages(request: RecordedRequest): string[] {
  return (request.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

/** A source kept for a run whose connection broke: every call fails as `error` says, and is counted. */
function brokenSource(error: ToolCallError): ToolSource & { calls: number; closed: boolean } {
  const source = {
    type: 'remote_mcp' as const,
    tools: [],
    calls: 0,
    closed: false,
    isRepeatable: () => false,
    call: async () => {
      source.calls++;
      throw error;
    },
    relayCall: async () => {
      throw error;
    },
    close: async () => {
      source.closed = true;
    },
  };
  return source;
}

describe('an agent tool call with its record (callAgentTool)', () => {
  let server: TestMcpServer;
  before(async () => {
    server = await startMcpServer();
  });
  after(() => server.close());

  const planned = (jobId: string, tool: string, args: unknown = {}): AgentToolCallInput => ({
    call: { jobId, selection: ref, tool, args },
    record: { jobId, index: 1, source: 'tools', tool, startedAt: Date.now() },
  });

  /** The tool activities over one selection (the test server), counting how often a source is opened. */
  const toolsOver = (connections?: RunConnections) => {
    const opened: string[] = [];
    const loadSelection: SelectionLoader = async (jobId) => {
      opened.push(jobId);
      return { type: 'remote_mcp', url: server.url };
    };
    return { opened, activities: createToolActivities({ policy, masterKey, loadSelection, connections }) };
  };

  it('records the answered call in the same activity; a record that cannot be written hands the answer back, and the tool ran once', async () => {
    const { activities } = toolsOver();
    const records: AgentToolCallRecord[] = [];
    let failWrites = 0;
    const { callAgentTool } = createAgentToolCallActivities({
      callTool: activities.callTool,
      recordAgentToolCall: async (call): Promise<ActionOutcome> => {
        if (failWrites-- > 0) throw new Error('connection to the database lost');
        records.push(call);
        return { ok: call.status === 'completed', navigated: false, message: `recorded ${call.output?.text}` };
      },
    });
    const env = () => new MockActivityEnvironment({ attempt: 1 }, quiet);

    const done = await runIn(env(), callAgentTool, planned('job-a', 'echo', { message: 'hi' }));
    assert.deepEqual(done, { recorded: { ok: true, navigated: false, message: 'recorded echo: hi' } });
    assert.deepEqual(
      records.map((r) => [r.status, r.error, r.output?.text]),
      [['completed', null, 'echo: hi']],
    );

    const before = server.incrementCalls();
    failWrites = 1;
    const unrecorded = await runIn(env(), callAgentTool, planned('job-a', 'increment'));
    assert.equal(server.incrementCalls(), before + 1, 'the tool was sent once');
    assert.ok('unrecorded' in unrecorded, JSON.stringify(unrecorded));
    assert.equal(unrecorded.unrecorded, 'connection to the database lost');
    assert.equal(unrecorded.call.status, 'completed');
    assert.match(unrecorded.call.output!.text, /^counter is \d+$/);
    assert.equal(records.length, 1, 'nothing was recorded by the failed write');

    const toolError = await runIn(env(), callAgentTool, planned('job-a', 'fail'));
    assert.ok('recorded' in toolError);
    assert.deepEqual(
      records.slice(1).map((r) => [r.status, r.error]),
      [['error', 'the widget store is on fire']],
    );
  });

  it('fails as callTool does when the call got no answer, recording nothing (the workflow records it failed)', async () => {
    const { activities } = toolsOver();
    let recorded = 0;
    const { callAgentTool } = createAgentToolCallActivities({
      callTool: activities.callTool,
      recordAgentToolCall: async () => {
        recorded++;
        return { ok: true, navigated: false, message: '' };
      },
    });
    const before = server.incrementCalls();
    // A retry after an attempt that may have sent the call: refused, not sent again.
    const env = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { inFlightAttempt: 1 } }, quiet);
    await assert.rejects(runIn(env, callAgentTool, planned('job-a', 'increment')), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'ToolCallMayHaveRun');
      return true;
    });
    assert.equal(server.incrementCalls(), before);
    assert.equal(recorded, 0);
  });

  it("keeps a run's connection for its next call, never for another run's, and closes it when the run ends", async () => {
    const connections = new RunConnections({ idleMs: 60_000 });
    const { opened, activities } = toolsOver(connections);
    const call = (jobId: string, message: string) =>
      runIn(new MockActivityEnvironment({ attempt: 1 }, quiet), activities.callTool, {
        jobId,
        selection: ref,
        tool: 'echo',
        args: { message },
      });
    try {
      assert.equal((await call('job-1', 'one')).text, 'echo: one');
      assert.equal((await call('job-1', 'two')).text, 'echo: two');
      assert.deepEqual(opened, ['job-1'], "the run's second call used its kept connection");
      assert.equal((await call('job-2', 'three')).text, 'echo: three');
      assert.deepEqual(opened, ['job-1', 'job-2'], 'another run opens its own');
      assert.deepEqual([connections.size('job-1'), connections.size('job-2')], [1, 1]);

      await connections.endRun('job-1');
      assert.deepEqual([connections.size('job-1'), connections.size('job-2')], [0, 1]);
      assert.equal((await call('job-1', 'four')).text, 'echo: four');
      assert.equal(connections.size('job-1'), 0, 'a run that ended keeps nothing');

      // A source that failed a call is not kept.
      const failed = await runIn(new MockActivityEnvironment({ attempt: 1 }, quiet), activities.callTool, {
        jobId: 'job-3',
        selection: ref,
        tool: 'no_such_tool',
        args: {},
      }).then(
        () => null,
        (err: unknown) => err,
      );
      assert.ok(failed instanceof ApplicationFailure && failed.type === TOOL_CALL_FAILED);
      assert.equal(connections.size('job-3'), 0);
    } finally {
      await connections.closeAll();
    }
  });

  it('replaces a broken kept connection only where sending again is safe', async () => {
    const connections = new RunConnections();
    const { opened, activities } = toolsOver(connections);
    try {
      // Provably not delivered: the call goes over a new connection, once.
      const undelivered = brokenSource(new ToolCallError('not_delivered', 'connection refused', false, false));
      connections.give('job-x', ref, undelivered);
      const before = server.incrementCalls();
      const answer = await runIn(new MockActivityEnvironment({ attempt: 1 }, quiet), activities.callTool, {
        jobId: 'job-x',
        selection: ref,
        tool: 'increment',
        args: {},
      });
      assert.match(answer.text, /^counter is \d+$/);
      assert.equal(server.incrementCalls(), before + 1);
      assert.deepEqual([undelivered.calls, undelivered.closed, opened], [1, true, ['job-x']]);
      assert.equal(connections.size('job-x'), 1, 'the new connection is kept');

      // It may have reached a tool that is not safe to repeat: not sent again, reported.
      const lost = brokenSource(new ToolCallError('connection_lost', 'socket hang up', true, false));
      connections.give('job-y', ref, lost);
      const failure = await runIn(new MockActivityEnvironment({ attempt: 1 }, quiet), activities.callTool, {
        jobId: 'job-y',
        selection: ref,
        tool: 'increment',
        args: {},
      }).then(
        () => null,
        (err: unknown) => err,
      );
      assert.ok(failure instanceof ApplicationFailure);
      assert.equal(failure.type, TOOL_CALL_FAILED);
      assert.equal(server.incrementCalls(), before + 1, 'nothing more reached the tool');
      assert.deepEqual([lost.calls, lost.closed, opened], [1, true, ['job-x']]);
      assert.equal(connections.size('job-y'), 0);
    } finally {
      await connections.closeAll();
    }
  });
});

describe('agent runs: a tool call is one activity with its record', function () {
  this.timeout(300_000);
  let h: Harness;
  let mcp: TestMcpServer;
  let apiKey: string;

  before(async () => {
    h = await useHarness();
    mcp = await startMcpServer();
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
  });
  after(async () => {
    h.llm.reset();
    await sql`DROP TRIGGER IF EXISTS record_fails_once ON agent_tool_calls`.execute(h.db);
    await sql`DROP FUNCTION IF EXISTS record_fails_once()`.execute(h.db);
    await sql`DROP SEQUENCE IF EXISTS record_fails_once_seq`.execute(h.db);
    await mcp?.close();
  });

  const run = async (task: string, name: string, extra: object = {}) => {
    const accepted = await h.http('POST', '/api/v1/agents/run', {
      apiKey,
      body: {
        task,
        llm_model: 'gpt-4o-mini',
        custom_mcps: [{ type: 'remote_mcp', name, source_url: mcp.url }],
        ...extra,
      },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const job = await h.waitForJob(apiKey, `/api/v1/agents/runs/${accepted.body.jobId}`, undefined, 120_000);
    // The job ends before its workflow does (the last local activities settle and notify): the whole history.
    const handle = h.client.workflow.getHandle(await workflowIdOf(h, job.id));
    await handle.result().catch(() => undefined);
    const history = await handle.fetchHistory();
    return { job, commands: commandsOf(history) };
  };

  it('records each call, its usage and what the model reads as before, one callAgentTool per call sent', async () => {
    const since = h.llm.requests.length;
    h.llm.enqueue(
      actMany([
        ['echo', { message: 'one' }],
        ['fail', {}],
      ]),
      act('no_such_tool', {}),
      act('echo', { message: 'past the bound' }),
      act('done', { success: true, answer: 'recorded' }),
    );
    const { job, commands } = await run('Echo, fail, then finish', 'tools', { max_tool_calls: 2 });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'recorded');
    assert.deepEqual(
      job.toolCalls.map((c: any) => [c.index, c.tool, c.status, c.error]),
      [
        [1, 'echo', 'completed', null],
        [2, 'fail', 'error', 'the widget store is on fire'],
        [3, 'no_such_tool', 'failed', 'no such tool'],
        [4, 'echo', 'not_sent', 'max_tool_calls (2) reached'],
      ],
    );
    assert.equal(job.usage.toolCalls, 3);
    assert.equal(job.usage.llmCalls, 4);
    const decisions = h.llm.requests.slice(since).filter((r) => r.kind === 'chat' && Array.isArray(r.body.tools));
    assert.deepEqual(toolMessages(decisions.at(-1)!), [
      'echo: one',
      'Error from the tool: the widget store is on fire',
      'Error: there is no tool named "no_such_tool". Use one of the tools offered, or done.',
      'Not sent: this run may make at most 2 tool call(s) (max_tool_calls) and has made them all. Call done now with what you have.',
    ]);
    // The two calls sent are one activity each; the calls not sent are recorded as before.
    assert.deepEqual(
      commands.filter((c) => /Tool|patch/.test(c)),
      [
        'marker:core_patch',
        'prepareAgentToolbox',
        'marker:core_patch',
        'callAgentTool',
        'callAgentTool',
        'recordAgentToolCall',
        'recordAgentToolCall',
      ],
    );
    assert.ok(!commands.includes('callTool'));
    await assertSettledOnce(h, job.id);
  });

  it('a record that cannot be written with the call is written after it: the tool ran once, the call is recorded once', async () => {
    // The first write of this source's increment row fails (a sequence counts attempts outside the transaction).
    await sql`CREATE SEQUENCE IF NOT EXISTS record_fails_once_seq`.execute(h.db);
    await sql
      .raw(
        `CREATE OR REPLACE FUNCTION record_fails_once() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF position('record-fails-once' in NEW.source) > 0 THEN
             IF nextval('record_fails_once_seq') = 1 THEN
               RAISE EXCEPTION 'injected: the row write failed';
             END IF;
           END IF;
           RETURN NEW;
         END $$`,
      )
      .execute(h.db);
    await sql`CREATE TRIGGER record_fails_once BEFORE INSERT ON agent_tool_calls FOR EACH ROW EXECUTE FUNCTION record_fails_once()`.execute(
      h.db,
    );
    const since = h.llm.requests.length;
    const before = mcp.incrementCalls();
    h.llm.enqueue(act('increment', {}), act('done', { success: true, answer: 'incremented once' }));
    const { job, commands } = await run('Increment once', 'record-fails-once');
    assert.equal(job.status, 'completed', job.error);
    assert.equal(mcp.incrementCalls(), before + 1, 'the non-idempotent tool ran exactly once');
    assert.deepEqual(
      job.toolCalls.map((c: any) => [c.index, c.tool, c.status]),
      [[1, 'increment', 'completed']],
    );
    assert.equal(job.usage.toolCalls, 1);
    const decisions = h.llm.requests.slice(since).filter((r) => r.kind === 'chat' && Array.isArray(r.body.tools));
    assert.equal(decisions.length, 2);
    assert.deepEqual(
      toolMessages(decisions[1]).map((m) => /^counter is \d+$/.test(m)),
      [true],
      'the model read the answer of the call',
    );
    assert.deepEqual(
      commands.filter((c) => /Tool/.test(c)),
      ['prepareAgentToolbox', 'callAgentTool', 'recordAgentToolCall'],
    );
    const attempts = await sql<{ n: string }>`SELECT last_value AS n FROM record_fails_once_seq`.execute(h.db);
    assert.equal(Number(attempts.rows[0].n), 2, 'written twice: the failed write, then the workflow record');
    await assertSettledOnce(h, job.id);
  });
});
