// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';

import {
  createToolActivities,
  TOOL_CALL_FAILED,
  TOOL_CALL_MAY_HAVE_RUN,
  TOOL_CALL_RETRYABLE,
  type SelectionLoader,
  type ToolCallInput,
} from '../../activities/tools';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { sealDiscoveryParams } from '../../lib/tools/discovery-request';
import type { ToolSelection } from '../../lib/tools/types';
import { useHarness } from '../support/stack/harness';
import { startInternalTarget } from '../support/fakes/mcp-internal-target';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import type { ToolCallProbeInput, ToolCallProbeResult } from '../support/mcp-tool-call-workflow';

const policy = parseNetworkAllowlist('127.0.0.1,localhost');
const masterKey = randomBytes(32);

/** Selections by job id; a function lets a test change what a later attempt sees. */
function loaderOf(selections: Record<string, ToolSelection | (() => ToolSelection)>): SelectionLoader {
  return async (jobId) => {
    const entry = selections[jobId];
    if (!entry) throw new Error(`no selection for ${jobId}`);
    return typeof entry === 'function' ? entry() : entry;
  };
}

/** Activity failures are what these tests expect; the mock environment would log each as a warning. */
const quiet = { logger: new DefaultLogger('ERROR') };
const mockEnv = (info: ConstructorParameters<typeof MockActivityEnvironment>[0] = {}) =>
  new MockActivityEnvironment(info, quiet);

const call = (jobId: string, tool: string, args: unknown = {}, timeoutMs?: number): ToolCallInput => ({
  jobId,
  selection: { kind: 'custom_mcps', index: 0 },
  tool,
  args,
  timeoutMs,
});

/** Runs an activity in a mock activity context (attempt, heartbeat details) and keeps its types. */
function runIn<I, O>(env: MockActivityEnvironment, activity: (input: I) => Promise<O>, input: I): Promise<O> {
  return env.run(activity as (input: I) => Promise<O>, input) as Promise<O>;
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the activity to fail');
}

describe('tool activities: callTool', () => {
  let server: TestMcpServer;
  let deadUrl: string;
  before(async () => {
    server = await startMcpServer();
    const dead = await startMcpServer();
    deadUrl = dead.url;
    await dead.close();
  });
  after(() => server.close());

  const activities = () =>
    createToolActivities({
      policy,
      masterKey,
      loadSelection: loaderOf({
        live: { type: 'remote_mcp', url: server.url },
        dead: { type: 'remote_mcp', url: deadUrl },
        internal: { type: 'remote_mcp', url: 'https://127.0.0.2:9/mcp' },
      }),
    });

  it('returns the tool result, including a tool that reports an error', async () => {
    const env = mockEnv();
    const ok = await runIn(env, activities().callTool, call('live', 'echo', { message: 'from an activity' }));
    assert.equal(ok.text, 'echo: from an activity');
    assert.equal(ok.isError, false);
    assert.ok(ok.durationMs >= 0);
    const failed = await runIn(env, activities().callTool, call('live', 'fail'));
    assert.deepEqual([failed.isError, failed.text], [true, 'the widget store is on fire']);
  });

  it('fails retryable, and says so for the next attempt, when nothing reached the server', async () => {
    const env = mockEnv({ attempt: 1 });
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => heartbeats.push(details));
    const failure = await failureOf(runIn(env, activities().callTool, call('dead', 'increment')));
    assert.equal(failure.type, TOOL_CALL_RETRYABLE);
    assert.equal(failure.nonRetryable, false);
    assert.deepEqual(failure.details?.[0], { kind: 'not_delivered', reached: false });
    assert.deepEqual(heartbeats.at(-1), { notDeliveredAttempt: 1 });
  });

  it('sends a non-idempotent call again only after an attempt that provably did not deliver it', async () => {
    const before = server.incrementCalls();
    const afterUndelivered = mockEnv({ attempt: 2, heartbeatDetails: { notDeliveredAttempt: 1 } });
    assert.match(
      (await runIn(afterUndelivered, activities().callTool, call('live', 'increment'))).text,
      /^counter is \d+$/,
    );
    assert.equal(server.incrementCalls(), before + 1);

    for (const heartbeatDetails of [{ inFlightAttempt: 1 }, undefined, { notDeliveredAttempt: 1 }]) {
      const env = mockEnv({ attempt: heartbeatDetails?.notDeliveredAttempt ? 3 : 2, heartbeatDetails });
      const failure = await failureOf(runIn(env, activities().callTool, call('live', 'increment')));
      assert.equal(failure.type, TOOL_CALL_MAY_HAVE_RUN, JSON.stringify(heartbeatDetails));
      assert.equal(failure.nonRetryable, true);
    }
    assert.equal(server.incrementCalls(), before + 1, 'never sent twice');

    // A read-only tool may always be repeated.
    const readOnly = mockEnv({ attempt: 2, heartbeatDetails: { inFlightAttempt: 1 } });
    assert.equal(
      (await runIn(readOnly, activities().callTool, call('live', 'echo', { message: 'again' }))).text,
      'echo: again',
    );
  });

  it('reports a call that may have run as non-retryable, and a read-only one as retryable', async () => {
    const env = mockEnv();
    const increment = await failureOf(
      runIn(env, activities().callTool, call('live', 'increment', { delayMs: 2000 }, 300)),
    );
    assert.deepEqual(
      [increment.type, increment.nonRetryable, increment.details?.[0]],
      [TOOL_CALL_FAILED, true, { kind: 'timeout', reached: true }],
    );
    const slow = await failureOf(runIn(env, activities().callTool, call('live', 'slow', { ms: 2000 }, 300)));
    assert.deepEqual([slow.type, slow.nonRetryable], [TOOL_CALL_RETRYABLE, false]);
  });

  it('refuses an internal destination and an unknown tool without retrying', async () => {
    const env = mockEnv();
    const internal = await failureOf(runIn(env, activities().callTool, call('internal', 'echo')));
    assert.deepEqual(
      [internal.type, internal.nonRetryable, internal.details?.[0]],
      [TOOL_CALL_FAILED, true, { kind: 'refused_by_policy', reached: false }],
    );
    const unknown = await failureOf(runIn(env, activities().callTool, call('live', 'rm_rf')));
    assert.deepEqual(
      [unknown.type, unknown.nonRetryable, (unknown.details?.[0] as { kind: string }).kind],
      [TOOL_CALL_FAILED, true, 'unknown_tool'],
    );
    const noSelection = await failureOf(runIn(env, activities().callTool, call('missing', 'echo')));
    assert.deepEqual([noSelection.type, noSelection.nonRetryable], [TOOL_CALL_FAILED, true]);
  });
});

