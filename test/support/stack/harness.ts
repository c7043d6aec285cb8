import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Client } from '@temporalio/client';
import { NativeConnection, Runtime, DefaultLogger } from '@temporalio/worker';
import { loadConfig, type Config } from '../../../lib/config';
import { migrateToLatest, openDatabase, type Db } from '../../../db/connect';
import { networkPolicyFromConfig } from '../../../lib/net/policy';
import { socialPlatformsFromConfig } from '../../../lib/social/platforms';
import { connectClient } from '../../../lib/temporal/client';
import { startTemporalDevServer, type DevServer } from '../../../workers/temporal-cli';
import { listen } from '../../../api/server';
import { readinessProbe } from '../../../api/readiness';
import type { ApiDeps } from '../../../api/deps';
import { createWorkers, type WorkerSet } from '../../../workers/worker-set';
import { writeWorkflowBundle } from '../../../workers/workflow-bundle';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/fake-openai';
import { startFixtureSite, type FixtureSite } from '../fakes/fixture-site';
import { freePort } from './ports';
import { startFakeCaptchaSolver, type FakeCaptchaSolver } from '../fakes/fake-captcha-solver';
import { startFakeProxy, type FakeProxy } from '../fakes/fake-proxy';
import { captchaRoutes, CAPTCHA_SITE_KEY } from '../fakes/captcha-fixture';
import { startFakeDns, type FakeDns } from '../fakes/fake-dns';
import { startFakeForum, type FakeForum } from '../fakes/fake-forum';
import { startFakeMicroblog, type FakeMicroblog } from '../fakes/fake-microblog';
import { captureProcessOutput, testLogSink } from './output-capture';
import { configureLogging } from '../../../lib/log';

export const ADMIN_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface HttpResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Harness {
  config: Config;
  env: Record<string, string>;
  db: Db;
  client: Client;
  temporalAddress: string;
  /** The Temporal dev server's metrics URL (bench:soak reads its Go heap), or null. */
  temporalMetricsUrl: string | null;
  /** The Temporal dev server's process id (benchmarks count its CPU). */
  temporalServerPid: number | undefined;
  databaseUrl: string;
  baseUrl: string;
  llm: FakeOpenAI;
  site: FixtureSite;
  captchaSolver: FakeCaptchaSolver;
  proxy: FakeProxy;
  forum: FakeForum;
  microblog: FakeMicroblog;
  /**
   * The only DNS server the platform asks (DNS_SERVERS, also in `env` for child processes): made-up names get
   * NXDOMAIN from it on loopback instead of reaching the machine's nameserver.
   */
  dns: FakeDns;
  /** The workflows bundled once per run (TEST_WORKFLOW_BUNDLE, written by the test runner) or per harness. */
  workflowBundle: { code: string };
  /** POST /admin/users through the admin API; returns the new user's id and key. */
  createUser(options?: {
    creditUsd?: number;
    monthlyOperationLimit?: number;
    email?: string;
  }): Promise<{ userId: string; apiKey: string }>;
  http<T = any>(
    method: string,
    urlPath: string,
    options?: { apiKey?: string; body?: unknown; headers?: Record<string, string>; raw?: string },
  ): Promise<HttpResult<T>>;
  /** Polls the status endpoint until the job is terminal (or `until` holds). */
  waitForJob(apiKey: string, statusPath: string, until?: (job: any) => boolean, timeoutMs?: number): Promise<any>;
  /**
   * An API bound to its own task queues, with in-process workers for them unless `workers: false`
   * (then a test runs its own worker processes). Config overrides apply to both.
   */
  startIsolatedStack(options: {
    taskQueues: Config['taskQueues'];
    overrides?: Partial<Config>;
    /** Which queues in-process workers poll; [] when the test runs its own worker processes. Default both. */
    queues?: ('platform' | 'browser')[];
  }): Promise<IsolatedStack>;
}

/** An API (and its workers) of its own; the file that starts one stops it (idempotent). */
export interface IsolatedStack {
  baseUrl: string;
  config: Config;
  /** Closes the API and shuts its workers down: they stop polling, so no later file's task reaches them. */
  stop(): Promise<void>;
}

let harness: Promise<Harness> | null = null;
const cleanups: (() => Promise<void>)[] = [];

