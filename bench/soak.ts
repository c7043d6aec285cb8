/**
 * Soak benchmark (`npm run bench:soak`): mixed load at a steady rate for SOAK_MINUTES (default 30),
 * loopback only, on the embedded stack and then on the server stack (SOAK_STACK=embedded|server|both,
 * default both).
 *
 *   - embedded: `workers/dev.ts` as `npm start` runs it — API, workers and PGlite in one process,
 *     its own Temporal dev server (SQLite) as its child;
 *   - server: as docker-compose runs it — an API process and a worker process over a Postgres
 *     database and a Temporal dev server (the test harness's, persisting to a SQLite file; nothing of
 *     the platform in this process).
 *
 * In both, the fake LLM runs in its own process (bench/fake-llm-process.ts, agents navigate then
 * finish); this process holds the load's clients, the fixture site and the market provider's MCP
 * server. The load (SOAK_RATE scales it, default 1; sized so that a shared 2-core machine keeps up):
 *   - a static-page scrape every 2 s (async POST /scrape, then the status polled every second until terminal);
 *   - a browser-agent run every 30 s (navigate to a fixture page, then done; status polled every 2 s);
 *   - a hosted `/mcp/{id}` tools/call of a free tool of a provider_event listing every second, and
 *   - a call of its `charge_pages` tool every 2 s, whose provider charges one page.scraped event through
 *     POST /provider/runs/{runId}/charge before answering (a provider event charge).
 * New work is not started while too much is in flight (counted as "skipped", which means the stack
 * does not keep up with the rate).
 *
 * Every minute it prints each process's RSS (the median of that minute's 5-second samples) and open
 * file descriptors (this process: active handles too), Postgres connections of the database (server
 * stack), and what the load did. At the end: every job reached a terminal state (nothing lost; jobs
 * still running when the load stops get DRAIN_MS to finish), every provider charge answered 200 is in
 * the books and none twice (a charge whose call the client gave up on may be in them too), the ledger reconciles
 * (test/support/ledger-reconciliation), and a verdict per process: RSS growth from minute 5 (minute 1
 * when SOAK_MINUTES < 10) to the last minute ≤ 10%. Exits 1 when any of these fails.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { sql } from 'kysely';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { openDatabase, type Db } from '../db/connect';
import { stopHarness, useHarness } from '../test/support/stack/harness';
import { findLedgerProblems } from '../test/support/ledger-reconciliation';
import { startFixtureSite, type FixtureSite } from '../test/support/fakes/fixture-site';
import { startFakeDns } from '../test/support/fakes/fake-dns';
import { startMeteredProvider, type MeteredProvider } from '../test/support/fakes/market-metered-provider';
import { spawnNode, stopChild } from '../test/support/stack/node-process';
import { freePort } from '../test/support/stack/ports';
import { log, postgresBackends, round, sleep } from './load';
import { benchTreeGroups, memoryMonitor, mib, type GroupSample } from './proc-memory';
import type { HeapReport } from './heap-report';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
if (!Number.isInteger(MINUTES) || MINUTES < 2) throw new Error('SOAK_MINUTES must be an integer ≥ 2');
const STACKS = (process.env.SOAK_STACK ?? 'both') === 'both' ? ['embedded', 'server'] : [process.env.SOAK_STACK!];
if (STACKS.some((s) => s !== 'embedded' && s !== 'server')) throw new Error('SOAK_STACK: embedded, server or both');
const SCALE = Number(process.env.SOAK_RATE ?? 1);
/** Work started per second, by kind. */
const RATES = { scrape: 0.5 * SCALE, agent: SCALE / 30, lookup: 1 * SCALE, charge: 0.5 * SCALE };
/** At most this much in flight per kind; more is skipped. */
const IN_FLIGHT_LIMIT = { scrape: 30, agent: 4, lookup: 16, charge: 8 };
const BASELINE_MINUTE = MINUTES >= 10 ? 5 : 1;
const GROWTH_LIMIT = 0.1;
const SAMPLE_MS = 5_000;
const DRAIN_MS = 300_000;
const EVENT_PRICE_USD = 0.0001;
const MCP_CLIENTS = 4;
const STARTUP_MS = 600_000;

type Kind = keyof typeof RATES;

/**
 * What the platform's Node processes hold (bench/heap-report.ts, preloaded into each): a file per process
 * in this directory, read at every minute's row.
 */
