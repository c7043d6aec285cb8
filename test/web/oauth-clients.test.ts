import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import { assertAccessible, sharedBrowser, watchedContext, type WatchedContext } from '../support/stack/web-browser';

/** A native client's loopback redirect target. */
async function startCallback(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html lang="en"><head><title>Signed in</title></head><body><p>Done.</p></body></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  });

/**
 * The authorization server's clients and grants beyond the basic flow (issue 25): clients the operator
 * registers (public with PKCE, or confidential with a secret shown once), a generic OAuth client that
 * names no resource (the person chooses the listing), and a second authorization of the same client
 * for the same listing (another device: both grants work).
 */
describe('OAuth: operator-registered clients, authorizations without a resource, a grant per device', function () {
  this.timeout(180_000);
  let h: Harness;
  let browser: Browser;
  let service: MarketProviderService;
  let callback: { url: string; close(): Promise<void> };
  let alice: { userId: string; apiKey: string };
  let entryA: { entryId: string; name: string };
  let entryB: { entryId: string };
  let context: WatchedContext;
  let page: Page;
  let signedIn = false;
  const admin = () => ({ authorization: `Bearer ${h.config.adminToken}` });

  before(async function () {
    h = await useHarness();
    browser = await sharedBrowser();
    service = await startMarketProvider();
    callback = await startCallback();
    const provider = await h.createUser({ creditUsd: 0 });
    alice = await h.createUser({ creditUsd: 5 });
    const name = `Estuary ferries ${randomBytes(4).toString('hex')}`;
    const a = await approvedServiceEntry(h, provider, service.url, {
      name,
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.01 }],
      requiredUserParamsSchema: {
        type: 'object',
        properties: { region: { type: 'string', enum: ['eu', 'us'] } },
        required: ['region'],
      },
    });
    entryA = { entryId: a.entryId, name };
    const b = await approvedServiceEntry(h, provider, service.url, {
      name: `Harbour lights ${randomBytes(4).toString('hex')}`,
      monetizationStrategy: 'free',
    });
    entryB = { entryId: b.entryId };
    context = await watchedContext(browser);
    page = await context.newPage();
  });

  after(async function () {
    await context?.close();
    await service?.close();
    await callback?.close();
  });

  afterEach(function () {
    assert.deepEqual(context.foreignRequests, [], 'requests to non-loopback hosts');
    assert.deepEqual(context.consoleErrors, [], 'console errors (CSP violations among them)');
  });

  const resourceOf = (entryId: string) => `${h.baseUrl}/mcp/${entryId}`;
  const mcpPost = (entryId: string, token: string) =>
    fetch(resourceOf(entryId), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1' } },
      }),
    });

  const authorizeUrl = (clientId: string, challenge: string, extra: Record<string, string> = {}) =>
    `${h.baseUrl}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: callback.url,
      state: 'st',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    })}`;

  async function openAuthorization(url: string) {
    await page.goto(url);
    if (!signedIn) {
      assert.equal(new URL(page.url()).pathname, '/console/sign-in');
      await page.focus('#api_key');
      await page.keyboard.type(alice.apiKey);
      await page.keyboard.press('Enter');
      await page.waitForURL((u) => u.pathname.startsWith('/oauth/interaction/'));
      signedIn = true;
    }
    assert.match(new URL(page.url()).pathname, /^\/oauth\/interaction\/[A-Za-z0-9_-]+$/);
  }

  async function allow(): Promise<string> {
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(callback.url));
    const answer = new URL(page.url()).searchParams;
    assert.equal(answer.get('error'), null, answer.toString());
    return answer.get('code') ?? '';
  }

  it('registers, lists and deletes clients through the admin API: exact loopback or HTTPS redirect URIs, a confidential client authenticating with the secret shown once (stored sealed), deletion ending its tokens', async function () {
    const unauthenticated = await h.http('POST', '/admin/oauth/clients', {
      body: { name: 'x', redirectUris: [callback.url] },
    });
    assert.equal(unauthenticated.status, 401);
    const badRedirects = await h.http('POST', '/admin/oauth/clients', {
      headers: admin(),
      body: {
        name: 'Bad',
        redirectUris: ['https://agent.example/cb', 'http://agent.example/cb', 'https://a.example/#x'],
      },
    });
    assert.equal(badRedirects.status, 400, JSON.stringify(badRedirects.body));
    assert.deepEqual(
      badRedirects.body.error.details.map((d: { path: string }) => d.path),
      ['body/redirectUris/1', 'body/redirectUris/2'],
    );

    const created = await h.http('POST', '/admin/oauth/clients', {
      headers: admin(),
      body: {
        name: 'Operator desktop agent',
        redirectUris: [callback.url, 'https://agent.example/oauth/callback'],
        tokenEndpointAuthMethod: 'client_secret_basic',
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { clientId, clientSecret } = created.body;
    assert.match(clientId, /^mcp_[A-Za-z0-9_-]+$/);
    assert.ok(typeof clientSecret === 'string' && clientSecret.length >= 32);
    const listed = await h.http('GET', '/admin/oauth/clients', { headers: admin() });
    const mine = listed.body.clients.find((c: { clientId: string }) => c.clientId === clientId);
    assert.deepEqual(Object.keys(mine).sort(), [
      'clientId',
      'createdAt',
      'name',
      'redirectUris',
      'tokenEndpointAuthMethod',
    ]);
    const stored = await h.db
      .selectFrom('oauth_clients')
      .select('client_secret')
      .where('client_id', '=', clientId)
      .executeTakeFirstOrThrow();
    assert.ok(stored.client_secret && !stored.client_secret.includes(clientSecret), 'the secret is sealed at rest');
    const duplicate = await h.http('POST', '/admin/oauth/clients', {
      headers: admin(),
      body: { clientId, name: 'Again', redirectUris: [callback.url] },
    });
    assert.equal(duplicate.status, 409);

    // A redirect URI other than a registered one (here another port) is refused without a redirect.
    const { verifier, challenge } = pkce();
    const elsewhere = new URL(
      authorizeUrl(clientId, challenge, { resource: resourceOf(entryA.entryId), scope: 'mcp' }),
    );
    elsewhere.searchParams.set(
      'redirect_uri',
      callback.url.replace(/:(\d+)\//, (_m, p) => `:${Number(p) + 1}/`),
    );
    const refused = await fetch(elsewhere, { redirect: 'manual' });
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /redirect_uri/);

    // The flow: consent names the operator's client; the code is exchanged with the secret.
    await openAuthorization(authorizeUrl(clientId, challenge, { resource: resourceOf(entryA.entryId), scope: 'mcp' }));
    assert.equal(await page.locator('#client-name').innerText(), 'Operator desktop agent');
    assert.equal(await page.locator('#listing').innerText(), entryA.name);
    await page.fill('#param-region', 'us');
    const code = await allow();
    const exchange = { grant_type: 'authorization_code', code, redirect_uri: callback.url, code_verifier: verifier };
    const withoutSecret = await form(`${h.baseUrl}/oauth/token`, { ...exchange, client_id: clientId });
    assert.equal(withoutSecret.status, 401);
    assert.equal((await withoutSecret.json()).error, 'invalid_client');
    const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    const exchanged = await form(`${h.baseUrl}/oauth/token`, exchange, { authorization: basic });
    const tokens = await exchanged.json();
    assert.equal(exchanged.status, 200, JSON.stringify(tokens));
    assert.equal(exchanged.headers.get('cache-control'), 'no-store');
    assert.equal((await mcpPost(entryA.entryId, tokens.access_token)).status, 200);

    // Deleting the client ends its grant and tokens, and it is unknown to the authorization server.
    const deleted = await h.http('DELETE', `/admin/oauth/clients/${clientId}`, { headers: admin() });
    assert.equal(deleted.status, 204);
    assert.equal((await mcpPost(entryA.entryId, tokens.access_token)).status, 401);
    const refresh = await form(
      `${h.baseUrl}/oauth/token`,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      { authorization: basic },
    );
    assert.equal(refresh.status, 401);
    const unknown = await fetch(authorizeUrl(clientId, pkce().challenge), { redirect: 'manual' });
    assert.equal(unknown.status, 400);
    assert.match(await unknown.text(), /invalid_client/);
    assert.equal((await h.http('DELETE', `/admin/oauth/clients/${clientId}`, { headers: admin() })).status, 404);
    await page.goto(`${h.baseUrl}/console/connections`);
    assert.equal(await page.locator('#connections tbody tr', { hasText: 'Operator desktop agent' }).count(), 0);
  });

  it('lets the person choose the listing when the client names no resource, binds the token to that listing alone, and keeps the earlier grant when the same client is authorized for it again (another device)', async function () {
    const created = await h.http('POST', '/admin/oauth/clients', {
      headers: admin(),
      body: { name: 'Generic OAuth client', redirectUris: [callback.url] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { clientId } = created.body;
    assert.equal(created.body.clientSecret, undefined, 'a public client has no secret');

    // No resource, no scope: the person picks the listing first.
    const first = pkce();
    await openAuthorization(authorizeUrl(clientId, first.challenge));
    assert.equal(await page.locator('#client-name').innerText(), 'Generic OAuth client');
    await assertAccessible(page, 'choose a listing');
    await page.fill('#q', entryA.name);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL((u) => u.searchParams.get('q') === entryA.name);
    assert.deepEqual(await page.locator('#entry option').allInnerTexts(), [entryA.name]);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL((u) => u.searchParams.get('entry') === entryA.entryId);
    assert.equal(await page.locator('#listing').innerText(), entryA.name);
    assert.equal(await page.locator('#existing-grant').count(), 0);
    await page.fill('#param-region', 'eu');
    await page.fill('#cap', '2');
    const firstCode = await allow();
    const exchanged = await form(`${h.baseUrl}/oauth/token`, {
      grant_type: 'authorization_code',
      code: firstCode,
      redirect_uri: callback.url,
      client_id: clientId,
      code_verifier: first.verifier,
    });
    const tokens = await exchanged.json();
    assert.equal(exchanged.status, 200, JSON.stringify(tokens));
    assert.equal(tokens.scope, 'mcp');
    assert.equal((await mcpPost(entryA.entryId, tokens.access_token)).status, 200);
    const elsewhere = await mcpPost(entryB.entryId, tokens.access_token);
    assert.equal(elsewhere.status, 401, 'the token is bound to the chosen listing only');
    assert.match(elsewhere.headers.get('www-authenticate') ?? '', /another resource/);

    // The same client for the same listing again (another device): the consent page says so, starting from the earlier values.
    const second = pkce();
    await openAuthorization(authorizeUrl(clientId, second.challenge, { resource: resourceOf(entryA.entryId) }));
    assert.match(await page.locator('#existing-grant').innerText(), /already connected Generic OAuth client/);
    assert.equal(await page.locator('#param-region').inputValue(), 'eu');
    assert.equal(await page.locator('#cap').inputValue(), '2');
    await assertAccessible(page, 'consent beside an earlier grant');
    const secondCode = await allow();
    const again = await form(`${h.baseUrl}/oauth/token`, {
      grant_type: 'authorization_code',
      code: secondCode,
      redirect_uri: callback.url,
      client_id: clientId,
      code_verifier: second.verifier,
    });
    const renewed = await again.json();
    assert.equal(again.status, 200, JSON.stringify(renewed));
    assert.equal((await mcpPost(entryA.entryId, renewed.access_token)).status, 200);
    assert.equal((await mcpPost(entryA.entryId, tokens.access_token)).status, 200, 'the earlier grant still works');
    const earlierRefresh = await form(`${h.baseUrl}/oauth/token`, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: clientId,
    });
    assert.equal(earlierRefresh.status, 200);

    // Connected apps shows both connections of this client.
    await page.goto(`${h.baseUrl}/console/connections`);
    assert.equal(await page.locator('#connections tbody tr', { hasText: 'Generic OAuth client' }).count(), 2);
  });
});