describe('tool activities: discoverTools', () => {
  it('unseals the params bound to its workflow, and returns refusals as values', async () => {
    const server = await startMcpServer({ bearerToken: 'sealed-token-2718' });
    const internal = await startInternalTarget();
    try {
      const activities = createToolActivities({ policy, masterKey, loadSelection: loaderOf({}) });
      const env = mockEnv({ workflowExecution: { workflowId: 'tools-discovery-test', runId: 'run-1' } });
      const sealedParams = sealDiscoveryParams(masterKey, 'tools-discovery-test', {
        Authorization: 'sealed-token-2718',
      });
      assert.ok(!sealedParams.includes('sealed-token-2718'));
      const found = await runIn(env, activities.discoverTools, {
        type: 'remote_mcp' as const,
        url: server.url,
        sealedParams,
      });
      assert.equal(found.ok && found.discovery.tools.length, 6);

      const otherWorkflow = mockEnv({ workflowExecution: { workflowId: 'another-workflow', runId: 'run-2' } });
      await assert.rejects(
        runIn(otherWorkflow, activities.discoverTools, { type: 'remote_mcp' as const, url: server.url, sealedParams }),
        /unable to authenticate data/,
        'sealed params are bound to one workflow',
      );

      const refused = await runIn(env, activities.discoverTools, {
        type: 'remote_mcp' as const,
        url: internal.httpsUrl('/mcp'),
      });
      assert.deepEqual(refused.ok ? null : refused.code, 'ssrf_blocked');
      assert.equal(internal.connections(), 0);
    } finally {
      await Promise.all([server.close(), internal.close()]);
    }
  });
});

describe('tool activities under Temporal: attempts never duplicate a call', function () {
  this.timeout(180_000);
  let server: TestMcpServer;
  let deadUrl: string;
  let worker: Worker;
  let running: Promise<void>;
  let connection: NativeConnection;
  const taskQueue = `tool-calls-${randomBytes(4).toString('hex')}`;
  let undeliveredFirst = 0;

  before(async () => {
    const harness = await useHarness();
    server = await startMcpServer();
    const dead = await startMcpServer();
    deadUrl = dead.url;
    await dead.close();
    connection = await NativeConnection.connect({ address: harness.temporalAddress });
    worker = await Worker.create({
      connection,
      namespace: harness.config.temporalNamespace,
      taskQueue,
      workflowsPath: require.resolve('../support/mcp-tool-call-workflow'),
      activities: createToolActivities({
        policy,
        masterKey,
        loadSelection: loaderOf({
          live: { type: 'remote_mcp', url: server.url },
          // The first attempt finds the server down (connection refused), the next one finds it.
          flaky: () => ({ type: 'remote_mcp', url: undeliveredFirst++ === 0 ? deadUrl : server.url }),
        }),
      }),
    });
    running = worker.run();
  });
  after(async () => {
    worker.shutdown();
    await running;
    await connection.close();
    await server.close();
  });

  async function probe(input: ToolCallProbeInput): Promise<ToolCallProbeResult> {
    const { client } = await useHarness();
    return client.workflow.execute('toolCallProbeWorkflow', {
      taskQueue,
      workflowId: `tool-call-probe-${randomBytes(6).toString('hex')}`,
      args: [input],
    });
  }

  it('retries a non-idempotent call whose first attempt never reached the server, and it runs once', async () => {
    const before = server.incrementCalls();
    const result = await probe({ call: call('flaky', 'increment'), startToCloseMs: 20_000, maximumAttempts: 3 });
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.equal(undeliveredFirst, 2, 'two attempts');
    assert.equal(server.incrementCalls(), before + 1);
  });

  it('does not send a non-idempotent call again after an attempt timed out with it in flight', async () => {
    const before = server.incrementCalls();
    const result = await probe({
      call: call('live', 'increment', { delayMs: 2500 }),
      startToCloseMs: 1000,
      maximumAttempts: 3,
    });
    assert.deepEqual(result.ok ? null : result.type, TOOL_CALL_MAY_HAVE_RUN);
    await new Promise((resolve) => setTimeout(resolve, 2000)); // let the first attempt's call finish upstream
    assert.equal(server.incrementCalls(), before + 1);
  });

  it('repeats a read-only call after such a timeout', async () => {
    const before = server.toolRuns('slow');
    const result = await probe({ call: call('live', 'slow', { ms: 1800 }), startToCloseMs: 1000, maximumAttempts: 2 });
    assert.equal(result.ok, false);
    assert.equal(server.toolRuns('slow'), before + 2);
  });
});
