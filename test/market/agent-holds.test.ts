import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createBillingActivities } from '../../activities/billing';
import { marketCallPath } from '../../api/services/market/call-path';
import { createMarketSelectionCaller } from '../../activities/tools/market';
import { admitJob } from '../../db/repos/jobs';
import { getWalletSummary } from '../../db/repos/ledger';
import type { MarketToolCallOutcome } from '../../lib/market/tool-call';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { sealRequestSecrets, type RequestSecrets } from '../../lib/request-secrets';
import { act } from '../support/agent-script';
import { useHarness, type Harness } from '../support/stack/harness';
import { admin, approvedEntry, completeVerification, storeValidation } from '../support/market';
import { discoveredTools } from '../support/fakes/market-provider';
import { startMeteredProvider, type MeteredProvider } from '../support/fakes/market-metered-provider';
import { findLedgerProblems } from '../support/ledger-reconciliation';

const policy = parseNetworkAllowlist('127.0.0.1,localhost');

/**
 * Market tools of agents (issue 20, sections 3 and 7): calls of one execution that run at the same
 * time never have their run closed under them; an agent-market listing keeps its provider's cap per
 * selection and shows its market tools with their prices; the consumer can cap them too; a job's
 * market runs end when the job settles.
 */
describe('market holds of agents', function () {
  this.timeout(240_000);
  let h: Harness;
  let provider: MeteredProvider;

  before(async function () {
    h = await useHarness();
    provider = await startMeteredProvider();
  });

  after(async () => {
    h.llm.reset();
    await provider?.close();
  });

  const wallet = (userId: string) => getWalletSummary(h.db, userId);
  const validated = async (ownerId: string) =>
    storeValidation(h, ownerId, { url: provider.url, tools: await discoveredTools(provider.url) });
  const answered = (outcome: MarketToolCallOutcome) => {
    assert.equal(outcome.status, 'answered', JSON.stringify(outcome));
    return outcome as Extract<MarketToolCallOutcome, { status: 'answered' }>;
  };

  /** An agent execution with one market_mcps selection (as /agents/run stores it), its params sealed. */
  async function execution(consumerId: string, entryId: string) {
    const admitted = await admitJob(h.db, {
      userId: consumerId,
      kind: 'agentic',
      request: { task: 'use the market tool', market_mcps: [{ mcp_id: entryId, tool_names: [] }] },
      webhookUrl: null,
      idempotencyKey: null,
      holdMaxMicros: 1,
      sealSecrets: (jobId) =>
        sealRequestSecrets(h.config.masterKey, jobId, { market_mcps_params: [{}] } as RequestSecrets),
    });
    assert.equal(admitted.outcome, 'created');
    return (admitted as { job: { id: string } }).job.id;
  }

  const graceMs = 2_000;
  const caller = () => {
    const config = { ...h.config, market: { ...h.config.market, runIdleGraceMs: graceMs } };
    return createMarketSelectionCaller({ db: h.db, config, callPath: marketCallPath(h.db, config.market, policy) });
  };
  /** The run of the job's call in flight is near its expiry (less than a call and the grace left): the next call must not reuse it. */
  const nearExpiry = (jobId: string) =>
    sql`update market_runs set expires_at = now() + interval '20 seconds' where job_id = ${jobId}::uuid and status = 'open'`.execute(
      h.db,
    );
  const runsOf = (jobId: string) =>
    h.db.selectFrom('market_runs').selectAll().where('job_id', '=', jobId).orderBy('created_at').execute();

  it('provider_event: a call that finds the run near its expiry opens the next one without closing the run a parallel call still bills against', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 5 });
    const validation = await validated(seller.userId);
    const eventVerificationId = await completeVerification(h, seller.apiKey, validation.sourceFingerprint, [
      'page.scraped',
    ]);
    const entry = await approvedEntry(
      h,
      seller,
      {
        monetizationStrategy: 'provider_event',
        pricingEvents: [{ eventName: 'page.scraped', unitPriceUsd: 0.01 }],
        eventVerificationId,
      },
      validation,
    );
    provider.configureCharging({ apiBase: h.baseUrl, apiKey: seller.apiKey });
    const jobId = await execution(consumer.userId, entry.entryId);
    const call = caller();
    const gate = `agent-event-${jobId}`;

    const first = call({ jobId, index: 0, tool: 'charge_pages', args: { pages: 1, gate } });
    await provider.arrived(gate);
    await nearExpiry(jobId);
    const second = answered(await call({ jobId, index: 0, tool: 'charge_pages', args: { pages: 2 } }));
    assert.deepEqual(JSON.parse(second.result.text).charge.status, 200);
    provider.open(gate);
    const firstDone = answered(await first);
    const { charge } = JSON.parse(firstDone.result.text);
    assert.deepEqual(
      [charge.status, charge.body.chargedCount],
      [200, 1],
      `the provider charges the run its call used: ${JSON.stringify(charge.body)}`,
    );
    assert.notEqual(firstDone.runId, second.runId);

    const [retired, next] = await runsOf(jobId);
    assert.deepEqual(
      [retired.id, retired.status, retired.accepts_calls, Number(retired.charged_micros)],
      [firstDone.runId, 'open', false, 10_000],
    );
    assert.deepEqual([next.id, next.accepts_calls, Number(next.charged_micros)], [second.runId, true, 20_000]);
    assert.equal((await wallet(consumer.userId)).balanceMicros, 5_000_000 - 30_000);

    // The job settles: its runs take no more calls; what they did not charge is released once the grace of their last calls is over.
    await createBillingActivities({ db: h.db, marketRunGraceMs: graceMs }).settleJobUsage({
      jobId,
      agentName: 'agentic',
      outcome: 'completed',
    });
    assert.deepEqual(
      (await runsOf(jobId)).map((r) => [r.id, r.accepts_calls]),
      [
        [firstDone.runId, false],
        [second.runId, false],
      ],
    );
    await new Promise((resolve) => setTimeout(resolve, graceMs + 500));
    assert.deepEqual(await wallet(consumer.userId), {
      balanceMicros: 4_970_000,
      heldMicros: 0,
      availableMicros: 4_970_000,
    });
    const late = await provider.chargeLater(provider.calls().at(-1)!, `late-${jobId}`);
    assert.deepEqual([late.status, late.body.error?.code], [409, 'run_closed']);
  });

  it('fixed price: a parallel call of the same execution is billed on the run it reserved, and the runs close when the job settles', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 1 });
    const tools = ['lookup', 'slow_lookup'].map((toolName) => ({
      toolName,
      displayName: toolName,
      clientPriceUsd: 0.01,
    }));
    const entry = await approvedEntry(
      h,
      seller,
      { monetizationStrategy: 'tool_call_fixed', tools },
      await validated(seller.userId),
    );
    const jobId = await execution(consumer.userId, entry.entryId);
    const call = caller();
    const gate = `agent-fixed-${jobId}`;

    const first = call({ jobId, index: 0, tool: 'slow_lookup', args: { city: 'Lisbon', gate } });
    await provider.arrived(gate);
    assert.equal(
      (await wallet(consumer.userId)).heldMicros,
      1 + 10_000,
      'the job hold and the price of the call in flight',
    );
    await nearExpiry(jobId);
    const second = answered(await call({ jobId, index: 0, tool: 'lookup', args: { city: 'Porto' } }));
    assert.deepEqual([second.billed, second.costMicros], [true, 10_000]);
    provider.open(gate);
    const firstDone = answered(await first);
    assert.deepEqual(
      [firstDone.billed, firstDone.costMicros],
      [true, 10_000],
      'the call in flight is billed on its own run',
    );
    assert.deepEqual(
      await wallet(consumer.userId),
      { balanceMicros: 980_000, heldMicros: 1, availableMicros: 979_999 },
      'the runs hold nothing once their calls are done',
    );
    assert.equal((await wallet(seller.userId)).balanceMicros, 2 * 8_000);

    await createBillingActivities({ db: h.db, marketRunGraceMs: graceMs }).settleJobUsage({
      jobId,
      agentName: 'agentic',
      outcome: 'completed',
    });
    assert.deepEqual(
      (await runsOf(jobId)).map((r) => [r.status, Number(r.charged_micros)]),
      [
        ['closed', 10_000],
        ['closed', 10_000],
      ],
      'fixed-price runs close with the job',
    );
    assert.deepEqual(await wallet(consumer.userId), {
      balanceMicros: 980_000,
      heldMicros: 0,
      availableMicros: 980_000,
    });
  });

  describe('agent market', function () {
    async function marketAgent(toolEntryId: string, maxTotalUsd: number) {
      const owner = await h.createUser({ creditUsd: 1 });
      const name = `City facts ${randomBytes(3).toString('hex')}`;
      const created = await h.http('POST', '/api/v1/agent-market/submissions', {
        apiKey: owner.apiKey,
        body: {
          name,
          description: 'Looks cities up through a market tool',
          priceUsd: 0,
          suggestedLlmProvider: 'service',
          suggestedLlmModel: 'gpt-4o-mini',
          runMode: 'task',
          systemPrompt: 'Look the cities up with the lookup tool.',
          mcpSelections: [{ mcp_id: toolEntryId, tool_names: ['lookup'], max_total_usd: maxTotalUsd }],
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(
        created.body.mcpSelections[0].max_total_usd,
        maxTotalUsd,
        "the owner's view keeps the selection's cap",
      );
      assert.equal(
        (await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, { apiKey: owner.apiKey }))
          .status,
        200,
      );
      assert.equal(
        (await admin(h, ['review', '--market', 'agent', '--submission', created.body.id, '--approve'])).status,
        'approved',
      );
      return { agentId: created.body.publicId as string, name };
    }

    it("keeps the provider's max_total_usd, lists the market tools with their prices, honours the consumer's max_total_usd, and closes the job's market runs when it settles", async function () {
      const seller = await h.createUser({ creditUsd: 0 });
      const consumer = await h.createUser({ creditUsd: 5 });
      const tools = [
        { toolName: 'lookup', displayName: 'Look up a city', clientPriceUsd: 0.01 },
        { toolName: 'slow_lookup', displayName: 'Slow lookup', clientPriceUsd: 0.02 },
      ];
      const entry = await approvedEntry(
        h,
        seller,
        { monetizationStrategy: 'tool_call_fixed', tools },
        await validated(seller.userId),
      );
      const { agentId, name } = await marketAgent(entry.entryId, 0.015);

      const expected = [
        {
          mcpId: entry.entryId,
          available: true,
          slug: entry.slug,
          name: (await h.http('GET', `/api/v1/mcp-market/mcps/${entry.entryId}`, { apiKey: consumer.apiKey })).body
            .name,
          monetizationStrategy: 'tool_call_fixed',
          tools: [{ toolName: 'lookup', displayName: 'Look up a city', clientPriceUsd: 0.01 }],
          pricingEvents: [],
          maxTotalUsd: 0.015,
        },
      ];
      assert.deepEqual(
        (await h.http('GET', `/api/v1/agent-market/agents/${agentId}`, { apiKey: consumer.apiKey })).body.marketTools,
        expected,
      );
      const listed = (
        await h.http('GET', `/api/v1/agent-market/agents?q=${encodeURIComponent(name)}`, { apiKey: consumer.apiKey })
      ).body.agents.find((a: { id: string }) => a.id === agentId);
      assert.deepEqual(listed?.marketTools, expected);

      // The agent's cap, 0.015 USD per run, pays for one 0.01 call: the second is refused and charges nothing.
      h.llm.enqueue(
        act('lookup', { city: 'Lisbon' }, 'Look Lisbon up'),
        act('lookup', { city: 'Porto' }, 'Look Porto up'),
        act('done', { success: true, answer: 'Lisbon: 545000' }),
      );
      const accepted = await h.http('POST', `/api/v1/agent-market/agents/${agentId}/run`, {
        apiKey: consumer.apiKey,
        body: { task: 'Look up Lisbon and Porto', headless: true },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const run = await h.waitForJob(consumer.apiKey, `/api/v1/agent-market/runs/${accepted.body.jobId}`);
      assert.equal(run.status, 'completed', run.error);
      assert.deepEqual(
        run.toolCalls.map((c: any) => [c.tool, c.status, c.costUsd]),
        [
          ['lookup', 'completed', 0.01],
          ['lookup', 'failed', 0],
        ],
      );
      assert.match(run.toolCalls[1].error, /can pay at most 0\.005 USD more/);
      const runs = await runsOf(run.id);
      assert.deepEqual(
        runs.map((r) => [r.status, Number(r.charged_micros)]),
        [['closed', 10_000]],
        "the job's market run closed when the job settled",
      );
      assert.equal((await wallet(consumer.userId)).heldMicros, 0);

      // The consumer's own cap, below the price: refused before anything is sent.
      const calls = provider.calls().length;
      h.llm.enqueue(
        act('lookup', { city: 'Faro' }, 'Look Faro up'),
        act('done', { success: true, answer: 'not looked up' }),
      );
      const capped = await h.http('POST', `/api/v1/agent-market/agents/${agentId}/run`, {
        apiKey: consumer.apiKey,
        body: { task: 'Look up Faro', headless: true, max_total_usd: 0.005 },
      });
      assert.equal(capped.status, 202, JSON.stringify(capped.body));
      const cappedRun = await h.waitForJob(consumer.apiKey, `/api/v1/agent-market/runs/${capped.body.jobId}`);
      assert.equal(cappedRun.status, 'completed', cappedRun.error);
      assert.deepEqual(
        cappedRun.toolCalls.map((c: any) => [c.tool, c.status, c.costUsd]),
        [['lookup', 'failed', 0]],
      );
      assert.equal(provider.calls().length, calls);
      assert.equal(cappedRun.request.max_total_usd, 0.005);

      const invalid = await h.http('POST', `/api/v1/agent-market/agents/${agentId}/run`, {
        apiKey: consumer.apiKey,
        body: { task: 'x', max_total_usd: 0.0000001 },
      });
      assert.deepEqual([invalid.status, invalid.body.error.code], [400, 'validation_failed']);
      const document = (await h.http('GET', '/api/v1/openapi.json')).body;
      assert.match(
        document.components.schemas.MarketAgentRunRequest.properties.max_total_usd.description,
        /^Extension/,
      );
      assert.ok(document.components.schemas.AgentMarketPublicEntry.properties.marketTools);
    });
  });

  describe('after all of it', function () {
    it('leaves the books balanced', async function () {
      assert.deepEqual(await findLedgerProblems(h.db), []);
    });
  });
});
