/**
 * Tool-runtime benchmark (`npm run bench:tools`): one harness, one Temporal dev server, loopback only.
 *
 * The same MCP tool (`echo` of the test MCP server, SDK v2, Streamable HTTP) is called N times
 * (BENCH_TOOL_CALLS, default 30) two ways, with the fake LLM at zero latency so model time is excluded:
 *   - platform: POST /api/v1/agents/run with max_tool_calls N; the model asks for one echo per decision.
 *     A tool call's overhead is one cycle of the loop: the decision activity's answer is handled, the
 *     callAgentTool activity calls the tool (over the run's connection, kept open between its calls)
 *     and records the call (row + conversation), and the next decision activity loads the conversation,
 *     i.e. the time between two consecutive model requests (the fake model answers in ~0 ms);
 *   - durable floor: a bare Temporal workflow on the same server (bench/floor/tool-cycle-workflow.ts) asks the
 *     same model and calls the same tool, one activity each (its worker in this process, one kept SDK session),
 *     with no records: what two durable steps per cycle cost;
 *   - bare: one process, one SDK client session, N `tools/call` requests in a loop.
 * Each runs twice (warm-up, measured). Prints a table and, last, one JSON line with every figure. With
 * BENCH_TOOL_BREAKDOWN=1 it also prints where a cycle goes, from the platform's and the floor's workflow
 * histories (bench/cycle-breakdown.ts: activity execution, workflow tasks, dispatch; medians per segment).
 */
import os from 'node:os';
import type { Harness } from '../test/support/stack/harness';
import type { FakeReply } from '../test/support/fakes/fake-openai';
import { startMcpServer, type TestMcpServer } from '../test/support/fakes/mcp-server';
import { openToolSource } from '../lib/tools/source';
import { parseNetworkAllowlist } from '../lib/net/ssrf';
import { percentile, round, sleep, log, runHarnessBenchmark } from './load';
import { fetchCycleBreakdown, printCycleBreakdown } from './cycle-breakdown';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createLlmClient } from '../lib/llm/client';
import { createToolCycleFloorActivities } from './floor/tool-cycle-activities';

const CALLS = Math.max(2, Number(process.env.BENCH_TOOL_CALLS ?? 30));
const WATCHDOG_MS = 270_000;

interface Measured {
  perCallMs: number[];
  totalMs: number;
  /** The platform run's job (its workflow's history gives the cycle breakdown). */
  jobId?: string;
  /** The floor's workflow. */
  workflowId?: string;
}

/**
 * The fake model's answers for one run: an `echo` call per decision, CALLS times, then `done`. The returned
 * array gets the time each model request arrived (a cycle is the time between two of them).
 */
function queueEchoDecisions(h: Harness): number[] {
  const arrivals: number[] = [];
  const replies: FakeReply[] = Array.from({ length: CALLS }, (_, i) => () => {
    arrivals.push(performance.now());
    return { toolCalls: [{ name: 'echo', arguments: { message: `call ${i + 1}` } }] };
  });
  replies.push(() => {
    arrivals.push(performance.now());
    return { toolCalls: [{ name: 'done', arguments: { success: true, answer: 'done' } }] };
  });
  h.llm.reset();
  h.llm.enqueue(...replies);
  return arrivals;
}