const heapDir = mkdtempSync(path.join(os.tmpdir(), 'soak-heap-'));
process.on('exit', () => rmSync(heapDir, { recursive: true, force: true }));

/** The platform processes' own output (their logs), kept after the run for whoever reads a failure. */
const logDir = mkdtempSync(path.join(os.tmpdir(), 'soak-logs-'));

/** Appends what a started child writes from now on to `<logDir>/<label>.log`. */
function keepOutput(child: ChildProcess, label: string): void {
  const file = path.join(logDir, `${label}.log`);
  child.stdout!.on('data', (chunk: Buffer) => appendFileSync(file, chunk));
  child.stderr!.on('data', (chunk: Buffer) => appendFileSync(file, chunk));
}

/** Node arguments and environment that make a spawned process report its memory as `label`. */
function heapReported(label: string): { nodeArgs: string[]; env: Record<string, string> } {
  return {
    nodeArgs: ['--require', './bench/heap-report.ts'],
    env: { HEAP_REPORT_FILE: path.join(heapDir, `${label}.jsonl`) },
  };
}

/** The latest report of every process that reports (see heapReported), by label. */
function latestHeapReports(): Record<string, HeapReport> {
  const out: Record<string, HeapReport> = {};
  for (const name of readdirSync(heapDir)) {
    const last = readFileSync(path.join(heapDir, name), 'utf8').trimEnd().split('\n').at(-1);
    if (last) out[path.basename(name, '.jsonl')] = JSON.parse(last) as HeapReport;
  }
  return out;
}

/** The Temporal dev server's Go runtime as its metrics report it (one process: every service reports the same). */
interface GoRuntime {
  heapInUseKb: number;
  goroutines: number;
}

async function goRuntime(metricsUrl: string): Promise<GoRuntime | null> {
  const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(5_000) })).text();
  const first = (name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  const heapInUse = first('memory_heapinuse');
  const goroutines = first('num_goroutines');
  return heapInUse === null || goroutines === null ? null : { heapInUseKb: heapInUse / 1024, goroutines };
}

function goSplit(g: GoRuntime): string {
  return `Go heap in use ${mib(g.heapInUseKb)} MiB, ${g.goroutines} goroutines`;
}

/** "RSS = main heap reserved (used) + worker threads' heaps + external + the rest", in MiB. */
function heapSplit(h: HeapReport): string {
  const kb = (bytes: number) => mib(bytes / 1024);
  const rest = h.rss - h.heapTotal - h.threadHeapTotal - h.external;
  const threads = h.threads
    ? ` + ${h.threads} worker thread heaps ${kb(h.threadHeapTotal)} (used ${kb(h.threadHeapUsed)})`
    : '';
  return `RSS ${kb(h.rss)} = heap ${kb(h.heapTotal)} (used ${kb(h.heapUsed)})${threads} + external ${kb(h.external)} + native and code ${kb(rest)}`;
}

interface Stack {
  name: 'embedded' | 'server';
  apiUrl: string;
  adminToken: string;
  site: FixtureSite;
  /** Database connections of this stack's database (server stack only). */
  pgConnections?: () => Promise<number>;
  /** The Temporal dev server's Go runtime, from its metrics (server stack only). */
  temporalRuntime?: () => Promise<GoRuntime | null>;
  memoryGroups: () => ReturnType<ReturnType<typeof benchTreeGroups>>;
  /** After the load: the database, for the books (the embedded stack's is opened after its process stopped). */
  finish(): Promise<{ db: Db; close(): Promise<void> }>;
  stop(): Promise<void>;
}

// ---------- the stacks ----------

/** Every child process started, stopped (SIGTERM) however this process ends. */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
});

async function startFakeLlm(): Promise<{ child: ChildProcess; url: string }> {
  const { child, match } = await spawnNode(
    'bench/fake-llm-process.ts',
    { FAKE_LLM_AGENT: 'navigate-then-done' },
    /fake LLM listening on (\S+)\n/,
    'fake LLM',
    [],
    STARTUP_MS,
  );
  children.add(child);
  return { child, url: match[1] };
}

