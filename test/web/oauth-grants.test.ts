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
import { sharedBrowser, watchedContext, type WatchedContext } from '../support/stack/web-browser';

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

interface Tokens {
  access_token: string;
  refresh_token: string;
  scope: string;
}

/**
 * OAuth grants that end when revoked, tokens that cannot be used twice, and what the database keeps
 * (issue 34, "2. OAuth grants").
 */
describe('OAuth grants: revocation ends the credential, single-use refresh tokens and codes', function () {
  this.timeout(180_000);
  let h: Harness;
  let browser: Browser;
  let service: MarketProviderService;
  let callback: { url: string; close(): Promise<void> };
  let alice: { userId: string; apiKey: string };
  let entry: { entryId: string; name: string };
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
    const name = `Tidal gauges ${randomBytes(4).toString('hex')}`;
    const created = await approvedServiceEntry(h, provider, service.url, {
      name,
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.01 }],
      requiredUserParamsSchema: {
        type: 'object',
        properties: { region: { type: 'string', enum: ['eu', 'us'] } },
        required: ['region'],
      },
    });
    entry = { entryId: created.entryId, name };
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

  const resource = () => `${h.baseUrl}/mcp/${entry.entryId}`;
  const tokenEndpoint = () => `${h.baseUrl}/oauth/token`;
  const mcpPost = (token: string) =>
    fetch(resource(), {
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

  async function operatorClient(name: string): Promise<string> {
    const created = await h.http('POST', '/admin/oauth/clients', {
      headers: admin(),
      body: { name, redirectUris: [callback.url] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.clientId as string;
  }

  /** The person consents in the browser; returns the code and the PKCE verifier. */
  async function consent(
    clientId: string,
    device?: string,
    scope = 'mcp',
  ): Promise<{ code: string; verifier: string }> {
    const { verifier, challenge } = pkce();
    await page.goto(
      `${h.baseUrl}/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: callback.url,
        state: 'st',
        scope,
        resource: resource(),
        code_challenge: challenge,
        code_challenge_method: 'S256',
      })}`,
    );
    if (!signedIn) {
      assert.equal(new URL(page.url()).pathname, '/console/sign-in');
      await page.focus('#api_key');
      await page.keyboard.type(alice.apiKey);
      await page.keyboard.press('Enter');
      await page.waitForURL((u) => u.pathname.startsWith('/oauth/interaction/'));
      signedIn = true;
    }
    await page.fill('#param-region', 'eu');
    if (device) await page.fill('#device', device);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(callback.url));
    const answer = new URL(page.url()).searchParams;
    assert.equal(answer.get('error'), null, answer.toString());
    return { code: answer.get('code') ?? '', verifier };
  }

  const exchange = (clientId: string, code: string, verifier: string) =>
    form(tokenEndpoint(), {
      grant_type: 'authorization_code',
      code,
      redirect_uri: callback.url,
      client_id: clientId,
      code_verifier: verifier,
    });

  async function authorize(clientId: string, device?: string): Promise<Tokens> {
    const { code, verifier } = await consent(clientId, device);
    const exchanged = await exchange(clientId, code, verifier);
    const tokens = await exchanged.json();
    assert.equal(exchanged.status, 200, JSON.stringify(tokens));
    return tokens;
  }

  const refresh = (clientId: string, refreshToken: string) =>
    form(tokenEndpoint(), { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });

  /** What someone who reads the database (or a backup) finds: the sealed credential of the client's newest grant. */
  async function storedCredential(clientId: string): Promise<{ grantId: string; credential: string }> {
    const row = await h.db
      .selectFrom('oauth_market_grants')
      .select(['grant_id', 'credential'])
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    assert.ok(row.credential, 'a live grant holds its credential');
    return { grantId: row.grant_id, credential: row.credential };
  }

  async function credentialsList(): Promise<
    { id: string; status: string; source: string; app: { clientId: string | null; name: string | null } | null }[]
  > {
    const listed = await h.http('GET', '/api/v1/mcp-market/credentials?pageSize=100', { apiKey: alice.apiKey });
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    return listed.body.credentials;
  }

  it('ends the market credential a grant holds when the grant is revoked (console, RFC 7009 revocation, operator deleting the client, a revoked credential), and lists the apps’ credentials with the others', async function () {
    // 1. Revoked in the console's connected apps.
    const viaConsole = await operatorClient(`Console revoked ${randomBytes(3).toString('hex')}`);
    const consoleTokens = await authorize(viaConsole);
    const leaked = await storedCredential(viaConsole);
    assert.equal((await mcpPost(leaked.credential)).status, 200, 'the stored credential is a working bearer');
    await page.goto(`${h.baseUrl}/console/connections`);
    await page.locator(`form[action="/console/connections/${leaked.grantId}/revoke"] button`).click();
    await page.waitForURL(`${h.baseUrl}/console/connections`);
    assert.equal((await mcpPost(consoleTokens.access_token)).status, 401);
    assert.equal((await mcpPost(leaked.credential)).status, 401, 'the credential read from the database is refused');
    const listedApp = (await credentialsList()).filter((c) => c.app?.clientId === viaConsole);
    assert.equal(listedApp.length, 1, "the app's credential is listed with the others");
    assert.equal(listedApp[0]!.source, 'oauth');
    assert.equal(listedApp[0]!.status, 'revoked');
    await page.goto(`${h.baseUrl}/console/credentials`);
    assert.match(
      await page.locator(`#credential-${listedApp[0]!.id} .made-by`).innerText(),
      /Made by app Console revoked/,
    );
    const wiped = await h.db
      .selectFrom('oauth_market_grants')
      .select('credential')
      .where('grant_id', '=', leaked.grantId)
      .executeTakeFirstOrThrow();
    assert.equal(wiped.credential, null, 'a revoked grant keeps no copy of its credential');

    // 2. The client revokes its refresh token (RFC 7009): the authorization server ends the grant.
    const viaRevocation = await operatorClient(`Self revoked ${randomBytes(3).toString('hex')}`);
    const revocationTokens = await authorize(viaRevocation);
    const leaked2 = await storedCredential(viaRevocation);
    const revoked = await form(`${h.baseUrl}/oauth/revoke`, {
      token: revocationTokens.refresh_token,
      token_type_hint: 'refresh_token',
      client_id: viaRevocation,
    });
    assert.equal(revoked.status, 200);
    assert.equal((await mcpPost(leaked2.credential)).status, 401);
    await page.goto(`${h.baseUrl}/console/connections`);
    assert.equal(await page.locator(`form[action="/console/connections/${leaked2.grantId}/revoke"]`).count(), 0);

    // 3. The operator deletes the client.
    const viaDeletion = await operatorClient(`Deleted ${randomBytes(3).toString('hex')}`);
    await authorize(viaDeletion);
    const leaked3 = await storedCredential(viaDeletion);
    assert.equal((await h.http('DELETE', `/admin/oauth/clients/${viaDeletion}`, { headers: admin() })).status, 204);
    assert.equal((await mcpPost(leaked3.credential)).status, 401);

    // 4. Revoking the app's credential in the credentials list ends its grant: its tokens stop working.
    const viaCredential = await operatorClient(`Credential revoked ${randomBytes(3).toString('hex')}`);
    const credentialTokens = await authorize(viaCredential);
    const own = (await credentialsList()).find((c) => c.app?.clientId === viaCredential);
    assert.equal(own?.status, 'active');
    assert.equal((await mcpPost(credentialTokens.access_token)).status, 200);
    const deleted = await h.http('DELETE', `/api/v1/mcp-market/credentials/${own.id}`, { apiKey: alice.apiKey });
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.equal((await mcpPost(credentialTokens.access_token)).status, 401);
    assert.equal((await refresh(viaCredential, credentialTokens.refresh_token)).status, 400);
  });

  it('consumes a refresh token once: of concurrent refreshes one succeeds and the reuse ends the token family; a replayed rotated refresh token ends it too', async function () {
    const clientId = await operatorClient(`Racing refresher ${randomBytes(3).toString('hex')}`);
    const tokens = await authorize(clientId);
    const leaked = await storedCredential(clientId);
    const answers = await Promise.all(Array.from({ length: 5 }, () => refresh(clientId, tokens.refresh_token)));
    const bodies = await Promise.all(answers.map((a) => a.json()));
    const won = answers.flatMap((a, i) => (a.status === 200 ? [bodies[i] as Tokens] : []));
    assert.equal(won.length, 1, `exactly one refresh succeeds: ${answers.map((a) => a.status).join(', ')}`);
    for (const [i, answer] of answers.entries()) {
      if (answer.status === 200) continue;
      assert.equal(answer.status, 400);
      assert.equal(bodies[i].error, 'invalid_grant');
    }
    // The reuse ended the family: the winner's tokens too, and the grant's credential.
    assert.equal((await mcpPost(won[0]!.access_token)).status, 401);
    assert.equal((await refresh(clientId, won[0]!.refresh_token)).status, 400);
    assert.equal((await mcpPost(leaked.credential)).status, 401);

    // A rotated refresh token replayed after its rotation (a stolen copy): the family ends.
    const replayClient = await operatorClient(`Replayer ${randomBytes(3).toString('hex')}`);
    const first = await authorize(replayClient);
    const leaked2 = await storedCredential(replayClient);
    const renewedAnswer = await refresh(replayClient, first.refresh_token);
    const renewed = (await renewedAnswer.json()) as Tokens;
    assert.equal(renewedAnswer.status, 200, JSON.stringify(renewed));
    assert.equal((await mcpPost(renewed.access_token)).status, 200);
    const replayed = await refresh(replayClient, first.refresh_token);
    assert.equal(replayed.status, 400);
    assert.equal((await replayed.json()).error, 'invalid_grant');
    assert.equal(
      (await mcpPost(renewed.access_token)).status,
      401,
      "the legitimate holder's token ends with the family",
    );
    assert.equal((await refresh(replayClient, renewed.refresh_token)).status, 400);
    assert.equal((await mcpPost(leaked2.credential)).status, 401);
    await page.goto(`${h.baseUrl}/console/connections`);
    assert.equal(await page.locator(`form[action="/console/connections/${leaked2.grantId}/revoke"]`).count(), 0);
  });

  it('exchanges an authorization code once, however many exchanges race for it', async function () {
    const clientId = await operatorClient(`Racing exchanger ${randomBytes(3).toString('hex')}`);
    const { code, verifier } = await consent(clientId);
    const answers = await Promise.all(Array.from({ length: 5 }, () => exchange(clientId, code, verifier)));
    const bodies = await Promise.all(answers.map((a) => a.json()));
    const won = answers.flatMap((a, i) => (a.status === 200 ? [bodies[i] as Tokens] : []));
    assert.equal(won.length, 1, `exactly one exchange succeeds: ${answers.map((a) => a.status).join(', ')}`);
    for (const [i, answer] of answers.entries()) {
      if (answer.status === 200) continue;
      assert.equal(answer.status, 400);
      assert.equal(bodies[i].error, 'invalid_grant');
    }
    assert.equal((await mcpPost(won[0]!.access_token)).status, 401, 'a reused code ends what it was exchanged for');
  });

  it('keeps no token, code or client secret a client received in the database (hashes only), and they still work', async function () {
    const registered = await fetch(`${h.baseUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Confidential registrant',
        redirect_uris: [callback.url],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      }),
    });
    const client = await registered.json();
    assert.equal(registered.status, 201, JSON.stringify(client));
    assert.ok(typeof client.client_secret === 'string' && client.client_secret.length >= 32);
    const basic = {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
    };
    const { code, verifier } = await consent(client.client_id);
    const exchanged = await form(
      tokenEndpoint(),
      { grant_type: 'authorization_code', code, redirect_uri: callback.url, code_verifier: verifier },
      basic,
    );
    const tokens = (await exchanged.json()) as Tokens;
    assert.equal(exchanged.status, 200, JSON.stringify(tokens));
    const refreshed = await form(
      tokenEndpoint(),
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      basic,
    );
    const renewed = (await refreshed.json()) as Tokens;
    assert.equal(refreshed.status, 200, JSON.stringify(renewed));
    assert.equal((await mcpPost(renewed.access_token)).status, 200);
    const wrongSecret = await form(
      tokenEndpoint(),
      { grant_type: 'refresh_token', refresh_token: renewed.refresh_token },
      { authorization: `Basic ${Buffer.from(`${client.client_id}:not-the-secret`).toString('base64')}` },
    );
    assert.equal(wrongSecret.status, 401);

    const received = [
      code,
      tokens.access_token,
      tokens.refresh_token,
      renewed.access_token,
      renewed.refresh_token,
      client.client_secret,
      ...(client.registration_access_token ? [client.registration_access_token] : []),
    ];
    const records = await h.db.selectFrom('oauth_records').selectAll().execute();
    const grants = await h.db.selectFrom('oauth_market_grants').selectAll().execute();
    const dump = JSON.stringify([records, grants]);
    for (const value of received) assert.ok(!dump.includes(value), `the database holds a value a client received`);
  });

  it('keeps every device its own sign-in: two authorizations of one client for one listing both work, are listed with their device, and are revoked one at a time', async function () {
    const clientId = await operatorClient(`Two devices ${randomBytes(3).toString('hex')}`);
    const laptop = await authorize(clientId, 'Work laptop');
    const desktop = await authorize(clientId);
    assert.equal((await mcpPost(laptop.access_token)).status, 200, 'the first device still works');
    assert.equal((await mcpPost(desktop.access_token)).status, 200);
    const laptopRenewed = (await (await refresh(clientId, laptop.refresh_token)).json()) as Tokens;
    assert.ok(laptopRenewed.access_token, 'the first device refreshes');

    const grants = await h.db
      .selectFrom('oauth_market_grants')
      .select(['grant_id', 'device_name'])
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .execute();
    assert.equal(grants.length, 2);
    const laptopGrant = grants.find((g) => g.device_name === 'Work laptop')!.grant_id;
    const desktopGrant = grants.find((g) => g.device_name === null)!.grant_id;

    await page.goto(`${h.baseUrl}/console/connections`);
    const rows = page.locator('#connections tbody tr', { hasText: clientId });
    assert.equal(await rows.count(), 2, 'one row per device');
    const laptopRow = page.locator('#connections tbody tr', {
      has: page.locator(`form[action="/console/connections/${laptopGrant}/revoke"]`),
    });
    const desktopRow = page.locator('#connections tbody tr', {
      has: page.locator(`form[action="/console/connections/${desktopGrant}/revoke"]`),
    });
    assert.match(await laptopRow.locator('.device').innerText(), /^Work laptop \(Chrome on Linux\)$/);
    assert.equal(
      await desktopRow.locator('.device').innerText(),
      'Chrome on Linux',
      "the browser's device when unnamed",
    );
    assert.doesNotMatch(await laptopRow.innerText(), /Never/, 'the last use is shown');

    await laptopRow.getByRole('button', { name: /on Work laptop$/ }).click();
    await page.waitForURL(`${h.baseUrl}/console/connections`);
    assert.equal((await mcpPost(laptopRenewed.access_token)).status, 401, 'the revoked device is signed out');
    assert.equal((await mcpPost(desktop.access_token)).status, 200, 'the other device keeps working');
    assert.equal((await refresh(clientId, desktop.refresh_token)).status, 200);
    assert.equal(await page.locator('#connections tbody tr', { hasText: clientId }).count(), 1);
  });

  it('refuses at /mcp an access token of the endpoint that lacks the mcp scope (403 insufficient_scope)', async function () {
    const clientId = await operatorClient(`Scope narrower ${randomBytes(3).toString('hex')}`);
    const { code, verifier } = await consent(clientId, undefined, 'mcp openid');
    const exchanged = await exchange(clientId, code, verifier);
    const tokens = (await exchanged.json()) as Tokens;
    assert.equal(exchanged.status, 200, JSON.stringify(tokens));
    assert.equal((await mcpPost(tokens.access_token)).status, 200);
    // A refresh asking for `openid` alone: an access token for the same endpoint, without `mcp`.
    const narrowed = await form(tokenEndpoint(), {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: clientId,
      scope: 'openid',
    });
    const narrow = (await narrowed.json()) as Tokens;
    assert.equal(narrowed.status, 200, JSON.stringify(narrow));
    assert.ok(!narrow.scope?.split(' ').includes('mcp'), `scope ${narrow.scope}`);
    const refused = await mcpPost(narrow.access_token);
    assert.equal(refused.status, 403);
    assert.match(refused.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
    assert.match(refused.headers.get('www-authenticate') ?? '', /scope="mcp"/);
  });
});
