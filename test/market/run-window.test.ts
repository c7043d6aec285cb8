// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { getWalletSummary } from '../../db/repos/ledger';
import { findMarketRun } from '../../db/repos/market-runs';
import { loadConfig } from '../../lib/config';
import { marketRunWorkflowId } from '../../lib/market/run-workflow';
import { useHarness, type Harness } from '../support/stack/harness';
import { approvedEntry, storeValidation } from '../support/market';
import { discoveredTools } from '../support/fakes/market-provider';
import { startMeteredProvider, type MeteredProvider } from '../support/fakes/market-metered-provider';
import { findLedgerProblems } from '../support/ledger-reconciliation';
import { startApiProcess } from '../support/stack/api-process';
import { describeWhenStarted } from '../support/market-runs';
import {
  assertReplaysViolateDeterminism,
  commandsOf,
  historyFromFixture,
  stringsIn,
} from '../support/workflow-history';
import { MARKET_RUN_SETTLES_WHEN_IDLE } from '../../workflows/patches';

type ToolResult = Awaited<ReturnType<Client['callTool']>>;
const textOf = (result: ToolResult) =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');
const billing = (result: ToolResult) => (result._meta as Record<string, any>)['scrape-platform/billing'];

/** Histories of the per-call market-run workflow (before `market-run-settles-when-idle`), recorded on commit 1499f95. */
const FIXTURES = path.join(__dirname, '..', 'support', 'fixtures', 'workflow-histories');
const OLD_HISTORIES = ['market-run-dispatched.json', 'market-run-timer.json'];

/**
 * The windowed market run: a credential's hosted calls to a fixed-price entry that follow each other
 * share one run (one hold, one workflow), each call charged on its own; the window is closed and
 * settled by its workflow once idle (MARKET_RUN_WINDOW_IDLE_SECONDS), and the per-run cap ends a window.
 */