export interface HarnessOptions {
  /**
   * The queues the harness's in-process workers poll (default both). A benchmark whose platform runs
   * in processes of its own passes [], so nothing of the platform shares its process.
   */
  workerQueues?: ('platform' | 'browser')[];
  /**
   * A SQLite file for the Temporal dev server's state (default: in memory). A long benchmark passes one,
   * as a deployed Temporal keeps its histories in a database rather than in its own memory.
   */
  temporalDbFile?: string;
}

/** The harness of this process (started by the first caller, whose options apply). */
export function useHarness(options: HarnessOptions = {}): Promise<Harness> {
  harness ??= startHarness(options);
  return harness;
}

/** The harness if a test started it (without starting one). */
export function runningHarness(): Promise<Harness> | null {
  return harness;
}

export async function stopHarness(): Promise<void> {
  for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => console.error('cleanup failed:', err));
  cleanups.length = 0;
  harness = null;
}

/** `fn` run at most once; later calls get the first call's promise. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => (done ??= fn());
}

async function createDatabase(): Promise<string> {
  const name = `test_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_POSTGRES_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  cleanups.push(async () => {
    const dropper = new pg.Client({ connectionString: ADMIN_POSTGRES_URL });
    await dropper.connect();
    await dropper.query(`drop database if exists ${name} with (force)`);
    await dropper.end();
  });
  const url = new URL(ADMIN_POSTGRES_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function startHarness(options: HarnessOptions): Promise<Harness> {
  captureProcessOutput();
  configureLogging({ level: 'debug', destination: testLogSink() });
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const captchaSolver = await startFakeCaptchaSolver();
  const [forum, microblog, dns] = await Promise.all([startFakeForum(), startFakeMicroblog(), startFakeDns()]);
  cleanups.push(
    () => forum.close(),
    () => microblog.close(),
    () => dns.close(),
  );
  const [databaseUrl, llm, site, proxy, temporalPort] = await Promise.all([
    createDatabase(),
    startFakeOpenAI(),
    startFixtureSite(captchaRoutes(captchaSolver.tokenFor(CAPTCHA_SITE_KEY))),
    startFakeProxy(),
    freePort(),
  ]);
  cleanups.push(
    () => llm.close(),
    () => site.close(),
    () => captchaSolver.close(),
    () => proxy.close(),
  );

  const dev: DevServer = await startTemporalDevServer({
    port: temporalPort,
    uiPort: null,
    ...(options.temporalDbFile && { dbFile: options.temporalDbFile }),
  });
  cleanups.push(() => dev.stop());
  // A lane that dies without its cleanups (killed, or a crash between files) takes its dev server with it.
  process.once('exit', () => dev.process.kill('SIGKILL'));

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'scrape-test-'));
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  // The workflows are bundled once: by the test runner for the whole run, else here. Worker processes the
  // tests start (WORKFLOW_BUNDLE_PATH in env) load the same file instead of bundling again.
  const bundlePath = process.env.TEST_WORKFLOW_BUNDLE ?? path.join(dataDir, 'workflow-bundle.js');
  if (!process.env.TEST_WORKFLOW_BUNDLE) await writeWorkflowBundle(bundlePath);
  const workflowBundle = { code: readFileSync(bundlePath, 'utf8') };
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    WORKFLOW_BUNDLE_PATH: bundlePath,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: dev.address,
    TEMPORAL_NAMESPACE: 'default',
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'sk-test-service-key-0123456789',
    ROUTER_BASE_URL: llm.baseURL,
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    MASTER_KEY: randomBytes(32).toString('hex'),
    NETWORK_ALLOWLIST: '127.0.0.1,localhost',
    // Every name the platform resolves for a user URL is asked of the loopback fake, never the machine's nameserver.
    DNS_SERVERS: dns.server,
    PLATFORM_TASK_QUEUE: 'platform-test',
    BROWSER_TASK_QUEUE: 'browser-test',
    SYNC_SCRAPE_TIMEOUT_MS: '60000',
    BROWSER_CONCURRENCY: '4',
    PROXY_URL: proxy.urlTemplate,
    CAPTCHA_SOLVER_URL: captchaSolver.url,
    CAPTCHA_SOLVER_KEY: captchaSolver.apiKey,
    FORUM_API_BASE: forum.apiBase,
    FORUM_AUTH_BASE: forum.authBase,
    MICROBLOG_BASE: microblog.base,
    // Low enough for the seconds-level schedules the automation tests wait for (the default is 5 minutes).
    AUTOMATION_MIN_INTERVAL_MINUTES: '0.05',
  };
  const config = loadConfig(env);
  const policy = networkPolicyFromConfig(config);
  const db = await openDatabase({ ...config, poolSize: 20 });
  cleanups.push(() => db.destroy());
  await migrateToLatest(db);

  const client = await connectClient(dev.address, config.temporalNamespace);
  cleanups.push(() => client.connection.close());

  const runWorkers = async (workerConfig: Config, queues?: ('platform' | 'browser')[]): Promise<WorkerSet> => {
    const connection = await NativeConnection.connect({ address: dev.address });
    const workers = await createWorkers({
      db,
      config: workerConfig,
      policy,
      connection,
      namespace: workerConfig.temporalNamespace,
      workflowBundle,
      queues,
    });
    void workers.run();
    const stop = once(async () => {
      await workers.shutdown();
      await connection.close();
    });
    cleanups.push(stop);
    return { ...workers, shutdown: stop };
  };
  const serve = async (apiConfig: Config, workers: WorkerSet): Promise<{ server: Server; baseUrl: string }> => {
    const deps: ApiDeps = {
      db,
      temporal: client,
      config: apiConfig,
      policy,
      social: socialPlatformsFromConfig(apiConfig),
      readiness: readinessProbe(db, client, () => workers.isRunning()),
    };
    const server = await listen(deps, 0, '127.0.0.1');
    const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    return { server, baseUrl };
  };

  const workers = await runWorkers(config, options.workerQueues);
  const { server, baseUrl } = await serve(config, workers);
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const http: Harness['http'] = async (method, urlPath, options = {}) => {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.apiKey) headers['x-api-key'] = options.apiKey;
    let body: string | undefined = options.raw;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(/^https?:/.test(urlPath) ? urlPath : `${baseUrl}${urlPath}`, {
      method,
      headers,
      body,
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: response.status, body: parsed as any, headers: response.headers };
  };

  const self: Harness = {
    config,
    env,
    db,
    client,
    temporalAddress: dev.address,
    temporalServerPid: dev.process.pid,
    temporalMetricsUrl: dev.metricsUrl,
    databaseUrl,
    baseUrl,
    llm,
    site,
    captchaSolver,
    proxy,
    forum,
    microblog,
    dns,
    workflowBundle,
    http,
    async createUser(options = {}) {
      const response = await http('POST', '/admin/users', {
        headers: { authorization: `Bearer ${config.adminToken}` },
        body: {
          email: options.email ?? `user-${randomBytes(6).toString('hex')}@example.com`,
          creditUsd: options.creditUsd ?? 10,
          ...(options.monthlyOperationLimit !== undefined && { monthlyOperationLimit: options.monthlyOperationLimit }),
        },
      });
      if (response.status !== 201)
        throw new Error(`createUser failed: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body;
    },
    async waitForJob(
      apiKey,
      statusPath,
      until = (job) => job.status === 'completed' || job.status === 'failed',
      timeoutMs = 90_000,
    ) {
      const deadline = Date.now() + timeoutMs;
      let last: any;
      while (Date.now() < deadline) {
        const response = await http('GET', statusPath, { apiKey });
        if (response.status !== 200)
          throw new Error(`GET ${statusPath} answered ${response.status}: ${JSON.stringify(response.body)}`);
        last = response.body;
        if (response.status === 200 && until(last)) return last;
        await new Promise((r) => setTimeout(r, 150));
      }
      throw new Error(
        `job did not reach the expected state in ${timeoutMs}ms; last: ${JSON.stringify(last)?.slice(0, 2000)}`,
      );
    },
    async startIsolatedStack({ taskQueues, overrides = {}, queues = ['platform', 'browser'] }) {
      const isolated: Config = { ...config, ...overrides, taskQueues };
      const set = queues.length
        ? await runWorkers(isolated, queues)
        : { isRunning: () => true, run: async () => {}, shutdown: async () => {} };
      const { server: s, baseUrl: url } = await serve(isolated, set);
      const stop = once(async () => {
        await new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        });
        await set.shutdown();
      });
      cleanups.push(stop);
      return { baseUrl: url, config: isolated, stop };
    },
  };
  return self;
}
