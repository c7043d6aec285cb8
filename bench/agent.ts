/**
 * Browser-agent runtime benchmark (`npm run bench:agent`): one harness, one Temporal dev server, loopback only.
 *
 * A fixed 30-step script runs two ways, with the fake LLM at zero latency so model time is excluded:
 *   - platform: POST /api/v1/agentscraper, the workflow loop (observe activity on the worker's session queue,
 *     LLM decision activity, one activity per action, step records, checkpoints), polled until terminal;
 *   - bare: one process, one browser context from the same pool type behind the same network guard, the same
 *     BrowserSession, observe() and executeAction() calls in the same order, nothing else.
 * The difference is the cost of Temporal + Postgres + HTTP (and the per-action checkpoint) around the same browser work.
 *
 * Script: steps 1..29 cycle "navigate to /agent/list?page=1, click Next page, click Next page" (page 1 → 2 → 3);
 * step 30 is `done`. Every action carries the step number (navigate in the URL, click as an extra `bench_step`
 * argument the click tool ignores) so the workflow's loop guard, which skips an action repeated on an unchanged
 * page, never fires: page 2 looks the same in every cycle.
 *
 * Platform runs twice (warm-up, measured), bare twice (warm-up, measured), interleaved. Prints a table and, last,
 * one JSON line with every figure.
 */
import { createHash } from 'node:crypto';
import os from 'node:os';
import type { Harness } from '../test/support/stack/harness';
import { elementIndex, onPage } from '../test/support/agent-script';
import type { FakeReply } from '../test/support/fakes/fake-openai';
import { createBrowserPool } from '../activities/browser/pool';
import { GUARDED_CONTEXT_OPTIONS, guardContext } from '../activities/browser/guarded-routing';
import { BrowserSession } from '../activities/agent/browser/session';
import { executeAction } from '../activities/agent/browser/tools';
import { observe } from '../activities/agent/browser/observation';
import { OPTIMIZATION_PROFILES } from '../activities/agent/job';
import { seal } from '../lib/crypto';
import { networkPolicyFromConfig } from '../lib/net/policy';
import { percentile, round, sleep, log, runHarnessBenchmark } from './load';

const STEPS = 30;
const STATUS_POLL_INTERVAL_MS = 100;
const JOB_TIMEOUT_MS = 90_000;
const WATCHDOG_MS = 270_000;
const OPTIMIZATION_MODE = 'balanced' as const;

type ScriptedAction = { name: string; args: Record<string, unknown> };

/** The action of `step` (1-based), decided from the observation the model (or the bare loop) sees. */
function scriptedAction(siteUrl: string, step: number, observation: string): ScriptedAction {
  if (step === STEPS) return { name: 'done', args: { success: true, answer: `finished after ${STEPS} steps` } };
  if ((step - 1) % 3 === 0)
    return { name: 'navigate', args: { url: `${siteUrl}/agent/list?page=1&bench_step=${step}` } };
  return { name: 'click', args: { index: elementIndex(observation, /Next page/), bench_step: step } };
}

const toReply = (action: ScriptedAction, step: number): FakeReply => ({
  toolCalls: [{ name: action.name, arguments: action.args }],
  content: `bench step ${step}: ${action.name}`,
});

/** What a checkpoint URL sequence should look like: page 1 (with the step), 2, 3, ... */
function expectedUrls(siteUrl: string): string[] {
  const urls = ['about:blank'];
  for (let step = 1; step < STEPS; step++) {
    const position = (step - 1) % 3;
    urls.push(
      position === 0 ? `${siteUrl}/agent/list?page=1&bench_step=${step}` : `${siteUrl}/agent/list?page=${position + 1}`,
    );
  }
  return urls;
}

function deltas(timesMs: number[]): number[] {
  return timesMs.slice(1).map((t, i) => t - timesMs[i]);
}

// ---------- platform ----------

interface PlatformRun {
  wallMs: number;
  perStepMs: number;
  /** created_at deltas of consecutive agent_steps rows (29 of them). */
  stepDeltasMs: number[];
  /** First to last step row, divided by 29: the steady-state step cycle. */
  meanCycleMs: number;
  browserSecondsBilled: number;
  llmCalls: number;
  urls: string[];
}

