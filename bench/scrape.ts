/**
 * Scrape platform benchmark (`npm run bench:scrape`): one harness, one Temporal dev server, loopback only.
 *
 *   1. Accept rate of async POST /api/v1/scrape vs raw client.workflow.start, both at 32 clients, both onto
 *      a task queue no worker polls (so neither run does any scraping); plus the accept latency p50/p99.
 *   2. End-to-end completed scrapes/s through the platform, run as production runs it: an API process, a
 *      worker process and the fake LLM in its own process (so each one's CPU is counted apart). Clients POST,
 *      then either poll the status every second or long-poll it (`?wait=30`). Baselines over the same pages,
 *      concurrency and fake LLM: a bare in-process fetch + convert + extract loop, and a bare Playwright loop
 *      (what a user would write without us). Script-rendered pages against bare Playwright + extract.
 *      The durable floor: a bare Temporal workflow (bench/floor/workflow.ts) whose one activity does the same
 *      fetch (SSRF-guarded fetchBuffered) + convert (htmlToPage) + extract (extractStructured) on the same
 *      Temporal server, its worker a process of its own (bench/floor/worker-process.ts), the client awaiting
 *      each result: what any durable job doing this work costs. The platform's static rate is reported as a
 *      ratio of it (goal >= 0.7).
 *   Every A/B pair alternates `rounds` times (default 2); ratios are the median over rounds. CPU seconds per
 *   completed job are read from /proc for each process: Temporal server, Postgres backends, API, worker (with
 *   its Chromium), fake LLM, and the benchmark process itself (clients, fixture site, bare loops).
 *
 * Sizes (env or flags): BENCH_ACCEPT_REQUESTS / --accept-requests (300), BENCH_STATIC_PAGES / --static-pages
 * (200), BENCH_STATIC_CLIENTS / --static-clients (16), BENCH_SPA_PAGES / --spa-pages (20), BENCH_ROUNDS /
 * --rounds (2). BENCH_CPU_PROF=<dir> runs the API and worker processes with `node --cpu-prof` into <dir>.
 *
 * Prints tables and, last, one JSON line with every figure.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { sql } from 'kysely';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { chromium, type Browser } from 'playwright-core';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/client';
import type { Harness } from '../test/support/stack/harness';
import { SPA_SENTENCE } from '../test/support/fakes/fixture-site';
import { htmlToPage } from '../lib/page/convert';
import { extractStructured } from '../activities/llm/extract';
import { createLlmClient } from '../lib/llm/client';
import { jsonSchemaForRequest } from '../lib/llm/structured-output';
import { networkPolicyFromConfig } from '../lib/net/policy';
import { socialPlatformsFromConfig } from '../lib/social/platforms';
import { listen } from '../api/server';
import { readinessProbe } from '../api/readiness';
import type { ApiDeps } from '../api/deps';
import { JobKindSearchAttribute, UserIdSearchAttribute } from '../lib/temporal/client';
import type { ScrapeWorkflowInput } from '../workflows/scrape';
import { freePort } from '../test/support/stack/ports';
import { percentile, perSecond, round, runClosedLoop, sleep, type LoadResult, log, runHarnessBenchmark } from './load';
import { spawnNode, stopChild } from '../test/support/stack/node-process';
import { cpuMeter, descendantsOf, type CpuGroup } from './proc-cpu';

/** A size from `--name=N` or the environment variable, else the default. */
function size(flag: string, envName: string, fallback: number): number {
  const fromFlag = process.argv.find((a) => a.startsWith(`--${flag}=`))?.split('=')[1];
  const value = Number(fromFlag ?? process.env[envName] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${flag} / ${envName} must be a positive integer`);
  return value;
}

const ACCEPT_CLIENTS = 32;
const ACCEPT_REQUESTS = size('accept-requests', 'BENCH_ACCEPT_REQUESTS', 300);
const ACCEPT_WARMUP_REQUESTS = 32;
const STATIC_PAGES = size('static-pages', 'BENCH_STATIC_PAGES', 200);
const STATIC_CLIENTS = size('static-clients', 'BENCH_STATIC_CLIENTS', 16);
const SPA_PAGES = size('spa-pages', 'BENCH_SPA_PAGES', 20);
const ROUNDS = size('rounds', 'BENCH_ROUNDS', 2);
const STATUS_POLL_INTERVAL_MS = 1000;
const STATUS_WAIT_SECONDS = 30;
const JOB_TIMEOUT_MS = 90_000;
const PHASE_TIME_LIMIT_MS = 180_000;
const WATCHDOG_MS = 30 * 60_000;
/** A process's start on a busy shared machine (bundling the workflows) can take minutes. */
const STARTUP_MS = 600_000;
const BENCH_QUEUES = { platform: 'bench-platform', browser: 'bench-browser' };
const FLOOR_TASK_QUEUE = 'bench-durable-floor';
const UNPOLLED_QUEUES = { platform: 'bench-unpolled-platform', browser: 'bench-unpolled-browser' };
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const LLM_MODEL = 'gpt-4o-mini';

// ---------- 1. accept rate ----------

/** A second API on the harness's database and Temporal client, starting its workflows on queues nobody polls. */
async function startApiOnUnpolledQueues(h: Harness): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const deps: ApiDeps = {
    db: h.db,
    temporal: h.client,
    config: { ...h.config, taskQueues: UNPOLLED_QUEUES },
    policy: networkPolicyFromConfig(h.config),
    social: socialPlatformsFromConfig(h.config),
    readiness: readinessProbe(h.db, h.client, () => true),
  };
  const server = await listen(deps, 0, '127.0.0.1');
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface AcceptFigures {
  api: LoadResult;
  raw: LoadResult;
}

async function measureAcceptRate(h: Harness, apiKey: string, userId: string): Promise<AcceptFigures[]> {
  const unpolledApi = await startApiOnUnpolledQueues(h);
  const startedWorkflowIds: string[] = [];
  const runTag = randomUUID().slice(0, 8);

  const postScrape = async (index: number) => {
    const response = await fetch(`${unpolledApi.baseUrl}/api/v1/scrape`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ url: `${h.site.url}/static?accept=${runTag}-${index}`, async: true }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await response.json()) as { jobId?: string };
    if (response.status !== 202 || !body.jobId)
      throw new Error(`POST /scrape answered ${response.status}: ${JSON.stringify(body)}`);
    startedWorkflowIds.push(`scrape-${body.jobId}`);
    return true;
  };

  // The same start call the API makes (type, options, search attributes), minus the admission transaction.
  const startRaw = async (index: number) => {
    const workflowId = `bench-raw-${runTag}-${index}`;
    await h.client.workflow.start('scrapeWorkflow', {
      taskQueue: UNPOLLED_QUEUES.platform,
      workflowId,
      args: [
        {
          jobId: randomUUID(),
          browserTaskQueue: UNPOLLED_QUEUES.browser,
          hasWebhook: false,
        } satisfies ScrapeWorkflowInput,
      ],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      typedSearchAttributes: [
        { key: UserIdSearchAttribute, value: userId },
        { key: JobKindSearchAttribute, value: 'scrape' },
      ],
    });
    startedWorkflowIds.push(workflowId);
    return true;
  };

  const rounds: AcceptFigures[] = [];
  try {
    log('accept: warming up');
    await runClosedLoop(ACCEPT_WARMUP_REQUESTS, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, (i) => postScrape(1_000_000 + i));
    await runClosedLoop(ACCEPT_WARMUP_REQUESTS, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, (i) => startRaw(1_000_000 + i));
    for (let round = 0; round < ROUNDS; round++) {
      const offset = round * ACCEPT_REQUESTS;
      log(
        `accept round ${round + 1}/${ROUNDS}: ${ACCEPT_REQUESTS} POST /api/v1/scrape, then ${ACCEPT_REQUESTS} raw workflow.start, at ${ACCEPT_CLIENTS} clients`,
      );
      const api = await runClosedLoop(ACCEPT_REQUESTS, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, (i) =>
        postScrape(offset + i),
      );
      const raw = await runClosedLoop(ACCEPT_REQUESTS, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, (i) =>
        startRaw(offset + i),
      );
      rounds.push({ api, raw });
    }
  } finally {
    await terminateAll(h, startedWorkflowIds);
    await unpolledApi.close();
  }
  return rounds;
}

async function terminateAll(h: Harness, workflowIds: string[]): Promise<number> {
  log(`terminating ${workflowIds.length} never-polled workflows`);
  const result = await runClosedLoop(workflowIds.length, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, async (i) => {
    await h.client.workflow.getHandle(workflowIds[i]).terminate('benchmark cleanup');
    return true;
  });
  if (result.failed || result.succeeded < workflowIds.length) {
    log(`terminate: ${result.succeeded}/${workflowIds.length} terminated; first error: ${result.firstError}`);
  }
  return result.succeeded;
}

// ---------- 2. the platform as separate processes ----------

interface BenchStack {
  apiUrl: string;
  llmUrl: string;
  pids: { api: number; worker: number; llm: number; floorWorker: number };
}

/** Fake LLM, worker and API each in their own process, on their own task queues, over the harness's database and Temporal. */
async function startBenchStack(h: Harness, onStop: (cleanup: () => Promise<void>) => void): Promise<BenchStack> {
  const { child: llm, match } = await spawnNode(
    'bench/fake-llm-process.ts',
    {},
    /fake LLM listening on (\S+)\n/,
    'fake LLM',
  );
  onStop(() => stopChild(llm));
  const llmUrl = match[1];
  const profileDir = process.env.BENCH_CPU_PROF;
  // --cpu-prof is not allowed in NODE_OPTIONS: it goes on the command line; the profile is written at a clean exit.
  const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir)}`] : [];
  const env: Record<string, string> = {
    ...h.env,
    PLATFORM_TASK_QUEUE: BENCH_QUEUES.platform,
    BROWSER_TASK_QUEUE: BENCH_QUEUES.browser,
    OPENAI_BASE_URL: llmUrl,
    ROUTER_BASE_URL: llmUrl,
    LOG_LEVEL: 'warn',
  };
  // "worker polling" and "API listening" are logged at info.
  const { child: worker } = await spawnNode(
    'workers/worker-process.ts',
    { ...env, LOG_LEVEL: 'info' },
    /worker polling/,
    'worker',
    nodeArgs,
    STARTUP_MS,
  );
  onStop(() => stopChild(worker));
  const port = await freePort();
  const { child: api } = await spawnNode(
    'api/server.ts',
    { ...env, PORT: String(port), LOG_LEVEL: 'info' },
    /API listening/,
    'API',
    nodeArgs,
    STARTUP_MS,
  );
  onStop(() => stopChild(api));
  // The durable floor's worker: the same Temporal server, network policy and fake LLM.
  const { child: floorWorker } = await spawnNode(
    'bench/floor/worker-process.ts',
    { ...env, FLOOR_TASK_QUEUE },
    /floor worker polling/,
    'floor worker',
    [],
    STARTUP_MS,
  );
  onStop(() => stopChild(floorWorker));
  return {
    apiUrl: `http://127.0.0.1:${port}`,
    llmUrl,
    pids: { api: api.pid!, worker: worker.pid!, llm: llm.pid!, floorWorker: floorWorker.pid! },
  };
}

