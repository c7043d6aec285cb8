import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../lib/config';
import { signChargeToken } from '../../lib/market/charge-token';
import { splitCharge } from '../../lib/market/commission';
import { closeMarketRun, findMarketRun, openMarketRun, type OpenMarketRunInput } from '../../db/repos/market-runs';
import { admitJob, abandonJob } from '../../db/repos/jobs';
import { getWalletSummary } from '../../db/repos/ledger';
import { findLedgerProblems } from '../support/ledger-reconciliation';
import { useHarness, type Harness } from '../support/stack/harness';
import { approvedEntry, approvedEventEntry, review } from '../support/market';

const HOUR = 3_600_000;

describe('market runs and production charges', function () {
  let h: Harness;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  const EVENTS = [
    { eventName: 'page.scraped', unitPriceUsd: 0.07 },
    { eventName: 'row.extracted', unitPriceUsd: 0.000003 },
  ];

  async function open(consumerId: string, entryId: string, overrides: Partial<OpenMarketRunInput> = {}) {
    const outcome = await openMarketRun(h.db, {
      consumerId,
      entryId,
      selectionId: `credential-${randomUUID()}`,
      ttlMs: HOUR,
      limitMicros: h.config.market.runChargeLimitMicros,
      chargeTokenKey: h.config.market.chargeTokenKey,
      ...overrides,
    });
    if (outcome.outcome !== 'opened') throw new Error(`run not opened: ${outcome.outcome}`);
    return outcome;
  }

  /** Answers the service had to retry: the platform should never need it on a loopback network. */
  const retried: string[] = [];
  afterEach(function () {
    assert.deepEqual(retried.splice(0), [], 'no charge request failed with a network error, 429 or 5xx');
  });

  /** A provider's service calling the charge endpoint; it retries network errors, 429 and 5xx with the same key. */
  async function charge(apiKey: string, run: { id: string }, token: string, key: string | null, body: unknown) {
    const headers: Record<string, string> = { 'x-service-charge-token': token };
    if (key !== null) headers['idempotency-key'] = key;
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await h.http('POST', `/api/v1/provider/runs/${run.id}/charge`, { apiKey, headers, body });
        if (response.status !== 429 && response.status < 500) return response;
        retried.push(`${response.status} ${JSON.stringify(response.body)}`);
        if (attempt >= 5) return response;
      } catch (err) {
        retried.push(String(err));
        if (attempt >= 5) throw err;
      }
    }
  }

  const balance = async (userId: string) => (await getWalletSummary(h.db, userId)).balanceMicros;

  async function setup(options: { consumerCreditUsd?: number } = {}) {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: options.consumerCreditUsd ?? 10 });
    const entry = await approvedEventEntry(h, provider, EVENTS);
    return { provider, consumer, entry };
  }

  it('splits an amount so that debit = revenue + commission exactly, commission rounded down', function () {
    assert.deepEqual(
      splitCharge({ count: 3, unitPriceMicros: 70_000, remainingMicros: 1_000_000, commissionPpm: 200_000 }),
      {
        chargedCount: 3,
        chargeableWithinLimit: 11,
        eventChargeLimitReached: false,
        totalMicros: 210_000,
        commissionMicros: 42_000,
        providerRevenueMicros: 168_000,
      },
    );
    const odd = splitCharge({ count: 1, unitPriceMicros: 3, remainingMicros: 10, commissionPpm: 200_000 });
    assert.deepEqual([odd.totalMicros, odd.commissionMicros, odd.providerRevenueMicros], [3, 0, 3]);
    const capped = splitCharge({
      count: 10,
      unitPriceMicros: 70_000,
      remainingMicros: 290_000,
      commissionPpm: 333_333,
    });
    assert.deepEqual(
      [
        capped.chargedCount,
        capped.chargeableWithinLimit,
        capped.eventChargeLimitReached,
        capped.totalMicros,
        capped.commissionMicros,
      ],
      [4, 0, true, 280_000, 93_333],
    );
    for (let total = 0; total < 2_000; total += 7) {
      const split = splitCharge({ count: total, unitPriceMicros: 1, remainingMicros: total, commissionPpm: 123_457 });
      assert.equal(split.commissionMicros + split.providerRevenueMicros, total);
    }
  });

  it('reads MARKET_RUN_CHARGE_LIMIT_USD as a positive whole number of micro-USD', function () {
    assert.equal(loadConfig({ ...h.env }).market.runChargeLimitMicros, 1_000_000);
    assert.equal(loadConfig({ ...h.env, MARKET_RUN_CHARGE_LIMIT_USD: '0.25' }).market.runChargeLimitMicros, 250_000);
    for (const bad of ['0', '-1', '0.0000001', 'lots']) {
      assert.throws(() => loadConfig({ ...h.env, MARKET_RUN_CHARGE_LIMIT_USD: bad }), /MARKET_RUN_CHARGE_LIMIT_USD/);
    }
  });

  it('holds min(available, the consumer cap, the run charge limit) from the same available balance as job holds, and releases the rest on close', async function () {
    const { consumer, entry } = await setup({ consumerCreditUsd: 1.5 });
    const limited = await open(consumer.userId, entry.entryId);
    assert.equal(limited.run.holdMicros, 1_000_000, 'MARKET_RUN_CHARGE_LIMIT_USD defaults to 1.00');
    let wallet = await getWalletSummary(h.db, consumer.userId);
    assert.deepEqual(wallet, { balanceMicros: 1_500_000, heldMicros: 1_000_000, availableMicros: 500_000 });
    const account = await h.http('GET', '/api/v1/account', { apiKey: consumer.apiKey });
    assert.deepEqual([account.body.balanceUsd, account.body.heldUsd, account.body.availableUsd], [1.5, 1, 0.5]);

    const capped = await open(consumer.userId, entry.entryId, { capMicros: 200_000 });
    assert.equal(capped.run.holdMicros, 200_000, 'the consumer cap binds');
    const rest = await open(consumer.userId, entry.entryId);
    assert.equal(rest.run.holdMicros, 300_000, 'only what is available is held');
    const none = await openMarketRun(h.db, {
      consumerId: consumer.userId,
      entryId: entry.entryId,
      selectionId: 's',
      ttlMs: HOUR,
      limitMicros: 1_000_000,
      chargeTokenKey: h.config.market.chargeTokenKey,
    });
    assert.equal(none.outcome, 'insufficient_funds');
    const job = await admitJob(h.db, {
      userId: consumer.userId,
      kind: 'scrape',
      request: {},
      webhookUrl: null,
      idempotencyKey: null,
      holdMaxMicros: 500_000,
    });
    assert.equal(job.outcome, 'insufficient_funds', 'a job admission sees the market holds');

    assert.deepEqual(await closeMarketRun(h.db, limited.run.id), {
      closed: true,
      releasedMicros: 1_000_000,
      chargedMicros: 0,
    });
    assert.deepEqual(
      await closeMarketRun(h.db, limited.run.id),
      { closed: false, releasedMicros: 0, chargedMicros: 0 },
      'closing twice changes nothing',
    );
    wallet = await getWalletSummary(h.db, consumer.userId);
    assert.deepEqual(wallet, { balanceMicros: 1_500_000, heldMicros: 500_000, availableMicros: 1_000_000 });
    const admitted = await admitJob(h.db, {
      userId: consumer.userId,
      kind: 'scrape',
      request: {},
      webhookUrl: null,
      idempotencyKey: null,
      holdMaxMicros: 500_000,
    });
    assert.equal(admitted.outcome, 'created');
    if (admitted.outcome === 'created') await abandonJob(h.db, admitted.job, 'test cleanup');

    // An expired run holds nothing any more.
    const expired = await open(consumer.userId, entry.entryId, { ttlMs: 1_000, now: new Date(Date.now() - 60_000) });
    assert.ok(expired.run.holdMicros > 0);
    assert.equal((await getWalletSummary(h.db, consumer.userId)).heldMicros, 500_000);
    await Promise.all([capped, rest, expired].map((r) => closeMarketRun(h.db, r.run.id)));
    assert.equal((await getWalletSummary(h.db, consumer.userId)).heldMicros, 0);
  });

  it('never holds more than the available balance when runs of one consumer open concurrently', async function () {
    const { consumer, entry } = await setup({ consumerCreditUsd: 1 });
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () =>
        openMarketRun(h.db, {
          consumerId: consumer.userId,
          entryId: entry.entryId,
          selectionId: `credential-${randomUUID()}`,
          ttlMs: HOUR,
          limitMicros: 300_000,
          chargeTokenKey: h.config.market.chargeTokenKey,
        }),
      ),
    );
    const holds = outcomes.map((o) => (o.outcome === 'opened' ? o.run.holdMicros : 0)).sort((a, b) => b - a);
    assert.deepEqual(holds, [300_000, 300_000, 300_000, 100_000, 0, 0, 0, 0]);
    assert.equal(outcomes.filter((o) => o.outcome === 'insufficient_funds').length, 4);
    assert.equal((await getWalletSummary(h.db, consumer.userId)).availableMicros, 0);
  });

  it('opens runs only for live approved entries, holds nothing for a free entry, and refuses an inactive subscription', async function () {
    const { consumer, entry } = await setup();
    const outcome = (entryId: string, consumerId = consumer.userId) =>
      openMarketRun(h.db, {
        consumerId,
        entryId,
        selectionId: 's',
        ttlMs: HOUR,
        limitMicros: 1_000_000,
        chargeTokenKey: h.config.market.chargeTokenKey,
      }).then((o) => o.outcome);
    assert.equal(await outcome(randomUUID()), 'entry_not_found');
    const broke = await h.createUser({ creditUsd: 0 });
    assert.equal(await outcome(entry.entryId, broke.userId), 'insufficient_funds');
    const inactive = await h.createUser({ creditUsd: 5 });
    const deactivated = await h.http('PATCH', `/admin/users/${inactive.userId}/subscription`, {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { status: 'inactive' },
    });
    assert.equal(deactivated.status, 200);
    assert.equal(await outcome(entry.entryId, inactive.userId), 'subscription_inactive');
    await review(h, entry.submissionId, 'disable');
    assert.equal(await outcome(entry.entryId), 'entry_not_found', 'a disabled entry opens no runs');

    const free = await approvedEntry(h, await h.createUser());
    const run = await open(broke.userId, free.entryId);
    assert.equal(run.run.holdMicros, 0, 'a free entry holds nothing');
    await closeMarketRun(h.db, run.run.id);
  });

  it('charges the consumer and credits the provider in one transaction, split by the commission, with the run id on both entries', async function () {
    const { provider, consumer, entry } = await setup();
    const { run, chargeToken } = await open(consumer.userId, entry.entryId);
    assert.match(chargeToken, /^mct1\./);
    const response = await charge(provider.apiKey, run, chargeToken, 'evt-1', {
      eventName: 'page.scraped',
      count: 3,
      toolName: 'scrape',
    });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    const { chargeId, meterEventId, ...rest } = response.body;
    assert.match(chargeId, /^[0-9a-f-]{36}$/);
    assert.equal(meterEventId, `mev_${chargeId}`);
    assert.deepEqual(rest, {
      eventName: 'page.scraped',
      requestedCount: 3,
      chargedCount: 3,
      chargeableWithinLimit: 11,
      eventChargeLimitReached: false,
      unitPriceUsd: 0.07,
      totalChargedUsd: 0.21,
      commissionRate: 0.2,
      commissionUsd: 0.042,
      providerRevenueUsd: 0.168,
      replayed: false,
      verification: false,
    });
    assert.equal(await balance(consumer.userId), 10_000_000 - 210_000);
    assert.equal(await balance(provider.userId), 168_000);
    const entries = await h.db
      .selectFrom('ledger_entries')
      .selectAll()
      .where('market_run_id', '=', run.id)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      entries.map((e) => [e.user_id, e.kind, e.amount_micros]),
      [
        [consumer.userId, 'usage', -210_000],
        [provider.userId, 'revenue', 168_000],
      ],
    );
    assert.equal((await findMarketRun(h.db, run.id))!.chargedMicros, 210_000);
    const wallet = await getWalletSummary(h.db, consumer.userId);
    assert.equal(wallet.heldMicros, 1_000_000 - 210_000, 'what is charged leaves the hold');

    const transactions = await h.http('GET', '/api/v1/transactions', { apiKey: consumer.apiKey });
    const line = transactions.body.transactions[0];
    assert.equal(line.agentName, `market:${entry.slug}`);
    assert.equal(line.cost, 0.21);
    assert.equal(line.payload.runId, run.id);
    assert.equal(line.payload.chargedCount, 3);

    // A price of 3 micro-USD: commission rounds down to 0, the provider gets all 3.
    const tiny = await charge(provider.apiKey, run, chargeToken, 'evt-2', { eventName: 'row.extracted' });
    assert.deepEqual(
      [tiny.body.totalChargedUsd, tiny.body.commissionUsd, tiny.body.providerRevenueUsd],
      [0.000003, 0, 0.000003],
    );
    assert.equal(await balance(provider.userId), 168_003);
    await closeMarketRun(h.db, run.id);
    assert.equal((await getWalletSummary(h.db, consumer.userId)).heldMicros, 0);
    assert.equal(await balance(consumer.userId), 10_000_000 - 210_003);
  });

  it('caps chargedCount at what the run can still pay for and reports the limit', async function () {
    const { provider, consumer, entry } = await setup();
    const { run, chargeToken } = await open(consumer.userId, entry.entryId, { capMicros: 500_000 });
    const first = await charge(provider.apiKey, run, chargeToken, 'a', { eventName: 'page.scraped', count: 3 });
    assert.deepEqual(
      [first.body.chargedCount, first.body.chargeableWithinLimit, first.body.eventChargeLimitReached],
      [3, 4, false],
    );
    const second = await charge(provider.apiKey, run, chargeToken, 'b', { eventName: 'page.scraped', count: 10 });
    assert.equal(second.status, 200);
    assert.deepEqual(
      [
        second.body.requestedCount,
        second.body.chargedCount,
        second.body.chargeableWithinLimit,
        second.body.eventChargeLimitReached,
        second.body.totalChargedUsd,
      ],
      [10, 4, 0, true, 0.28],
    );
    const third = await charge(provider.apiKey, run, chargeToken, 'c', { eventName: 'page.scraped', count: 1 });
    assert.deepEqual(
      [third.status, third.body.chargedCount, third.body.totalChargedUsd, third.body.eventChargeLimitReached],
      [200, 0, 0, true],
    );
    // 0.01 USD is left: the cheap event still fits.
    const cheap = await charge(provider.apiKey, run, chargeToken, 'd', { eventName: 'row.extracted', count: 5000 });
    assert.deepEqual([cheap.body.chargedCount, cheap.body.chargeableWithinLimit], [3333, 0]);
    assert.equal(await balance(consumer.userId), 10_000_000 - 490_000 - 9_999);
    const debits = await h.db
      .selectFrom('ledger_entries')
      .select('amount_micros')
      .where('market_run_id', '=', run.id)
      .where('kind', '=', 'usage')
      .execute();
    assert.equal(debits.length, 3, 'a charge of zero units writes no ledger entry');
    await closeMarketRun(h.db, run.id);
  });

  it('never lets parallel charges with distinct keys spend more than the hold', async function () {
    this.timeout(60_000);
    const { provider, consumer, entry } = await setup();
    const { run, chargeToken } = await open(consumer.userId, entry.entryId, { capMicros: 500_000 });
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        charge(provider.apiKey, run, chargeToken, `parallel-${i}`, { eventName: 'page.scraped' }),
      ),
    );
    assert.deepEqual([...new Set(responses.map((r) => r.status))], [200]);
    assert.equal(
      responses.reduce((sum, r) => sum + r.body.chargedCount, 0),
      7,
    );
    assert.equal((await findMarketRun(h.db, run.id))!.chargedMicros, 490_000);
    assert.equal(await balance(consumer.userId), 10_000_000 - 490_000);
    await closeMarketRun(h.db, run.id);
  });

  it('replays a repeated key with the original result, refuses it with another body, and charges once for 200 concurrent requests', async function () {
    this.timeout(120_000);
    const { provider, consumer, entry } = await setup();
    const { run, chargeToken } = await open(consumer.userId, entry.entryId);
    const body = { eventName: 'page.scraped', count: 2, metadata: { page: 'https://example.com/a' } };
    const responses = await Promise.all(
      Array.from({ length: 200 }, () => charge(provider.apiKey, run, chargeToken, 'one-key', body)),
    );
    assert.deepEqual([...new Set(responses.map((r) => r.status))], [200]);
    assert.equal(responses.filter((r) => r.body.replayed === false).length, 1);
    assert.equal(new Set(responses.map((r) => r.body.chargeId)).size, 1, 'every replay returns the original charge');
    assert.ok(responses.every((r) => r.body.chargedCount === 2 && r.body.totalChargedUsd === 0.14));
    const rows = await h.db.selectFrom('market_run_charges').selectAll().where('run_id', '=', run.id).execute();
    assert.equal(rows.length, 1);
    const debits = await h.db
      .selectFrom('ledger_entries')
      .selectAll()
      .where('market_run_id', '=', run.id)
      .where('kind', '=', 'usage')
      .execute();
    assert.equal(debits.length, 1);
    assert.equal(await balance(consumer.userId), 10_000_000 - 140_000);

    const conflict = await charge(provider.apiKey, run, chargeToken, 'one-key', { ...body, count: 3 });
    assert.deepEqual([conflict.status, conflict.body.error.code], [409, 'idempotency_conflict']);
    // A provider retrying after a lost response reuses the key: the answer is the original, nothing is charged again.
    const retried = await charge(provider.apiKey, run, chargeToken, 'one-key', body);
    assert.deepEqual(
      [retried.status, retried.body.replayed, retried.body.chargeId],
      [200, true, responses[0].body.chargeId],
    );
    await closeMarketRun(h.db, run.id);
    const afterClose = await charge(provider.apiKey, run, chargeToken, 'one-key', body);
    assert.deepEqual(
      [afterClose.status, afterClose.body.replayed],
      [200, true],
      'a replay is answered after the run closed',
    );
    assert.equal(await balance(consumer.userId), 10_000_000 - 140_000);
  });

  it('answers every refusal with its documented status and moves no money', async function () {
    const { provider, consumer, entry } = await setup();
    const other = await h.createUser();
    const { run, chargeToken } = await open(consumer.userId, entry.entryId);
    const body = { eventName: 'page.scraped' };
    const expectError = async (response: { status: number; body: any }, status: number, code: string) => {
      assert.equal(response.status, status, JSON.stringify(response.body));
      assert.equal(response.body.error.code, code);
    };
    await expectError(await charge(provider.apiKey, run, chargeToken, null, body), 400, 'idempotency_key_required');
    await expectError(
      await charge(provider.apiKey, run, chargeToken, 'k', { eventName: 'page.scraped', count: 0 }),
      400,
      'validation_failed',
    );
    await expectError(
      await charge(provider.apiKey, run, chargeToken, 'k', { eventName: 'invoice.paid' }),
      400,
      'unknown_event',
    );
    await expectError(await charge(other.apiKey, run, chargeToken, 'k', body), 403, 'charge_forbidden');
    await expectError(await charge(consumer.apiKey, run, chargeToken, 'k', body), 403, 'charge_forbidden');
    const key = h.config.market.chargeTokenKey;
    const claims = {
      kind: 'run' as const,
      runId: run.id,
      providerId: provider.userId,
      entryId: entry.entryId,
      exp: Date.now() + 60_000,
    };
    await expectError(
      await charge(provider.apiKey, run, signChargeToken(Buffer.alloc(32, 9), claims), 'k', body),
      403,
      'invalid_charge_token',
    );
    await expectError(
      await charge(provider.apiKey, run, signChargeToken(key, { ...claims, entryId: randomUUID() }), 'k', body),
      403,
      'invalid_charge_token',
    );
    await expectError(
      await charge(provider.apiKey, run, signChargeToken(key, { ...claims, exp: Date.now() - 1 }), 'k', body),
      403,
      'charge_token_expired',
    );
    const second = await open(consumer.userId, entry.entryId);
    await expectError(await charge(provider.apiKey, run, second.chargeToken, 'k', body), 403, 'invalid_charge_token');
    const ghost = randomUUID();
    await expectError(
      await charge(provider.apiKey, { id: ghost }, signChargeToken(key, { ...claims, runId: ghost }), 'k', body),
      404,
      'run_not_found',
    );

    // A run past its expiry refuses charges even with a token that claims to live longer.
    const lapsed = await open(consumer.userId, entry.entryId, { ttlMs: 1_000, now: new Date(Date.now() - 60_000) });
    await expectError(
      await charge(provider.apiKey, lapsed.run, lapsed.chargeToken, 'k', body),
      403,
      'charge_token_expired',
    );
    await expectError(
      await charge(provider.apiKey, lapsed.run, signChargeToken(key, { ...claims, runId: lapsed.run.id }), 'k', body),
      403,
      'charge_token_expired',
    );

    await closeMarketRun(h.db, second.run.id);
    await expectError(await charge(provider.apiKey, second.run, second.chargeToken, 'k', body), 409, 'run_closed');

    await review(h, entry.submissionId, 'disable');
    await expectError(await charge(provider.apiKey, run, chargeToken, 'k', body), 409, 'entry_not_active');
    await closeMarketRun(h.db, run.id);

    assert.equal(await balance(consumer.userId), 10_000_000);
    assert.equal(await balance(provider.userId), 0);
    const charges = await h.db
      .selectFrom('market_run_charges')
      .select('id')
      .where('run_id', 'in', [run.id, second.run.id, lapsed.run.id])
      .execute();
    assert.equal(charges.length, 0, 'nothing refused was recorded');
  });

  it('the end-of-suite ledger reconciliation finds broken market books (planted in a rolled-back transaction)', async function () {
    const { provider, consumer, entry } = await setup();
    const { run, chargeToken } = await open(consumer.userId, entry.entryId);
    assert.equal((await charge(provider.apiKey, run, chargeToken, 'ok', { eventName: 'page.scraped' })).status, 200);
    assert.deepEqual(
      (await findLedgerProblems(h.db)).filter((p) => JSON.stringify(p.rows).includes(run.id)),
      [],
      'the real charge reconciles',
    );
    class Rollback extends Error {}
    let problems: Awaited<ReturnType<typeof findLedgerProblems>> = [];
    await assert.rejects(
      h.db.transaction().execute(async (trx) => {
        const entryRow = (
          key: string,
          userId: string,
          kind: 'usage' | 'revenue',
          amount: number,
          marketRunId: string | null,
        ) => ({
          user_id: userId,
          kind,
          amount_micros: amount,
          balance_after_micros: 0,
          idempotency_key: key,
          job_id: null,
          market_run_id: marketRunId,
          description: 'planted',
        });
        await trx
          .insertInto('ledger_entries')
          .values([
            entryRow(`planted-revenue:${run.id}`, provider.userId, 'revenue', 5, run.id),
            entryRow(`planted-misdirected:${run.id}`, consumer.userId, 'revenue', 1, run.id),
            entryRow(`planted-orphan-revenue:${run.id}`, provider.userId, 'revenue', 1, null),
          ])
          .execute();
        problems = await findLedgerProblems(trx);
        throw new Rollback();
      }),
      Rollback,
    );
    const mine = (check: string) =>
      problems
        .find((p) => p.check === check)
        ?.rows.filter((r) => JSON.stringify(r).includes(run.id) || JSON.stringify(r).includes(provider.userId)) ?? [];
    for (const check of [
      'market ledger entry that points at no market run, or at the wrong account of its run',
      'market run whose debits, revenue credits and commission do not balance with its charges',
    ]) {
      assert.ok(mine(check).length > 0, `${check} was not found: ${JSON.stringify(problems)}`);
    }
    await closeMarketRun(h.db, run.id);
  });
});