async function runPlatform(h: Harness, base: string, apiKey: string, mcp: TestMcpServer): Promise<Measured> {
  const arrivals = queueEchoDecisions(h);
  const started = performance.now();
  const accepted = await h.http('POST', `${base}/api/v1/agents/run`, {
    apiKey,
    body: {
      task: 'Echo N times',
      llm_model: 'gpt-4o-mini',
      max_tool_calls: CALLS,
      custom_mcps: [{ type: 'remote_mcp', source_url: mcp.url }],
    },
  });
  if (accepted.status !== 202) throw new Error(`run refused: ${JSON.stringify(accepted.body)}`);
  for (;;) {
    const run = await h.http('GET', `${base}/api/v1/agents/runs/${accepted.body.jobId}`, { apiKey });
    if (run.body.status === 'completed') {
      if (run.body.usage.toolCalls !== CALLS)
        throw new Error(`expected ${CALLS} tool calls, got ${run.body.usage.toolCalls}`);
      break;
    }
    if (run.body.status === 'failed') throw new Error(`run failed: ${run.body.error}`);
    await sleep(50);
  }
  const perCallMs = arrivals.slice(1).map((t, i) => t - arrivals[i]);
  return { perCallMs, totalMs: performance.now() - started, jobId: accepted.body.jobId };
}

async function runBare(mcp: TestMcpServer): Promise<Measured> {
  const started = performance.now();
  const source = await openToolSource(
    { type: 'remote_mcp', url: mcp.url },
    { policy: parseNetworkAllowlist('127.0.0.1') },
  );
  const perCallMs: number[] = [];
  try {
    for (let i = 0; i < CALLS; i++) {
      const t = performance.now();
      const result = await source.call('echo', { message: `call ${i + 1}` });
      if (result.isError) throw new Error(result.text);
      perCallMs.push(performance.now() - t);
    }
  } finally {
    await source.close();
  }
  return { perCallMs, totalMs: performance.now() - started };
}

const FLOOR_TASK_QUEUE = 'bench-tool-cycle-floor';

/**
 * The durable floor (bench/floor/tool-cycle-workflow.ts): the same fake model and tool, each call its own
 * activity of a bare workflow on the same Temporal server, with a worker of its own in this process.
 */
async function startFloorWorker(h: Harness, mcp: TestMcpServer) {
  const source = await openToolSource(
    { type: 'remote_mcp', url: mcp.url },
    { policy: parseNetworkAllowlist('127.0.0.1') },
  );
  const connection = await NativeConnection.connect({ address: h.temporalAddress });
  const worker = await Worker.create({
    connection,
    namespace: h.config.temporalNamespace,
    taskQueue: FLOOR_TASK_QUEUE,
    workflowsPath: require.resolve('./floor/tool-cycle-workflow'),
    activities: createToolCycleFloorActivities({
      llm: createLlmClient({ baseURL: h.env.OPENAI_BASE_URL, apiKey: 'bench', timeoutMs: 30_000 }),
      model: 'gpt-4o-mini',
      source,
    }),
  });
  const running = worker.run();
  return async () => {
    worker.shutdown();
    await running;
    await connection.close();
    await source.close();
  };
}

async function runFloor(h: Harness): Promise<Measured> {
  const arrivals = queueEchoDecisions(h);
  const started = performance.now();
  const workflowId = `bench-tool-cycle-floor-${Date.now()}`;
  const calls = await h.client.workflow.execute('toolCycleFloorWorkflow', {
    taskQueue: FLOOR_TASK_QUEUE,
    workflowId,
    args: [],
  });
  if (calls !== CALLS) throw new Error(`the floor made ${calls} tool calls, expected ${CALLS}`);
  const perCallMs = arrivals.slice(1).map((t, i) => t - arrivals[i]);
  return { perCallMs, totalMs: performance.now() - started, workflowId };
}

function stats(m: Measured) {
  return {
    p50: round(percentile(m.perCallMs, 50)),
    p99: round(percentile(m.perCallMs, 99)),
    mean: round(m.perCallMs.reduce((a, b) => a + b, 0) / m.perCallMs.length),
    totalMs: round(m.totalMs),
  };
}

