import assert from 'node:assert/strict';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { sql } from 'kysely';
import { findMarketRun, markRunWorkflowsStarted, openMarketRun, type MarketRun } from '../../db/repos/market-runs';
import { marketRunWorkflowId } from '../../lib/market/run-workflow';
import { CHECKS_PER_EXECUTION } from '../../workflows/market-run';
import { MARKET_RUN_CONTINUES_AS_NEW } from '../../workflows/patches';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import { describeWhenStarted } from '../support/market-runs';
import { commandsOf, historyFromFixture, stringsIn } from '../support/workflow-history';

type History = temporal.api.history.v1.IHistory;

/**
 * A busy run's history recorded before the back-off and `market-run-continues-as-new`: 88 looks about a second
 * apart, more than an execution now takes, so code that continued as new without the patch fails to replay it.
 */
const BUSY_HISTORY = path.join(__dirname, '..', 'support', 'fixtures', 'workflow-histories', 'market-run-busy.json');

const ms = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(d?.seconds ?? 0) * 1_000 + Math.round((d?.nanos ?? 0) / 1e6);
const timersOf = (history: History) =>
  (history.events ?? []).flatMap((e) =>
    e.timerStartedEventAttributes ? [ms(e.timerStartedEventAttributes.startToFireTimeout)] : [],
  );
const looksOf = (history: History) => commandsOf(history).filter((c) => c === 'settleMarketRunWhenIdle').length;

/**
 * A market run a call keeps busy (calls_in_flight > 0): its workflow backs its looks off (1 s doubling up to
 * 30 s) and continues as new every `checksPerExecution` looks, so however long the run lives its history stays
 * small (issue 33: a run left busy used to look every second until its TTL, 7–9k events, and its replay
 * outgrew the workflow task timeout). It still ends when idle, and at its TTL at the latest.
 */