async function runPlatform(h: Harness, base: string, apiKey: string, label: string): Promise<PlatformRun> {
  h.llm.reset();
  h.llm.setLatency(0);
  const replies: FakeReply[] = Array.from({ length: STEPS }, (_, i) =>
    onPage((o) => toReply(scriptedAction(h.site.url, i + 1, o), i + 1)),
  );
  h.llm.enqueue(...replies);

  const started = performance.now();
  const accepted = await h.http('POST', `${base}/api/v1/agentscraper`, {
    apiKey,
    body: {
      task: `Benchmark (${label}): page through the catalogue ${STEPS - 1} steps, then finish`,
      headless: true,
      vision_mode: 'text_only',
      max_actions_per_step: 1,
      optimization_mode: OPTIMIZATION_MODE,
    },
  });
  if (accepted.status !== 202)
    throw new Error(`POST /agentscraper answered ${accepted.status}: ${JSON.stringify(accepted.body)}`);
  const jobId: string = accepted.body.jobId;
  let job: any;
  const deadline = Date.now() + JOB_TIMEOUT_MS;
  for (;;) {
    const response = await h.http('GET', `${base}/api/v1/agentscraper/status/${jobId}`, { apiKey });
    job = response.body;
    if (job?.status === 'completed' || job?.status === 'failed') break;
    if (Date.now() > deadline)
      throw new Error(`agent job ${jobId} did not finish within ${JOB_TIMEOUT_MS}ms (status ${job?.status})`);
    await sleep(STATUS_POLL_INTERVAL_MS);
  }
  const wallMs = performance.now() - started;
  if (job.status !== 'completed')
    throw new Error(`agent job ${jobId} failed: ${job.error}\n${(job.logs ?? []).slice(-8).join('\n')}`);
  if (h.llm.pendingReplies() !== 0) throw new Error(`${h.llm.pendingReplies()} scripted replies were not used`);

  const rows = await h.db
    .selectFrom('agent_steps')
    .select(['step', 'url', 'outcomes', 'created_at'])
    .where('job_id', '=', jobId)
    .orderBy('step')
    .execute();
  if (rows.length !== STEPS) throw new Error(`expected ${STEPS} agent_steps rows, found ${rows.length}`);
  const failed = rows.filter(
    (row) => (row.outcomes as { ok: boolean }[]).some((o) => !o.ok) || (row.outcomes as unknown[]).length !== 1,
  );
  if (failed.length)
    throw new Error(
      `steps without exactly one successful outcome: ${failed.map((r) => `${r.step}: ${JSON.stringify(r.outcomes)}`).join('; ')}`,
    );

  const times = rows.map((row) => new Date(row.created_at as unknown as string).getTime());
  return {
    wallMs,
    perStepMs: wallMs / STEPS,
    stepDeltasMs: deltas(times),
    meanCycleMs: (times[times.length - 1] - times[0]) / (STEPS - 1),
    browserSecondsBilled: Number(job.result?.summary?.browserSeconds ?? NaN),
    llmCalls: Number(job.result?.summary?.llmCalls ?? NaN),
    urls: rows.map((row) => row.url),
  };
}

// ---------- bare ----------

interface BareRun {
  wallMs: number;
  perStepMs: number;
  /** Deltas between the ends of consecutive observations (where the platform writes its step row). */
  stepDeltasMs: number[];
  meanCycleMs: number;
  /** storageState + seal, the checkpoint the platform writes after each action: measured after the loop, per call. */
  checkpointMs: number;
  urls: string[];
}

async function runBare(h: Harness, pool: ReturnType<typeof createBrowserPool>): Promise<BareRun> {
  const policy = networkPolicyFromConfig(h.config);
  const options = {
    maxChars: OPTIMIZATION_PROFILES[OPTIMIZATION_MODE].observationChars,
    includeScreenshot: false,
    detail: 'auto' as const,
  };
  const observedAt: number[] = [];
  const urls: string[] = [];
  const probeRounds = 10;
  let checkpointMs = NaN;
  let probeStarted = NaN;
  let closeStarted = NaN;
  const started = performance.now();
  await pool.withContext({ ...GUARDED_CONTEXT_OPTIONS, viewport: { width: 1280, height: 800 } }, async (context) => {
    const guard = await guardContext(context, { policy, proxy: null });
    const session = await BrowserSession.open(context, { sensitiveData: [], guard });
    try {
      for (let step = 1; step <= STEPS; step++) {
        const observation = await observe(session, options);
        observedAt.push(performance.now());
        urls.push(observation.url);
        // The platform hashes the rendered observation for its loop guard; same cheap work here.
        createHash('sha256').update(observation.rendered).digest('hex');
        const action = scriptedAction(h.site.url, step, observation.rendered);
        if (action.name === 'done') break;
        const result = await executeAction(session, action);
        if (!result.ok || !result.navigated) throw new Error(`bare step ${step} ${action.name}: ${result.message}`);
      }
      // Not part of the loop (and kept out of its wall time): what the checkpoint after each platform action costs.
      probeStarted = performance.now();
      for (let i = 0; i < probeRounds; i++)
        seal(h.config.masterKey, JSON.stringify(await session.checkpoint()), 'checkpoint:bench');
      checkpointMs = (performance.now() - probeStarted) / probeRounds;
    } finally {
      closeStarted = performance.now();
      await session.close();
    }
  });
  const wallMs = probeStarted - started + (performance.now() - closeStarted);
  return {
    wallMs,
    perStepMs: wallMs / STEPS,
    stepDeltasMs: deltas(observedAt),
    meanCycleMs: (observedAt[observedAt.length - 1] - observedAt[0]) / (STEPS - 1),
    checkpointMs,
    urls,
  };
}

