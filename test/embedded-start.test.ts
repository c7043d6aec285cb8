import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI, type FakeOpenAI } from './support/fake-openai';
import { startFixtureSite, type FixtureSite } from './support/fixture-site';
import { freePort } from './support/ports';
import { oneJsonLine, runAdmin } from './support/admin-cli';
import { parsePrometheus } from './support/prometheus';

/**
 * Smoke test of the embedded `npm start` path: the real command, in its own process group, with
 * PGlite and the Temporal dev server under a fresh DATA_DIR. It does not use the shared harness.
 */

const ROOT = path.resolve(__dirname, '..');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const API_KEY = /^sk_live_[A-Za-z0-9_-]{32}$/;

type Env = Record<string, string>;

/** process.env without the variables that would select external Postgres/Temporal or another admin URL. */
function embeddedEnv(extra: Env): Env {
  const env: Env = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !['DATABASE_URL', 'TEMPORAL_ADDRESS', 'ADMIN_URL'].includes(name)) env[name] = value;
  }
  return { ...env, ...extra };
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('npm start (embedded PGlite + Temporal dev server)', function () {
  this.timeout(240_000);

  let llm: FakeOpenAI;
  let site: FixtureSite;
  let dataDir: string;
  let env: Env;
  let baseUrl: string;
  let child: ChildProcess | null = null;
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  let output = '';
  const killGroup = () => {
    if (child?.pid && groupAlive(child.pid)) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  };

  // Shared between the ordered steps below.
  let user: { userId: string; apiKey: string } | null = null;

  before(async function () {
    [llm, site] = await Promise.all([startFakeOpenAI(), startFixtureSite()]);
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'embedded-start-'));
    const [port, temporalPort, uiPort] = await distinctFreePorts(3);
    baseUrl = `http://127.0.0.1:${port}`;
    env = embeddedEnv({
      DATA_DIR: dataDir,
      PORT: String(port),
      TEMPORAL_DEV_PORT: String(temporalPort),
      TEMPORAL_UI_PORT: String(uiPort),
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'sk-embedded-smoke-test',
      NETWORK_ALLOWLIST: '127.0.0.1',
    });
    child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
    child.stderr!.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
    exited = new Promise((resolve) => child!.once('exit', (code, signal) => resolve({ code, signal })));
    // Never leave the process group behind, even if mocha exits abruptly.
    process.once('exit', killGroup);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') console.error(`--- npm start output (tail) ---\n${output.slice(-6000)}\n---`);
  });

  after(async function () {
    killGroup();
    process.removeListener('exit', killGroup);
    // before() may have failed before these existed.
    await Promise.all([(llm as FakeOpenAI | undefined)?.close(), (site as FixtureSite | undefined)?.close()]);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function http(method: string, urlPath: string, options: { apiKey?: string; body?: unknown } = {}) {
    const headers: Record<string, string> = {};
    if (options.apiKey) headers['x-api-key'] = options.apiKey;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${baseUrl}${urlPath}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await response.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: response.status, body, contentType: response.headers.get('content-type') ?? '' };
  }

  it('answers /health with 503 or a refused connection, then 200 once database, Temporal and workers are up', async function () {
    const deadline = Date.now() + 150_000;
    const seen: string[] = [];
    for (;;) {
      assert.ok(Date.now() < deadline, `not healthy within 150s; saw ${[...new Set(seen)].join(', ')}`);
      if (child!.exitCode !== null || child!.signalCode !== null) assert.fail(`npm start exited early (${child!.exitCode ?? child!.signalCode})`);
      let status: number;
      let body: any;
      try {
        const response = await fetch(`${baseUrl}/health`);
        status = response.status;
        body = await response.json();
      } catch (err) {
        const code = (err as { cause?: { code?: string } }).cause?.code;
        assert.equal(code, 'ECONNREFUSED', `unexpected /health failure: ${String(err)}`);
        seen.push('ECONNREFUSED');
        await sleep(250);
        continue;
      }
      if (status === 200) {
        assert.deepEqual(body, { status: 'ok', checks: { database: true, temporal: true, workers: true } });
        break;
      }
      assert.equal(status, 503, `unexpected /health status ${status}: ${JSON.stringify(body)}`);
      assert.equal(body.status, 'starting');
      seen.push('503');
      await sleep(250);
    }
    assert.ok(seen.length > 0, '/health was never observed before it became ready');
  });

  it('keeps PGlite and the Temporal SQLite file under DATA_DIR', function () {
    assert.ok(statSync(path.join(dataDir, 'pglite')).isDirectory(), 'DATA_DIR/pglite is missing');
    assert.ok(existsSync(path.join(dataDir, 'pglite', 'PG_VERSION')), 'DATA_DIR/pglite is not a Postgres data directory');
    assert.ok(statSync(path.join(dataDir, 'temporal.db')).isFile(), 'DATA_DIR/temporal.db is missing');
    assert.ok(existsSync(path.join(dataDir, 'admin-token')), 'DATA_DIR/admin-token is missing');
    assert.ok(existsSync(path.join(dataDir, 'master.key')), 'DATA_DIR/master.key is missing');
  });

  it('serves the API docs and the OpenAPI document', async function () {
    const docs = await http('GET', '/api/v1/docs');
    assert.equal(docs.status, 200);
    assert.match(docs.contentType, /^text\/html/);
    assert.match(docs.body, /<html/i);
    const spec = await http('GET', '/api/v1/openapi.json');
    assert.equal(spec.status, 200);
    assert.equal(spec.body.openapi, '3.1.0');
  });

  it('creates a user through the admin CLI: one JSON line with userId and apiKey', async function () {
    const created = oneJsonLine(await runAdmin(['create-user', '--email', 'smoke@example.com', '--credit-usd', '5'], env));
    assert.deepEqual(Object.keys(created).sort(), ['apiKey', 'userId']);
    assert.match(created.userId, UUID);
    assert.match(created.apiKey, API_KEY);
    user = created;
    const logs = await http('GET', '/api/v1/logs', { apiKey: user!.apiKey });
    assert.equal(logs.status, 200, JSON.stringify(logs.body));
  });

  it('credits the wallet and sets limits through the CLI', async function () {
    assert.ok(user, 'needs the user from the previous step');
    const credited = oneJsonLine(await runAdmin(['credit', '--user', user.userId, '--usd', '2.5'], env));
    assert.deepEqual(credited, { userId: user.userId, balanceUsd: 7.5, replayed: false });
    const limited = oneJsonLine(await runAdmin(['set-limits', '--user', user.userId, '--monthly-operation-limit', '5'], env));
    assert.equal(limited.userId, user.userId);
    assert.equal(limited.status, 'active');
    assert.equal(limited.monthlyOperationLimit, 5);
  });

  it('scrapes a fixture page end to end with the new key', async function () {
    assert.ok(user, 'needs the user from the previous step');
    const accepted = await http('POST', '/api/v1/scrape', { apiKey: user.apiKey, body: { url: `${site.url}/static` } });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.match(accepted.body.jobId, UUID);
    const deadline = Date.now() + 90_000;
    let job: any;
    for (;;) {
      const status = await http('GET', `/api/v1/scrape/status/${accepted.body.jobId}`, { apiKey: user.apiKey });
      assert.equal(status.status, 200, JSON.stringify(status.body));
      job = status.body;
      if (job.status === 'completed' || job.status === 'failed') break;
      assert.ok(Date.now() < deadline, `job not finished in 90s: ${JSON.stringify(job).slice(0, 2000)}`);
      await sleep(250);
    }
    assert.equal(job.status, 'completed', job.error);
    assert.ok(job.result.markdown.includes('Field Guide to Urban Beekeeping'), job.result.markdown.slice(0, 500));
    assert.ok(site.hits('/static') >= 1);
    assert.ok(llm.requests.some((r) => r.kind === 'chat'), 'the extraction did not reach the fake OpenAI server');
  });

  it('rotates the key through the CLI: the old key is refused, the new one works', async function () {
    assert.ok(user, 'needs the user from the previous step');
    const rotated = oneJsonLine(await runAdmin(['rotate-key', '--user', user.userId], env));
    assert.deepEqual(Object.keys(rotated).sort(), ['apiKey', 'userId']);
    assert.equal(rotated.userId, user.userId);
    assert.match(rotated.apiKey, API_KEY);
    assert.notEqual(rotated.apiKey, user.apiKey);
    assert.equal((await http('GET', '/api/v1/logs', { apiKey: user.apiKey })).status, 401);
    assert.equal((await http('GET', '/api/v1/logs', { apiKey: rotated.apiKey })).status, 200);
    user = rotated;
  });

  it('deactivates the user through the CLI: new scrapes get 403', async function () {
    assert.ok(user, 'needs the user from the previous step');
    const deactivated = oneJsonLine(await runAdmin(['deactivate', '--user', user.userId], env));
    assert.equal(deactivated.userId, user.userId);
    assert.equal(deactivated.status, 'inactive');
    const refused = await http('POST', '/api/v1/scrape', { apiKey: user.apiKey, body: { url: `${site.url}/static` } });
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'subscription_inactive');
  });

  it('serves GET /metrics from PGlite to the admin token only', async function () {
    const adminToken = readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
    assert.equal((await fetch(`${baseUrl}/metrics`)).status, 401);
    const response = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
    assert.equal(response.status, 200);
    const metrics = parsePrometheus(await response.text());
    assert.equal(metrics.value('platform_state_up'), 1);
    assert.ok(metrics.value('platform_jobs', { kind: 'scrape', state: 'completed' }) >= 1);
    assert.ok(metrics.value('platform_job_duration_seconds_count', { kind: 'scrape', status: 'completed' }) >= 1);
    assert.ok(metrics.value('platform_debits_total') >= 1);
  });

  it('logs human-readable lines, not JSON, with an access line per request', function () {
    assert.match(output, /INFO: GET \/api\/v1\/logs 200 \{"requestId":"[^"]+","method":"GET","route":"\/api\/v1\/logs","status":200/);
    assert.ok(!/^\{"level"/m.test(output), 'npm start wrote JSON log lines');
  });

  it('stops the whole process group on SIGTERM within 20s, closing PGlite cleanly', async function () {
    assert.ok(child?.pid);
    const pgid = child.pid;
    const deadline = Date.now() + 20_000;
    process.kill(-pgid, 'SIGTERM');
    const result = await Promise.race([exited, sleep(20_000).then(() => null)]);
    assert.ok(result, 'npm start did not exit within 20s of SIGTERM');
    assert.ok(result.code === 0 || result.code === 143 || result.signal === 'SIGTERM', `unexpected exit: ${JSON.stringify(result)}`);
    // npm itself exits at once; what matters is that nothing of the group (tsx, the service, the
    // Temporal dev server) outlives the deadline.
    while (groupAlive(pgid) && Date.now() < deadline) await sleep(100);
    assert.ok(!groupAlive(pgid), 'processes of the group are still running 20s after SIGTERM');
    // A clean stop closes PGlite, which writes a shutdown checkpoint: pg_control's state field
    // (uint32 at offset 16) is 1 (DB_SHUTDOWNED), not 6 (DB_IN_PRODUCTION, i.e. killed mid-flight).
    const control = readFileSync(path.join(dataDir, 'pglite', 'global', 'pg_control'));
    assert.equal(control.readUInt32LE(16), 1, 'PGlite was not shut down cleanly (the service did not finish its stop sequence)');
  });
});

describe('admin CLI without a running service', function () {
  this.timeout(60_000);
  let dataDir: string;

  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'admin-cli-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('prints a clear error to stderr and exits non-zero when the service is unreachable', async function () {
    const closedPort = await freePort();
    const env = embeddedEnv({ DATA_DIR: dataDir, ADMIN_URL: `http://127.0.0.1:${closedPort}` });
    const result = await runAdmin(['create-user', '--email', 'nobody@example.com'], env);
    assert.notEqual(result.code, 0);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, new RegExp(`cannot reach the service at http://127\\.0\\.0\\.1:${closedPort}`));
  });

  it('exits 2 with the usage text for an unknown command', async function () {
    const result = await runAdmin(['frobnicate'], embeddedEnv({ DATA_DIR: dataDir }));
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /unknown command "frobnicate"/);
    assert.match(result.stderr, /usage: npm run --silent admin -- <command>/);
    assert.match(result.stderr, /create-user --email E/);
  });
});

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