describe('market-run workflows: a run a call keeps busy', function () {
  this.timeout(120_000);
  let h: Harness;
  let service: MarketProviderService;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    service = await startMarketProvider();
  });

  after(async () => {
    await service?.close();
  });

  async function busyRun(ttlMs: number, selectionId: string): Promise<MarketRun> {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 0.5 });
    const entry = await approvedServiceEntry(h, provider, service.url, {
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.01 }],
    });
    const opened = await openMarketRun(h.db, {
      consumerId: consumer.userId,
      entryId: entry.entryId,
      selectionId,
      ttlMs,
      limitMicros: 1_000_000,
      chargeTokenKey: h.config.market.chargeTokenKey,
    });
    assert.equal(opened.outcome, 'opened');
    if (opened.outcome !== 'opened') throw new Error('not opened');
    // A call uses the run and never gives it back (as a call of a process that died would).
    await sql`update market_runs set calls_in_flight = 1 where id = ${opened.run.id}::uuid`.execute(h.db);
    return opened.run;
  }

  /** Every execution's history of a workflow, first to last, following continue-as-new. */
  async function chainOf(workflowId: string, firstRunId: string): Promise<History[]> {
    const histories: History[] = [];
    for (let runId: string | undefined = firstRunId; runId;) {
      const history = await h.client.workflow.getHandle(workflowId, runId).fetchHistory();
      histories.push(history);
      runId = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    }
    return histories;
  }

  it('backs its looks off while a call uses the run (1 s, 2 s, 4 s, ...) and settles it at its TTL', async function () {
    // The dispatcher starts the workflow, with the defaults a deployment has.
    const run = await busyRun(9_000, 'busy-ttl');
    await describeWhenStarted(h, marketRunWorkflowId(run.id));
    const handle = h.client.workflow.getHandle(marketRunWorkflowId(run.id));
    assert.deepEqual(await handle.result(), { chargedMicros: 0, releasedMicros: 500_000, providerRevenueMicros: 0 });
    const settled = (await findMarketRun(h.db, run.id))!;
    assert.equal(settled.status, 'closed');
    assert.ok(settled.closedAt && settled.closedAt >= run.expiresAt, 'closed once it expired, not before');

    const history = await handle.fetchHistory();
    assert.ok(stringsIn(history).includes(MARKET_RUN_CONTINUES_AS_NEW));
    const timers = timersOf(history);
    // A 9 s run (less the dispatcher's start delay) busy throughout: looks after 1, 2 and 4 s, then its expiry.
    assert.ok(timers.length <= 5, `at most 5 timers for a 9 s busy run, got ${JSON.stringify(timers)}`);
    for (const [i, expected] of [1_000, 2_000, 4_000].entries())
      if (i < timers.length - 1)
        assert.ok(
          timers[i]! >= expected && timers[i]! <= expected + 200,
          `look ${i + 1} waits ${expected} ms: ${JSON.stringify(timers)}`,
        );
    assert.ok(looksOf(history) <= 6, `${looksOf(history)} looks`);
  });

  it('continues as new every checksPerExecution looks: each history stays small, and the run settles once idle', async function () {
    const run = await busyRun(60_000, 'busy-long');
    // This test starts the run's workflow itself, with short waits; the dispatcher starts none.
    await markRunWorkflowsStarted(h.db, [run.id]);
    const workflowId = `market-run-busy-test-${run.id}`;
    const checksPerExecution = 4;
    const handle = await h.client.workflow.start('marketRunWorkflow', {
      taskQueue: h.config.taskQueues.platform,
      workflowId,
      args: [{ runId: run.id, expiresAt: run.expiresAt.toISOString(), busyCheckMaxMs: 100, checksPerExecution }],
    });

    // Busy for a while: wait until the workflow has continued as new three times (observable: its run id).
    const seen = new Set<string>([handle.firstExecutionRunId]);
    for (const deadline = Date.now() + 60_000; seen.size < 4;) {
      assert.ok(Date.now() < deadline, `still ${seen.size} executions`);
      seen.add((await h.client.workflow.getHandle(workflowId).describe()).runId);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal((await findMarketRun(h.db, run.id))!.status, 'open', 'a busy run stays open');

    // The call gives the run back and its grace is over: the run settles.
    await sql`update market_runs set calls_in_flight = 0, idle_until = now() where id = ${run.id}::uuid`.execute(h.db);
    assert.deepEqual(await handle.result(), { chargedMicros: 0, releasedMicros: 500_000, providerRevenueMicros: 0 });
    assert.equal((await findMarketRun(h.db, run.id))!.status, 'closed');

    const chain = await chainOf(workflowId, handle.firstExecutionRunId);
    assert.ok(chain.length >= 4, `${chain.length} executions`);
    for (const [i, history] of chain.entries()) {
      assert.ok(
        stringsIn(history).includes(MARKET_RUN_CONTINUES_AS_NEW),
        `execution ${i + 1} records the patch ${MARKET_RUN_CONTINUES_AS_NEW}`,
      );
      assert.ok(looksOf(history) <= checksPerExecution, `execution ${i + 1}: ${looksOf(history)} looks`);
      assert.ok(
        (history.events ?? []).length <= 15 * checksPerExecution + 10,
        `execution ${i + 1}: ${(history.events ?? []).length} events`,
      );
    }
    assert.ok(chain.slice(0, -1).every((history) => looksOf(history) === checksPerExecution));
    // The back-off is carried over: after the first execution, every wait is the cap.
    assert.ok(chain.slice(1).every((history) => timersOf(history).every((t) => t <= 100 + 60)));
  });

  it(`a busy run's history recorded before ${MARKET_RUN_CONTINUES_AS_NEW} (88 looks a second apart) still replays`, async function () {
    const history = historyFromFixture(BUSY_HISTORY);
    assert.ok(looksOf(history) > CHECKS_PER_EXECUTION, 'more looks than an execution takes now');
    assert.ok(stringsIn(history).includes('market-run-settles-when-idle'), 'recorded on the idle-settling path');
    assert.ok(!stringsIn(history).includes(MARKET_RUN_CONTINUES_AS_NEW), 'recorded before the patch');
    await Worker.runReplayHistory({ workflowBundle: h.workflowBundle, replayName: 'market-run-busy' }, history);
  });
});