/** One durable job at the floor: a bare workflow with one fetch + convert + extract activity, its result awaited. */
async function scrapeThroughFloor(h: Harness, url: string): Promise<boolean> {
  const result = await h.client.workflow.execute('floorScrapeWorkflow', {
    taskQueue: FLOOR_TASK_QUEUE,
    workflowId: `bench-floor-${randomUUID()}`,
    args: [url],
    workflowExecutionTimeout: JOB_TIMEOUT_MS,
  });
  if (!(result as { markdownChars: number }).markdownChars) throw new Error(`${url}: nothing converted`);
  return true;
}

// ---------- 3. end to end vs bare ----------

type StatusMode = 'poll' | 'wait';

async function scrapeThroughPlatform(
  h: Harness,
  stack: BenchStack,
  apiKey: string,
  url: string,
  expectedRenderer: 'http' | 'browser',
  mode: StatusMode,
): Promise<boolean> {
  const accepted = await h.http('POST', `${stack.apiUrl}/api/v1/scrape`, { apiKey, body: { url, async: true } });
  if (accepted.status !== 202)
    throw new Error(`POST /scrape answered ${accepted.status}: ${JSON.stringify(accepted.body)}`);
  const statusUrl = `${stack.apiUrl}/api/v1/scrape/status/${accepted.body.jobId}${mode === 'wait' ? `?wait=${STATUS_WAIT_SECONDS}` : ''}`;
  const deadline = Date.now() + JOB_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (mode === 'poll') await sleep(STATUS_POLL_INTERVAL_MS);
    const { status, body: job } = await h.http('GET', statusUrl, { apiKey });
    if (status !== 200) throw new Error(`GET status answered ${status}: ${JSON.stringify(job)}`);
    if (job.status === 'completed') {
      if (job.result?.renderedWith !== expectedRenderer)
        throw new Error(`${url} was rendered with ${job.result?.renderedWith}`);
      return true;
    }
    if (job.status === 'failed') throw new Error(`${url} failed: ${job.error}`);
  }
  throw new Error(`${url} did not finish within ${JOB_TIMEOUT_MS}ms`);
}

