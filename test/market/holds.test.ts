import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { sql } from 'kysely';
import { abandonJob, admitJob } from '../../db/repos/jobs';
import { getWalletSummary } from '../../db/repos/ledger';
import { findMarketRun } from '../../db/repos/market-runs';
import { loadConfig } from '../../lib/config';
import { useHarness, type Harness } from '../support/stack/harness';
import { approvedEntry, completeVerification, storeValidation } from '../support/market';
import { discoveredTools } from '../support/fakes/market-provider';
import { startMeteredProvider, type MeteredProvider } from '../support/fakes/market-metered-provider';
import { findLedgerProblems } from '../support/ledger-reconciliation';

type ToolResult = Awaited<ReturnType<Client['callTool']>>;
const textOf = (result: ToolResult) =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');
const billing = (result: ToolResult) => (result._meta as Record<string, any>)['scrape-platform/billing'];

/**
 * Holds that fit what a market run can cost (issue 20, section 3), through the hosted MCP endpoint:
 * a fixed-price call holds its price (in the window's run it shares with the credential's next calls); a credential's provider_event calls share one run whose unused
 * hold is released a grace after the last call; a consumer's cap per run reaches the provider; a
 * fixed-price settlement never debits money its expired run no longer reserved.
 */
describe('market holds that fit what a run can cost (hosted endpoint)', function () {
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

  async function connect(baseUrl: string, entryId: string, token: string) {
    const client = new Client({ name: 'market-holds', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp/${entryId}`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  const wallet = (userId: string) => getWalletSummary(h.db, userId);
  const validated = async (ownerId: string) =>
    storeValidation(h, ownerId, { url: provider.url, tools: await discoveredTools(provider.url) });

  async function fixedEntry(owner: { userId: string; apiKey: string }, priceUsd: number) {
    const tools = ['lookup', 'slow_lookup'].map((toolName) => ({
      toolName,
      displayName: toolName,
      clientPriceUsd: priceUsd,
    }));
    return approvedEntry(h, owner, { monetizationStrategy: 'tool_call_fixed', tools }, await validated(owner.userId));
  }

  async function eventEntry(owner: { userId: string; apiKey: string }, unitPriceUsd: number) {
    const validation = await validated(owner.userId);
    const eventVerificationId = await completeVerification(h, owner.apiKey, validation.sourceFingerprint, [
      'page.scraped',
    ]);
    return approvedEntry(
      h,
      owner,
      {
        monetizationStrategy: 'provider_event',
        pricingEvents: [{ eventName: 'page.scraped', unitPriceUsd }],
        eventVerificationId,
      },
      validation,
    );
  }

  it('a fixed-price call holds its price: a second call while the first is in flight is paid from the rest of the wallet', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 0.03 });
    const entry = await fixedEntry(seller, 0.012345);
    const client = await connect(h.baseUrl, entry.entryId, consumer.apiKey);

    const slow = client.callTool({
      name: 'slow_lookup',
      arguments: { city: 'Lisbon', gate: `fixed-${entry.entryId}` },
    });
    await provider.arrived(`fixed-${entry.entryId}`);
    assert.deepEqual(
      await wallet(consumer.userId),
      { balanceMicros: 30_000, heldMicros: 12_345, availableMicros: 17_655 },
      'the call in flight holds its price, not the run charge limit',
    );

    const second = await client.callTool({ name: 'lookup', arguments: { city: 'Porto' } });
    assert.equal(second.isError, false, textOf(second));
    assert.deepEqual([billing(second).outcome, billing(second).chargedUsd], ['answered', 0.012345]);

    provider.open(`fixed-${entry.entryId}`);
    const first = await slow;
    assert.equal(first.isError, false, textOf(first));
    assert.deepEqual([billing(first).outcome, billing(first).chargedUsd], ['answered', 0.012345]);
    assert.equal(
      billing(first).runId,
      billing(second).runId,
      "a credential's calls that follow each other share one run (a window), each holding its own price",
    );
    assert.deepEqual(await wallet(consumer.userId), {
      balanceMicros: 30_000 - 24_690,
      heldMicros: 0,
      availableMicros: 30_000 - 24_690,
    });

    // A third call finds 0.00531 USD available: refused, nothing charged, nothing held.
    const third = await client.callTool({ name: 'lookup', arguments: { city: 'Faro' } });
    assert.equal(third.isError, true);
    assert.deepEqual([billing(third).code, billing(third).chargedUsd], ['insufficient_funds', 0]);
    assert.deepEqual(await wallet(consumer.userId), { balanceMicros: 5_310, heldMicros: 0, availableMicros: 5_310 });
  });

  it('provider_event: ten $0.01 calls of a $3 wallet share one run, a paid scrape starts right after, and the unused hold is released a grace after the last call', async function () {
    const graceMs = 3_000;
    const stack = await h.startIsolatedStack({
      taskQueues: h.config.taskQueues,
      overrides: { market: { ...h.config.market, runIdleGraceMs: graceMs } },
      queues: [],
    });
    const seller = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 3 });
    const entry = await eventEntry(seller, 0.01);
    provider.configureCharging({ apiBase: stack.baseUrl, apiKey: seller.apiKey });
    const credential = await h.http('POST', `${stack.baseUrl}/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: {},
    });
    assert.equal(credential.status, 201, JSON.stringify(credential.body));
    const client = await connect(stack.baseUrl, entry.entryId, credential.body.credential);

    const runIds = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const result = await client.callTool({ name: 'charge_pages', arguments: { pages: 1 } });
      assert.equal(result.isError, false, `call ${i + 1}: ${textOf(result)}`);
      const { charge, forwarded } = JSON.parse(textOf(result));
      assert.deepEqual(
        [charge.status, charge.body.chargedCount],
        [200, 1],
        `call ${i + 1}: ${JSON.stringify(charge.body)}`,
      );
      assert.equal(
        forwarded['x-service-charge-max-total-usd'],
        '1',
        'the run can be charged at most MARKET_RUN_CHARGE_LIMIT_USD in total, over all its calls',
      );
      runIds.add(billing(result).runId);
    }
    assert.equal(runIds.size, 1, "the credential's calls that follow each other share one run");
    const [runId] = runIds;
    const lastCall = provider.calls().at(-1)!;

    // Within the grace the provider can still charge the run.
    const late = await provider.chargeLater(lastCall, 'late-within-grace');
    assert.deepEqual([late.status, late.body.chargedCount], [200, 1], JSON.stringify(late.body));
    assert.deepEqual(await wallet(consumer.userId), {
      balanceMicros: 2_890_000,
      heldMicros: 890_000,
      availableMicros: 2_000_000,
    });

    // A paid scrape is admitted at once: its hold comes from what is available.
    const scrape = await h.http('POST', `${stack.baseUrl}/api/v1/scrape`, {
      apiKey: consumer.apiKey,
      body: { url: `${h.site.url}/static?market-holds=1`, async: true },
    });
    assert.equal(scrape.status, 202, JSON.stringify(scrape.body));

    // The grace after the last call ends: the run's unused hold is released, and it takes no more charges.
    const deadline = Date.now() + graceMs + 10_000;
    while ((await findMarketRun(h.db, runId))!.idleUntil!.getTime() > Date.now() && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    await new Promise((r) => setTimeout(r, 200));
    const job = await h.waitForJob(consumer.apiKey, `/api/v1/scrape/status/${scrape.body.jobId}`);
    // waitForJob ends on completed or failed alike: the scrape must have completed, paid from the balance.
    assert.equal(job.status, 'completed', JSON.stringify(job));
    const after = await wallet(consumer.userId);
    assert.ok(after.balanceMicros < 2_890_000, `the scrape was debited: balance ${after.balanceMicros}`);
    assert.equal(after.heldMicros, 0, 'nothing stays held once the grace is over');
    assert.equal(after.availableMicros, after.balanceMicros);
    const tooLate = await provider.chargeLater(lastCall, 'late-after-grace');
    assert.equal(tooLate.status, 409, JSON.stringify(tooLate.body));
    assert.equal(tooLate.body.error.code, 'run_closed');
    assert.match(tooLate.body.error.message, /3 s after its last call ended/);
    const charges = await h.db
      .selectFrom('market_run_charges')
      .select(['total_micros'])
      .where('run_id', '=', runId)
      .execute();
    assert.equal(
      charges.reduce((sum, c) => sum + Number(c.total_micros), 0),
      110_000,
      'eleven events of 0.01 USD, nothing after the grace',
    );

    // The next call opens a new run.
    const next = await client.callTool({ name: 'charge_pages', arguments: { pages: 1 } });
    assert.equal(next.isError, false, textOf(next));
    assert.notEqual(billing(next).runId, runId);
  });

  it("x-service-charge-max-total-usd is the run's own limit, never the consumer's balance when the balance is lower", async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const entry = await eventEntry(seller, 0.01);
    provider.configureCharging({ apiBase: h.baseUrl, apiKey: seller.apiKey });
    const forwardedLimit = async (body: Record<string, unknown>) => {
      const consumer = await h.createUser({ creditUsd: 0.1 });
      const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
        apiKey: consumer.apiKey,
        body,
      });
      assert.equal(issued.status, 201, JSON.stringify(issued.body));
      const client = await connect(h.baseUrl, entry.entryId, issued.body.credential);
      const result = await client.callTool({ name: 'charge_pages', arguments: { pages: 1 } });
      assert.equal(result.isError, false, textOf(result));
      const run = (await findMarketRun(h.db, billing(result).runId))!;
      assert.equal(run.holdMicros, 100_000, 'the run holds what the wallet has');
      return provider.calls().at(-1)!['x-service-charge-max-total-usd'];
    };
    assert.equal(
      await forwardedLimit({ maxTotalUsdPerRun: 0.25 }),
      '0.25',
      "the consumer's cap, not the 0.1 USD wallet",
    );
    assert.equal(
      await forwardedLimit({}),
      String(h.config.market.runChargeLimitMicros / 1_000_000),
      'MARKET_RUN_CHARGE_LIMIT_USD, not the wallet',
    );
  });

  it('maxTotalUsdPerRun: a consumer sets a cap per credential, sees it, and the provider receives it as x-service-charge-max-total-usd', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 5 });
    const entry = await eventEntry(seller, 0.01);
    provider.configureCharging({ apiBase: h.baseUrl, apiKey: seller.apiKey });

    const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: { maxTotalUsdPerRun: 0.25 },
    });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    assert.equal(issued.body.maxTotalUsdPerRun, 0.25);
    const client = await connect(h.baseUrl, entry.entryId, issued.body.credential);
    const result = await client.callTool({ name: 'charge_pages', arguments: { pages: 30 } });
    const { charge, forwarded } = JSON.parse(textOf(result));
    assert.equal(forwarded['x-service-charge-max-total-usd'], '0.25');
    assert.deepEqual(
      [charge.body.requestedCount, charge.body.chargedCount, charge.body.eventChargeLimitReached],
      [30, 25, true],
    );
    assert.equal((await findMarketRun(h.db, billing(result).runId))!.holdMicros, 250_000);

    // The earlier name is a deprecated alias; both with different values are refused.
    const alias = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: { maxRunChargeUsd: 0.5 },
    });
    assert.equal(alias.status, 201, JSON.stringify(alias.body));
    assert.deepEqual([alias.body.maxTotalUsdPerRun, alias.body.maxRunChargeUsd], [0.5, 0.5]);
    const both = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: { maxTotalUsdPerRun: 0.5, maxRunChargeUsd: 0.6 },
    });
    assert.deepEqual([both.status, both.body.error.code], [400, 'validation_failed']);
    const fraction = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: { maxTotalUsdPerRun: 0.0000001 },
    });
    assert.deepEqual([fraction.status, fraction.body.error.code], [400, 'validation_failed']);

    // A fixed-price call above the cap is refused before anything is sent.
    const fixed = await fixedEntry(seller, 0.3);
    const capped = await h.http('POST', `/api/v1/mcp-market/mcps/${fixed.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: { maxTotalUsdPerRun: 0.25 },
    });
    const calls = provider.calls().length;
    const refused = await (
      await connect(h.baseUrl, fixed.entryId, capped.body.credential)
    ).callTool({ name: 'lookup', arguments: { city: 'Lyon' } });
    assert.deepEqual(
      [refused.isError, billing(refused).code, billing(refused).chargedUsd],
      [true, 'run_limit_reached', 0],
    );
    assert.equal(provider.calls().length, calls);

    const document = (await h.http('GET', '/api/v1/openapi.json')).body;
    const request = document.components.schemas.McpCredentialRequest.properties;
    assert.match(request.maxTotalUsdPerRun.description, /^Extension/);
    assert.equal(request.maxRunChargeUsd.deprecated, true);
    assert.ok(document.components.schemas.McpCredentialResponse.properties.maxTotalUsdPerRun);
  });

  it('a fixed-price call whose run expired while it ran is not billed, so money an admission reserved meanwhile is never spent twice', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 0.02 });
    const entry = await fixedEntry(seller, 0.015);
    const client = await connect(h.baseUrl, entry.entryId, consumer.apiKey);
    const gate = `expiry-${entry.entryId}`;
    const slow = client.callTool({ name: 'slow_lookup', arguments: { city: 'Lisbon', gate } });
    await provider.arrived(gate);
    // The call outlives its run (as if it ran past MARKET_RUN_TTL_MINUTES): the run's hold no longer counts.
    await sql`update market_runs set expires_at = now() - interval '1 second' where consumer_id = ${consumer.userId}::uuid and status = 'open'`.execute(
      h.db,
    );
    const admitted = await admitJob(h.db, {
      userId: consumer.userId,
      kind: 'scrape',
      request: {},
      webhookUrl: null,
      idempotencyKey: null,
      holdMaxMicros: 20_000,
    });
    assert.equal(admitted.outcome, 'created');

    provider.open(gate);
    const answered = await slow;
    assert.equal(answered.isError, false, textOf(answered));
    assert.deepEqual(
      [billing(answered).outcome, billing(answered).chargedUsd],
      ['answered', 0],
      'the platform absorbs the call instead of debiting reserved money',
    );
    assert.deepEqual(await wallet(consumer.userId), { balanceMicros: 20_000, heldMicros: 20_000, availableMicros: 0 });
    if (admitted.outcome === 'created') await abandonJob(h.db, admitted.job, 'test cleanup');
    assert.equal((await wallet(seller.userId)).balanceMicros, 0);
  });

  it('reads MARKET_RUN_IDLE_GRACE_SECONDS: 60 by default, 0 to 3600 and shorter than a run lives', function () {
    assert.equal(loadConfig({ ...h.env }).market.runIdleGraceMs, 60_000);
    assert.equal(loadConfig({ ...h.env, MARKET_RUN_IDLE_GRACE_SECONDS: '0' }).market.runIdleGraceMs, 0);
    assert.equal(loadConfig({ ...h.env, MARKET_RUN_IDLE_GRACE_SECONDS: '90' }).market.runIdleGraceMs, 90_000);
    for (const bad of ['-1', '1.5', 'soon', '3601'])
      assert.throws(
        () => loadConfig({ ...h.env, MARKET_RUN_IDLE_GRACE_SECONDS: bad }),
        /MARKET_RUN_IDLE_GRACE_SECONDS/,
      );
    assert.throws(
      () => loadConfig({ ...h.env, MARKET_RUN_TTL_MINUTES: '1', MARKET_RUN_IDLE_GRACE_SECONDS: '60' }),
      /shorter than a market run's lifetime/,
    );
  });

  describe('after all of it', function () {
    it('leaves the books balanced', async function () {
      assert.deepEqual(await findLedgerProblems(h.db), []);
    });
  });
});
