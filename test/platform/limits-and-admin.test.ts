import assert from 'node:assert/strict';
import { useHarness, type Harness } from '../support/stack/harness';

describe('plans, limits and money', function () {
  let h: Harness;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  it('admits exactly 10 of 50 concurrent requests against a monthly limit of 10', async function () {
    // Enough credit for 50 holds (HOLD_MAX_USD_SCRAPE, default $0.50 each): only the monthly limit binds here.
    const { apiKey, userId } = await h.createUser({ creditUsd: 30, monthlyOperationLimit: 10 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static?n=${i}` } }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 202).length, 10, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 429).length, 40, statuses.join(','));
    for (const r of responses.filter((r) => r.status === 429)) assert.equal(r.body.error.code, 'monthly_limit_reached');
    const jobs = await h.db.selectFrom('jobs').select('id').where('user_id', '=', userId).execute();
    assert.equal(jobs.length, 10);
    const accepted = responses.filter((r) => r.status === 202).map((r) => r.body.jobId);
    for (const jobId of accepted) {
      const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${jobId}`);
      assert.equal(job.status, 'completed', job.error);
    }
  });

  it('refuses runs with 403 when the subscription is inactive, before creating a job', async function () {
    const { apiKey, userId } = await h.createUser();
    const admin = { authorization: `Bearer ${h.config.adminToken}` };
    const deactivated = await h.http('PATCH', `/admin/users/${userId}/subscription`, {
      headers: admin,
      body: { status: 'inactive' },
    });
    assert.equal(deactivated.status, 200);
    const response = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static` } });
    assert.equal(response.status, 403);
    assert.equal(response.body.error.code, 'subscription_inactive');
    assert.equal((await h.db.selectFrom('jobs').select('id').where('user_id', '=', userId).execute()).length, 0);
  });

  it('refuses runs with 402 while the wallet is empty, and admits them after a credit', async function () {
    const { apiKey, userId } = await h.createUser({ creditUsd: 0 });
    const refused = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static` } });
    assert.equal(refused.status, 402);
    assert.equal(refused.body.error.code, 'insufficient_funds');
    const admin = { authorization: `Bearer ${h.config.adminToken}` };
    const credited = await h.http('POST', `/admin/users/${userId}/credit`, {
      headers: admin,
      body: { amountUsd: 1.5, idempotencyKey: 'topup-1' },
    });
    assert.equal(credited.status, 200);
    assert.equal(credited.body.balanceUsd, 1.5);
    const replay = await h.http('POST', `/admin/users/${userId}/credit`, {
      headers: admin,
      body: { amountUsd: 1.5, idempotencyKey: 'topup-1' },
    });
    assert.equal(replay.body.replayed, true);
    assert.equal(replay.body.balanceUsd, 1.5);
    const admitted = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static` } });
    assert.equal(admitted.status, 202);
  });

  it('debits each finished job once, in integer micro-USD, matching its transaction', async function () {
    const { apiKey, userId } = await h.createUser({ creditUsd: 2 });
    const accepted = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/spa` } });
    const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`);
    assert.equal(job.status, 'completed', job.error);
    const [tx] = (await h.http('GET', '/api/v1/transactions', { apiKey })).body.transactions;
    assert.ok(tx.payload.browserSeconds > 0);
    assert.ok(tx.payload.llm[0].promptTokens > 0);
    const entries = await h.db
      .selectFrom('ledger_entries')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      entries.map((e) => e.kind),
      ['credit', 'usage'],
    );
    assert.equal(entries[1].amount_micros, -Math.round(tx.cost * 1e6));
    assert.ok(Number.isInteger(entries[1].amount_micros));
    const account = await h.http('GET', '/api/v1/account', { apiKey });
    assert.equal(account.body.balanceUsd, (2_000_000 + entries[1].amount_micros) / 1e6);
    assert.equal(job.result.usage.costUsd, tx.cost);
  });
});

describe('admin API', function () {
  let h: Harness;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  it('requires the admin token', async function () {
    for (const headers of [{}, { authorization: 'Bearer wrong-token-wrong-token' }] as Record<string, string>[]) {
      const response = await h.http('POST', '/admin/users', { headers, body: { email: 'x@example.com' } });
      assert.equal(response.status, 401);
      assert.equal(response.body.error.code, 'unauthorized');
    }
  });

  it('creates users with limits, rejects duplicates and bad input', async function () {
    const admin = { authorization: `Bearer ${h.config.adminToken}` };
    const created = await h.http('POST', '/admin/users', {
      headers: admin,
      body: { email: 'Limits@Example.com', monthlyOperationLimit: 7, automationLimit: 2 },
    });
    assert.equal(created.status, 201);
    assert.deepEqual(Object.keys(created.body).sort(), ['apiKey', 'userId']);
    const account = await h.http('GET', '/api/v1/account', { apiKey: created.body.apiKey });
    assert.equal(account.body.email, 'limits@example.com');
    assert.equal(account.body.subscription.monthlyOperationLimit, 7);
    assert.equal(account.body.subscription.automationLimit, 2);
    const duplicate = await h.http('POST', '/admin/users', { headers: admin, body: { email: 'limits@example.com' } });
    assert.equal(duplicate.status, 409);
    const bad = await h.http('POST', '/admin/users', {
      headers: admin,
      body: { email: 'not-an-email', creditUsd: -1 },
    });
    assert.equal(bad.status, 400);
    const row = await h.db
      .selectFrom('api_keys')
      .selectAll()
      .where('user_id', '=', created.body.userId)
      .executeTakeFirstOrThrow();
    assert.notEqual(row.key_hash, created.body.apiKey);
    assert.ok(!JSON.stringify(row).includes(created.body.apiKey));
  });

  it('rotates a key: the old one stops working', async function () {
    const { apiKey, userId } = await h.createUser();
    const admin = { authorization: `Bearer ${h.config.adminToken}` };
    const rotated = await h.http('POST', `/admin/users/${userId}/rotate-key`, { headers: admin });
    assert.equal(rotated.status, 200);
    assert.equal((await h.http('GET', '/api/v1/logs', { apiKey })).status, 401);
    assert.equal((await h.http('GET', '/api/v1/logs', { apiKey: rotated.body.apiKey })).status, 200);
  });

  it('changes limits and answers 404 for unknown users', async function () {
    const { apiKey, userId } = await h.createUser({ monthlyOperationLimit: 1 });
    const admin = { authorization: `Bearer ${h.config.adminToken}` };
    assert.equal(
      (await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static` } })).status,
      202,
    );
    assert.equal(
      (await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static` } })).status,
      429,
    );
    const raised = await h.http('PATCH', `/admin/users/${userId}/subscription`, {
      headers: admin,
      body: { monthlyOperationLimit: 2 },
    });
    assert.equal(raised.body.monthlyOperationLimit, 2);
    assert.equal(
      (await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static` } })).status,
      202,
    );
    const missing = await h.http('PATCH', '/admin/users/7f1c9c3e-7c49-4d36-9d54-2d1a3a3f9a11/subscription', {
      headers: admin,
      body: { status: 'inactive' },
    });
    assert.equal(missing.status, 404);
    const empty = await h.http('PATCH', `/admin/users/${userId}/subscription`, { headers: admin, body: {} });
    assert.equal(empty.status, 400);
  });
});
