import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import type { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { useHarness, type Harness } from '../support/stack/harness';
import { startTcpProxy, type TcpProxy } from '../support/fakes/tcp-proxy';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fakes/fake-openai';
import { freePort } from '../support/stack/ports';
import { parsePrometheus } from '../support/prometheus';
import { act } from '../support/agent-script';
import { loadConfig, type Config } from '../../lib/config';
import { openDatabase, type Db } from '../../db/connect';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { socialPlatformsFromConfig } from '../../lib/social/platforms';
import { connectClient } from '../../lib/temporal/client';
import { startTemporalDevServer, type DevServer } from '../../workers/temporal-cli';
import { listen } from '../../api/server';
import { readinessProbe } from '../../api/readiness';
import { createWorkers, type WorkerSet } from '../../workers/worker-set';

/**
 * Faults under load: 50 scrape jobs (and a few browser-agent jobs) in flight while (a) Postgres is unreachable for 10 s (a TCP
 * proxy in front of it drops every connection and refuses new ones) and (b) the Temporal server
 * restarts. The API and the workers of this suite talk to Postgres through the proxy and to their
 * own Temporal dev server (SQLite file, fixed port, so its state survives the restart); the checks
 * read the database directly. Afterwards every job is terminal, ran as exactly one workflow run,
 * has at most one page snapshot and exactly one usage settlement, and was debited exactly once, for
 * the usage the same request records when it runs again without a fault (browser time aside, which
 * is priced by the second): usage lost or counted twice in an outage cannot pass.
 */
const JOBS = 50;
const AGENT_JOBS = 3;
const OUTAGE_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('faults under load', function () {
  this.timeout(900_000);

  let h: Harness;
  let proxy: TcpProxy;
  let llm: FakeOpenAI;
  /** The agents' model, reached as the `router` provider with the account's own key. */
  let agentLlm: FakeOpenAI;
  let temporal: DevServer;
  let temporalPort: number;
  let dataDir: string;
  let config: Config;
  let db: Db;
  let client: Client;
  let connection: NativeConnection;
  let workers: WorkerSet;
  let server: Server;
  let baseUrl: string;
  let user: { userId: string; apiKey: string };
  /** What started each job (path and body), so the same job can run again without a fault. */
  const requests = new Map<string, { path: string; body: unknown }>();

  const startTemporal = () =>
    startTemporalDevServer({ port: temporalPort, uiPort: null, dbFile: path.join(dataDir, 'temporal.db') });

  before(async function () {
    this.timeout(240_000);
    h = await useHarness();
    const direct = new URL(h.databaseUrl);
    proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    const proxied = new URL(h.databaseUrl);
    proxied.host = proxy.address;
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'faults-'));
    temporalPort = await freePort();
    temporal = await startTemporal();
    // Extraction takes a few seconds, so the jobs are still in flight when the fault comes.
    llm = await startFakeOpenAI({ latencyMs: 4_000 });
    agentLlm = await startFakeOpenAI({ latencyMs: 4_000 });
    agentLlm.setDefault(act('done', { success: true, answer: 'nothing else to do' }, 'Finish'));
    config = loadConfig({
      ...h.env,
      DATABASE_URL: proxied.toString(),
      TEMPORAL_ADDRESS: temporal.address,
      OPENAI_BASE_URL: llm.baseURL,
      ROUTER_BASE_URL: agentLlm.baseURL,
    });
    const policy = parseNetworkAllowlist(config.networkAllowlist);
    db = await openDatabase({ ...config, poolSize: 10 });
    client = await connectClient(temporal.address, config.temporalNamespace);
    connection = await NativeConnection.connect({ address: temporal.address });
    workers = await createWorkers({
      db,
      config,
      policy,
      connection,
      namespace: config.temporalNamespace,
      workflowBundle: h.workflowBundle,
    });
    void workers.run().catch(() => undefined);
    server = await listen(
      {
        db,
        temporal: client,
        config,
        policy,
        social: socialPlatformsFromConfig(config),
        readiness: readinessProbe(db, client, () => workers.isRunning()),
      },
      0,
      '127.0.0.1',
    );
    baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    user = await h.createUser({ creditUsd: 100, monthlyOperationLimit: 10_000 });
    const routerKey = await h.http('PUT', `/admin/users/${user.userId}/router-key`, {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { routerApiKey: 'sk-router-faults-0123456789' },
    });
    assert.equal(routerKey.status, 200, JSON.stringify(routerKey.body));
  });

  after(async function () {
    this.timeout(120_000);
    await proxy?.start();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await workers?.shutdown().catch(() => undefined);
    await connection?.close().catch(() => undefined);
    await client?.connection.close().catch(() => undefined);
    await db?.destroy().catch(() => undefined);
    await temporal?.stop();
    await proxy?.close();
    await llm?.close();
    await agentLlm?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function api(method: string, urlPath: string, body?: unknown) {
    const response = await fetch(`${baseUrl}${urlPath}`, {
      method,
      headers: { 'x-api-key': user.apiKey, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json().catch(() => null) };
  }

  async function startScrapes(count: number, label: string): Promise<string[]> {
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const body = { url: `${h.site.url}/static?fault=${label}-${i}` };
        const accepted = await api('POST', '/api/v1/scrape', body);
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        ids.push(accepted.body.jobId);
        requests.set(accepted.body.jobId, { path: '/api/v1/scrape', body });
      }),
    );
    return ids;
  }

  async function startAgents(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const body = { task: `Say done (${i})`, headless: true, llm_provider: 'router' };
      const accepted = await api('POST', '/api/v1/agentscraper', body);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      ids.push(accepted.body.jobId);
      requests.set(accepted.body.jobId, { path: '/api/v1/agentscraper', body });
    }
    return ids;
  }

  /** Job states read straight from Postgres (not through the proxy). */
  async function states(ids: string[]) {
    const rows = await h.db.selectFrom('jobs').select(['id', 'status', 'error']).where('id', 'in', ids).execute();
    const count = (...statuses: string[]) => rows.filter((r) => statuses.includes(r.status)).length;
    return {
      rows,
      inFlight: count('pending', 'processing'),
      processing: count('processing'),
      terminal: count('completed', 'failed'),
    };
  }

  /** Waits until at least `processing` of the jobs run and none has finished yet (the fault must hit jobs in flight). */
  /**
   * Waits until at least `processing` of the jobs are being processed, so the fault hits that many in
   * flight. A few may already have finished on a machine that starts them slowly (each takes the fake
   * LLM's latency); the fault must still find `processing` of them running.
   */
  async function waitInFlight(ids: string[], processing: number) {
    for (;;) {
      const now = await states(ids);
      if (now.processing >= processing) return now;
      assert.ok(
        ids.length - now.terminal >= processing,
        `${now.terminal} jobs finished before ${processing} were in flight; the extraction latency is too short for this machine`,
      );
      await sleep(100);
    }
  }

  async function waitTerminal(ids: string[], timeoutMs = 300_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = await states(ids);
      if (now.terminal === ids.length) return now.rows;
      if (Date.now() > deadline) {
        assert.fail(
          `${now.inFlight} of ${ids.length} jobs never reached a terminal state: ${JSON.stringify(now.rows.filter((r) => r.status === 'pending' || r.status === 'processing').slice(0, 5))}`,
        );
      }
      await sleep(500);
    }
  }

  /** Browser time is priced by the second: the one usage whose cost depends on how long a run took. */
  const TIME_METERED = 'browser';

  /** Per job: its usage debit (micro-USD, negative), the cost of its usage other than browser time, and its kinds of usage. */
  async function usageOf(ids: string[]) {
    const debits = await h.db
      .selectFrom('ledger_entries')
      .select(['job_id', 'amount_micros'])
      .where('job_id', 'in', ids)
      .where('kind', '=', 'usage')
      .execute();
    const usage = await h.db
      .selectFrom('job_usage')
      .select(['job_id', 'kind', 'cost_micros'])
      .where('job_id', 'in', ids)
      .execute();
    return new Map(
      ids.map((id) => {
        const rows = usage.filter((u) => u.job_id === id);
        return [
          id,
          {
            debits: debits.filter((d) => d.job_id === id).map((d) => Number(d.amount_micros)),
            untimedMicros: rows
              .filter((u) => u.kind !== TIME_METERED)
              .reduce((sum, u) => sum + Number(u.cost_micros), 0),
            kinds: [...new Set(rows.map((u) => u.kind))].sort(),
          },
        ];
      }),
    );
  }

  /**
   * A request's shape: its path and body with every digit made 0, so the jobs of one batch that differ
   * only by their index (`?fault=pg-7`, `Say done (2)`) share one, while a longer index (`pg-17`) is another
   * shape, as it makes another length of URL or prompt (the fake model counts tokens by characters).
   */
  const shapeOf = (request: { path: string; body: unknown }) =>
    `${request.path} ${JSON.stringify(request.body).replace(/\d/g, '0')}`;

  /**
   * Runs one request of each shape among the jobs again, now without a fault: what a job of that shape
   * records when nothing goes wrong, to compare each job's usage and debit with. One twin per shape gives
   * the guarantee a twin per job gave (the usage of a fault-free run depends on its request alone), in a
   * few runs instead of one per job.
   */
  async function faultFreeUsage(ids: string[]) {
    const shapes = new Map<string, { path: string; body: unknown }>();
    const shapeOfJob = new Map<string, string>();
    for (const id of ids) {
      const request = requests.get(id);
      assert.ok(request, `job ${id} was not started by this suite`);
      const shape = shapeOf(request);
      shapeOfJob.set(id, shape);
      if (!shapes.has(shape)) shapes.set(shape, request);
    }
    const twins = await Promise.all(
      [...shapes].map(async ([shape, request]) => {
        const accepted = await api('POST', request.path, request.body);
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        return [shape, accepted.body.jobId as string] as const;
      }),
    );
    const twinIds = twins.map(([, twin]) => twin);
    const rows = await waitTerminal(twinIds);
    assert.deepEqual(
      rows.filter((r) => r.status !== 'completed'),
      [],
      'a fault-free run of the same request did not complete',
    );
    const usage = await usageOf(twinIds);
    const byShape = new Map(
      twins.map(([shape, twinId]) => {
        const twin = usage.get(twinId)!;
        assert.equal(twin.debits.length, 1, `the fault-free run of ${shape} was debited ${twin.debits.length} times`);
        assert.ok(twin.debits[0] < 0, `the fault-free run of ${shape} cost nothing`);
        return [shape, twin];
      }),
    );
    // Every job is compared with the twin of its own shape.
    return new Map(ids.map((id) => [id, byShape.get(shapeOfJob.get(id)!)!]));
  }

  /**
   * Each job's usage is what a fault-free run of the same job records: the same kinds of usage and
   * the same cost for all but browser time (which is priced by the second, and an outage makes a
   * run last longer); a job without browser time is debited exactly the fault-free debit.
   */
  async function assertChargedAsWithoutFault(jobs: { id: string; kind: string }[]) {
    const ids = jobs.map((job) => job.id);
    const [actual, expected] = [await usageOf(ids), await faultFreeUsage(ids)];
    for (const job of jobs) {
      const got = actual.get(job.id)!;
      const want = expected.get(job.id)!;
      const label = `${job.kind} job ${job.id}`;
      assert.deepEqual(got.kinds, want.kinds, `${label} recorded other kinds of usage than without a fault`);
      assert.equal(
        got.untimedMicros,
        want.untimedMicros,
        `${label} recorded ${got.untimedMicros} micro-USD of usage besides browser time; without a fault ${want.untimedMicros}`,
      );
      if (!want.kinds.includes(TIME_METERED))
        assert.deepEqual(got.debits, want.debits, `${label} was not debited what the same job costs without a fault`);
    }
  }

  /**
   * Exactly one workflow run, at most one page snapshot (one per completed scrape), one settlement and
   * one debit per job, and the usage a fault-free run of the same job records (assertChargedAsWithoutFault).
   */
  async function assertRanAndChargedOnce(ids: string[]) {
    const jobs = await h.db
      .selectFrom('jobs')
      .select(['id', 'kind', 'workflow_id', 'status', 'error'])
      .where('id', 'in', ids)
      .execute();
    for (const job of jobs) {
      // The row turns terminal a moment before the workflow returns: wait for the run itself.
      const handle = client.workflow.getHandle(job.workflow_id);
      await handle.result();
      const run = await handle.describe();
      assert.equal(run.status.name, 'COMPLETED', `job ${job.id}: workflow ${run.status.name}`);
      assert.equal(
        run.raw.workflowExecutionInfo?.firstRunId,
        run.runId,
        `job ${job.id} ran as more than one workflow run`,
      );
    }
    const perJob = async (table: 'page_snapshots' | 'agent_transactions', extra?: (qb: any) => any) => {
      let query = h.db
        .selectFrom(table)
        .select(['job_id', sql<number>`cast(count(*) as int)`.as('n')])
        .where('job_id', 'in', ids)
        .groupBy('job_id');
      if (extra) query = extra(query);
      return new Map((await query.execute()).map((r: { job_id: string | null; n: number }) => [r.job_id, r.n]));
    };
    const snapshots = await perJob('page_snapshots');
    const settlements = await perJob('agent_transactions');
    const usage = new Map(
      (
        await h.db
          .selectFrom('job_usage')
          .select([
            'job_id',
            sql<number>`cast(sum(cost_micros) as bigint)`.as('micros'),
            sql<number>`cast(count(*) as int)`.as('n'),
            sql<number>`cast(count(distinct usage_key) as int)`.as('keys'),
          ])
          .where('job_id', 'in', ids)
          .groupBy('job_id')
          .execute()
      ).map((r) => [r.job_id, r]),
    );
    const debits = await h.db
      .selectFrom('ledger_entries')
      .select(['job_id', 'amount_micros'])
      .where('job_id', 'in', ids)
      .where('kind', '=', 'usage')
      .execute();
    for (const job of jobs) {
      assert.ok((snapshots.get(job.id) ?? 0) <= 1, `job ${job.id} has ${snapshots.get(job.id)} page snapshots`);
      if (job.kind === 'scrape' && job.status === 'completed')
        assert.equal(snapshots.get(job.id), 1, `completed scrape ${job.id} has no page snapshot`);
      assert.equal(settlements.get(job.id), 1, `job ${job.id} was settled ${settlements.get(job.id) ?? 0} times`);
      const used = usage.get(job.id);
      assert.equal(used?.n ?? 0, used?.keys ?? 0, `job ${job.id} recorded one usage twice`);
      const jobDebits = debits.filter((d) => d.job_id === job.id);
      const cost = used?.micros ?? 0;
      assert.equal(
        jobDebits.length,
        cost > 0 ? 1 : 0,
        `job ${job.id} has ${jobDebits.length} debits for ${cost} micro-USD of usage`,
      );
      if (cost > 0)
        assert.equal(
          jobDebits[0].amount_micros,
          -cost,
          `job ${job.id} was debited ${-jobDebits[0].amount_micros} for ${cost} of usage`,
        );
    }
    const wallet = await h.db
      .selectFrom('wallets')
      .select('balance_micros')
      .where('user_id', '=', user.userId)
      .executeTakeFirstOrThrow();
    const ledger = await h.db
      .selectFrom('ledger_entries')
      .select(sql<number>`cast(sum(amount_micros) as bigint)`.as('sum'))
      .where('user_id', '=', user.userId)
      .executeTakeFirstOrThrow();
    assert.equal(wallet.balance_micros, ledger.sum, 'the wallet balance differs from the sum of its ledger entries');
    await assertChargedAsWithoutFault(jobs);
  }

  it(`finishes ${JOBS} scrape and ${AGENT_JOBS} agent jobs in flight exactly once through a ${OUTAGE_MS / 1000} s Postgres outage`, async function () {
    const ids = [...(await startAgents(AGENT_JOBS)), ...(await startScrapes(JOBS, 'pg'))];
    const atFault = await waitInFlight(ids, JOBS / 2);
    const acceptedBefore = proxy.accepted();
    await proxy.stop();
    const health = await fetch(`${baseUrl}/health`);
    assert.equal(health.status, 503, 'the API reports healthy while Postgres is unreachable');
    assert.equal((await health.json()).checks.database, false);
    const refused = await fetch(`${baseUrl}/api/v1/scrape`, {
      method: 'POST',
      headers: { 'x-api-key': user.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${h.site.url}/static` }),
    });
    assert.equal(refused.status, 503, 'a request during the outage is not answered 503');
    assert.equal(refused.headers.get('retry-after'), '5');
    assert.equal((await refused.json()).error.code, 'service_unavailable');
    const metrics = parsePrometheus(
      await (await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${config.adminToken}` } })).text(),
    );
    assert.equal(metrics.value('platform_state_up'), 0, 'metrics claim to have read the database during the outage');
    assert.deepEqual(metrics.find('platform_jobs'), [], 'job counts were reported without the database');
    await sleep(OUTAGE_MS);
    await proxy.start();

    const rows = await waitTerminal(ids);
    assert.ok(proxy.accepted() > acceptedBefore, 'nothing reconnected to Postgres after the outage');
    assert.equal(workers.isRunning(), true, 'the workers stopped');
    const failed = rows.filter((r) => r.status !== 'completed').map((r) => ({ ...r, path: requests.get(r.id)?.path }));
    assert.deepEqual(
      failed,
      [],
      `jobs failed because of a ${OUTAGE_MS / 1000} s outage (${atFault.processing} were processing at the fault)`,
    );
    await assertRanAndChargedOnce(ids);
    assert.equal((await fetch(`${baseUrl}/health`)).status, 200, 'the API is not healthy again after the outage');
  });

  it(`finishes ${JOBS} jobs in flight exactly once across a Temporal server restart`, async function () {
    const ids = await startScrapes(JOBS, 'temporal');
    await waitInFlight(ids, JOBS / 2);
    await temporal.stop();
    await sleep(3_000);
    temporal = await startTemporal();

    const rows = await waitTerminal(ids);
    assert.equal(workers.isRunning(), true, 'the workers stopped');
    assert.deepEqual(
      rows.filter((r) => r.status !== 'completed'),
      [],
      'jobs failed because Temporal restarted',
    );
    await assertRanAndChargedOnce(ids);
    const accepted = await api('POST', '/api/v1/scrape', { url: `${h.site.url}/static?fault=after-restart` });
    assert.equal(accepted.status, 202, `the API cannot start jobs after the restart: ${JSON.stringify(accepted.body)}`);
    await waitTerminal([accepted.body.jobId]);
  });
});
