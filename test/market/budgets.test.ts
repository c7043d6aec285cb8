import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { selectionCapMicros } from '../../activities/tools/market';
import { getWalletSummary } from '../../db/repos/ledger';
import { acquireMarketRun, endMarketCall, type AcquireMarketRunInput } from '../../db/repos/market-runs';
import { useHarness, type Harness } from '../support/stack/harness';
import { approvedEntry, storeValidation } from '../support/market';
import { discoveredTools } from '../support/fakes/market-provider';
import { startMeteredProvider, type MeteredProvider } from '../support/fakes/market-metered-provider';
import { findLedgerProblems } from '../support/ledger-reconciliation';

type ToolResult = Awaited<ReturnType<Client['callTool']>>;
const textOf = (result: ToolResult) =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');
const billing = (result: ToolResult) => (result._meta as Record<string, any>)['scrape-platform/billing'];

/** An amount with more than 6 decimals: not a whole number of micro-USD (issue 34). */
const ATTACK_USD = 0.0100001;

/**
 * Caps and budgets (issue 34, "Money and caps"): a cap that is not a whole number of micro-USD is refused
 * wherever a cap is given (it used to be accepted and then dropped, meaning no cap at all), and a credential's
 * budgets (in all, and per calendar month UTC) bound what all its runs spend together, enforced in the statement
 * that takes each call's hold, so concurrent calls at the edge never pass them.
 */
