/**
 * Scrape platform benchmark (`npm run bench:scrape`): one harness, one Temporal dev server, loopback only.
 *
 *   1. Accept rate of async POST /api/v1/scrape vs raw client.workflow.start, both at 32 clients, both onto
 *      a task queue no worker polls (so neither run does any scraping); plus the accept latency p50/p99.
 *   2. End-to-end scrapes/s through API + workers (POST, then poll the status until terminal) vs a bare
 *      in-process loop doing the same work: 200 static pages at 16 clients, 50 script-rendered pages at the
 *      worker's browser concurrency.
 *
 * Prints a table and, last, one JSON line with every figure.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { chromium, type Browser } from 'playwright-core';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/client';
import type { Harness } from '../test/support/harness';
import { SPA_SENTENCE } from '../test/support/fixture-site';
import { htmlToPage } from '../lib/page/convert';
import { extractStructured } from '../activities/llm/extract';
import { createLlmClient } from '../lib/llm/client';
import { jsonSchemaForRequest } from '../lib/llm/structured-output';
import { networkPolicyFromConfig } from '../lib/net/policy';
import { socialPlatformsFromConfig } from '../lib/social/platforms';
import { listen } from '../api/server';
import { readinessProbe } from '../api/readiness';
import type { ApiDeps } from '../api/deps';
import { JobKindSearchAttribute, UserIdSearchAttribute } from '../lib/temporal';
import type { ScrapeWorkflowInput } from '../workflows/scrape';
import { percentile, perSecond, round, runClosedLoop, sleep, type LoadResult, log, runHarnessBenchmark } from './load';

const ACCEPT_CLIENTS = 32;
const ACCEPT_REQUESTS = 1000;
const ACCEPT_WARMUP_REQUESTS = 32;
const STATIC_PAGES = 200;
const STATIC_CLIENTS = 16;
const SPA_PAGES = 50;
const STATUS_POLL_INTERVAL_MS = 100;
const JOB_TIMEOUT_MS = 45_000;
const PHASE_TIME_LIMIT_MS = 60_000;
const WATCHDOG_MS = 330_000;
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
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

interface AcceptFigures {
  api: LoadResult;
  raw: LoadResult;
  terminated: number;
}

async function measureAcceptRate(h: Harness, apiKey: string, userId: string): Promise<AcceptFigures> {
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
    if (response.status !== 202 || !body.jobId) throw new Error(`POST /scrape answered ${response.status}: ${JSON.stringify(body)}`);
    startedWorkflowIds.push(`scrape-${body.jobId}`);
    return true;
  };

  // The same start call the API makes (type, options, search attributes), minus the admission transaction.
  const startRaw = async (index: number) => {
    const workflowId = `bench-raw-${runTag}-${index}`;
    await h.client.workflow.start('scrapeWorkflow', {
      taskQueue: UNPOLLED_QUEUES.platform,
      workflowId,
      args: [{ jobId: randomUUID(), browserTaskQueue: UNPOLLED_QUEUES.browser, hasWebhook: false } satisfies ScrapeWorkflowInput],
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

  let api: LoadResult, raw: LoadResult, terminated: number;
  try {
    log('accept: warming up');
    await runClosedLoop(ACCEPT_WARMUP_REQUESTS, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, (i) => postScrape(ACCEPT_REQUESTS + i));
    await runClosedLoop(ACCEPT_WARMUP_REQUESTS, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, (i) => startRaw(ACCEPT_REQUESTS + i));

    log(`accept: ${ACCEPT_REQUESTS} POST /api/v1/scrape at ${ACCEPT_CLIENTS} clients`);
    api = await runClosedLoop(ACCEPT_REQUESTS, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, postScrape);
    log(`accept: ${ACCEPT_REQUESTS} raw workflow.start at ${ACCEPT_CLIENTS} clients`);
    raw = await runClosedLoop(ACCEPT_REQUESTS, ACCEPT_CLIENTS, PHASE_TIME_LIMIT_MS, startRaw);
  } finally {
    terminated = await terminateAll(h, startedWorkflowIds);
    await unpolledApi.close();
  }
  return { api, raw, terminated };
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

// ---------- 2. end to end vs bare ----------

async function scrapeThroughPlatform(h: Harness, apiKey: string, url: string, expectedRenderer: 'http' | 'browser'): Promise<boolean> {
  const accepted = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url, async: true } });
  if (accepted.status !== 202) throw new Error(`POST /scrape answered ${accepted.status}: ${JSON.stringify(accepted.body)}`);
  const deadline = Date.now() + JOB_TIMEOUT_MS;
  while (Date.now() < deadline) {
    await sleep(STATUS_POLL_INTERVAL_MS);
    const { body: job } = await h.http('GET', `/api/v1/scrape/status/${accepted.body.jobId}`, { apiKey });
    if (job?.status === 'completed') {
      if (job.result?.renderedWith !== expectedRenderer) throw new Error(`${url} was rendered with ${job.result?.renderedWith}`);
      return true;
    }
    if (job?.status === 'failed') throw new Error(`${url} failed: ${job.error}`);
  }
  throw new Error(`${url} did not finish within ${JOB_TIMEOUT_MS}ms`);
}

function bareExtractor(h: Harness) {
  const llm = createLlmClient({ baseURL: h.llm.baseURL, apiKey: h.env.OPENAI_API_KEY, timeoutMs: 30_000 });
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

async function scrapeSpaBare(browser: Browser, extract: ReturnType<typeof bareExtractor>, url: string): Promise<boolean> {
  const page = await browser.newPage();
  try {
    // networkidle: the same settle rule the platform's renderer applies by default.
    await page.goto(url, { waitUntil: 'networkidle', timeout: JOB_TIMEOUT_MS });
    const converted = await extract(await page.content(), page.url());
    if (!converted.markdown.includes(SPA_SENTENCE)) throw new Error(`${url}: the script-rendered text is missing`);
    return true;
  } finally {
    await page.close();
  }
}

interface ThroughputPair {
  pages: number;
  concurrency: number;
  platform: LoadResult;
  bare: LoadResult;
}

async function measureEndToEnd(h: Harness, apiKey: string): Promise<{ staticPages: ThroughputPair; spaPages: ThroughputPair }> {
  const extract = bareExtractor(h);
  const staticUrl = (i: number) => `${h.site.url}/static?n=${i}`;
  const spaUrl = (i: number) => `${h.site.url}/spa?n=${i}`;
  const spaClients = h.config.browserConcurrency;

  log('end-to-end: warming up (one static and one SPA scrape each way; launches the pool browser)');
  await scrapeThroughPlatform(h, apiKey, `${h.site.url}/static?warmup`, 'http');
  await scrapeThroughPlatform(h, apiKey, `${h.site.url}/spa?warmup`, 'browser');
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox'] });
  try {
    await scrapeStaticBare(extract, `${h.site.url}/static?warmup`);
    await scrapeSpaBare(browser, extract, `${h.site.url}/spa?warmup`);

    log(`end-to-end: ${STATIC_PAGES} static pages at ${STATIC_CLIENTS} clients`);
    const staticPlatform = await runClosedLoop(STATIC_PAGES, STATIC_CLIENTS, PHASE_TIME_LIMIT_MS, (i) => scrapeThroughPlatform(h, apiKey, staticUrl(i), 'http'));
    const staticBare = await runClosedLoop(STATIC_PAGES, STATIC_CLIENTS, PHASE_TIME_LIMIT_MS, (i) => scrapeStaticBare(extract, staticUrl(i)));

    log(`end-to-end: ${SPA_PAGES} SPA pages at ${spaClients} clients`);
    const spaPlatform = await runClosedLoop(SPA_PAGES, spaClients, PHASE_TIME_LIMIT_MS, (i) => scrapeThroughPlatform(h, apiKey, spaUrl(i), 'browser'));
    const spaBare = await runClosedLoop(SPA_PAGES, spaClients, PHASE_TIME_LIMIT_MS, (i) => scrapeSpaBare(browser, extract, spaUrl(i)));

    return {
      staticPages: { pages: STATIC_PAGES, concurrency: STATIC_CLIENTS, platform: staticPlatform, bare: staticBare },
      spaPages: { pages: SPA_PAGES, concurrency: spaClients, platform: spaPlatform, bare: spaBare },
    };
  } finally {
    await browser.close();
  }
}

// ---------- report ----------

function describeRun(result: LoadResult, planned: number): string {
  const incomplete = result.succeeded < planned ? ` (only ${result.succeeded}/${planned} ok${result.firstError ? `; ${result.firstError}` : ''})` : '';
  return `${round(perSecond(result), 1)}/s, p50 ${Math.round(percentile(result.latenciesMs, 50))} ms${incomplete}`;
}

function printReport(accept: AcceptFigures, e2e: { staticPages: ThroughputPair; spaPages: ThroughputPair }, loadAverages: number[]): void {
  const ratio = (a: LoadResult, b: LoadResult) => round(perSecond(a) / perSecond(b), 3);
  const acceptLatency = {
    p50: round(percentile(accept.api.latenciesMs, 50), 1),
    p99: round(percentile(accept.api.latenciesMs, 99), 1),
  };
  const rows: [string, string, string, string][] = [
    ['measure', 'platform', 'baseline', 'platform/baseline'],
    [
      `accepted POST /scrape vs raw workflow.start (${ACCEPT_REQUESTS} each, ${ACCEPT_CLIENTS} clients)`,
      describeRun(accept.api, ACCEPT_REQUESTS),
      describeRun(accept.raw, ACCEPT_REQUESTS),
      String(ratio(accept.api, accept.raw)),
    ],
    ...(['staticPages', 'spaPages'] as const).map((kind): [string, string, string, string] => {
      const pair = e2e[kind];
      const label = kind === 'staticPages' ? 'static' : 'script-rendered (/spa)';
      return [
        `completed scrapes, ${pair.pages} ${label} pages (${pair.concurrency} clients)`,
        describeRun(pair.platform, pair.pages),
        describeRun(pair.bare, pair.pages),
        String(ratio(pair.platform, pair.bare)),
      ];
    }),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row: string[]) => row.map((cell, column) => cell.padEnd(widths[column])).join(' | ');
  console.log('');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows.slice(1)) console.log(line(row));
  console.log('');
  console.log(`POST /scrape accept latency at ${ACCEPT_CLIENTS} clients: p50 ${acceptLatency.p50} ms, p99 ${acceptLatency.p99} ms`);
  console.log(`raw workflow.start latency at ${ACCEPT_CLIENTS} clients: p50 ${round(percentile(accept.raw.latenciesMs, 50), 1)} ms, p99 ${round(percentile(accept.raw.latenciesMs, 99), 1)} ms`);
  console.log(`status poll interval ${STATUS_POLL_INTERVAL_MS} ms; browser concurrency ${e2e.spaPages.concurrency}; ${accept.terminated} never-polled workflows terminated`);
  console.log(`machine: ${os.cpus().length} CPUs, 1-min load average at start/end ${loadAverages.map((l) => round(l, 1)).join(' / ')} (other processes share it)`);
  console.log('');

  const throughput = (pair: ThroughputPair) => ({
    pages: pair.pages,
    concurrency: pair.concurrency,
    platform_per_s: round(perSecond(pair.platform)),
    bare_per_s: round(perSecond(pair.bare)),
    ratio_platform_over_bare: ratio(pair.platform, pair.bare),
    platform_ok: pair.platform.succeeded,
    bare_ok: pair.bare.succeeded,
    platform_p50_ms: round(percentile(pair.platform.latenciesMs, 50), 1),
    bare_p50_ms: round(percentile(pair.bare.latenciesMs, 50), 1),
  });
  console.log(
    JSON.stringify({
      accept: {
        requests: ACCEPT_REQUESTS,
        concurrency: ACCEPT_CLIENTS,
        api_per_s: round(perSecond(accept.api)),
        raw_start_per_s: round(perSecond(accept.raw)),
        ratio_api_over_raw: ratio(accept.api, accept.raw),
        api_ok: accept.api.succeeded,
        raw_ok: accept.raw.succeeded,
        api_latency_p50_ms: acceptLatency.p50,
        api_latency_p99_ms: acceptLatency.p99,
        raw_latency_p50_ms: round(percentile(accept.raw.latenciesMs, 50), 1),
        raw_latency_p99_ms: round(percentile(accept.raw.latenciesMs, 99), 1),
      },
      static: throughput(e2e.staticPages),
      spa: throughput(e2e.spaPages),
      status_poll_interval_ms: STATUS_POLL_INTERVAL_MS,
      cpus: os.cpus().length,
      load_average_1m: loadAverages.map((l) => round(l, 2)),
    }),
  );
}

void runHarnessBenchmark(WATCHDOG_MS, async (h) => {
  const { apiKey, userId } = await h.createUser({ creditUsd: 1000, monthlyOperationLimit: 1_000_000 });
  const loadAtStart = os.loadavg()[0];
  const accept = await measureAcceptRate(h, apiKey, userId);
  const e2e = await measureEndToEnd(h, apiKey);
  printReport(accept, e2e, [loadAtStart, os.loadavg()[0]]);
});
