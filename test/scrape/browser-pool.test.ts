import assert from 'node:assert/strict';
import { CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { createBrowserPool, type BrowserPool } from '../../activities/browser/pool';
import {
  createSessionRegistry,
  type OpenSessionOptions,
  type SessionRegistry,
} from '../../activities/agent/session-registry';
import { loadConfig, type BrowserSessionWaits } from '../../lib/config';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { useHarness, type Harness } from '../support/stack/harness';
import { startPingSite, type PingSite } from '../support/fakes/ping-site';
import { workflowIdOf } from '../support/ledger-checks';
import { act } from '../support/agent-script';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The browser session's waits of the one-slot stack (AGENT_BROWSER_*; a deployment's are 60 s at least for a
 * free browser, 30 s and 20 s heartbeat timeouts, 2 min for an unclaimed session): seconds here, so a run
 * holding the browser for a few of them outlives every one in seconds rather than minutes.
 */
const WAITS: BrowserSessionWaits = {
  openWaitMinMs: 6_000,
  openHeartbeatTimeoutMs: 6_000,
  keeperHeartbeatTimeoutMs: 6_000,
  unclaimedSessionMs: 6_000,
};
/** One model decision of the run holding the browser: longer than any of WAITS. */
const HOLDING_STEP_MS = 1.5 * Math.max(...Object.values(WAITS));

