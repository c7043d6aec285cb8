import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { Client, UnauthorizedError } from '@modelcontextprotocol/client';
import { oauthRecordKey } from '../../db/repos/oauth';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import { createTestCertificates } from '../support/mcp-tls';
import {
  connectWithOAuth,
  InMemoryOAuthClient,
  recordingFetch,
  signInAndAllow,
  startLoopbackRedirect,
  type LoopbackRedirect,
} from '../support/oauth-client';
import { sharedBrowser, watchedContext, type WatchedContext } from '../support/stack/web-browser';

const BILLING_META = 'scrape-platform/billing';

/**
 * The official MCP TypeScript SDK (v2) as the OAuth client, end to end against the hosted endpoints: the
 * SDK's own discovery, registration (DCR, or a client ID metadata document), PKCE, code exchange,
 * refresh and recovery; only the person's part (sign-in and consent) is a Playwright-driven browser,
 * and the redirect URI is a loopback server, as for a native client (RFC 8252).
 */
describe('OAuth with the MCP SDK v2 client', function () {
  this.timeout(180_000);
  let h: Harness;
  let browser: Browser;
  let service: MarketProviderService;
  let redirect: LoopbackRedirect;
  let alice: { userId: string; apiKey: string };
  let entry: { entryId: string; slug: string; name: string };
  let resource: string;
  const contexts: WatchedContext[] = [];
  const clients: Client[] = [];

  before(async function () {
    h = await useHarness();
    [browser, service, redirect] = await Promise.all([sharedBrowser(), startMarketProvider(), startLoopbackRedirect()]);
    const provider = await h.createUser({ creditUsd: 0 });
    alice = await h.createUser({ creditUsd: 5 });
    const name = `Tidewater almanac ${Date.now()}`;
    const created = await approvedServiceEntry(h, provider, service.url, {
      name,
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.015 }],
      requiredUserParamsSchema: {
        type: 'object',
        properties: { region: { type: 'string', enum: ['eu', 'us'] } },
        required: ['region'],
      },
    });
    entry = { entryId: created.entryId, slug: created.slug, name };
    resource = `${h.baseUrl}/mcp/${entry.entryId}`;
  });

  after(async function () {
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
    for (const context of contexts.splice(0)) await context.close();
    await service?.close();
    await redirect?.close();
  });

  afterEach(function () {
    assert.deepEqual(
      contexts.flatMap((c) => c.foreignRequests),
      [],
      'requests to non-loopback hosts',
    );
    assert.deepEqual(
      contexts.flatMap((c) => c.consoleErrors),
      [],
      'console errors (CSP violations among them)',
    );
  });

  const balanceMicros = async () =>
    Math.round((await h.http('GET', '/api/v1/account', { apiKey: alice.apiKey })).body.balanceUsd * 1e6);

  const marketCharges = async () =>
    (
      (await h.http('GET', '/api/v1/transactions?pageSize=50', { apiKey: alice.apiKey })).body.transactions as {
        agentName: string;
        cost: number;
      }[]
    ).filter((t) => t.agentName === `market:${entry.slug}`).length;

  /** A person at a fresh browser, ready to sign in and allow whatever authorization the SDK opens. */
  async function person() {
    const context = await watchedContext(browser);
    contexts.push(context);
    const page = await context.newPage();
    const consentedTo: string[] = [];
    const signIn = async (url: URL) => {
      consentedTo.push(
        await signInAndAllow(page, url, {
          apiKey: alice.apiKey,
          params: { region: 'eu' },
          capUsd: '1',
          redirectUrl: redirect.url,
        }),
      );
    };
    return { page, signIn, consentedTo };
  }

  /** The SDK's interactive flow (connect, 401, the browser, finishAuth, connect again), iss checked. */
  async function authorizeAndConnect(oauth: InMemoryOAuthClient, fetchFn: ReturnType<typeof recordingFetch>['fetch']) {
    const { client, answer } = await connectWithOAuth(resource, oauth, fetchFn);
    clients.push(client);
    assert.equal(answer.get('iss'), h.baseUrl, 'RFC 9207: the issuer is in the authorization response');
    return client;
  }

  async function billedCall(client: Client) {
    const called = await client.callTool({ name: 'lookup_city', arguments: { city: 'Bergen' } });
    assert.equal(called.isError, false, JSON.stringify(called));
    assert.equal((called._meta?.[BILLING_META] as { chargedUsd: number }).chargedUsd, 0.015);
  }

  const route = (r: { method: string; url: URL; status: number }) => `${r.method} ${r.url.pathname} ${r.status}`;

  it('registers by DCR, signs in and consents in the browser, calls a billed tool, refreshes an expired access token, and stops at a revocation in the console', async function () {
    const { page, signIn, consentedTo } = await person();
    const oauth = new InMemoryOAuthClient({ redirect, clientName: 'SDK tide agent', signIn });
    const recorder = recordingFetch();
    const client = await authorizeAndConnect(oauth, recorder.fetch);

    // The SDK found everything from the 401: resource metadata, the authorization server, registration.
    const path = `/mcp/${entry.entryId}`;
    const discovery = recorder.requests.slice(0, 4).map(route);
    assert.deepEqual(discovery, [
      `POST ${path} 401`,
      `GET /.well-known/oauth-protected-resource${path} 200`,
      `GET /.well-known/oauth-authorization-server 200`,
      `POST /oauth/register 201`,
    ]);
    const authorization = oauth.authorizationUrls[0];
    assert.equal(authorization.origin + authorization.pathname, `${h.baseUrl}/oauth/authorize`);
    assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(authorization.searchParams.get('resource'), resource);
    assert.equal(authorization.searchParams.get('redirect_uri'), redirect.url);
    assert.match(authorization.searchParams.get('scope') ?? '', /\bmcp\b/);
    assert.deepEqual(consentedTo, ['SDK tide agent']);
    assert.ok(
      recorder.requests.some((r) => route(r) === 'POST /oauth/token 200'),
      'the code was exchanged',
    );
    const issued = oauth.savedTokens[0];
    assert.ok(issued.refresh_token, 'a refresh token');
    assert.ok(issued.expires_in && issued.expires_in <= 600, 'a short-lived access token');

    // tools/list and a billed tools/call, charged to Alice like a credential's call.
    const before = await balanceMicros();
    const chargesBefore = await marketCharges();
    assert.deepEqual(
      (await client.listTools()).tools.map((t) => t.name),
      ['lookup_city'],
    );
    await billedCall(client);
    assert.equal(before - (await balanceMicros()), 15_000, 'the call was charged to Alice');
    assert.equal(await marketCharges(), chargesBefore + 1, 'one charge in her transactions');

    // The access token's lifetime passes (its record, kept under the hash of its value, expires, as if ten minutes went by): the endpoint
    // answers 401 and the SDK refreshes (rotating the refresh token) and retries, unseen by the caller.
    const expiredToken = issued.access_token;
    await h.db
      .updateTable('oauth_records')
      .set({ expires_at: new Date(Date.now() - 1_000) })
      .where('model', '=', 'AccessToken')
      .where('id', '=', oauthRecordKey(expiredToken))
      .execute();
    const seen = recorder.requests.length;
    await billedCall(client);
    assert.deepEqual(
      recorder.requests
        .slice(seen)
        .map(route)
        .filter((r) => !r.startsWith('DELETE')),
      [`POST ${path} 401`, 'POST /oauth/token 200', `POST ${path} 200`],
    );
    assert.equal(oauth.savedTokens.length, 2);
    const renewed = oauth.savedTokens[1];
    assert.notEqual(renewed.access_token, expiredToken);
    assert.notEqual(renewed.refresh_token, issued.refresh_token, 'the refresh token rotated');
    assert.equal(oauth.authorizationUrls.length, 1, 'no new sign-in was needed');
    assert.equal(before - (await balanceMicros()), 30_000);

    // Alice revokes the connection in the console: the next call is refused (401), the SDK's refresh is
    // refused too, and it can only send the person back to sign in; nothing is charged.
    await page.goto(`${h.baseUrl}/console/connections`);
    const row = page.locator('#connections tbody tr', { hasText: 'SDK tide agent' });
    assert.equal(await row.count(), 1);
    assert.match(await row.innerText(), new RegExp(entry.name));
    // axe checks this page (one connection listed, before its revocation) in test/web/oauth.test.ts.
    await row.getByRole('button', { name: /^Revoke SDK tide agent/ }).click();
    await page.waitForURL(`${h.baseUrl}/console/connections`);
    oauth.signIn = undefined;
    const afterRevoke = recorder.requests.length;
    await assert.rejects(
      client.callTool({ name: 'lookup_city', arguments: { city: 'Bergen' } }),
      (err) => err instanceof UnauthorizedError,
    );
    const revoked = recorder.requests.slice(afterRevoke).map(route);
    assert.equal(revoked[0], `POST ${path} 401`);
    assert.ok(revoked.includes('POST /oauth/token 400'), `the refresh is refused: ${revoked.join(', ')}`);
    assert.equal(oauth.authorizationUrls.length, 2, 'the SDK asks for a new authorization');
    assert.equal(oauth.tokens(), undefined, 'and dropped the dead tokens');
    assert.equal(before - (await balanceMicros()), 30_000, 'nothing charged after the revocation');
  });

  it('identifies itself with a client ID metadata document served over HTTPS on loopback, without registering', async function () {
    const certs = createTestCertificates();
    const previousCa = process.env.NODE_EXTRA_CA_CERTS;
    process.env.NODE_EXTRA_CA_CERTS = certs.caFile;
    let documentUrl = '';
    let documentFetches = 0;
    let oauth: InMemoryOAuthClient | undefined;
    const documentServer = https.createServer({ key: certs.key, cert: certs.cert }, (req, res) => {
      if (req.url !== '/sdk-client.json' || !oauth) return void res.writeHead(404).end();
      documentFetches++;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
      res.end(JSON.stringify({ ...oauth.clientMetadata, client_id: documentUrl }));
    });
    await new Promise<void>((resolve) => documentServer.listen(0, '127.0.0.1', resolve));
    try {
      documentUrl = `https://127.0.0.1:${(documentServer.address() as AddressInfo).port}/sdk-client.json`;
      const { signIn, consentedTo } = await person();
      oauth = new InMemoryOAuthClient({
        redirect,
        clientName: 'SDK document agent',
        clientMetadataUrl: documentUrl,
        signIn,
      });
      const recorder = recordingFetch();
      const client = await authorizeAndConnect(oauth, recorder.fetch);

      assert.ok(
        !recorder.requests.some((r) => r.url.pathname === '/oauth/register'),
        'the client did not register itself',
      );
      assert.equal(oauth.authorizationUrls[0].searchParams.get('client_id'), documentUrl);
      assert.ok(documentFetches >= 1, 'the authorization server fetched the document');
      assert.deepEqual(consentedTo, ['SDK document agent'], 'the consent page names the client as its document does');

      const before = await balanceMicros();
      assert.deepEqual(
        (await client.listTools()).tools.map((t) => t.name),
        ['lookup_city'],
      );
      await billedCall(client);
      assert.equal(before - (await balanceMicros()), 15_000);
    } finally {
      if (previousCa === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
      else process.env.NODE_EXTRA_CA_CERTS = previousCa;
      documentServer.closeAllConnections();
      await new Promise<void>((resolve) => documentServer.close(() => resolve()));
      certs.cleanup();
    }
  });
});