async function startEmbedded(): Promise<Stack> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'soak-embedded-'));
  const [site, dns, llm] = await Promise.all([startFixtureSite(), startFakeDns(), startFakeLlm()]);
  const [port, temporalPort, uiPort] = [await freePort(), await freePort(), await freePort()];
  const adminToken = randomBytes(24).toString('hex');
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    PORT: String(port),
    TEMPORAL_DEV_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(uiPort),
    ADMIN_TOKEN: adminToken,
    MASTER_KEY: randomBytes(32).toString('hex'),
    OPENAI_BASE_URL: llm.url,
    ROUTER_BASE_URL: llm.url,
    OPENAI_API_KEY: 'sk-test-service-key-0123456789',
    NETWORK_ALLOWLIST: '127.0.0.1,localhost',
    DNS_SERVERS: dns.server,
    MARKET_MCP_RATE_LIMIT: '1000000',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
  };
  log(`embedded stack: workers/dev.ts with PGlite in ${dataDir}`);
  // Its first start migrates a new PGlite database and bundles the workflows: minutes on a busy machine.
  const reported = heapReported('embedded');
  const { child: dev } = await spawnNode(
    'workers/dev.ts',
    { ...env, ...reported.env },
    /workers running; ready/,
    'workers/dev.ts',
    reported.nodeArgs,
    STARTUP_MS,
  );
  children.add(dev);
  keepOutput(dev, 'embedded');
  const tree = benchTreeGroups();
  const stopDev = async () => {
    await stopChild(dev);
  };
  return {
    name: 'embedded',
    apiUrl: `http://127.0.0.1:${port}`,
    adminToken,
    site,
    memoryGroups: tree,
    async finish() {
      await stopDev(); // PGlite is one connection: the books are read once its process closed it
      const db = await openDatabase({ databaseUrl: null, dataDir });
      return { db, close: () => db.destroy() };
    },
    async stop() {
      await stopDev();
      await Promise.all([stopChild(llm.child), site.close(), dns.close()]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function startServer(): Promise<Stack> {
  log('server stack: Postgres database, Temporal dev server, an API process and a worker process');
  // The Temporal dev server persists to a file, as the embedded stack's does and a deployed one does (in its
  // database): in memory it would keep every workflow history of the run resident and grow with the load.
  const temporalDir = mkdtempSync(path.join(os.tmpdir(), 'soak-temporal-'));
  const h = await useHarness({ workerQueues: [], temporalDbFile: path.join(temporalDir, 'temporal.db') });
  const llm = await startFakeLlm();
  const suffix = Date.now().toString(36);
  const env: Record<string, string> = {
    ...h.env,
    PLATFORM_TASK_QUEUE: `soak-platform-${suffix}`,
    BROWSER_TASK_QUEUE: `soak-browser-${suffix}`,
    OPENAI_BASE_URL: llm.url,
    ROUTER_BASE_URL: llm.url,
    MARKET_MCP_RATE_LIMIT: '1000000',
    LOG_LEVEL: 'info',
  };
  const workerReport = heapReported('worker');
  const { child: worker } = await spawnNode(
    'workers/worker-process.ts',
    { ...env, ...workerReport.env },
    /worker polling/,
    'worker',
    workerReport.nodeArgs,
    STARTUP_MS,
  );
  children.add(worker);
  keepOutput(worker, 'worker');
  const port = await freePort();
  const apiReport = heapReported('API');
  const { child: api } = await spawnNode(
    'api/server.ts',
    { ...env, PORT: String(port), ...apiReport.env },
    /API listening/,
    'API',
    apiReport.nodeArgs,
    STARTUP_MS,
  );
  children.add(api);
  keepOutput(api, 'api');
  const tree = benchTreeGroups();
  return {
    name: 'server',
    apiUrl: `http://127.0.0.1:${port}`,
    adminToken: h.config.adminToken,
    site: h.site,
    pgConnections: async () =>
      Number(
        (
          await sql<{
            n: number;
          }>`select count(*)::int as n from pg_stat_activity where datname = current_database()`.execute(h.db)
        ).rows[0].n,
      ),
    memoryGroups: () => [...tree(), postgresBackends(h.db)],
    temporalRuntime: async () => (h.temporalMetricsUrl ? goRuntime(h.temporalMetricsUrl) : null),
    finish: async () => ({ db: h.db, close: async () => undefined }),
    async stop() {
      await Promise.all([stopChild(api), stopChild(worker), stopChild(llm.child)]);
      await stopHarness();
      rmSync(temporalDir, { recursive: true, force: true });
    },
  };
}

// ---------- HTTP ----------

async function call(
  stack: Stack,
  method: string,
  urlPath: string,
  options: { apiKey?: string; admin?: boolean; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  if (options.admin) headers.authorization = `Bearer ${stack.adminToken}`;
  const response = await fetch(`${stack.apiUrl}${urlPath}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(90_000),
  });
  const text = await response.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body };
}

async function expectStatus(
  stack: Stack,
  status: number,
  method: string,
  urlPath: string,
  options: Parameters<typeof call>[3] = {},
) {
  const result = await call(stack, method, urlPath, options);
  if (result.status !== status)
    throw new Error(`${method} ${urlPath} answered ${result.status}: ${JSON.stringify(result.body).slice(0, 500)}`);
  return result.body;
}

const createUser = async (stack: Stack, creditUsd: number) =>
  (await expectStatus(stack, 201, 'POST', '/admin/users', {
    admin: true,
    body: { email: `soak-${randomBytes(6).toString('hex')}@example.com`, creditUsd, monthlyOperationLimit: 10_000_000 },
  })) as { userId: string; apiKey: string };

/** A provider_event listing of the metered provider, validated, verified, submitted and approved through the API. */
async function listProvider(stack: Stack, provider: { apiKey: string }, service: MeteredProvider): Promise<string> {
  const validation = await expectStatus(stack, 200, 'POST', '/api/v1/mcp-market/validate', {
    apiKey: provider.apiKey,
    body: { type: 'remote_mcp', url: service.url },
  });
  if (validation.status !== 'valid') throw new Error(`validation: ${JSON.stringify(validation).slice(0, 500)}`);
  const verification = await expectStatus(stack, 201, 'POST', '/api/v1/mcp-market/event-verifications', {
    apiKey: provider.apiKey,
    body: { sourceFingerprint: validation.sourceFingerprint, eventNames: ['page.scraped'] },
  });
  const verified = await fetch(`${stack.apiUrl}/api/v1/provider/runs/${verification.runId}/charge`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': provider.apiKey,
      'x-service-charge-token': verification.chargeToken,
      'idempotency-key': 'verify-page.scraped',
    },
    body: JSON.stringify({ eventName: 'page.scraped' }),
  });
  if (verified.status !== 200) throw new Error(`verification charge: ${verified.status} ${await verified.text()}`);
  const created = await expectStatus(stack, 201, 'POST', '/api/v1/mcp-market/submissions', {
    apiKey: provider.apiKey,
    body: {
      validationId: validation.validationId,
      sourceFingerprint: validation.sourceFingerprint,
      type: 'remote_mcp',
      name: `Soak pages ${randomBytes(3).toString('hex')}`,
      description: 'City populations and billable page scrapes for the soak benchmark',
      remoteMcpUrl: service.url,
      monetizationStrategy: 'provider_event',
      pricingEvents: [{ eventName: 'page.scraped', unitPriceUsd: EVENT_PRICE_USD }],
      eventVerificationId: verification.id,
    },
  });
  await expectStatus(stack, 200, 'POST', `/api/v1/mcp-market/submissions/${created.id}/submit`, {
    apiKey: provider.apiKey,
  });
  await expectStatus(stack, 200, 'POST', `/admin/market/mcp/submissions/${created.id}/review`, {
    admin: true,
    body: { action: 'approve' },
  });
  return created.publicId as string;
}

// ---------- the load ----------

interface Counters {
  started: Record<Kind, number>;
  ok: Record<Kind, number>;
  failed: Record<Kind, number>;
  skipped: Record<Kind, number>;
  statusPolls: number;
  firstErrors: Record<Kind, string[]>;
}

const zero = (): Record<Kind, number> => ({ scrape: 0, agent: 0, lookup: 0, charge: 0 });

interface MinuteRow {
  minute: number;
  /** Median RSS (KiB) of the minute's samples, per group. */
  rssKb: Record<string, number>;
  /** The platform's Node processes as V8 sees them (the minute's last report). */
  heap: Record<string, HeapReport>;
  /** The Temporal dev server's Go heap and goroutines (server stack). */
  temporal: GoRuntime | null;
  fds: Record<string, number | null>;
  handles: number;
  pgConnections: number | null;
  done: Record<Kind, number>;
  loadAverage: number;
}

interface StackReport {
  stack: string;
  minutes: MinuteRow[];
  counters: Counters;
  jobs: { accepted: number; completed: number; failed: number; notTerminal: number; notTerminalIds: string[] };
  dbJobStatuses: Record<string, number>;
  charges: { answered200: number; called: number; inBooks: number; duplicates: number };
  ledgerProblems: string[];
  verdicts: {
    process: string;
    fromMiB: number;
    toMiB: number;
    growth: number | null;
    ok: boolean | null;
    /** The load generator (this process and its esbuild service), reported but not judged. */
    judged: boolean;
  }[];
}

/** This process holds the clients, fakes and (server stack) the test harness, which keeps every log line it saw. */
const notJudged = (process: string) => process === 'bench process' || process === 'esbuild';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)] : NaN;
}

async function soak(stack: Stack): Promise<StackReport> {
  const consumer = await createUser(stack, 1000);
  const provider = await createUser(stack, 0);
  const service = await startMeteredProvider();
  service.configureCharging({ apiBase: stack.apiUrl, apiKey: provider.apiKey });
  const entryId = await listProvider(stack, provider, service);
  const credential = (
    await expectStatus(stack, 201, 'POST', `/api/v1/mcp-market/mcps/${entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: {},
    })
  ).credential as string;
  const clients = await Promise.all(
    Array.from({ length: MCP_CLIENTS }, async () => {
      const client = new Client({ name: 'soak', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp/${entryId}`), {
          requestInit: { headers: { authorization: `Bearer ${credential}` } },
        }),
      );
      return client;
    }),
  );

  const counters: Counters = {
    started: zero(),
    ok: zero(),
    failed: zero(),
    skipped: zero(),
    statusPolls: 0,
    firstErrors: { scrape: [], agent: [], lookup: [], charge: [] },
  };
  const inFlight = zero();
  const jobs = new Map<string, { kind: 'scrape' | 'agent'; status: string }>();
  const fail = (kind: Kind, err: unknown) => {
    counters.failed[kind]++;
    if (counters.firstErrors[kind].length < 3)
      counters.firstErrors[kind].push((err instanceof Error ? err.message : String(err)).slice(0, 400));
  };
  const statusPath = (kind: 'scrape' | 'agent', id: string) =>
    kind === 'scrape' ? `/api/v1/scrape/status/${id}` : `/api/v1/agentscraper/status/${id}`;
  const pollUntilTerminal = async (kind: 'scrape' | 'agent', id: string, everyMs: number, until: number) => {
    while (Date.now() < until) {
      await sleep(everyMs);
      counters.statusPolls++;
      const { status, body } = await call(stack, 'GET', statusPath(kind, id), { apiKey: consumer.apiKey });
      if (status !== 200) throw new Error(`status ${status}: ${JSON.stringify(body).slice(0, 300)}`);
      jobs.get(id)!.status = body.status;
      if (body.status === 'completed') return;
      if (body.status === 'failed') throw new Error(`job ${id} failed: ${body.error}`);
    }
    throw new Error(`job ${id}: the client stopped polling at its time limit (the final check reads it again)`);
  };
  let sequence = 0;
  const tasks: Record<Kind, () => Promise<void>> = {
    scrape: async () => {
      const accepted = await expectStatus(stack, 202, 'POST', '/api/v1/scrape', {
        apiKey: consumer.apiKey,
        body: { url: `${stack.site.url}/static?soak=${sequence++}`, async: true },
      });
      jobs.set(accepted.jobId, { kind: 'scrape', status: 'accepted' });
      await pollUntilTerminal('scrape', accepted.jobId, 1000, Date.now() + 120_000);
    },
    agent: async () => {
      const accepted = await expectStatus(stack, 202, 'POST', '/api/v1/agentscraper', {
        apiKey: consumer.apiKey,
        body: {
          task: `Open ${stack.site.url}/agent/list?page=1&soak=${sequence++} and finish`,
          headless: true,
          vision_mode: 'text_only',
          max_actions_per_step: 1,
          optimization_mode: 'balanced',
        },
      });
      jobs.set(accepted.jobId, { kind: 'agent', status: 'accepted' });
      await pollUntilTerminal('agent', accepted.jobId, 2000, Date.now() + 180_000);
    },
    lookup: async () => {
      const client = clients[sequence++ % clients.length];
      const result = await client.callTool({ name: 'lookup', arguments: { city: `City ${sequence}` } });
      if (result.isError) throw new Error(`lookup: ${JSON.stringify(result.content).slice(0, 300)}`);
    },
    charge: async () => {
      const client = clients[sequence++ % clients.length];
      const result = await client.callTool({ name: 'charge_pages', arguments: { pages: 1 } });
      const text = (result.content as { type: string; text?: string }[])[0]?.text ?? '';
      let charged: { charge?: { status: number } } = {};
      try {
        charged = JSON.parse(text);
      } catch {
        // an error's text
      }
      if (result.isError || charged.charge?.status !== 200) throw new Error(`charge_pages: ${text.slice(0, 300)}`);
    },
  };

  const minutes: MinuteRow[] = [];
  let window: Record<string, GroupSample>[] = [];
  const monitor = memoryMonitor(stack.memoryGroups, SAMPLE_MS, (now) => window.push(now));
  const kinds = Object.keys(RATES) as Kind[];
  const running = new Set<Promise<void>>();
  const started = Date.now();
  const credit = zero();
  let last = started;
  log(
    `${stack.name}: ${MINUTES} minutes of ${kinds.map((k) => `${round(RATES[k], 2)} ${k}/s`).join(', ')}; RSS compared from minute ${BASELINE_MINUTE}; the processes' logs in ${logDir}`,
  );
  const printHeader = () =>
    console.log(`\n[${stack.name}] minute | process: RSS MiB (open fds) | … | bench handles | pg connections | done`);
  printHeader();
  let nextMinute = 1;
  while (Date.now() - started < MINUTES * 60_000) {
    await sleep(100);
    const now = Date.now();
    for (const kind of kinds) {
      credit[kind] += (RATES[kind] * (now - last)) / 1000;
      while (credit[kind] >= 1) {
        credit[kind] -= 1;
        if (inFlight[kind] >= IN_FLIGHT_LIMIT[kind]) {
          counters.skipped[kind]++;
          continue;
        }
        inFlight[kind]++;
        counters.started[kind]++;
        const task = tasks[kind]()
          .then(
            () => void counters.ok[kind]++,
            (err) => fail(kind, err),
          )
          .finally(() => {
            inFlight[kind]--;
            running.delete(task);
          });
        running.add(task);
      }
    }
    last = now;
    if (now - started >= nextMinute * 60_000) {
      const samples = window;
      window = [];
      const groups = [...new Set(samples.flatMap((s) => Object.keys(s)))];
      const row: MinuteRow = {
        minute: nextMinute,
        rssKb: Object.fromEntries(groups.map((g) => [g, median(samples.filter((s) => s[g]).map((s) => s[g].rssKb))])),
        heap: latestHeapReports(),
        temporal: stack.temporalRuntime ? await stack.temporalRuntime().catch(() => null) : null,
        fds: Object.fromEntries(groups.map((g) => [g, samples.at(-1)?.[g]?.fds ?? null])),
        handles: (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length,
        pgConnections: stack.pgConnections ? await stack.pgConnections().catch(() => null) : null,
        done: { ...counters.ok },
        loadAverage: os.loadavg()[0],
      };
      minutes.push(row);
      console.log(
        `[${stack.name}] ${row.minute} | ${groups.map((g) => `${g}: ${mib(row.rssKb[g])}${row.fds[g] === null ? '' : ` (${row.fds[g]})`}`).join(' | ')} | handles ${row.handles} | pg ${row.pgConnections ?? '–'} | ` +
          `${kinds.map((k) => `${k} ${row.done[k]}${counters.failed[k] ? `/${counters.failed[k]} failed` : ''}${counters.skipped[k] ? `/${counters.skipped[k]} skipped` : ''}`).join(', ')}, polls ${counters.statusPolls}, load ${round(row.loadAverage, 1)}`,
      );
      for (const [label, h] of Object.entries(row.heap))
        console.log(`[${stack.name}] ${row.minute} | ${label}: ${heapSplit(h)}`);
      if (row.temporal) console.log(`[${stack.name}] ${row.minute} | Temporal dev server: ${goSplit(row.temporal)}`);
      nextMinute++;
    }
  }
  log(`${stack.name}: load stopped; draining ${running.size} tasks in flight`);
  const drainUntil = Date.now() + DRAIN_MS;
  await Promise.race([Promise.allSettled([...running]), sleep(DRAIN_MS)]);
  await monitor.stop();

  // Nothing lost: every accepted job reached a terminal state (re-read until the drain time is up).
  const terminal = (status: string) => status === 'completed' || status === 'failed';
  for (;;) {
    for (const [id, job] of jobs) {
      if (terminal(job.status)) continue;
      const { body } = await call(stack, 'GET', statusPath(job.kind, id), { apiKey: consumer.apiKey });
      job.status = body?.status ?? 'unknown';
    }
    if ([...jobs.values()].every((j) => terminal(j.status)) || Date.now() > drainUntil) break;
    await sleep(5_000);
  }
  const statuses = [...jobs.values()].map((j) => j.status);
  const notTerminalIds = [...jobs]
    .filter(([, j]) => j.status !== 'completed' && j.status !== 'failed')
    .map(([id]) => id);
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await service.close();

  const books = await stack.finish();
  let report: StackReport;
  try {
    const dbJobs = await books.db
      .selectFrom('jobs')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('user_id', '=', consumer.userId)
      .groupBy('status')
      .execute();
    const inBooks = await sql<{ n: number; keys: number }>`
      select count(*)::int as n, count(distinct (c.run_id, c.idempotency_key))::int as keys
      from market_run_charges c join market_runs r on r.id = c.run_id
      where r.consumer_id = ${consumer.userId}::uuid`.execute(books.db);
    const ledgerProblems = (await findLedgerProblems(books.db)).map((p) => `${p.check} (${p.rows.length})`);
    const base = minutes.find((m) => m.minute === BASELINE_MINUTE);
    const end = minutes.at(-1);
    const processes = [...new Set(minutes.flatMap((m) => Object.keys(m.rssKb)))];
    report = {
      stack: stack.name,
      minutes,
      counters,
      jobs: {
        accepted: jobs.size,
        completed: statuses.filter((s) => s === 'completed').length,
        failed: statuses.filter((s) => s === 'failed').length,
        notTerminal: notTerminalIds.length,
        notTerminalIds: notTerminalIds.slice(0, 20),
      },
      dbJobStatuses: Object.fromEntries(dbJobs.map((r) => [r.status, Number(r.n)])),
      charges: {
        answered200: counters.ok.charge,
        called: counters.started.charge,
        inBooks: Number(inBooks.rows[0].n),
        duplicates: Number(inBooks.rows[0].n) - Number(inBooks.rows[0].keys),
      },
      ledgerProblems,
      verdicts: processes.map((p) => {
        const from = base?.rssKb[p];
        const to = end?.rssKb[p];
        const judged = !notJudged(p);
        if (!from || !to)
          return { process: p, fromMiB: mib(from ?? 0), toMiB: mib(to ?? 0), growth: null, ok: null, judged };
        const growth = (to - from) / from;
        return {
          process: p,
          fromMiB: mib(from),
          toMiB: mib(to),
          growth: round(growth, 3),
          ok: growth <= GROWTH_LIMIT,
          judged,
        };
      }),
    };
  } finally {
    await books.close();
  }
  return report;
}

function printReport(r: StackReport): void {
  console.log(`\n## ${r.stack} stack: ${MINUTES} minutes`);
  console.log(`\n| process | RSS MiB at minute ${BASELINE_MINUTE} | at minute ${MINUTES} | growth | ≤ 10% |`);
  console.log('|---|---|---|---|---|');
  for (const v of r.verdicts)
    console.log(
      `| ${v.process} | ${v.fromMiB} | ${v.toMiB} | ${v.growth === null ? '–' : `${round(v.growth * 100, 1)}%`} | ${v.ok === null ? 'not present at both' : v.ok ? 'yes' : '**no**'}${v.judged ? '' : ' (load generator, not judged)'} |`,
    );
  const first = r.minutes[0];
  const end = r.minutes.at(-1);
  if (first && end) {
    const fdsOf = (m: MinuteRow) =>
      Object.entries(m.fds)
        .filter(([, n]) => n !== null)
        .map(([g, n]) => `${g} ${n}`)
        .join(', ');
    console.log(
      `\nopen fds, minute 1: ${fdsOf(first)}; bench handles ${first.handles}; pg connections ${first.pgConnections ?? '–'}`,
    );
    console.log(
      `open fds, minute ${end.minute}: ${fdsOf(end)}; bench handles ${end.handles}; pg connections ${end.pgConnections ?? '–'}`,
    );
    // Where a process's growth is: the dev server's Go heap; a Node process's V8 heap, external or native memory.
    const marks = [first, r.minutes.find((m) => m.minute === BASELINE_MINUTE), end];
    const at = (has: (m: MinuteRow) => boolean) =>
      marks.filter((m, i, all): m is MinuteRow => !!m && has(m) && all.indexOf(m) === i);
    const withTemporal = at((m) => m.temporal !== null);
    if (withTemporal.length) {
      console.log('\nTemporal dev server, as its Go runtime reports it:');
      for (const m of withTemporal) console.log(`  minute ${m.minute}: ${goSplit(m.temporal!)}`);
    }
    for (const label of Object.keys(end.heap)) {
      const rows = at((m) => !!m.heap[label]);
      console.log(`\n${label}, as V8 sees it:`);
      for (const m of rows) console.log(`  minute ${m.minute}: ${heapSplit(m.heap[label])}`);
    }
  }
  const c = r.counters;
  console.log(
    `\nwork: ${(Object.keys(c.started) as Kind[]).map((k) => `${k} ${c.ok[k]} ok / ${c.failed[k]} failed / ${c.skipped[k]} skipped`).join('; ')}; ${c.statusPolls} status polls`,
  );
  for (const [kind, errors] of Object.entries(c.firstErrors))
    if (errors.length) console.log(`first ${kind} errors:\n  ${errors.join('\n  ')}`);
  console.log(
    `jobs: ${r.jobs.accepted} accepted, ${r.jobs.completed} completed, ${r.jobs.failed} failed, ${r.jobs.notTerminal} not terminal; in the database: ${JSON.stringify(r.dbJobStatuses)}`,
  );
  console.log(
    `provider charges: ${r.charges.called} called, ${r.charges.answered200} answered 200, ${r.charges.inBooks} in the books, ${r.charges.duplicates} twice; ledger: ${r.ledgerProblems.length ? r.ledgerProblems.join('; ') : 'reconciles'}`,
  );
}

async function main() {
  const reports: StackReport[] = [];
  const loadAverages = [os.loadavg()[0]];
  let failed = false;
  for (const name of STACKS) {
    let stack: Stack;
    try {
      stack = name === 'embedded' ? await startEmbedded() : await startServer();
    } catch (err) {
      console.error(`${name} stack: it did not start:`, err);
      failed = true;
      continue;
    }
    try {
      const report = await soak(stack);
      reports.push(report);
      printReport(report);
    } catch (err) {
      console.error(`${name} stack: the soak failed:`, err);
      failed = true;
    } finally {
      await stack.stop().catch((err) => console.error(`stopping the ${name} stack failed:`, err));
    }
  }
  loadAverages.push(os.loadavg()[0]);
  console.log(
    `\nmachine: ${os.cpus().length} CPUs, 1-min load average at start/end ${loadAverages.map((l) => round(l, 1)).join(' / ')}`,
  );
  console.log(JSON.stringify({ minutes: MINUTES, rates_per_s: RATES, baseline_minute: BASELINE_MINUTE, reports }));
  for (const r of reports) {
    const problems = [
      r.jobs.notTerminal ? `${r.jobs.notTerminal} jobs not terminal` : '',
      r.charges.inBooks < r.charges.answered200 || r.charges.inBooks > r.charges.called || r.charges.duplicates
        ? `charges: ${r.charges.answered200} answered 200 of ${r.charges.called} called, ${r.charges.inBooks} in the books, ${r.charges.duplicates} twice`
        : '',
      r.ledgerProblems.length ? 'the ledger does not reconcile' : '',
      r.verdicts.some((v) => v.judged && v.ok === false) ? 'a process of the stack grew more than 10%' : '',
    ].filter(Boolean);
    if (problems.length) {
      console.log(`${r.stack}: ${problems.join('; ')}`);
      failed = true;
    }
  }
  process.exit(failed ? 1 : 0);
}

const watchdog = setTimeout(
  () => {
    log('watchdog: giving up');
    process.exit(2);
  },
  (MINUTES * STACKS.length + 15 * STACKS.length) * 60_000,
);
watchdog.unref();
void main().catch((err) => {
  console.error('soak failed:', err);
  process.exit(1);
});
