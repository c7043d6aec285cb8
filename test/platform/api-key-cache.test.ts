import assert from 'node:assert/strict';
import pg from 'pg';
import { useHarness, type Harness } from '../support/stack/harness';
import { API_KEY_CACHE_TTL_MS } from '../../db/repos/users';

/** API keys are remembered for a few seconds; changes must still take effect as documented. */
describe('API key lookups (short-lived cache)', function () {
  let h: Harness;
  const admin = () => ({ authorization: `Bearer ${h.config.adminToken}` });

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  it('refuses a rotated key at once, even one used a moment ago', async function () {
    const { apiKey, userId } = await h.createUser();
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey })).status, 200);
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey })).status, 200);
    const rotated = await h.http('POST', `/admin/users/${userId}/rotate-key`, { headers: admin() });
    assert.equal(rotated.status, 200);
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey })).status, 401);
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey: rotated.body.apiKey })).status, 200);
  });

  it('shows a subscription change at once', async function () {
    const { apiKey, userId } = await h.createUser();
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey })).body.subscription.status, 'active');
    const changed = await h.http('PATCH', `/admin/users/${userId}/subscription`, {
      headers: admin(),
      body: { status: 'inactive', monthlyOperationLimit: 7 },
    });
    assert.equal(changed.status, 200);
    const account = (await h.http('GET', '/api/v1/account', { apiKey })).body;
    assert.equal(account.subscription.status, 'inactive');
    assert.equal(account.subscription.monthlyOperationLimit, 7);
  });

  it('refuses a key revoked by another process within the cache lifetime', async function () {
    this.timeout(30_000);
    const { apiKey, userId } = await h.createUser();
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey })).status, 200);
    const other = new pg.Client({ connectionString: h.databaseUrl });
    await other.connect();
    try {
      await other.query('update api_keys set revoked_at = now() where user_id = $1', [userId]);
    } finally {
      await other.end();
    }
    // The key was cached by the request before the revocation: once a cache lifetime has passed, it is refused.
    await new Promise((r) => setTimeout(r, API_KEY_CACHE_TTL_MS));
    assert.equal(
      (await h.http('GET', '/api/v1/account', { apiKey })).status,
      401,
      'the revoked key still works a cache lifetime later',
    );
  });
});
