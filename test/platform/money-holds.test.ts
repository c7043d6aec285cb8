import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { useHarness, type Harness } from '../support/stack/harness';
import { act } from '../support/agent-script';
import { findLedgerProblems } from '../support/ledger-reconciliation';
import type { Config } from '../../lib/config';
import type { ApiDeps } from '../../api/deps';
import { listen } from '../../api/server';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { socialPlatformsFromConfig } from '../../lib/social/platforms';
import { createWorkers } from '../../workers/worker-set';
import { abandonJob, admitJob, billingPeriod, transitionJob, type JobRequest } from '../../db/repos/jobs';
import { assertHoldCovers, HoldExhaustedError, holdStatus, recordUsage } from '../../db/repos/job-usage';
import { chargeUsage, getWalletSummary } from '../../db/repos/ledger';
import type { ScrapeWorkflowInput } from '../../workflows/scrape';
import { parseBody } from '../../api/validation';
import { ScrapeRequest } from '../../lib/schemas/scrape';

/** An API (and, when asked, workers) of its own over the harness's database and Temporal, stopped by the test. */
async function startOwnStack(
  h: Harness,
  options: {
    taskQueues?: Config['taskQueues'];
    overrides?: Partial<Config>;
    workers?: boolean;
    temporal?: Client;
  } = {},
) {
  const config: Config = { ...h.config, ...options.overrides, taskQueues: options.taskQueues ?? h.config.taskQueues };
  const policy = parseNetworkAllowlist(config.networkAllowlist);
  const connection = options.workers ? await NativeConnection.connect({ address: h.temporalAddress }) : null;
  const workers = connection
    ? await createWorkers({
        db: h.db,
        config,
        policy,
        connection,
        namespace: config.temporalNamespace,
        workflowBundle: h.workflowBundle,
      })
    : null;
  const running = workers?.run();
  const deps: ApiDeps = {
    db: h.db,
    temporal: options.temporal ?? h.client,
    config,
    policy,
    social: socialPlatformsFromConfig(config),
    readiness: async () => ({ database: true, temporal: true, workers: true }),
  };
  const server = await listen(deps, 0, '127.0.0.1');
  return {
    config,
    deps,
    baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    async stop() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await workers?.shutdown();
      await running;
      await connection?.close();
    },
  };
}