describe('windowed market runs (hosted endpoint)', function () {
  this.timeout(180_000);
  let h: Harness;
  let provider: MeteredProvider;
  const clients: Client[] = [];

  before(async function () {
    h = await useHarness();
    provider = await startMeteredProvider();
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await provider?.close();
  });

  async function connect(entryId: string, token: string, baseUrl = h.baseUrl) {
    const client = new Client({ name: 'market-window', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp/${entryId}`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  async function fixedEntry(owner: { userId: string; apiKey: string }, priceUsd: number) {
    const tools = ['lookup', 'slow_lookup'].map((toolName) => ({
      toolName,
      displayName: toolName,
      clientPriceUsd: priceUsd,
    }));
    const validation = await storeValidation(h, owner.userId, {
      url: provider.url,
      tools: await discoveredTools(provider.url),
    });
    return approvedEntry(h, owner, { monetizationStrategy: 'tool_call_fixed', tools }, validation);
  }

  async function credential(apiKey: string, entryId: string, body: Record<string, unknown> = {}) {
    const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${entryId}/credentials`, { apiKey, body });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    return issued.body.credential as string;
  }

  const debitsOf = (userId: string) =>
    h.db
      .selectFrom('ledger_entries')
      .select(['amount_micros', 'market_run_id'])
      .where('user_id', '=', userId)
      .where('kind', '=', 'usage')
      .execute();

  it('two calls within the window share one run and one hold, each debited once; once idle the workflow closes and settles it', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 1 });
    const entry = await fixedEntry(seller, 0.0125);
    const client = await connect(entry.entryId, await credential(consumer.apiKey, entry.entryId));

    // The first call is in flight when the second starts: the window holds both prices, nothing more.
    const slow = client.callTool({
      name: 'slow_lookup',
      arguments: { city: 'Lisbon', gate: `window-${entry.entryId}` },
    });
    await provider.arrived(`window-${entry.entryId}`);
    const second = await client.callTool({ name: 'lookup', arguments: { city: 'Porto' } });
    assert.equal(second.isError, false, textOf(second));
    provider.open(`window-${entry.entryId}`);
    const first = await slow;
    assert.equal(first.isError, false, textOf(first));
    assert.deepEqual(
      [billing(first).chargedUsd, billing(second).chargedUsd],
      [0.0125, 0.0125],
      'each call is charged on its own',
    );
    const runId = billing(first).runId as string;
    assert.equal(billing(second).runId, runId, 'calls that follow each other share one run');

    const open = (await findMarketRun(h.db, runId))!;
    assert.deepEqual(
      [open.status, open.holdMicros, open.chargedMicros, open.callsInFlight, open.acceptsCalls],
      ['open', 25_000, 25_000, 0, true],
      'one hold for the window: the prices of its calls',
    );
    assert.deepEqual(await getWalletSummary(h.db, consumer.userId), {
      balanceMicros: 975_000,
      heldMicros: 0,
      availableMicros: 975_000,
    });
    const debits = await debitsOf(consumer.userId);
    assert.deepEqual(
      debits.map((d) => [Number(d.amount_micros), d.market_run_id]),
      [
        [-12_500, runId],
        [-12_500, runId],
      ],
      'one debit per call, both on the window',
    );

    // A run per window in the Temporal UI; once idle (MARKET_RUN_WINDOW_IDLE_SECONDS, 5 s by default) it settles.
    const described = await describeWhenStarted(h, marketRunWorkflowId(runId));
    assert.equal(described.type, 'marketRunWorkflow');
    const handle = h.client.workflow.getHandle(marketRunWorkflowId(runId));
    assert.deepEqual(await handle.result(), {
      chargedMicros: 25_000,
      releasedMicros: 0,
      providerRevenueMicros: 20_000,
    });
    const history = await handle.fetchHistory();
    assert.ok(
      stringsIn(history).includes(MARKET_RUN_SETTLES_WHEN_IDLE),
      `the run recorded the patch ${MARKET_RUN_SETTLES_WHEN_IDLE}`,
    );
    assert.ok(commandsOf(history).includes('settleMarketRunWhenIdle'), 'and took its path');
    const settled = (await findMarketRun(h.db, runId))!;
    assert.equal(settled.status, 'closed');
    assert.ok(
      settled.closedAt && settled.idleUntil && settled.closedAt >= settled.idleUntil,
      'closed after it went idle',
    );

    // The next call opens the next window.
    const later = await client.callTool({ name: 'lookup', arguments: { city: 'Faro' } });
    assert.equal(later.isError, false, textOf(later));
    assert.notEqual(billing(later).runId, runId);
    assert.equal((await debitsOf(consumer.userId)).length, 3);
    assert.deepEqual(await findLedgerProblems(h.db), []);
  });

  it('maxTotalUsdPerRun bounds a window: the call that would pass the cap opens the next window; a call over the cap alone is refused', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 1 });
    const entry = await fixedEntry(seller, 0.01);
    const client = await connect(
      entry.entryId,
      await credential(consumer.apiKey, entry.entryId, { maxTotalUsdPerRun: 0.025 }),
    );

    const runs: string[] = [];
    for (const city of ['Lisbon', 'Porto', 'Faro', 'Braga', 'Evora']) {
      const result = await client.callTool({ name: 'lookup', arguments: { city } });
      assert.equal(result.isError, false, `${city}: ${textOf(result)}`);
      assert.equal(billing(result).chargedUsd, 0.01);
      runs.push(billing(result).runId);
    }
    assert.deepEqual(
      runs.map((r) => runs.indexOf(r)),
      [0, 0, 2, 2, 4],
      'two 0.01 USD calls fit a 0.025 USD run; the third opens the next window',
    );
    for (const runId of new Set(runs)) {
      const run = (await findMarketRun(h.db, runId))!;
      assert.ok(run.holdMicros <= 25_000 && run.chargedMicros <= 25_000, 'no window holds or charges past the cap');
    }
    assert.deepEqual(await getWalletSummary(h.db, consumer.userId), {
      balanceMicros: 950_000,
      heldMicros: 0,
      availableMicros: 950_000,
    });

    // A price over the cap on its own is refused, nothing charged.
    const pricey = await fixedEntry(seller, 0.05);
    const capped = await connect(
      pricey.entryId,
      await credential(consumer.apiKey, pricey.entryId, { maxTotalUsdPerRun: 0.025 }),
    );
    const refused = await capped.callTool({ name: 'lookup', arguments: { city: 'Lisbon' } });
    assert.equal(refused.isError, true);
    assert.deepEqual([billing(refused).code, billing(refused).chargedUsd], ['run_limit_reached', 0]);
    assert.equal((await debitsOf(consumer.userId)).length, 5);
    assert.deepEqual(await findLedgerProblems(h.db), []);
  });

  it('an API process killed mid-window loses nothing: the answered call stays charged once, the killed one is never charged, and the window settles at its expiry', async function () {
    this.timeout(360_000);
    // Runs live 45 s here (MARKET_RUN_TTL_SECONDS), so a window can still be joined for a few seconds
    // (a call joins while a call timeout + the grace + 30 s are left before its expiry: 37 s here).
    const api = await startApiProcess({
      ...h.env,
      MARKET_RUN_TTL_SECONDS: '45',
      MARKET_RUN_IDLE_GRACE_SECONDS: '2',
      MARKET_TOOL_CALL_TIMEOUT_MS: '5000',
    });
    try {
      const seller = await h.createUser({ creditUsd: 0 });
      const consumer = await h.createUser({ creditUsd: 1 });
      const entry = await fixedEntry(seller, 0.02);
      const client = await connect(entry.entryId, await credential(consumer.apiKey, entry.entryId), api.baseUrl);

      const answered = await client.callTool({ name: 'lookup', arguments: { city: 'Lisbon' } });
      assert.equal(answered.isError, false, textOf(answered));
      const runId = billing(answered).runId as string;

      const gate = `crash-${entry.entryId}`;
      void client.callTool({ name: 'slow_lookup', arguments: { city: 'Porto', gate } }).catch(() => {});
      await provider.arrived(gate);
      const inFlight = (await findMarketRun(h.db, runId))!;
      assert.deepEqual([inFlight.callsInFlight, inFlight.holdMicros, inFlight.chargedMicros], [1, 40_000, 20_000]);
      api.child.kill('SIGKILL');
      await new Promise((resolve) => api.child.once('exit', resolve));
      provider.open(gate);

      // The call that died still uses the window, so it stays active (its price held) until its token expires;
      // then its workflow closes it, releasing that price, and records the settlement.
      const handle = h.client.workflow.getHandle(marketRunWorkflowId(runId));
      await describeWhenStarted(h, marketRunWorkflowId(runId));
      assert.deepEqual(await handle.result(), {
        chargedMicros: 20_000,
        releasedMicros: 20_000,
        providerRevenueMicros: 16_000,
      });
      assert.equal((await findMarketRun(h.db, runId))!.status, 'closed');
      const debits = await debitsOf(consumer.userId);
      assert.deepEqual(
        debits.map((d) => Number(d.amount_micros)),
        [-20_000],
        'one debit: the answered call',
      );
      assert.deepEqual(await getWalletSummary(h.db, consumer.userId), {
        balanceMicros: 980_000,
        heldMicros: 0,
        availableMicros: 980_000,
      });
      assert.deepEqual(await findLedgerProblems(h.db), []);
    } finally {
      // A killed process has a signalCode and no exitCode: stop() would wait for a second exit.
      if (api.child.exitCode === null && api.child.signalCode === null) await api.stop();
    }
  });

  it('a run begun on the per-call workflow (before market-run-settles-when-idle) still replays', async function () {
    for (const name of OLD_HISTORIES) {
      const history = historyFromFixture(path.join(FIXTURES, name));
      assert.ok(!commandsOf(history).some((c) => c.startsWith('marker:')), `${name} was recorded before any patch`);
      assert.ok(!stringsIn(history).includes(MARKET_RUN_SETTLES_WHEN_IDLE), `${name} was recorded before the patch`);
      assert.ok(commandsOf(history).includes('settleMarketRun'), `${name} settled on the per-call path`);
      await Worker.runReplayHistory(
        { workflowBundle: h.workflowBundle, replayName: name.replace(/\W/g, '-') },
        history,
      );
    }
  });

  it(`would not replay without the ${MARKET_RUN_SETTLES_WHEN_IDLE} guard: the patch is what keeps those runs going`, async function () {
    const unguarded = await bundleWorkflowCode({
      workflowsPath: require.resolve('../support/fixtures/workflows-market-run-without-patch'),
      logger: new DefaultLogger('WARN'),
    });
    await assertReplaysViolateDeterminism(unguarded, FIXTURES, OLD_HISTORIES);
  });

  it('reads MARKET_RUN_TTL_SECONDS: unset by default (MARKET_RUN_TTL_MINUTES, 15), else 10 to 86400 seconds', function () {
    assert.equal(loadConfig({ ...h.env }).market.runTtlMs, 15 * 60_000);
    assert.equal(loadConfig({ ...h.env, MARKET_RUN_TTL_MINUTES: '2' }).market.runTtlMs, 120_000);
    // (The idle grace, 60 s by default, must be shorter than a run lives.)
    const grace = { MARKET_RUN_IDLE_GRACE_SECONDS: '2' };
    assert.equal(loadConfig({ ...h.env, ...grace, MARKET_RUN_TTL_SECONDS: '45' }).market.runTtlMs, 45_000);
    assert.equal(
      loadConfig({ ...h.env, ...grace, MARKET_RUN_TTL_MINUTES: '2', MARKET_RUN_TTL_SECONDS: '45' }).market.runTtlMs,
      45_000,
      'seconds, when set, win',
    );
    for (const bad of ['9', '86401', 'soon'])
      assert.throws(() => loadConfig({ ...h.env, ...grace, MARKET_RUN_TTL_SECONDS: bad }), /MARKET_RUN_TTL_SECONDS/);
    assert.throws(
      () => loadConfig({ ...h.env, MARKET_RUN_TTL_SECONDS: '30', MARKET_RUN_IDLE_GRACE_SECONDS: '30' }),
      /MARKET_RUN_IDLE_GRACE_SECONDS.*MARKET_RUN_TTL_SECONDS = 30/,
    );
  });

  it('reads MARKET_RUN_WINDOW_IDLE_SECONDS: 5 by default, 0 to 3600 and shorter than a run lives', function () {
    assert.equal(loadConfig({ ...h.env }).market.runWindowIdleMs, 5_000);
    assert.equal(loadConfig({ ...h.env, MARKET_RUN_WINDOW_IDLE_SECONDS: '0' }).market.runWindowIdleMs, 0);
    for (const bad of ['-1', '3601', 'soon'])
      assert.throws(
        () => loadConfig({ ...h.env, MARKET_RUN_WINDOW_IDLE_SECONDS: bad }),
        /MARKET_RUN_WINDOW_IDLE_SECONDS/,
      );
    assert.throws(
      () =>
        loadConfig({
          ...h.env,
          MARKET_RUN_TTL_MINUTES: '1',
          MARKET_RUN_IDLE_GRACE_SECONDS: '10',
          MARKET_RUN_WINDOW_IDLE_SECONDS: '60',
        }),
      /MARKET_RUN_WINDOW_IDLE_SECONDS/,
    );
  });
});
