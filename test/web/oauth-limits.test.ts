import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { useHarness, type Harness } from '../support/stack/harness';
import { createTestCertificates } from '../support/mcp-tls';

/** A GET from a loopback address of the test's choosing (its own client address, so its own request limit). */
function getFrom(localAddress: string, url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { localAddress, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
  });
}

/** A GET from a loopback address with the cookies given, its body read, redirects not followed. */
function requestFrom(
  localAddress: string,
  url: string,
  cookie = '',
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { localAddress, agent: false, headers: cookie ? { cookie } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

/** A loopback address no other request of these tests uses as its source (127.0.0.10, .11, …): its own count. */
let nextAddress = 10;
const freshAddress = () => `127.0.0.${nextAddress++}`;

const challenge = () => createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');

/**
 * The authorization server's limits (issue 34, "2. OAuth grants"): requests per address and per client,
 * shared by every process (PostgreSQL), client metadata documents fetched, and registrations nobody used.
 * A limit is per minute: a run that crosses a minute sees two windows, which the assertions allow.
 */
describe('OAuth limits: per address, per client, metadata fetches, unused registrations', function () {
  this.timeout(120_000);
  let h: Harness;
  const callback = 'http://127.0.0.1:9/callback';

  before(async function () {
    h = await useHarness();
  });

  const authorizeUrl = (clientId: string) =>
    `${h.baseUrl}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: callback,
      state: 's',
      code_challenge: challenge(),
      code_challenge_method: 'S256',
    })}`;

  it('limits the requests of one address, counted in the database, with Retry-After', async function () {
    const limit = h.config.oauth.rateLimitPerIpPerMinute;
    assert.ok(limit > 0);
    const from = freshAddress();
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 2 * limit + 1; i++) {
      const answer = await getFrom(from, `${h.baseUrl}/.well-known/oauth-authorization-server`);
      statuses.push(answer.status);
      if (answer.status === 429) retryAfter ??= String(answer.headers['retry-after']);
    }
    assert.deepEqual(statuses.slice(0, limit), Array(limit).fill(200), 'the allowance is served');
    assert.ok(statuses.includes(429), 'past the allowance: 429');
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`);
    const counted = await h.db
      .selectFrom('rate_limit_windows')
      .select('count')
      .where('key', '=', `oauth:ip:${from}`)
      .execute();
    assert.ok(counted.length >= 1, 'the count is in the database, shared by every process');
    // Another address is not affected.
    assert.equal((await getFrom(freshAddress(), `${h.baseUrl}/.well-known/oauth-authorization-server`)).status, 200);
  });

  it('limits the requests naming one client', async function () {
    const limit = h.config.oauth.rateLimitPerClientPerMinute;
    const created = await h.http('POST', '/admin/oauth/clients', {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { name: 'Busy client', redirectUris: [callback] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const clientId = created.body.clientId as string;
    const statuses: number[] = [];
    // Spread over addresses: the per-address limit is not what stops them.
    const addresses = Array.from({ length: 4 }, freshAddress);
    for (let i = 0; i < 2 * limit + 1; i++)
      statuses.push((await getFrom(addresses[i % addresses.length]!, authorizeUrl(clientId))).status);
    assert.ok(
      statuses.slice(0, limit).every((s) => s !== 429),
      `the allowance is served: ${statuses.slice(0, limit).join(',')}`,
    );
    assert.ok(statuses.includes(429), 'past the allowance: 429');
  });

  it("limits the consent page's requests naming one client too: a 429 page, not the consent page (nor a 500)", async function () {
    const limit = h.config.oauth.rateLimitPerClientPerMinute;
    const created = await h.http('POST', '/admin/oauth/clients', {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { name: 'Eager consent', redirectUris: [callback] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const clientId = created.body.clientId as string;
    const from = freshAddress();
    try {
      // The authorization starts: oidc-provider sends the browser to the interaction (consent) page with its cookie.
      const started = await requestFrom(from, authorizeUrl(clientId));
      const location = String(started.headers.location ?? '');
      assert.match(location, /\/oauth\/interaction\/[A-Za-z0-9_-]+$/, `status ${started.status}`);
      const consent = new URL(location, h.baseUrl).toString();
      const cookie = (started.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
      const first = await requestFrom(from, consent, cookie);
      assert.equal(
        first.status,
        302,
        'within the allowance: on to the sign-in (no session), after the client was found',
      );
      assert.match(String(first.headers.location), /^\/console\/sign-in\?next=/);
      // The consent page's own requests use the client's allowance up (the interaction pages have no address limit).
      let refused: { status: number; body: string } | undefined;
      for (let i = 0; i < 2 * limit + 1 && !refused; i++) {
        const answer = await requestFrom(from, consent, cookie);
        if (answer.status !== 302) refused = answer;
      }
      assert.ok(refused, `the consent page answered ${2 * limit + 1} requests naming one client: no limit there`);
      assert.equal(refused.status, 429, refused.body.slice(0, 300));
      assert.match(refused.body, /This app made too many requests/);
    } finally {
      // This file's buckets only, so that no later request of the lane finds them used.
      await h.db
        .deleteFrom('rate_limit_windows')
        .where('key', 'in', [`oauth:client:${clientId}`, `oauth:ip:${from}`])
        .execute();
    }
  });

  it('caps the client metadata documents fetched a minute', async function () {
    const limit = h.config.oauth.metadataFetchesPerMinute;
    const certs = createTestCertificates();
    const previousCa = process.env.NODE_EXTRA_CA_CERTS;
    process.env.NODE_EXTRA_CA_CERTS = certs.caFile;
    let fetched = 0;
    let base = '';
    const documents = https.createServer({ key: certs.key, cert: certs.cert }, (req, res) => {
      fetched++;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
      res.end(
        JSON.stringify({
          client_id: `${base}${req.url}`,
          client_name: 'Many documents',
          redirect_uris: [callback],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      );
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    try {
      base = `https://127.0.0.1:${(documents.address() as AddressInfo).port}`;
      const addresses = Array.from({ length: 4 }, freshAddress);
      const tries = 2 * limit + 1;
      for (let i = 0; i < tries; i++)
        await getFrom(addresses[i % addresses.length]!, authorizeUrl(`${base}/client-${i}.json`));
      assert.ok(fetched >= 1, 'documents are fetched');
      assert.ok(fetched <= 2 * limit, `at most the cap a minute: ${fetched} fetched of ${tries} asked`);
    } finally {
      // The cap is one count per database for every process: later files of this lane (an OAuth client
      // identified by its document) would be refused for the rest of the minute. Leave it as found.
      await h.db.deleteFrom('rate_limit_windows').where('key', '=', 'oauth:metadata-fetch').execute();
      if (previousCa === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
      else process.env.NODE_EXTRA_CA_CERTS = previousCa;
      documents.closeAllConnections();
      await new Promise<void>((resolve) => documents.close(() => resolve()));
      certs.cleanup();
    }
  });

  it('expires a dynamic registration nobody used', async function () {
    const registered = await fetch(`${h.baseUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Abandoned',
        redirect_uris: [callback],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    });
    assert.equal(registered.status, 201);
    const { client_id: clientId } = await registered.json();
    const row = await h.db
      .selectFrom('oauth_records')
      .select('expires_at')
      .where('model', '=', 'Client')
      .where('id', '=', clientId)
      .executeTakeFirstOrThrow();
    const ttlMs = h.config.oauth.unusedRegistrationTtlSeconds * 1000;
    assert.ok(row.expires_at, 'a registration expires');
    assert.ok(Math.abs(new Date(row.expires_at).getTime() - (Date.now() + ttlMs)) < 60_000);
    const known = await fetch(authorizeUrl(clientId), { redirect: 'manual' });
    assert.notEqual(known.status, 400, 'known while unexpired');
    // Its time passes unused (the clock moved by writing the expiry): the client is unknown.
    await h.db
      .updateTable('oauth_records')
      .set({ expires_at: new Date(Date.now() - 1_000) })
      .where('model', '=', 'Client')
      .where('id', '=', clientId)
      .execute();
    const gone = await fetch(authorizeUrl(clientId), { redirect: 'manual' });
    assert.equal(gone.status, 400);
    assert.match(await gone.text(), /invalid_client/);
  });
});
