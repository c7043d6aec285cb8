import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { approvedEntry, storeValidation } from '../support/market';
import { ConfigError, loadConfig } from '../../lib/config';

/**
 * TRUST_PROXY: X-Forwarded-For/-Host/-Proto are believed only when the operator says a proxy stands in
 * front of the API. Without it, a client that forges them neither escapes the MCP rate limit nor
 * changes the addresses the API hands out.
 */
describe('TRUST_PROXY: forwarded headers are believed only from a proxy the operator declared', function () {
  const stacks = stoppedAfter();
  let h: Harness;
  let provider: { userId: string; apiKey: string };
  let direct: string;
  let proxied: string;
  const RATE_LIMIT = 3;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    provider = await h.createUser({ creditUsd: 5 });
    const market = { ...h.config.market, publicApiUrl: null, mcpPublicUrl: null, mcpRateLimitPerMinute: RATE_LIMIT };
    // Two APIs on the same database, without workers of their own (nothing here starts a workflow).
    direct = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'trust-proxy-off', browser: 'trust-proxy-off-b' },
        queues: [],
        overrides: { market, trustProxyHops: 0 },
      }),
    ).baseUrl;
    proxied = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'trust-proxy-on', browser: 'trust-proxy-on-b' },
        queues: [],
        overrides: { market, trustProxyHops: 1 },
      }),
    ).baseUrl;
  });

  /** One MCP request to a hosted market endpoint: the rate limit is checked before anything else is (401 without a credential). */
  const mcpCall = (base: string, entryId: string, forwardedFor: string) =>
    h.http('POST', `${base}/mcp/${entryId}`, {
      headers: { 'x-forwarded-for': forwardedFor, accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });

  it('counts every request of a direct client against its own address, whatever X-Forwarded-For it forges', async function () {
    const entryId = randomUUID();
    const statuses = [];
    for (let i = 0; i < RATE_LIMIT + 2; i++)
      statuses.push((await mcpCall(direct, entryId, `203.0.113.${i + 1}`)).status);
    assert.deepEqual(statuses.slice(0, RATE_LIMIT), Array(RATE_LIMIT).fill(401), JSON.stringify(statuses));
    assert.deepEqual(
      statuses.slice(RATE_LIMIT),
      [429, 429],
      'a fresh X-Forwarded-For per request does not reset the limit',
    );
  });

  it('behind a declared proxy, limits per forwarded client address (the entry the proxy appended)', async function () {
    const entryId = randomUUID();
    const one = [];
    for (let i = 0; i < RATE_LIMIT + 1; i++)
      one.push((await mcpCall(proxied, entryId, `198.51.100.${i + 1}, 192.0.2.7`)).status);
    assert.deepEqual(
      one,
      [...Array(RATE_LIMIT).fill(401), 429],
      'one client behind the proxy, however it prefixes the header',
    );
    assert.equal((await mcpCall(proxied, entryId, '192.0.2.8')).status, 401, 'another client has its own allowance');
  });

  it('builds apiBaseUrl and mcpUrl from the request itself unless a proxy is declared; X-Forwarded-Host/-Proto only then', async function () {
    this.timeout(60_000);
    const forged = { 'x-forwarded-host': 'attacker.example', 'x-forwarded-proto': 'https' };
    const verification = async (base: string) => {
      const validation = await storeValidation(h, provider.userId);
      const response = await h.http('POST', `${base}/api/v1/mcp-market/event-verifications`, {
        apiKey: provider.apiKey,
        headers: forged,
        body: { sourceFingerprint: validation.sourceFingerprint, eventNames: ['page.scraped'] },
      });
      assert.equal(response.status, 201, JSON.stringify(response.body));
      return response.body.apiBaseUrl as string;
    };
    assert.equal(await verification(direct), `${direct}/api/v1`);
    assert.equal(
      await verification(proxied),
      'https://attacker.example/api/v1',
      'a declared proxy sets the public host',
    );

    const entry = await approvedEntry(h, provider);
    const consumer = await h.createUser({ creditUsd: 1 });
    const credential = async (base: string) => {
      const response = await h.http('POST', `${base}/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
        apiKey: consumer.apiKey,
        headers: forged,
        body: { params: {} },
      });
      assert.equal(response.status, 201, JSON.stringify(response.body));
      return response.body.mcpUrl as string;
    };
    assert.equal(await credential(direct), `${direct}/mcp/${entry.entryId}`);
    assert.equal(await credential(proxied), `https://attacker.example/mcp/${entry.entryId}`);
  });

  it('reads TRUST_PROXY as false, true or a number of proxies, and refuses anything else', function () {
    const base = { ADMIN_TOKEN: 'a'.repeat(32), MASTER_KEY: 'b'.repeat(64), MARKET_CHARGE_TOKEN_KEY: 'c'.repeat(64) };
    const hops = (value?: string) =>
      loadConfig({ ...base, ...(value !== undefined && { TRUST_PROXY: value }) }).trustProxyHops;
    assert.equal(hops(), 0, 'not trusted by default');
    assert.equal(hops('false'), 0);
    assert.equal(hops('0'), 0);
    assert.equal(hops('true'), 1);
    assert.equal(hops('TRUE'), 1);
    assert.equal(hops('2'), 2);
    for (const bad of ['yes', '-1', '11', '1.5', 'loopback'])
      assert.throws(
        () => hops(bad),
        (err: unknown) => err instanceof ConfigError && /TRUST_PROXY/.test((err as Error).message),
        bad,
      );
  });
});