/** Resolves with the promise's value, or rejects when it does not settle within `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms)),
  );
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await sleep(50);
  }
}

describe('browser sessions on a busy worker', function () {
  describe('the session registry', function () {
    let pool: BrowserPool;
    /** Sessions no run claims are closed after the default two minutes here, after one second in `quick`. */
    let registry: SessionRegistry;
    let quick: SessionRegistry;
    const options: OpenSessionOptions = {
      headless: true,
      policy: parseNetworkAllowlist('127.0.0.1'),
      proxy: null,
      sensitiveData: [],
      cookies: undefined,
      checkpoint: null,
    };

    before(() => {
      pool = createBrowserPool({ maxContexts: 1 });
      registry = createSessionRegistry({ headless: pool, headed: async () => pool });
      quick = createSessionRegistry({ headless: pool, headed: async () => pool }, { unclaimedSessionMs: 1_000 });
    });

    after(async () => {
      await registry.closeAll();
      await quick.closeAll();
      await pool.close();
    });

    it('an open cancelled while it waits for the only slot takes no slot and leaves no session', async function () {
      this.timeout(60_000);
      const first = await registry.open(options);
      const giveUp = new AbortController();
      let toldToWait = 0;
      const second = registry.open(options, { signal: giveUp.signal, onWait: () => toldToWait++ });
      second.catch(() => undefined);
      await until(() => toldToWait > 0, 15_000, 'the open being told to wait');
      giveUp.abort(new Error('the run stopped waiting'));
      await within(assert.rejects(second, /the run stopped waiting/), 5_000, 'the cancelled open ending');
      assert.equal(toldToWait, 1, 'the open was told it has to wait');
      assert.deepEqual(pool.usage(), { inUse: 1, waiting: 0 });
      assert.equal(registry.size(), 1);

      await registry.close(first);
      const third = await within(registry.open(options), 15_000, 'an open after the slot was freed');
      assert.equal(registry.size(), 1);
      await registry.close(third);
      assert.deepEqual(pool.usage(), { inUse: 0, waiting: 0 });
    });

    it('closes a session no run claims (its open answered too late) and frees its slot', async function () {
      this.timeout(60_000);
      const unclaimed = await quick.open(options);
      assert.ok(quick.get(unclaimed));
      await until(() => quick.size() === 0, 15_000, 'the unclaimed session closing');
      const next = await within(quick.open(options), 15_000, 'an open after the unclaimed session was closed');
      await quick.close(next);
    });

    it('keeps a claimed session when its keeper hands over to the next run', async function () {
      this.timeout(60_000);
      const id = await quick.open(options);
      const firstRun = new AbortController();
      const firstHold = quick.hold(id, 'run-1', { signal: firstRun.signal, heartbeat: () => undefined });
      const nextRun = new AbortController();
      const nextHold = quick.hold(id, 'run-2', { signal: nextRun.signal, heartbeat: () => undefined });
      firstRun.abort(new Error('continued as new'));
      await assert.rejects(firstHold, /continued as new/);
      await sleep(2_000);
      assert.ok(quick.get(id), 'the session held by the next run stays open');
      nextRun.abort(new Error('terminated'));
      await assert.rejects(nextHold, /terminated/);
      await until(() => quick.size() === 0, 15_000, 'the session nobody holds any more closing');
    });
  });

  describe('agent runs on a worker with one browser slot', function () {
    let h: Harness;
    let site: PingSite;
    let base: string;
    let apiKey: string;

    before(async function () {
      this.timeout(180_000);
      h = await useHarness();
      site = await startPingSite();
      const stack = await h.startIsolatedStack({
        taskQueues: { platform: 'pool-one-platform', browser: 'pool-one-browser' },
        overrides: { browserConcurrency: 1, agent: { ...h.config.agent, browserSession: WAITS } },
      });
      base = stack.baseUrl;
      ({ apiKey } = await h.createUser({ creditUsd: 10 }));
    });

    after(async () => {
      h?.llm.reset();
      await site?.close();
    });

    async function start(task: string): Promise<string> {
      const accepted = await h.http('POST', `${base}/api/v1/agentscraper`, { apiKey, body: { task, headless: true } });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      return accepted.body.jobId;
    }

    const statusPath = (jobId: string) => `${base}/api/v1/agentscraper/status/${jobId}`;
    const toldToWait = (job: any) =>
      job.logs.some((l: string) => /waiting for a free browser \(all 1 in use on this worker\)/.test(l));
    /** The run started and (the only browser being held) is now waiting to open its session: its log says so. */
    async function waitingForTheBrowser(jobId: string) {
      const job = await h.waitForJob(
        apiKey,
        statusPath(jobId),
        (job) => toldToWait(job) || job.status === 'completed' || job.status === 'failed',
        60_000,
      );
      assert.equal(job.status, 'processing', 'told to wait while the browser is held');
    }

    it('a run cancelled while it waits for the browser takes no slot and leaves none behind', async function () {
      this.timeout(240_000);
      let openGate!: () => void;
      const gate = new Promise<void>((resolve) => (openGate = resolve));
      let atSecondDecision!: () => void;
      const reachedSecondDecision = new Promise<void>((resolve) => (atSecondDecision = resolve));
      h.llm.enqueue(act('navigate', { url: site.pageUrl('pool-holder') }), async () => {
        atSecondDecision();
        await gate;
        return act('done', { success: true, answer: 'held the browser' });
      });
      const holder = await start('Hold the only browser');
      try {
        await site.waitForPing('pool-holder');
        await reachedSecondDecision;

        const waiter = await start('Wait for the browser');
        await waitingForTheBrowser(waiter);
        const handle = h.client.workflow.getHandle(await workflowIdOf(h, waiter));
        await handle.cancel();
        await assert.rejects(
          handle.result(),
          (err: unknown) => err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure,
        );
        const cancelled = await h.waitForJob(apiKey, statusPath(waiter));
        assert.equal(cancelled.status, 'failed');
        assert.equal(cancelled.error, 'run was cancelled');
        assert.ok(
          !cancelled.logs.some((l: string) => /browser session (re)?opened/.test(l)),
          cancelled.logs.join('\n'),
        );
        assert.ok(toldToWait(cancelled), cancelled.logs.join('\n'));
      } finally {
        openGate();
      }
      const held = await h.waitForJob(apiKey, statusPath(holder));
      assert.equal(held.status, 'completed', held.error);

      // The cancelled open left nothing holding the only slot: the next run gets it.
      h.llm.enqueue(
        act('navigate', { url: site.pageUrl('pool-next') }),
        act('done', { success: true, answer: 'got the browser' }),
      );
      const next = await h.waitForJob(apiKey, statusPath(await start('Use the browser')), undefined, 60_000);
      assert.equal(next.status, 'completed', next.error);
      assert.equal(next.result.answer, 'got the browser');
      assert.ok(site.pings('pool-next') > 0);
    });

    it('a second run waits for the busy browser (longer than any open timeout) and then succeeds', async function () {
      this.timeout(240_000);
      // The holder's model takes longer than any of the session's waits for each of three decisions (load
      // the test puts on the stack, not a synchronisation): the second run waits through all of them.
      const slowly = (seconds: number) => async () => {
        await sleep(HOLDING_STEP_MS);
        return act('wait', { seconds });
      };
      h.llm.enqueue(
        act('navigate', { url: site.pageUrl('busy-holder') }),
        slowly(0),
        slowly(0.1),
        slowly(0.2),
        act('done', { success: true, answer: 'first done' }),
        act('navigate', { url: site.pageUrl('busy-second') }),
        act('done', { success: true, answer: 'second done' }),
      );
      const first = await start('Keep the browser busy');
      await site.waitForPing('busy-holder');
      const second = await start('Wait your turn');
      await waitingForTheBrowser(second);

      const firstJob = await h.waitForJob(apiKey, statusPath(first), undefined, 120_000);
      assert.equal(firstJob.status, 'completed', firstJob.error);
      const secondJob = await h.waitForJob(apiKey, statusPath(second), undefined, 120_000);
      assert.equal(secondJob.status, 'completed', secondJob.error);
      assert.equal(secondJob.result.answer, 'second done');
      assert.ok(toldToWait(secondJob), secondJob.logs.join('\n'));
      assert.ok(!secondJob.logs.some((l: string) => /worker lost/.test(l)), secondJob.logs.join('\n'));
      assert.ok(site.pings('busy-second') > 0);
      const waited = Date.parse(secondJob.updatedAt) - Date.parse(secondJob.createdAt);
      assert.ok(
        waited > 2 * Math.max(...Object.values(WAITS)),
        `the second run waited ${waited} ms, longer than twice every wait`,
      );
    });

    it('reads AGENT_BROWSER_*: 60 s open wait, 30 s and 20 s heartbeat timeouts, 2 min unclaimed by default', function () {
      assert.deepEqual(loadConfig({ ...h.env }).agent.browserSession, {
        openWaitMinMs: 60_000,
        openHeartbeatTimeoutMs: 30_000,
        keeperHeartbeatTimeoutMs: 20_000,
        unclaimedSessionMs: 120_000,
      });
      assert.deepEqual(
        loadConfig({
          ...h.env,
          AGENT_BROWSER_OPEN_WAIT_SECONDS: '6',
          AGENT_BROWSER_OPEN_HEARTBEAT_SECONDS: '6',
          AGENT_BROWSER_KEEPER_HEARTBEAT_SECONDS: '6',
          AGENT_BROWSER_UNCLAIMED_SESSION_SECONDS: '6',
        }).agent.browserSession,
        WAITS,
      );
      for (const [name, bad] of [
        ['AGENT_BROWSER_OPEN_HEARTBEAT_SECONDS', '4'],
        ['AGENT_BROWSER_KEEPER_HEARTBEAT_SECONDS', '601'],
        ['AGENT_BROWSER_OPEN_WAIT_SECONDS', 'soon'],
        ['AGENT_BROWSER_UNCLAIMED_SESSION_SECONDS', '0'],
      ] as const)
        assert.throws(() => loadConfig({ ...h.env, [name]: bad }), new RegExp(name));
    });
  });
});