describe('money: holds, settlement and the ledger', function () {
  let h: Harness;
  const admin = () => ({ authorization: `Bearer ${h.config.adminToken}` });

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  const request = (userId: string, holdMaxMicros: number, extra: Partial<JobRequest> = {}): JobRequest => ({
    userId,
    kind: 'scrape',
    request: { url: 'https://example.com/' },
    webhookUrl: null,
    idempotencyKey: null,
    holdMaxMicros,
    ...extra,
  });

  async function admitted(userId: string, holdMaxMicros: number, extra: Partial<JobRequest> = {}) {
    const admission = await admitJob(h.db, request(userId, holdMaxMicros, extra));
    assert.equal(admission.outcome, 'created');
    return admission as Extract<typeof admission, { outcome: 'created' }>;
  }

  async function openHolds(userId: string) {
    return h.db
      .selectFrom('job_holds')
      .selectAll()
      .where('user_id', '=', userId)
      .where('released_at', 'is', null)
      .execute();
  }

  describe('hold arithmetic (db/repos on Postgres)', function () {
    it('reserves up to the per-kind maximum, never more than the available balance, and refuses at zero', async function () {
      const { userId } = await h.createUser({ creditUsd: 0.1 });
      const first = await admitted(userId, 40_000);
      const second = await admitted(userId, 40_000);
      const third = await admitted(userId, 40_000);
      assert.deepEqual([first.holdMicros, second.holdMicros, third.holdMicros], [40_000, 40_000, 20_000]);
      assert.equal((await admitJob(h.db, request(userId, 40_000))).outcome, 'insufficient_funds');
      assert.deepEqual(await getWalletSummary(h.db, userId), {
        balanceMicros: 100_000,
        heldMicros: 100_000,
        availableMicros: 0,
      });

      // Settling one job debits its cost and gives the rest of its hold back to the available balance.
      await recordUsage(h.db, {
        jobId: first.job.id,
        usageKey: `${first.job.id}:a`,
        kind: 'browser',
        quantity: 1,
        costMicros: 7_000,
      });
      const charged = await chargeUsage(h.db, {
        userId,
        jobId: first.job.id,
        agentName: 'scrape',
        result: 'completed',
        payload: {},
        costMicros: 7_000,
        idempotencyKey: `usage:${first.job.id}`,
      });
      assert.deepEqual([charged.debitedMicros, charged.unbilledMicros, charged.balanceMicros], [7_000, 0, 93_000]);
      assert.deepEqual(await getWalletSummary(h.db, userId), {
        balanceMicros: 93_000,
        heldMicros: 60_000,
        availableMicros: 33_000,
      });
      const fourth = await admitted(userId, 40_000);
      assert.equal(fourth.holdMicros, 33_000);

      for (const job of [first, second, third, fourth].map((a) => a.job)) await abandonJob(h.db, job, 'test cleanup');
      assert.equal((await openHolds(userId)).length, 0);
    });

    it('never reserves more than the balance under 30 concurrent admissions', async function () {
      const { userId } = await h.createUser({ creditUsd: 0.1, monthlyOperationLimit: 1000 });
      const outcomes = await Promise.all(Array.from({ length: 30 }, () => admitJob(h.db, request(userId, 7_000))));
      const created = outcomes.filter((o) => o.outcome === 'created');
      assert.equal(created.length, 15, outcomes.map((o) => o.outcome).join(','));
      assert.equal(outcomes.filter((o) => o.outcome === 'insufficient_funds').length, 15);
      const holds = await openHolds(userId);
      assert.equal(
        holds.reduce((sum, hold) => sum + hold.amount_micros, 0),
        100_000,
      );
      assert.deepEqual(
        holds.map((hold) => hold.amount_micros).sort((a, b) => a - b),
        [2_000, ...Array(14).fill(7_000)],
      );
      for (const o of created) await abandonJob(h.db, o.job, 'test cleanup');
    });

    it('checks every usage record against the hold, and settles an overrun at the hold with the rest unbilled', async function () {
      const { userId } = await h.createUser({ creditUsd: 0.05 });
      const { job } = await admitted(userId, 10_000);
      await recordUsage(h.db, {
        jobId: job.id,
        usageKey: `${job.id}:1`,
        kind: 'llm',
        model: 'gpt-4o-mini',
        costMicros: 6_000,
      });
      await assert.rejects(
        assertHoldCovers(h.db, job.id, 4_001),
        (err: Error) => err instanceof HoldExhaustedError && /wallet cannot pay/.test(err.message),
      );
      await assertHoldCovers(h.db, job.id, 4_000);
      await recordUsage(h.db, {
        jobId: job.id,
        usageKey: `${job.id}:2`,
        kind: 'browser',
        quantity: 10,
        costMicros: 4_000,
      });
      await assert.rejects(
        recordUsage(h.db, { jobId: job.id, usageKey: `${job.id}:3`, kind: 'captcha', quantity: 1, costMicros: 2_000 }),
        (err: Error) =>
          err instanceof HoldExhaustedError && /used \$0\.012000 of the \$0\.010000 reserved/.test(err.message),
      );
      // The usage happened, so it is recorded in full.
      assert.deepEqual(await holdStatus(h.db, job.id), {
        holdMicros: 10_000,
        usedMicros: 12_000,
        remainingMicros: -2_000,
      });

      const settle = () =>
        chargeUsage(h.db, {
          userId,
          jobId: job.id,
          agentName: 'scrape',
          result: 'failed',
          payload: { note: 'x' },
          costMicros: 12_000,
          idempotencyKey: `usage:${job.id}`,
        });
      const charged = await settle();
      assert.deepEqual(
        [charged.debitedMicros, charged.unbilledMicros, charged.balanceMicros, charged.replayed],
        [10_000, 2_000, 40_000, false],
      );
      const replay = await settle();
      assert.deepEqual([replay.replayed, replay.balanceMicros], [true, 40_000]);
      const tx = await h.db
        .selectFrom('agent_transactions')
        .selectAll()
        .where('idempotency_key', '=', `usage:${job.id}`)
        .executeTakeFirstOrThrow();
      assert.equal(tx.cost_micros, 10_000);
      assert.deepEqual(tx.payload, { note: 'x', unbilledUsd: 0.002 });
      const hold = await h.db
        .selectFrom('job_holds')
        .selectAll()
        .where('job_id', '=', job.id)
        .executeTakeFirstOrThrow();
      assert.equal(hold.settled_micros, 10_000);
      assert.ok(hold.released_at);
      // A released hold checks nothing more; the job is settled.
      assert.equal(await holdStatus(h.db, job.id), null);
      assert.deepEqual(await getWalletSummary(h.db, userId), {
        balanceMicros: 40_000,
        heldMicros: 0,
        availableMicros: 40_000,
      });
      await transitionJob(h.db, job.id, 'failed', { error: 'test' });
    });

    it('caps usage outside a job at the available balance', async function () {
      const { userId } = await h.createUser({ creditUsd: 0.01 });
      const { job } = await admitted(userId, 8_000);
      const charged = await chargeUsage(h.db, {
        userId,
        jobId: null,
        agentName: 'skills-ai-search',
        result: 'completed',
        payload: null,
        costMicros: 5_000,
        idempotencyKey: `search:${randomUUID()}`,
      });
      assert.deepEqual([charged.debitedMicros, charged.unbilledMicros, charged.balanceMicros], [2_000, 3_000, 8_000]);
      assert.deepEqual(await getWalletSummary(h.db, userId), {
        balanceMicros: 8_000,
        heldMicros: 8_000,
        availableMicros: 0,
      });
      await abandonJob(h.db, job, 'test cleanup');
    });

    it('abandoning a start fails the job, releases its hold, gives the operation back and frees its key', async function () {
      const { userId } = await h.createUser({ creditUsd: 1 });
      const { job } = await admitted(userId, 50_000, { idempotencyKey: 'abandon-me' });
      const operations = async () =>
        (
          await h.db
            .selectFrom('monthly_usage')
            .select('operations')
            .where('user_id', '=', userId)
            .where('period', '=', billingPeriod())
            .executeTakeFirst()
        )?.operations;
      assert.equal(await operations(), 1);
      assert.equal(await abandonJob(h.db, job, 'could not start'), true);
      assert.equal(await abandonJob(h.db, job, 'twice'), false);
      const row = await h.db.selectFrom('jobs').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow();
      assert.deepEqual([row.status, row.error, row.idempotency_key], ['failed', 'could not start', null]);
      assert.equal(await operations(), 0);
      assert.equal((await openHolds(userId)).length, 0);
      // The same key admits a new job.
      const again = await admitted(userId, 50_000, { idempotencyKey: 'abandon-me' });
      assert.notEqual(again.job.id, job.id);
      await abandonJob(h.db, again.job, 'test cleanup');
    });
  });

  it('the end-of-suite ledger reconciliation finds each kind of broken books (planted in a rolled-back transaction)', async function () {
    const { userId } = await h.createUser({ creditUsd: 1 });
    const { job } = await admitted(userId, 10_000);
    class Rollback extends Error {}
    let problems: Awaited<ReturnType<typeof findLedgerProblems>> = [];
    await assert.rejects(
      h.db.transaction().execute(async (trx) => {
        await trx.updateTable('wallets').set({ balance_micros: -5 }).where('user_id', '=', userId).execute();
        await trx.updateTable('jobs').set({ status: 'failed' }).where('id', '=', job.id).execute();
        const entry = (key: string, amount: number, jobId: string | null) => ({
          user_id: userId,
          kind: 'usage' as const,
          amount_micros: amount,
          balance_after_micros: -1,
          idempotency_key: key,
          job_id: jobId,
          description: 'planted',
        });
        await trx
          .insertInto('ledger_entries')
          .values([entry(`planted-orphan:${job.id}`, -1, null), entry(`planted-over:${job.id}`, -20_000, job.id)])
          .execute();
        await trx
          .insertInto('agent_transactions')
          .values({
            user_id: userId,
            job_id: job.id,
            agent_name: 'planted',
            result: null,
            payload: null,
            cost_micros: 5,
            idempotency_key: `planted-tx:${job.id}`,
          })
          .execute();
        await trx
          .insertInto('ledger_entries')
          .values(entry(`planted-tx:${job.id}`, -6, job.id))
          .execute();
        problems = await findLedgerProblems(trx);
        throw new Rollback();
      }),
      Rollback,
    );
    const mine = (check: string) =>
      problems
        .find((p) => p.check === check)
        ?.rows.filter((r) => JSON.stringify(r).includes(userId) || JSON.stringify(r).includes(job.id)) ?? [];
    for (const check of [
      'wallet balance differs from the sum of its ledger entries',
      'negative wallet balance',
      'ledger entry left a negative balance',
      'open hold on a finished job',
      'job debited more than its hold',
      'debit that points at no job (nor, outside jobs, at its agent transaction)',
      'debit that differs from its agent transaction',
    ]) {
      assert.ok(mine(check).length > 0, `${check} was not found: ${JSON.stringify(problems)}`);
    }
    await abandonJob(h.db, job, 'test cleanup');
  });

  describe('through the API', function () {
    it('refuses an admin credit that is not a whole number of micro-USD with a 400, and accepts one micro', async function () {
      const { apiKey, userId } = await h.createUser({ creditUsd: 0 });
      for (const amountUsd of [1e-7, 0.0000015]) {
        const refused = await h.http('POST', `/admin/users/${userId}/credit`, {
          headers: admin(),
          body: { amountUsd, idempotencyKey: `tiny-${amountUsd}` },
        });
        assert.equal(refused.status, 400, JSON.stringify(refused.body));
        assert.equal(refused.body.error.code, 'validation_failed');
        assert.match(refused.body.error.message, /amountUsd must be a positive whole number of micro-USD/);
      }
      const credited = await h.http('POST', `/admin/users/${userId}/credit`, {
        headers: admin(),
        body: { amountUsd: 0.000001, idempotencyKey: 'one-micro' },
      });
      assert.equal(credited.status, 200);
      assert.equal(credited.body.balanceUsd, 0.000001);
      const created = await h.http('POST', '/admin/users', {
        headers: admin(),
        body: { email: `tiny-${randomUUID()}@example.com`, creditUsd: 1e-7 },
      });
      assert.equal(created.status, 400);
      assert.match(created.body.error.message, /creditUsd must be a positive whole number of micro-USD/);
      const account = await h.http('GET', '/api/v1/account', { apiKey });
      assert.deepEqual(
        [account.body.balanceUsd, account.body.heldUsd, account.body.availableUsd],
        [0.000001, 0, 0.000001],
      );
    });

    it('fails a scrape with a clear error when its hold cannot pay for the extraction, and charges only what it used', async function () {
      const { apiKey, userId } = await h.createUser({ creditUsd: 0.00005 });
      const accepted = await h.http('POST', '/api/v1/scrape', {
        apiKey,
        body: { url: `${h.site.url}/static?tiny-wallet=1` },
      });
      assert.equal(accepted.status, 202);
      const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`);
      assert.equal(job.status, 'failed');
      assert.match(job.error, /wallet cannot pay for more usage .* of the \$0\.000050 reserved/);
      assert.equal(
        h.llm.requests.filter((r) => r.kind === 'chat' && JSON.stringify(r.body).includes('tiny-wallet')).length,
        0,
      );
      const wallet = await getWalletSummary(h.db, userId);
      assert.deepEqual(wallet, { balanceMicros: 50, heldMicros: 0, availableMicros: 50 });
    });

    it('20 concurrent agent runs on a $0.10 wallet never take the balance below zero; debits equal recorded usage', async function () {
      this.timeout(300_000);
      const holdMicros = 10_000;
      const stack = await startOwnStack(h, {
        taskQueues: { platform: 'money-platform', browser: 'money-browser' },
        overrides: { holds: { ...h.config.holds, agentic: holdMicros } },
        workers: true,
      });
      const { apiKey, userId } = await h.createUser({ creditUsd: 0.1 });
      let navigation = 0;
      // Every decision navigates somewhere new (no loop guard) and answers at length (3,000 tokens), so each step costs ~$0.002.
      h.llm.setDefault(() =>
        act(
          'navigate',
          { url: `${h.site.url}/agent/list?page=${(navigation % 3) + 1}&visit=${++navigation}` },
          'Keep browsing. ' + 'x'.repeat(12_000),
        ),
      );
      h.llm.setLatency(200);
      try {
        const responses = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            h.http('POST', `${stack.baseUrl}/api/v1/agentscraper`, {
              apiKey,
              body: { task: `Browse the catalogue (${i})`, headless: true, llm_model: 'gpt-4o-mini' },
            }),
          ),
        );
        const accepted = responses.filter((r) => r.status === 202);
        const refused = responses.filter((r) => r.status !== 202);
        // Each run reserves $0.01: ten fit in $0.10, the others are refused until money is free again.
        assert.equal(accepted.length, 10, responses.map((r) => r.status).join(','));
        for (const r of refused) {
          assert.equal(r.status, 402);
          assert.equal(r.body.error.code, 'insufficient_funds');
        }
        const during = await h.http('GET', '/api/v1/account', { apiKey });
        assert.ok(
          during.body.availableUsd >= 0 && during.body.heldUsd <= during.body.balanceUsd,
          JSON.stringify(during.body),
        );

        const jobs = [];
        for (const r of accepted)
          jobs.push(
            await h.waitForJob(
              apiKey,
              `${stack.baseUrl}/api/v1/agentscraper/status/${r.body.jobId}`,
              undefined,
              240_000,
            ),
          );
        for (const job of jobs) {
          assert.equal(job.status, 'failed');
          assert.match(job.error, /wallet cannot pay for more usage/);
          assert.ok(job.result.summary.llmCalls >= 2, `only ${job.result.summary.llmCalls} billable decisions`);
        }

        const wallet = await h.db
          .selectFrom('wallets')
          .selectAll()
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow();
        assert.ok(wallet.balance_micros >= 0);
        const entries = await h.db
          .selectFrom('ledger_entries')
          .selectAll()
          .where('user_id', '=', userId)
          .orderBy('id')
          .execute();
        assert.ok(entries.length > 0 && entries.every((e) => e.balance_after_micros >= 0));
        const debits = entries.filter((e) => e.kind === 'usage');
        assert.equal(debits.length, 10);
        const debited = -debits.reduce((sum, e) => sum + e.amount_micros, 0);
        const ids = jobs.map((j) => j.id);
        const usage = await h.db.selectFrom('job_usage').select('cost_micros').where('job_id', 'in', ids).execute();
        const recorded = usage.reduce((sum, u) => sum + u.cost_micros, 0);
        assert.ok(recorded > 0);
        assert.equal(debited, recorded);
        assert.equal(wallet.balance_micros, 100_000 - debited);
        for (const debit of debits) assert.ok(-debit.amount_micros <= holdMicros);

        const after = await h.http('GET', '/api/v1/account', { apiKey });
        assert.deepEqual(
          [after.body.balanceUsd, after.body.heldUsd, after.body.availableUsd],
          [wallet.balance_micros / 1e6, 0, wallet.balance_micros / 1e6],
        );
        assert.deepEqual(await findLedgerProblems(h.db), []);
      } finally {
        h.llm.reset();
        await stack.stop();
      }
    });

    it('a retry with the same Idempotency-Key after a 503 (workflow start failed) starts the job', async function () {
      const broken = await Connection.connect({ address: h.temporalAddress });
      await broken.close();
      const stack = await startOwnStack(h, {
        temporal: new Client({ connection: broken, namespace: h.config.temporalNamespace }),
      });
      try {
        const { apiKey, userId } = await h.createUser({ creditUsd: 1 });
        const send = () =>
          h.http('POST', `${stack.baseUrl}/api/v1/scrape`, {
            apiKey,
            body: { url: `${h.site.url}/static?retry=1` },
            headers: { 'idempotency-key': 'retry-after-503' },
          });
        const first = await send();
        assert.equal(first.status, 503, JSON.stringify(first.body));
        assert.equal(first.body.error.code, 'service_unavailable');
        const [abandoned] = await h.db.selectFrom('jobs').selectAll().where('user_id', '=', userId).execute();
        assert.equal(abandoned.status, 'failed');

        stack.deps.temporal = h.client; // the workflow engine is back
        const retried = await send();
        assert.equal(retried.status, 202, JSON.stringify(retried.body));
        assert.notEqual(retried.body.jobId, abandoned.id);
        const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${retried.body.jobId}`);
        assert.equal(job.status, 'completed', job.error);
        const again = await send();
        assert.equal(again.body.jobId, retried.body.jobId);

        const usage = await h.db
          .selectFrom('monthly_usage')
          .select('operations')
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow();
        assert.equal(usage.operations, 1);
        const debits = await h.db
          .selectFrom('ledger_entries')
          .selectAll()
          .where('user_id', '=', userId)
          .where('kind', '=', 'usage')
          .execute();
        assert.deepEqual(
          debits.map((d) => d.job_id),
          [job.id],
        );
        assert.equal((await openHolds(userId)).length, 0);
      } finally {
        await stack.stop();
      }
    });

    it('the pending-job reconciler starts a job committed without its workflow, and fails one it cannot start', async function () {
      this.timeout(180_000);
      const taskQueues = { platform: 'money-reconcile-platform', browser: 'money-reconcile-browser' };
      const stack = await startOwnStack(h, {
        taskQueues,
        overrides: { pendingJobs: { reconcileAfterMs: 1_000, checkEveryMs: 300 } },
        workers: true,
      });
      try {
        const { apiKey, userId } = await h.createUser({ creditUsd: 1 });
        // As if the API died between its commit and the workflow start.
        const scrapeRequest = parseBody(ScrapeRequest, { url: `${h.site.url}/static?reconcile=1` });
        const startable = await admitted(userId, 100_000, {
          request: scrapeRequest as unknown as Record<string, unknown>,
          workflow: {
            type: 'scrapeWorkflow',
            taskQueue: taskQueues.platform,
            args: (j) => [
              { jobId: j.id, browserTaskQueue: taskQueues.browser, hasWebhook: false } satisfies ScrapeWorkflowInput,
            ],
          },
        });
        const unstartable = await admitted(userId, 100_000);

        const done = await h.waitForJob(apiKey, `/api/v1/scrape/status/${startable.job.id}`);
        assert.equal(done.status, 'completed', done.error);
        assert.ok(
          done.logs.some((l: string) => /workflow started by the pending-job reconciler/.test(l)),
          done.logs.join('\n'),
        );
        const failed = await h.waitForJob(apiKey, `/api/v1/scrape/status/${unstartable.job.id}`);
        assert.equal(failed.status, 'failed');
        assert.match(failed.error, /accepted but never started/);

        const holds = await h.db
          .selectFrom('job_holds')
          .selectAll()
          .where('user_id', '=', userId)
          .orderBy('created_at')
          .execute();
        assert.ok(holds.length > 0, 'the jobs held money');
        assert.ok(holds.every((hold) => hold.released_at !== null));
        assert.equal(holds.find((hold) => hold.job_id === unstartable.job.id)!.settled_micros, null);
        const debits = await h.db
          .selectFrom('ledger_entries')
          .selectAll()
          .where('user_id', '=', userId)
          .where('kind', '=', 'usage')
          .execute();
        assert.deepEqual(
          debits.map((d) => d.job_id),
          [startable.job.id],
        );
        const usage = await h.db
          .selectFrom('monthly_usage')
          .select('operations')
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow();
        assert.equal(usage.operations, 1);
      } finally {
        await stack.stop();
      }
    });
  });
});