describe('caps in whole micro-USD and credential budgets', function () {
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

  const wallet = (userId: string) => getWalletSummary(h.db, userId);
  async function fixedEntry(priceUsd: number) {
    const seller = await h.createUser({ creditUsd: 0 });
    const tools = ['lookup', 'slow_lookup'].map((toolName) => ({
      toolName,
      displayName: toolName,
      clientPriceUsd: priceUsd,
    }));
    const validation = await storeValidation(h, seller.userId, {
      url: provider.url,
      tools: await discoveredTools(provider.url),
    });
    return approvedEntry(h, seller, { monetizationStrategy: 'tool_call_fixed', tools }, validation);
  }

  async function connect(entryId: string, token: string) {
    const client = new Client({ name: 'budgets', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/mcp/${entryId}`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  const issue = (apiKey: string, entryId: string, body: Record<string, unknown>) =>
    h.http('POST', `/api/v1/mcp-market/mcps/${entryId}/credentials`, { apiKey, body });

  describe('a cap that is not a whole number of micro-USD', function () {
    it('is refused with 400 validation_failed naming the field, wherever it is given (agents, listings, credentials, budgets)', async function () {
      const entry = await fixedEntry(0.01);
      const consumer = await h.createUser({ creditUsd: 1 });

      const run = await h.http('POST', '/api/v1/agents/run', {
        apiKey: consumer.apiKey,
        body: {
          task: 'Look up Lisbon',
          llm_model: 'gpt-4o-mini',
          market_mcps: [{ mcp_id: entry.entryId, tool_names: ['lookup'], max_total_usd: ATTACK_USD }],
        },
      });
      assert.equal(run.status, 400, `accepted (it would run with no cap at all): ${JSON.stringify(run.body)}`);
      assert.equal(run.body.error.code, 'validation_failed');
      assert.deepEqual(
        run.body.error.details.map((d: { path: string; message: string }) => [d.path, d.message]),
        [['body/market_mcps/0/max_total_usd', 'must be a whole number of micro-USD (at most 6 decimals)']],
      );

      const listing = await h.http('POST', '/api/v1/agent-market/submissions', {
        apiKey: consumer.apiKey,
        body: {
          name: `Capped ${randomBytes(3).toString('hex')}`,
          description: 'Looks cities up through a market tool',
          priceUsd: 0,
          suggestedLlmProvider: 'service',
          suggestedLlmModel: 'gpt-4o-mini',
          runMode: 'task',
          systemPrompt: 'Look the cities up.',
          mcpSelections: [{ mcp_id: entry.entryId, tool_names: ['lookup'], max_total_usd: ATTACK_USD }],
        },
      });
      assert.equal(listing.status, 400, JSON.stringify(listing.body));
      assert.equal(listing.body.error.code, 'validation_failed');
      assert.deepEqual(
        listing.body.error.details.map((d: { path: string }) => d.path),
        ['body/mcpSelections/0/max_total_usd'],
      );

      for (const field of ['maxTotalUsdPerRun', 'budgetTotalUsd', 'budgetMonthlyUsd']) {
        const refused = await issue(consumer.apiKey, entry.entryId, { [field]: ATTACK_USD });
        assert.equal(refused.status, 400, `${field}: ${JSON.stringify(refused.body)}`);
        assert.equal(refused.body.error.code, 'validation_failed');
        assert.deepEqual(
          refused.body.error.details.map((d: { path: string }) => d.path),
          [`body/${field}`],
        );
      }
      const issued = await issue(consumer.apiKey, entry.entryId, {});
      assert.equal(issued.status, 201);
      const patch = await h.http('PATCH', `/api/v1/mcp-market/credentials/${issued.body.credentialId}`, {
        apiKey: consumer.apiKey,
        body: { budgetMonthlyUsd: ATTACK_USD },
      });
      assert.equal(patch.status, 400, JSON.stringify(patch.body));
      assert.deepEqual(
        patch.body.error.details.map((d: { path: string }) => d.path),
        ['body/budgetMonthlyUsd'],
      );
    });

    it('stored before this was checked, still bounds the runs: rounded down, never dropped', function () {
      assert.equal(selectionCapMicros({ max_total_usd: ATTACK_USD }, null), 10_000);
      assert.equal(selectionCapMicros({}, { max_total_usd: ATTACK_USD }), 10_000);
      assert.equal(selectionCapMicros({ max_total_usd: 0.5 }, { max_total_usd: ATTACK_USD }), 10_000);
      assert.equal(selectionCapMicros({ max_total_usd: 0.0000001 }, null), 0, 'below one micro-USD: nothing');
      assert.equal(selectionCapMicros({}, null), null);
    });
  });

  describe("API key budgets (the account's own calls)", function () {
    it("bound the calls made with the API key itself: concurrent calls never pass them, the refusal names the key's budget, a credential's calls are not the key's", async function () {
      const entry = await fixedEntry(0.01);
      const consumer = await h.createUser({ creditUsd: 1 });
      const key = () => h.http('GET', '/api/v1/account/api-key', { apiKey: consumer.apiKey });
      const setBudgets = (body: Record<string, unknown>) =>
        h.http('PATCH', '/api/v1/account/api-key', { apiKey: consumer.apiKey, body });

      const before = await key();
      assert.equal(before.status, 200, JSON.stringify(before.body));
      assert.deepEqual(
        [before.body.prefix, before.body.budgetTotalUsd, before.body.budgetMonthlyUsd, before.body.spentUsd],
        [consumer.apiKey.slice(0, 12), null, null, 0],
      );
      assert.ok(!JSON.stringify(before.body).includes(consumer.apiKey), 'never the key itself');
      for (const field of ['budgetTotalUsd', 'budgetMonthlyUsd']) {
        const refused = await setBudgets({ [field]: ATTACK_USD });
        assert.equal(refused.status, 400, `${field}: ${JSON.stringify(refused.body)}`);
        assert.equal(refused.body.error.code, 'validation_failed');
        assert.deepEqual(
          refused.body.error.details.map((d: { path: string }) => d.path),
          [`body/${field}`],
        );
      }
      assert.equal((await setBudgets({})).status, 400, 'no budget given');
      assert.equal((await setBudgets({ budgetTotalUsd: 0 })).status, 400, 'zero is no budget: null removes one');

      const set = await setBudgets({ budgetTotalUsd: 0.025 });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual([set.body.budgetTotalUsd, set.body.budgetMonthlyUsd], [0.025, null]);

      // The API key as the bearer token: eight concurrent calls of 0.01 USD under a 0.025 USD budget.
      const client = await connect(entry.entryId, consumer.apiKey);
      const calls = provider.calls().length;
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => client.callTool({ name: 'lookup', arguments: { city: `Town ${i}` } })),
      );
      const answered = results.filter((r) => !r.isError);
      assert.equal(answered.length, 2, `the key's calls spent past its budget: ${answered.length} answered`);
      assert.equal(provider.calls().length - calls, 2, 'refused calls were never forwarded');
      for (const r of results.filter((r) => r.isError)) {
        assert.deepEqual([billing(r).code, billing(r).chargedUsd], ['budget_reached', 0]);
        assert.match(
          textOf(r),
          /^This API key's total budget \(0\.025 USD\) is used up: it can spend at most 0\.005 USD more/,
        );
      }
      const spent = await key();
      assert.deepEqual([spent.body.spentUsd, spent.body.spentThisMonthUsd], [0.02, 0.02]);

      // A credential of the same account has budgets of its own: the key's do not bound it.
      const issued = await issue(consumer.apiKey, entry.entryId, {});
      const viaCredential = await (
        await connect(entry.entryId, issued.body.credential)
      ).callTool({ name: 'lookup', arguments: { city: 'Tavira' } });
      assert.equal(viaCredential.isError, false, textOf(viaCredential));

      // A monthly budget, the total one removed: the month's spending counts.
      const monthly = await setBudgets({ budgetTotalUsd: null, budgetMonthlyUsd: 0.03 });
      assert.deepEqual([monthly.body.budgetTotalUsd, monthly.body.budgetMonthlyUsd], [null, 0.03]);
      const third = await client.callTool({ name: 'lookup', arguments: { city: 'Lagos' } });
      assert.equal(third.isError, false, textOf(third));
      const fourth = await client.callTool({ name: 'lookup', arguments: { city: 'Sines' } });
      assert.equal(billing(fourth).code, 'budget_reached');
      assert.match(textOf(fourth), /API key's monthly budget \(0\.03 USD per calendar month, UTC\)/);
      assert.deepEqual(await wallet(consumer.userId), {
        balanceMicros: 960_000,
        heldMicros: 0,
        availableMicros: 960_000,
      });

      // A rotated key keeps the budgets (a rotation does not lift them) and starts with nothing spent.
      const rotated = await h.http('POST', `/admin/users/${consumer.userId}/rotate-key`, {
        headers: { authorization: `Bearer ${h.config.adminToken}` },
      });
      assert.equal(rotated.status, 200);
      const successor = await h.http('GET', '/api/v1/account/api-key', { apiKey: rotated.body.apiKey });
      assert.notEqual(successor.body.id, before.body.id);
      assert.deepEqual(
        [successor.body.budgetTotalUsd, successor.body.budgetMonthlyUsd, successor.body.spentUsd],
        [null, 0.03, 0],
      );
      assert.deepEqual(await findLedgerProblems(h.db), []);
    });
  });

  describe('credential budgets', function () {
    it('concurrent calls at the edge of a total budget never pass it; the refusal names the budget; a raised budget lets the next call through', async function () {
      const entry = await fixedEntry(0.01);
      const consumer = await h.createUser({ creditUsd: 1 });
      const issued = await issue(consumer.apiKey, entry.entryId, { budgetTotalUsd: 0.025, label: 'ci' });
      assert.equal(issued.status, 201, JSON.stringify(issued.body));
      assert.deepEqual([issued.body.budgetTotalUsd, issued.body.budgetMonthlyUsd], [0.025, null]);
      const client = await connect(entry.entryId, issued.body.credential);

      const calls = provider.calls().length;
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => client.callTool({ name: 'lookup', arguments: { city: `City ${i}` } })),
      );
      const answered = results.filter((r) => !r.isError);
      const refused = results.filter((r) => r.isError);
      assert.equal(answered.length, 2, 'two calls of 0.01 USD fit a 0.025 USD budget, and no more');
      assert.deepEqual(
        answered.map((r) => billing(r).chargedUsd),
        [0.01, 0.01],
      );
      assert.equal(provider.calls().length - calls, 2, 'refused calls were never forwarded');
      for (const r of refused) {
        assert.deepEqual([billing(r).code, billing(r).chargedUsd], ['budget_reached', 0]);
        assert.match(textOf(r), /total budget \(0\.025 USD\) is used up: it can spend at most 0\.005 USD more/);
      }
      assert.deepEqual(await wallet(consumer.userId), {
        balanceMicros: 980_000,
        heldMicros: 0,
        availableMicros: 980_000,
      });

      const listed = await h.http('GET', '/api/v1/mcp-market/credentials', { apiKey: consumer.apiKey });
      const row = listed.body.credentials.find((c: { id: string }) => c.id === issued.body.credentialId);
      assert.deepEqual(
        [row.budgetTotalUsd, row.budgetMonthlyUsd, row.spentUsd, row.spentThisMonthUsd],
        [0.025, null, 0.02, 0.02],
      );

      // Raised (and a monthly one set): the next call fits; removing the total budget leaves the monthly one.
      const raised = await h.http('PATCH', `/api/v1/mcp-market/credentials/${issued.body.credentialId}`, {
        apiKey: consumer.apiKey,
        body: { budgetTotalUsd: 0.03, budgetMonthlyUsd: 0.04 },
      });
      assert.equal(raised.status, 200, JSON.stringify(raised.body));
      assert.deepEqual([raised.body.budgetTotalUsd, raised.body.budgetMonthlyUsd], [0.03, 0.04]);
      const third = await client.callTool({ name: 'lookup', arguments: { city: 'Faro' } });
      assert.equal(third.isError, false, textOf(third));
      const fourth = await client.callTool({ name: 'lookup', arguments: { city: 'Braga' } });
      assert.equal(billing(fourth).code, 'budget_reached');
      const unbounded = await h.http('PATCH', `/api/v1/mcp-market/credentials/${issued.body.credentialId}`, {
        apiKey: consumer.apiKey,
        body: { budgetTotalUsd: null },
      });
      assert.deepEqual([unbounded.body.budgetTotalUsd, unbounded.body.budgetMonthlyUsd], [null, 0.04]);
      const fifth = await client.callTool({ name: 'lookup', arguments: { city: 'Braga' } });
      assert.equal(fifth.isError, false, textOf(fifth));
      const sixth = await client.callTool({ name: 'lookup', arguments: { city: 'Evora' } });
      assert.equal(billing(sixth).code, 'budget_reached');
      assert.match(textOf(sixth), /monthly budget \(0\.04 USD per calendar month, UTC\)/);

      // Another account cannot see or change it.
      const stranger = await h.createUser({ creditUsd: 0 });
      const foreign = await h.http('PATCH', `/api/v1/mcp-market/credentials/${issued.body.credentialId}`, {
        apiKey: stranger.apiKey,
        body: { budgetTotalUsd: 100 },
      });
      assert.equal(foreign.status, 404);
      assert.deepEqual(await findLedgerProblems(h.db), []);
    });

    it('the statement that takes the hold enforces the budget: twenty concurrent acquires of 0.01 USD under a 0.045 USD budget open exactly four', async function () {
      const entry = await fixedEntry(0.01);
      const consumer = await h.createUser({ creditUsd: 1 });
      const issued = await issue(consumer.apiKey, entry.entryId, { budgetTotalUsd: 0.045 });
      const base = await acquireInput(consumer.userId, entry.entryId, issued.body.credentialId);
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, () => acquireMarketRun(h.db, { ...base, reserveMicros: 10_000, shared: true })),
      );
      const taken = outcomes.filter((o) => o.outcome === 'opened' || o.outcome === 'joined');
      assert.equal(taken.length, 4, JSON.stringify(outcomes.map((o) => o.outcome)));
      assert.ok(outcomes.every((o) => o.outcome !== 'budget_reached' || o.roomMicros === 5_000));
      assert.equal((await wallet(consumer.userId)).heldMicros, 40_000, 'never more held than the budget');
      // Each call gives its run back (its reservation released).
      for (const o of taken)
        await endMarketCall(h.db, {
          runId: (o as { run: { id: string } }).run.id,
          releaseMicros: 10_000,
          close: false,
          graceMs: 0,
        });
      assert.equal((await wallet(consumer.userId)).heldMicros, 0);
    });

    it("a run that holds its full limit (a provider_event call's) holds at most what the budget leaves, and says so as its limit", async function () {
      const entry = await fixedEntry(0.01);
      const consumer = await h.createUser({ creditUsd: 1 });
      const issued = await issue(consumer.apiKey, entry.entryId, { budgetTotalUsd: 0.3 });
      const base = await acquireInput(consumer.userId, entry.entryId, issued.body.credentialId);
      const opened = await acquireMarketRun(h.db, { ...base, reserveMicros: null });
      assert.equal(opened.outcome, 'opened');
      const run = (opened as { run: { holdMicros: number; limitMicros: number | null } }).run;
      assert.deepEqual([run.holdMicros, run.limitMicros], [300_000, 300_000]);
      const next = await acquireMarketRun(h.db, { ...base, reserveMicros: null });
      assert.deepEqual(next, { outcome: 'budget_reached', budget: 'total', budgetMicros: 300_000, roomMicros: 0 });
      await endMarketCall(h.db, {
        runId: (opened as { run: { id: string } }).run.id,
        releaseMicros: 0,
        close: true,
        graceMs: 0,
      });
      assert.equal((await wallet(consumer.userId)).heldMicros, 0);
    });

    it('a new calendar month (UTC) resets the monthly budget, never the total one (the clock given to the statement)', async function () {
      const entry = await fixedEntry(0.015);
      const consumer = await h.createUser({ creditUsd: 1 });
      const issued = await issue(consumer.apiKey, entry.entryId, { budgetMonthlyUsd: 0.02, budgetTotalUsd: 0.032 });
      assert.equal(issued.status, 201, JSON.stringify(issued.body));
      const base = await acquireInput(consumer.userId, entry.entryId, issued.body.credentialId);
      // The month after the real one, so that the runs are live (unexpired) on the database's clock.
      const real = new Date();
      const boundary = Date.UTC(real.getUTCFullYear(), real.getUTCMonth() + 1, 1);
      const lastMinute = new Date(boundary - 60_000);
      const firstMinute = new Date(boundary + 60_000);
      const call = (now: Date) => acquireMarketRun(h.db, { ...base, reserveMicros: 15_000, now });

      const first = await call(lastMinute);
      assert.equal(first.outcome, 'opened');
      assert.deepEqual(await call(lastMinute), {
        outcome: 'budget_reached',
        budget: 'monthly',
        budgetMicros: 20_000,
        roomMicros: 5_000,
      });
      const nextMonth = await call(firstMinute);
      assert.equal(nextMonth.outcome, 'opened', 'the monthly budget starts again with the month');
      assert.deepEqual(
        await call(firstMinute),
        { outcome: 'budget_reached', budget: 'total', budgetMicros: 32_000, roomMicros: 2_000 },
        'the total budget counts both months',
      );
      for (const opened of [first, nextMonth])
        await endMarketCall(h.db, {
          runId: (opened as { run: { id: string } }).run.id,
          releaseMicros: 15_000,
          close: true,
          graceMs: 0,
        });
      assert.equal((await wallet(consumer.userId)).heldMicros, 0);
    });

    async function acquireInput(
      consumerId: string,
      entryId: string,
      credentialId: string,
    ): Promise<Omit<AcquireMarketRunInput, 'reserveMicros'>> {
      return {
        consumerId,
        entryId,
        selectionId: credentialId,
        capMicros: null,
        ttlMs: 600_000,
        limitMicros: h.config.market.runChargeLimitMicros,
        chargeTokenKey: h.config.market.chargeTokenKey,
        shared: false,
        minLifeMs: 0,
      };
    }
  });
});
