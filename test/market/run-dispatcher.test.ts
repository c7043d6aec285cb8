import assert from 'node:assert/strict';
import { getWalletSummary } from '../../db/repos/ledger';
import { findMarketRun, openMarketRun, runsOwedAWorkflow } from '../../db/repos/market-runs';
import { marketRunStart, marketRunWorkflowId } from '../../lib/market/run-workflow';
import { startOnce } from '../../lib/temporal/start';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import { describeWhenStarted } from '../support/market-runs';

describe("market-run workflows: the platform workers' dispatcher", function () {
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

  it('starts one workflow for a run its opener only wrote, and that workflow closes the run and releases the hold when the token expires', async function () {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 0.5 });
    const entry = await approvedServiceEntry(h, provider, service.url, {
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.01 }],
    });
    // The run is written and nothing else, as the hosted endpoint and agents open theirs.
    const opened = await openMarketRun(h.db, {
      consumerId: consumer.userId,
      entryId: entry.entryId,
      selectionId: 'dispatcher-test',
      ttlMs: 3_000,
      limitMicros: 1_000_000,
      chargeTokenKey: h.config.market.chargeTokenKey,
    });
    assert.equal(opened.outcome, 'opened');
    if (opened.outcome !== 'opened') return;
    const { run } = opened;
    assert.equal(run.holdMicros, 500_000, 'the hold is min(available, limit)');
    assert.equal((await getWalletSummary(h.db, consumer.userId)).heldMicros, 500_000);

    // Started by a platform worker's dispatcher (any platform worker on this database may take it:
    // in a deployment they all poll one queue; here other tests' stacks poll queues of their own).
    const workflow = await describeWhenStarted(h, marketRunWorkflowId(run.id));
    assert.equal(workflow.type, 'marketRunWorkflow');
    assert.ok(
      !(await runsOwedAWorkflow(h.db, 10_000)).some((owed) => owed.id === run.id),
      'the run is no longer owed a workflow',
    );
    // A second start (another worker's dispatcher, a retried pass) finds the first.
    assert.equal(
      await startOnce(
        h.client,
        marketRunStart(h.config.taskQueues.platform, {
          id: run.id,
          consumerId: consumer.userId,
          expiresAt: run.expiresAt,
        }),
      ),
      'already_started',
    );

    const result = await h.client.workflow.getHandle(marketRunWorkflowId(run.id)).result();
    assert.deepEqual(result, { chargedMicros: 0, releasedMicros: 500_000, providerRevenueMicros: 0 });
    assert.equal((await findMarketRun(h.db, run.id))?.status, 'closed');
    assert.deepEqual(await getWalletSummary(h.db, consumer.userId), {
      balanceMicros: 500_000,
      heldMicros: 0,
      availableMicros: 500_000,
    });
    // Even after the workflow completed, the run never gets a second one.
    assert.equal(
      await startOnce(
        h.client,
        marketRunStart(h.config.taskQueues.platform, {
          id: run.id,
          consumerId: consumer.userId,
          expiresAt: run.expiresAt,
        }),
      ),
      'already_started',
    );
  });
});