void runHarnessBenchmark(WATCHDOG_MS, async (h, onStop) => {
  const { apiKey } = await h.createUser({ creditUsd: 1000, monthlyOperationLimit: 1_000_000 });
  const mcp = await startMcpServer();
  onStop(() => mcp.close());
  let base = '';
  if (h.config.agent.maxSteps <= CALLS) {
    log(`the decision bound is ${h.config.agent.maxSteps}; starting an isolated stack with a bound of ${CALLS + 10}`);
    const stack = await h.startIsolatedStack({
      taskQueues: { platform: 'platform-bench-tools', browser: 'browser-bench-tools' },
      overrides: { agent: { ...h.config.agent, maxSteps: CALLS + 10, deadlineMs: 600_000 } },
    });
    base = stack.baseUrl;
  }
  const loadAtStart = os.loadavg()[0];
  log(`platform warm-up: ${CALLS} tool calls through the agent runtime`);
  await runPlatform(h, base, apiKey, mcp);
  log('bare warm-up');
  await runBare(mcp);
  log('durable floor warm-up (its worker bundles its workflow first)');
  onStop(await startFloorWorker(h, mcp));
  await runFloor(h);
  log('platform measured run');
  const measured = await runPlatform(h, base, apiKey, mcp);
  const platform = stats(measured);
  log('bare measured run');
  const bare = stats(await runBare(mcp));
  log('durable floor measured run');
  const floorRun = await runFloor(h);
  const floor = stats(floorRun);
  const ratio = { p50: round(platform.p50 / bare.p50), p99: round(platform.p99 / bare.p99) };
  const beyondFloor = { p50: round(platform.p50 - floor.p50), p99: round(platform.p99 - floor.p99) };
  /** Issue 26's goal: a cycle at most 20 ms (p50) beyond the bare call. */
  const beyondBare = { p50: round(platform.p50 - bare.p50), p99: round(platform.p99 - bare.p99) };
  console.log(`\nTool calls: ${CALLS} per run, fake model at 0 ms, loopback MCP server (SDK v2, Streamable HTTP)`);
  console.log('                      p50 ms    p99 ms   mean ms   total ms');
  for (const [label, s] of [
    ['agent runtime (cycle)', platform],
    ['durable floor (cycle)', floor],
    ['bare SDK loop', bare],
  ] as const) {
    console.log(
      `${label.padEnd(22)}${String(s.p50).padStart(7)}${String(s.p99).padStart(10)}${String(s.mean).padStart(10)}${String(s.totalMs).padStart(11)}`,
    );
  }
  console.log(
    `runtime beyond the bare call: p50 +${beyondBare.p50} ms (goal ≤ 20 ms: ${beyondBare.p50 <= 20 ? 'met' : 'not met'}), p99 +${beyondBare.p99} ms`,
  );
  console.log(
    `ratio (runtime / bare): p50 ${ratio.p50}x, p99 ${ratio.p99}x; runtime beyond the durable floor: p50 +${beyondFloor.p50} ms, p99 +${beyondFloor.p99} ms; load average ${round(loadAtStart)} → ${round(os.loadavg()[0])} on ${os.cpus().length} cores`,
  );
  let breakdown: Awaited<ReturnType<typeof fetchCycleBreakdown>> | undefined;
  let floorBreakdown: typeof breakdown;
  if (process.env.BENCH_TOOL_BREAKDOWN === '1') {
    const job = await h.db
      .selectFrom('jobs')
      .select('workflow_id')
      .where('id', '=', measured.jobId!)
      .executeTakeFirstOrThrow();
    breakdown = await fetchCycleBreakdown(h.client, job.workflow_id);
    printCycleBreakdown('agent runtime', breakdown);
    floorBreakdown = await fetchCycleBreakdown(h.client, floorRun.workflowId!, 'floorDecide');
    printCycleBreakdown('durable floor', floorBreakdown);
  }
  console.log(
    JSON.stringify({
      bench: 'tools',
      ...(breakdown && { breakdown, floorBreakdown }),
      calls: CALLS,
      platform,
      floor,
      bare,
      ratio,
      beyondFloor,
      beyondBare,
      loadAverage: [round(loadAtStart), round(os.loadavg()[0])],
      cores: os.cpus().length,
    }),
  );
});