// ---------- report ----------

function sameUrls(label: string, actual: string[], expected: string[]): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${label} visited ${JSON.stringify(actual)}\nexpected ${JSON.stringify(expected)}`);
  }
}

function printReport(
  p: { warmup: PlatformRun; measured: PlatformRun },
  b: { warmup: BareRun; measured: BareRun },
  loadAverages: number[],
  maxSteps: number,
): void {
  const P = p.measured;
  const B = b.measured;
  const p50 = (values: number[]) => round(percentile(values, 50), 1);
  const p90 = (values: number[]) => round(percentile(values, 90), 1);
  const rows: [string, string, string, string][] = [
    ['measure (measured run; warm-up in brackets)', 'platform', 'bare loop', 'platform/bare'],
    [
      `per step = wall / ${STEPS} (ms)`,
      `${round(P.perStepMs, 1)} [${round(p.warmup.perStepMs, 1)}]`,
      `${round(B.perStepMs, 1)} [${round(b.warmup.perStepMs, 1)}]`,
      `${round(P.perStepMs / B.perStepMs, 2)} [${round(p.warmup.perStepMs / b.warmup.perStepMs, 2)}]`,
    ],
    [
      'p50 step latency (ms, obs→obs)',
      `${p50(P.stepDeltasMs)} [${p50(p.warmup.stepDeltasMs)}]`,
      `${p50(B.stepDeltasMs)} [${p50(b.warmup.stepDeltasMs)}]`,
      `${round(percentile(P.stepDeltasMs, 50) / percentile(B.stepDeltasMs, 50), 2)}`,
    ],
    [
      'p90 step latency (ms, obs→obs)',
      `${p90(P.stepDeltasMs)}`,
      `${p90(B.stepDeltasMs)}`,
      `${round(percentile(P.stepDeltasMs, 90) / percentile(B.stepDeltasMs, 90), 2)}`,
    ],
    [
      'mean step cycle, step 1→30 (ms)',
      `${round(P.meanCycleMs, 1)}`,
      `${round(B.meanCycleMs, 1)}`,
      `${round(P.meanCycleMs / B.meanCycleMs, 2)}`,
    ],
    [
      `wall for ${STEPS} steps (ms)`,
      `${Math.round(P.wallMs)}`,
      `${Math.round(B.wallMs)}`,
      `${round(P.wallMs / B.wallMs, 2)}`,
    ],
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row: string[]) => row.map((cell, column) => cell.padEnd(widths[column])).join(' | ');
  const overheadPerStep = P.perStepMs - B.perStepMs;
  console.log('');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows.slice(1)) console.log(line(row));
  console.log('');
  console.log(
    `platform overhead per step (wall/${STEPS}, platform − bare): ${round(overheadPerStep, 1)} ms; p50 step latency difference ${round(percentile(P.stepDeltasMs, 50) - percentile(B.stepDeltasMs, 50), 1)} ms`,
  );
  console.log(
    `platform time inside session activities (billed browser seconds / ${STEPS}): ${round((P.browserSecondsBilled * 1000) / STEPS, 1)} ms per step; LLM calls ${P.llmCalls} (fake, 0 ms latency)`,
  );
  console.log(
    `checkpoint the platform writes after each action (storageState + seal), measured in the bare context: ${round(B.checkpointMs, 2)} ms per call`,
  );
  console.log(
    `script: ${STEPS - 1} steps cycling navigate page 1 → click Next → click Next (10 navigations, 19 clicks), then done; headless, text_only, ${OPTIMIZATION_MODE}, max_actions_per_step 1; step bound ${maxSteps}`,
  );
  console.log(
    `status poll interval ${STATUS_POLL_INTERVAL_MS} ms (adds ≤ ${round(STATUS_POLL_INTERVAL_MS / STEPS, 1)} ms to platform per-step wall)`,
  );
  console.log(
    `machine: ${os.cpus().length} CPUs, 1-min load average at start/end ${loadAverages.map((l) => round(l, 1)).join(' / ')} (other processes share it)`,
  );
  console.log('');

  const platformJson = (run: PlatformRun) => ({
    wall_ms: round(run.wallMs, 1),
    per_step_ms: round(run.perStepMs, 1),
    p50_step_ms: p50(run.stepDeltasMs),
    p90_step_ms: p90(run.stepDeltasMs),
    mean_cycle_ms: round(run.meanCycleMs, 1),
    browser_ms_per_step_billed: round((run.browserSecondsBilled * 1000) / STEPS, 1),
  });
  const bareJson = (run: BareRun) => ({
    wall_ms: round(run.wallMs, 1),
    per_step_ms: round(run.perStepMs, 1),
    p50_step_ms: p50(run.stepDeltasMs),
    p90_step_ms: p90(run.stepDeltasMs),
    mean_cycle_ms: round(run.meanCycleMs, 1),
    checkpoint_ms: round(run.checkpointMs, 2),
  });
  console.log(
    JSON.stringify({
      steps: STEPS,
      llm_latency_ms: 0,
      platform: platformJson(P),
      bare: bareJson(B),
      ratio_platform_over_bare: round(P.perStepMs / B.perStepMs, 3),
      ratio_p50_platform_over_bare: round(percentile(P.stepDeltasMs, 50) / percentile(B.stepDeltasMs, 50), 3),
      overhead_per_step_ms: round(overheadPerStep, 1),
      warmup: {
        platform: platformJson(p.warmup),
        bare: bareJson(b.warmup),
        ratio_platform_over_bare: round(p.warmup.perStepMs / b.warmup.perStepMs, 3),
      },
      status_poll_interval_ms: STATUS_POLL_INTERVAL_MS,
      cpus: os.cpus().length,
      load_average_1m: loadAverages.map((l) => round(l, 2)),
    }),
  );
}

void runHarnessBenchmark(WATCHDOG_MS, async (h, onStop) => {
  const { apiKey } = await h.createUser({ creditUsd: 1000, monthlyOperationLimit: 1_000_000 });
  let base = '';
  let maxSteps = h.config.agent.maxSteps;
  if (maxSteps < STEPS) {
    log(`the step bound is ${maxSteps}; starting an isolated stack with a bound of 100`);
    const stack = await h.startIsolatedStack({
      taskQueues: { platform: 'platform-bench-agent', browser: 'browser-bench-agent' },
      overrides: { agent: { maxSteps: 100, deadlineMs: 600_000 } },
    });
    base = stack.baseUrl;
    maxSteps = stack.config.agent.maxSteps;
  }
  const pool = createBrowserPool({ executablePath: h.config.chromiumHeadlessPath, maxContexts: 1 });
  onStop(() => pool.close());
  const loadAtStart = os.loadavg()[0];

  log(`platform warm-up: ${STEPS}-step agent job (launches the worker's browser)`);
  const platformWarmup = await runPlatform(h, base, apiKey, 'warm-up');
  log(`bare warm-up: same ${STEPS} steps in-process (launches the bench's browser)`);
  const bareWarmup = await runBare(h, pool);
  log(`platform measured run`);
  const platformMeasured = await runPlatform(h, base, apiKey, 'measured');
  log(`bare measured run`);
  const bareMeasured = await runBare(h, pool);

  const expected = expectedUrls(h.site.url);
  for (const [label, urls] of [
    ['platform warm-up', platformWarmup.urls],
    ['platform measured', platformMeasured.urls],
    ['bare warm-up', bareWarmup.urls],
    ['bare measured', bareMeasured.urls],
  ] as const)
    sameUrls(label, urls, expected);

  printReport(
    { warmup: platformWarmup, measured: platformMeasured },
    { warmup: bareWarmup, measured: bareMeasured },
    [loadAtStart, os.loadavg()[0]],
    maxSteps,
  );
});