function bareExtractor(h: Harness, llmUrl: string) {
  const llm = createLlmClient({ baseURL: llmUrl, apiKey: h.env.OPENAI_API_KEY, timeoutMs: 30_000 });
  const output = jsonSchemaForRequest(undefined);
  return async (html: string, url: string) => {
    const page = htmlToPage(html, url);
    await extractStructured({ client: llm }, { model: LLM_MODEL, page: { url, ...page }, output });
    return page;
  };
}

async function scrapeStaticBare(extract: ReturnType<typeof bareExtractor>, url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(JOB_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  await extract(await response.text(), url);
  return true;
}

/** What a user would write without us: a Playwright page per URL, then the same conversion and extraction. */
async function scrapeWithPlaywright(
  browser: Browser,
  extract: ReturnType<typeof bareExtractor>,
  url: string,
  waitUntil: 'load' | 'networkidle',
  mustContain?: string,
): Promise<boolean> {
  const page = await browser.newPage();
  try {
    await page.goto(url, { waitUntil, timeout: JOB_TIMEOUT_MS });
    const converted = await extract(await page.content(), page.url());
    if (mustContain && !converted.markdown.includes(mustContain))
      throw new Error(`${url}: the script-rendered text is missing`);
    return true;
  } finally {
    await page.close();
  }
}

type RunName =
  | 'platform, 1 s polling'
  | 'platform, ?wait=30'
  | 'durable floor (bare workflow + 1 activity)'
  | 'bare fetch+convert+extract'
  | 'bare Playwright+convert+extract';

interface MeasuredRun {
  result: LoadResult;
  cpuSeconds: Record<string, number>;
}

interface EndToEndRound {
  staticRuns: Record<RunName, MeasuredRun>;
  spa: { platform: MeasuredRun; bare: MeasuredRun };
}

interface EndToEnd {
  rounds: EndToEndRound[];
  groups: string[];
  spaClients: number;
}

async function measureEndToEnd(h: Harness, stack: BenchStack, apiKey: string): Promise<EndToEnd> {
  const extract = bareExtractor(h, stack.llmUrl);
  const staticUrl = (i: number) => `${h.site.url}/static?n=${i}`;
  const spaUrl = (i: number) => `${h.site.url}/spa?n=${i}`;
  const spaClients = h.config.browserConcurrency;
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox'] });
  // The benchmark's own children other than the platform's processes: its Chromium for the bare loops.
  const platformPids = new Set([
    stack.pids.api,
    stack.pids.worker,
    stack.pids.llm,
    stack.pids.floorWorker,
    ...(h.temporalServerPid ? [h.temporalServerPid] : []),
  ]);
  const groups: CpuGroup[] = [
    { name: 'Temporal server', pids: () => (h.temporalServerPid ? [h.temporalServerPid] : []) },
    {
      name: 'Postgres backends',
      pids: async () =>
        (
          await sql<{ pid: number }>`select pid from pg_stat_activity where datname = current_database()`.execute(h.db)
        ).rows.map((r) => r.pid),
    },
    { name: 'API process', pids: () => [stack.pids.api] },
    { name: 'worker process (+ its Chromium)', pids: () => [stack.pids.worker], tree: true },
    { name: 'fake LLM process', pids: () => [stack.pids.llm] },
    { name: 'durable floor worker process', pids: () => [stack.pids.floorWorker] },
    {
      name: 'bench process (clients, fixture site, bare loops + their Chromium)',
      pids: () => [process.pid, ...descendantsOf(process.pid, platformPids)],
    },
  ];
  const meter = cpuMeter(groups);
  const measure = async (
    label: string,
    count: number,
    concurrency: number,
    task: (i: number) => Promise<boolean>,
  ): Promise<MeasuredRun> => {
    log(`  ${label}: ${count} pages at ${concurrency} clients`);
    const running = await meter.start();
    const result = await runClosedLoop(count, concurrency, PHASE_TIME_LIMIT_MS, task);
    const cpuSeconds = await running.stop();
    log(
      `    ${round(perSecond(result), 1)}/s (${result.succeeded}/${count} ok${result.firstError ? `; ${result.firstError}` : ''})`,
    );
    return { result, cpuSeconds };
  };

  try {
    log('end-to-end: warming up (one static and one SPA scrape each way; launches the pool browser)');
    await scrapeThroughPlatform(h, stack, apiKey, `${h.site.url}/static?warmup`, 'http', 'wait');
    await scrapeThroughPlatform(h, stack, apiKey, `${h.site.url}/spa?warmup`, 'browser', 'wait');
    await scrapeStaticBare(extract, `${h.site.url}/static?warmup`);
    await scrapeThroughFloor(h, `${h.site.url}/static?warmup`);
    await scrapeWithPlaywright(browser, extract, `${h.site.url}/static?warmup`, 'load');
    await scrapeWithPlaywright(browser, extract, `${h.site.url}/spa?warmup`, 'networkidle', SPA_SENTENCE);

    const rounds: EndToEndRound[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const tag = (i: number) => i + r * 100_000;
      log(`end-to-end round ${r + 1}/${ROUNDS}: ${STATIC_PAGES} static pages each way`);
      const staticRuns = {} as Record<RunName, MeasuredRun>;
      // A and B alternate; the order flips every round so neither always runs on a warmer machine.
      const order: RunName[] = [
        'platform, ?wait=30',
        'durable floor (bare workflow + 1 activity)',
        'bare fetch+convert+extract',
        'platform, 1 s polling',
        'bare Playwright+convert+extract',
      ];
      for (const name of r % 2 ? [...order].reverse() : order) {
        const task = {
          'platform, 1 s polling': (i: number) =>
            scrapeThroughPlatform(h, stack, apiKey, staticUrl(tag(i)), 'http', 'poll'),
          'platform, ?wait=30': (i: number) =>
            scrapeThroughPlatform(h, stack, apiKey, staticUrl(tag(i)), 'http', 'wait'),
          'durable floor (bare workflow + 1 activity)': (i: number) => scrapeThroughFloor(h, staticUrl(tag(i))),
          'bare fetch+convert+extract': (i: number) => scrapeStaticBare(extract, staticUrl(tag(i))),
          'bare Playwright+convert+extract': (i: number) =>
            scrapeWithPlaywright(browser, extract, staticUrl(tag(i)), 'load'),
        }[name];
        staticRuns[name] = await measure(name, STATIC_PAGES, STATIC_CLIENTS, task);
      }
      log(`end-to-end round ${r + 1}/${ROUNDS}: ${SPA_PAGES} script-rendered pages each way`);
      const spaPlatform = () =>
        measure('platform (SPA), ?wait=30', SPA_PAGES, spaClients, (i) =>
          scrapeThroughPlatform(h, stack, apiKey, spaUrl(tag(i)), 'browser', 'wait'),
        );
      const spaBare = () =>
        measure('bare Playwright+extract (SPA)', SPA_PAGES, spaClients, (i) =>
          scrapeWithPlaywright(browser, extract, spaUrl(tag(i)), 'networkidle', SPA_SENTENCE),
        );
      const spa =
        r % 2
          ? { bare: await spaBare(), platform: await spaPlatform() }
          : { platform: await spaPlatform(), bare: await spaBare() };
      rounds.push({ staticRuns, spa });
    }
    return { rounds, groups: groups.map((g) => g.name), spaClients };
  } finally {
    await browser.close();
  }
}

// ---------- report ----------

function median(values: number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function describeRuns(results: LoadResult[], planned: number): string {
  const incomplete = results.filter((r) => r.succeeded < planned);
  const rates = results.map((r) => round(perSecond(r), 1)).join(' / ');
  const p50 = Math.round(median(results.map((r) => percentile(r.latenciesMs, 50))));
  return `${rates}/s, p50 ${p50} ms${incomplete.length ? ` (incomplete: ${incomplete.map((r) => `${r.succeeded}/${planned}${r.firstError ? ` ${r.firstError}` : ''}`).join('; ')})` : ''}`;
}

function printTable(rows: string[][]): void {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  const line = (row: string[]) => row.map((cell, column) => (cell ?? '').padEnd(widths[column])).join(' | ');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows.slice(1)) console.log(line(row));
}

function printReport(accept: AcceptFigures[], e2e: EndToEnd, loadAverages: number[]): void {
  const ratios = (pairs: [LoadResult, LoadResult][]) => pairs.map(([a, b]) => perSecond(a) / perSecond(b));
  const medianRatio = (pairs: [LoadResult, LoadResult][]) => round(median(ratios(pairs)), 3);
  const perRound = (pairs: [LoadResult, LoadResult][]) =>
    ratios(pairs)
      .map((r) => round(r, 3))
      .join(', ');
  const staticOf = (name: RunName) => e2e.rounds.map((r) => r.staticRuns[name].result);
  const pairOf = (a: RunName, b: RunName) =>
    e2e.rounds.map((r): [LoadResult, LoadResult] => [r.staticRuns[a].result, r.staticRuns[b].result]);
  const spaPairs = e2e.rounds.map((r): [LoadResult, LoadResult] => [r.spa.platform.result, r.spa.bare.result]);
  const acceptPairs = accept.map((r): [LoadResult, LoadResult] => [r.api, r.raw]);
  const p99 = (results: LoadResult[]) => median(results.map((r) => percentile(r.latenciesMs, 99)));
  const acceptP99 = { api: p99(accept.map((r) => r.api)), raw: p99(accept.map((r) => r.raw)) };

  console.log('');
  console.log(`Throughput (every A/B pair run ${ROUNDS}x alternating; rates per round, ratio = median over rounds)`);
  printTable([
    ['measure', 'platform', 'baseline', 'ratio (per round)', 'goal'],
    [
      `accepted POST /scrape vs raw workflow.start (${ACCEPT_REQUESTS} each, ${ACCEPT_CLIENTS} clients)`,
      describeRuns(
        accept.map((r) => r.api),
        ACCEPT_REQUESTS,
      ),
      describeRuns(
        accept.map((r) => r.raw),
        ACCEPT_REQUESTS,
      ),
      `${medianRatio(acceptPairs)} (${perRound(acceptPairs)}); p99 ${Math.round(acceptP99.api)} vs ${Math.round(acceptP99.raw)} ms = ${round(acceptP99.api / acceptP99.raw, 2)}x`,
      '>= 0.8, p99 <= 1.5x raw',
    ],
    [
      `completed static pages, ?wait=30 vs bare fetch loop (${STATIC_PAGES}, ${STATIC_CLIENTS} clients)`,
      describeRuns(staticOf('platform, ?wait=30'), STATIC_PAGES),
      describeRuns(staticOf('bare fetch+convert+extract'), STATIC_PAGES),
      `${medianRatio(pairOf('platform, ?wait=30', 'bare fetch+convert+extract'))} (${perRound(pairOf('platform, ?wait=30', 'bare fetch+convert+extract'))})`,
      '>= 0.35',
    ],
    [
      `completed static pages, ?wait=30 vs the durable floor (bare workflow + 1 activity, same server)`,
      describeRuns(staticOf('platform, ?wait=30'), STATIC_PAGES),
      describeRuns(staticOf('durable floor (bare workflow + 1 activity)'), STATIC_PAGES),
      `${medianRatio(pairOf('platform, ?wait=30', 'durable floor (bare workflow + 1 activity)'))} (${perRound(pairOf('platform, ?wait=30', 'durable floor (bare workflow + 1 activity)'))})`,
      '>= 0.7',
    ],
    [
      `completed static pages, 1 s polling vs bare fetch loop`,
      describeRuns(staticOf('platform, 1 s polling'), STATIC_PAGES),
      describeRuns(staticOf('bare fetch+convert+extract'), STATIC_PAGES),
      `${medianRatio(pairOf('platform, 1 s polling', 'bare fetch+convert+extract'))} (${perRound(pairOf('platform, 1 s polling', 'bare fetch+convert+extract'))})`,
      '',
    ],
    [
      `completed static pages, ?wait=30 vs bare Playwright loop`,
      describeRuns(staticOf('platform, ?wait=30'), STATIC_PAGES),
      describeRuns(staticOf('bare Playwright+convert+extract'), STATIC_PAGES),
      `${medianRatio(pairOf('platform, ?wait=30', 'bare Playwright+convert+extract'))} (${perRound(pairOf('platform, ?wait=30', 'bare Playwright+convert+extract'))})`,
      '>= 2',
    ],
    [
      `completed script-rendered pages, ?wait=30 vs bare Playwright + extract (${SPA_PAGES}, ${e2e.spaClients} clients)`,
      describeRuns(
        e2e.rounds.map((r) => r.spa.platform.result),
        SPA_PAGES,
      ),
      describeRuns(
        e2e.rounds.map((r) => r.spa.bare.result),
        SPA_PAGES,
      ),
      `${medianRatio(spaPairs)} (${perRound(spaPairs)})`,
      '>= 0.9',
    ],
  ]);

  const cpuPerJob = (runs: MeasuredRun[]) => {
    const done = runs.reduce((n, r) => n + r.result.succeeded, 0);
    return Object.fromEntries(
      e2e.groups.map((g) => [g, done ? (runs.reduce((s, r) => s + r.cpuSeconds[g], 0) / done) * 1000 : NaN]),
    );
  };
  const runNames: RunName[] = [
    'platform, ?wait=30',
    'platform, 1 s polling',
    'durable floor (bare workflow + 1 activity)',
    'bare fetch+convert+extract',
    'bare Playwright+convert+extract',
  ];
  const cpu: Record<string, Record<string, number>> = Object.fromEntries(
    runNames.map((n) => [n, cpuPerJob(e2e.rounds.map((r) => r.staticRuns[n]))]),
  );
  cpu['platform (SPA), ?wait=30'] = cpuPerJob(e2e.rounds.map((r) => r.spa.platform));
  cpu['bare Playwright+extract (SPA)'] = cpuPerJob(e2e.rounds.map((r) => r.spa.bare));
  console.log('');
  console.log('CPU milliseconds per completed job, per process (from /proc, summed over rounds)');
  const columns = Object.keys(cpu);
  printTable([
    ['process', ...columns],
    ...e2e.groups.map((g) => [g, ...columns.map((c) => String(Math.round(cpu[c][g])))]),
    ['total', ...columns.map((c) => String(Math.round(Object.values(cpu[c]).reduce((a, b) => a + b, 0))))],
  ]);
  console.log('');
  console.log(
    `raw workflow.start latency at ${ACCEPT_CLIENTS} clients: p99 ${Math.round(acceptP99.raw)} ms (median over rounds)`,
  );
  console.log(
    `status: 1 s polling vs ?wait=${STATUS_WAIT_SECONDS} long polling; browser concurrency ${e2e.spaClients}`,
  );
  console.log(
    `machine: ${os.cpus().length} CPUs, 1-min load average at start/end ${loadAverages.map((l) => round(l, 1)).join(' / ')} (other processes share it)`,
  );
  console.log('');

  const summary = (results: LoadResult[]) => ({
    per_s: results.map((r) => round(perSecond(r))),
    ok: results.map((r) => r.succeeded),
    p50_ms: results.map((r) => round(percentile(r.latenciesMs, 50), 1)),
  });
  console.log(
    JSON.stringify({
      rounds: ROUNDS,
      accept: {
        requests: ACCEPT_REQUESTS,
        concurrency: ACCEPT_CLIENTS,
        api: summary(accept.map((r) => r.api)),
        raw: summary(accept.map((r) => r.raw)),
        ratio_api_over_raw_median: medianRatio(acceptPairs),
        api_p99_ms_median: round(acceptP99.api, 1),
        raw_p99_ms_median: round(acceptP99.raw, 1),
      },
      static: {
        pages: STATIC_PAGES,
        concurrency: STATIC_CLIENTS,
        runs: Object.fromEntries(runNames.map((n) => [n, summary(staticOf(n))])),
        ratio_wait_over_bare_fetch_median: medianRatio(pairOf('platform, ?wait=30', 'bare fetch+convert+extract')),
        ratio_wait_over_durable_floor_median: medianRatio(
          pairOf('platform, ?wait=30', 'durable floor (bare workflow + 1 activity)'),
        ),
        ratio_poll_over_bare_fetch_median: medianRatio(pairOf('platform, 1 s polling', 'bare fetch+convert+extract')),
        ratio_wait_over_bare_playwright_median: medianRatio(
          pairOf('platform, ?wait=30', 'bare Playwright+convert+extract'),
        ),
      },
      spa: {
        pages: SPA_PAGES,
        platform: summary(e2e.rounds.map((r) => r.spa.platform.result)),
        bare: summary(e2e.rounds.map((r) => r.spa.bare.result)),
        ratio_median: medianRatio(spaPairs),
      },
      cpu_ms_per_job: Object.fromEntries(
        Object.entries(cpu).map(([run, groups]) => [
          run,
          Object.fromEntries(Object.entries(groups).map(([g, v]) => [g, round(v, 1)])),
        ]),
      ),
      cpus: os.cpus().length,
      load_average_1m: loadAverages.map((l) => round(l, 2)),
    }),
  );
}

void runHarnessBenchmark(WATCHDOG_MS, async (h, onStop) => {
  const { apiKey, userId } = await h.createUser({ creditUsd: 1000, monthlyOperationLimit: 1_000_000 });
  const loadAtStart = os.loadavg()[0];
  const accept = await measureAcceptRate(h, apiKey, userId);
  log('starting the fake LLM, a worker process and an API process');
  const stack = await startBenchStack(h, onStop);
  const e2e = await measureEndToEnd(h, stack, apiKey);
  printReport(accept, e2e, [loadAtStart, os.loadavg()[0]]);
});
