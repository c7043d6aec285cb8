import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { migrateToLatest, openDatabase, type Db } from '../../db/connect';
import { oauthAdapterFactory, pruneExpiredOAuthRecords } from '../../db/repos/oauth';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import { createTestCertificates } from '../support/mcp-tls';
import {
  assertAccessible,
  sharedBrowser,
  screenshot,
  watchedContext,
  type WatchedContext,
} from '../support/stack/web-browser';

const BILLING_META = 'scrape-platform/billing';

/** A native client's loopback redirect target: records what the authorization server sends back. */
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

/** The auth-params of a Bearer challenge (RFC 6750 / RFC 9728). */
function challengeParams(header: string): Record<string, string> {
  assert.match(header, /^Bearer /);
  const params: Record<string, string> = {};
  for (const [, name, value] of header.matchAll(/([a-z_]+)="([^"]*)"/g)) params[name] = value;
  return params;
}

const form = (url: string, fields: Record<string, string>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });

describe('OAuth on the hosted MCP endpoints', function () {
  this.timeout(180_000);
  let h: Harness;
  let browser: Browser;
  let service: MarketProviderService;
  let callback: { url: string; close(): Promise<void> };
  let alice: { userId: string; apiKey: string };
  let entryA: { entryId: string; slug: string; name: string };
  let entryB: { entryId: string; slug: string };
  const contexts: WatchedContext[] = [];

  before(async function () {
    h = await useHarness();
    browser = await sharedBrowser();
    service = await startMarketProvider();
    callback = await startCallback();
    const provider = await h.createUser({ creditUsd: 0 });
    alice = await h.createUser({ creditUsd: 5 });
    const name = `Harbour pilot ${Date.now()}`;
    const a = await approvedServiceEntry(h, provider, service.url, {
      name,
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.0125 }],
      requiredUserParamsSchema: {
        type: 'object',
        properties: { region: { type: 'string', enum: ['eu', 'us'] } },
        required: ['region'],
      },
    });
    entryA = { entryId: a.entryId, slug: a.slug, name };
    const b = await approvedServiceEntry(h, provider, service.url, {
      name: `Lighthouse keeper ${Date.now()}`,
      monetizationStrategy: 'free',
    });
    entryB = { entryId: b.entryId, slug: b.slug };
  });

  after(async function () {
    for (const context of contexts.splice(0)) await context.close();
    await service?.close();
    await callback?.close();
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

  const mcpPost = (entryId: string, token?: string) =>
    fetch(`${h.baseUrl}/mcp/${entryId}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(token && { authorization: `Bearer ${token}` }),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe', version: '1' } },
      }),
    });

  /** Discovery from a 401 as an MCP client does it: resource metadata, then the authorization server's metadata. */
  async function discover(entryId: string) {
    const refused = await mcpPost(entryId);
    assert.equal(refused.status, 401);
    const params = challengeParams(refused.headers.get('www-authenticate') ?? '');
    assert.equal(params.resource_metadata, `${h.baseUrl}/.well-known/oauth-protected-resource/mcp/${entryId}`);
    assert.equal(params.scope, 'mcp');
    const resource = await (await fetch(params.resource_metadata)).json();
    assert.equal(resource.resource, `${h.baseUrl}/mcp/${entryId}`);
    assert.deepEqual(resource.authorization_servers, [h.baseUrl]);
    assert.deepEqual(resource.scopes_supported, ['mcp']);
    const metadataResponse = await fetch(`${resource.authorization_servers[0]}/.well-known/oauth-authorization-server`);
    assert.equal(metadataResponse.status, 200);
    const metadata = await metadataResponse.json();
    return { resource: resource.resource as string, metadata };
  }

  async function register(metadata: Record<string, any>) {
    const registered = await fetch(metadata.registration_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Harbour agent',
        redirect_uris: [callback.url],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    });
    assert.equal(registered.status, 201, await registered.clone().text());
    return (await registered.json()).client_id as string;
  }

  const authorizeUrl = (
    metadata: Record<string, any>,
    clientId: string,
    resource: string,
    challenge: string | null,
    state: string,
  ) => {
    const url = new URL(metadata.authorization_endpoint);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: callback.url,
      scope: 'mcp',
      resource,
      state,
      ...(challenge && { code_challenge: challenge, code_challenge_method: 'S256' }),
    }).toString();
    return url.toString();
  };

  /**
   * The browser part: (sign-in if asked,) consent with the listing's parameter; returns the callback's query.
   * axe checks the consent page the first time only (the same template and state each time).
   */
  let consentChecked = false;
  async function consent(
    page: Page,
    url: string,
    signIn: boolean,
    clientName = 'Harbour agent',
  ): Promise<URLSearchParams> {
    await page.goto(url);
    if (signIn) {
      assert.equal(new URL(page.url()).pathname, '/console/sign-in', 'the person signs in to the console first');
      await page.focus('#api_key');
      await page.keyboard.type(alice.apiKey);
      await page.keyboard.press('Enter');
      await page.waitForURL((u) => u.pathname.startsWith('/oauth/interaction/'));
    }
    assert.match(new URL(page.url()).pathname, /^\/oauth\/interaction\/[A-Za-z0-9_-]+$/);
    assert.equal(await page.locator('#client-name').innerText(), clientName);
    assert.equal(await page.locator('#redirect-host').innerText(), new URL(callback.url).host);
    assert.equal(await page.locator('#listing').innerText(), entryA.name);
    assert.match(await page.locator('#prices').innerText(), /Look up a city\s+\$0\.0125 per call/);
    if (!consentChecked) {
      await assertAccessible(page, 'consent page');
      await screenshot(page, 'oauth-consent');
      consentChecked = true;
    }
    await page.fill('#param-region', 'eu');
    // Named honestly: a limit per run bounds one burst of calls; the budgets bound what the app spends.
    assert.ok(!/spending cap/i.test(await page.content()), 'a limit per run is no spending cap');
    assert.equal(await page.getByLabel('Limit per run').count(), 1);
    await page.fill('#cap', '1');
    await page.fill('#budget-monthly', '3');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(callback.url));
    return new URL(page.url()).searchParams;
  }

  it('connects an MCP client by OAuth: discovery from the 401, DCR, sign-in and consent in the browser, PKCE, a billed tools/call, refresh, a token bound to its entry, revocation', async function () {
    const { resource, metadata } = await discover(entryA.entryId);
    assert.equal(metadata.issuer, h.baseUrl);
    assert.deepEqual(metadata.code_challenge_methods_supported, ['S256']);
    assert.equal(metadata.authorization_response_iss_parameter_supported, true);
    assert.ok(metadata.revocation_endpoint);
    assert.ok(metadata.registration_endpoint);
    const clientId = await register(metadata);

    const context = await watchedContext(browser);
    contexts.push(context);
    const page = await context.newPage();
    const { verifier, challenge } = pkce();
    const state = randomBytes(8).toString('hex');
    const answer = await consent(page, authorizeUrl(metadata, clientId, resource, challenge, state), true);
    assert.equal(answer.get('state'), state);
    assert.equal(answer.get('iss'), h.baseUrl, 'RFC 9207: the issuer is in the authorization response');
    const code = answer.get('code');
    assert.ok(code, `no code in ${answer.toString()}`);
    const granted = await h.db
      .selectFrom('market_credentials')
      .select(['id', 'cap_micros', 'budget_monthly_micros', 'budget_total_micros'])
      .where('user_id', '=', alice.userId)
      .where('source', '=', 'oauth')
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      [Number(granted.cap_micros), Number(granted.budget_monthly_micros), granted.budget_total_micros],
      [1_000_000, 3_000_000, null],
      "the grant's credential carries the monthly budget given on the consent page",
    );

    const exchanged = await form(metadata.token_endpoint, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: callback.url,
      client_id: clientId,
      code_verifier: verifier,
      resource,
    });
    const tokens = await exchanged.json();
    assert.equal(exchanged.status, 200, JSON.stringify(tokens));
    assert.equal(tokens.token_type, 'Bearer');
    assert.ok(tokens.expires_in > 0 && tokens.expires_in <= 600, 'a short-lived access token');
    assert.ok(tokens.refresh_token);

    const before = (await h.http('GET', '/api/v1/account', { apiKey: alice.apiKey })).body;
    const client = new Client({ name: 'oauth-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(resource), {
        requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } },
      }),
    );
    try {
      const listed = await client.listTools();
      assert.deepEqual(
        listed.tools.map((t) => t.name),
        ['lookup_city'],
      );
      const called = await client.callTool({ name: 'lookup_city', arguments: { city: 'Porto' } });
      assert.equal(called.isError, false, JSON.stringify(called));
      assert.equal((called._meta?.[BILLING_META] as { chargedUsd: number }).chargedUsd, 0.0125);
      // The grant's monthly budget bounds its calls like any credential's: lowered below two calls, the next is refused.
      const lowered = await h.http('PATCH', `/api/v1/mcp-market/credentials/${granted.id}`, {
        apiKey: alice.apiKey,
        body: { budgetMonthlyUsd: 0.02 },
      });
      assert.equal(lowered.status, 200, JSON.stringify(lowered.body));
      const refused = await client.callTool({ name: 'lookup_city', arguments: { city: 'Faro' } });
      assert.equal(refused.isError, true);
      assert.equal((refused._meta?.[BILLING_META] as { code: string }).code, 'budget_reached');
    } finally {
      await client.close();
    }
    const after = (await h.http('GET', '/api/v1/account', { apiKey: alice.apiKey })).body;
    assert.equal(Math.round((before.balanceUsd - after.balanceUsd) * 1e6), 12_500, 'the call was charged to Alice');
    const transactions = (await h.http('GET', '/api/v1/transactions?pageSize=20', { apiKey: alice.apiKey })).body
      .transactions as { agentName: string; cost: number }[];
    assert.ok(transactions.some((t) => t.agentName === `market:${entryA.slug}` && t.cost === 0.0125));

    // The token is bound to entry A's endpoint: entry B refuses it.
    const elsewhere = await mcpPost(entryB.entryId, tokens.access_token);
    assert.equal(elsewhere.status, 401);
    const elsewhereChallenge = challengeParams(elsewhere.headers.get('www-authenticate') ?? '');
    assert.equal(elsewhereChallenge.error, 'invalid_token');
    assert.match(elsewhereChallenge.error_description, /another resource/);

    // Refresh rotates the refresh token; the old one is then refused.
    const refreshed = await form(metadata.token_endpoint, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: clientId,
    });
    const renewed = await refreshed.json();
    assert.equal(refreshed.status, 200, JSON.stringify(renewed));
    assert.notEqual(renewed.refresh_token, tokens.refresh_token);
    assert.equal((await mcpPost(entryA.entryId, renewed.access_token)).status, 200);
    const replayed = await form(metadata.token_endpoint, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: clientId,
    });
    assert.equal(replayed.status, 400);
    assert.equal((await replayed.json()).error, 'invalid_grant');

    // Revoking the refresh token ends the grant: its access tokens are refused.
    const revoked = await form(metadata.revocation_endpoint, {
      token: renewed.refresh_token,
      token_type_hint: 'refresh_token',
      client_id: clientId,
    });
    assert.equal(revoked.status, 200);
    const afterRevocation = await mcpPost(entryA.entryId, renewed.access_token);
    assert.equal(afterRevocation.status, 401);
    assert.equal(challengeParams(afterRevocation.headers.get('www-authenticate') ?? '').error, 'invalid_token');

    // The bearer credential and the plain API key keep working beside OAuth.
    const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${entryA.entryId}/credentials`, {
      apiKey: alice.apiKey,
      body: { params: { region: 'us' } },
    });
    assert.equal(issued.status, 201);
    assert.equal((await mcpPost(entryA.entryId, issued.body.credential)).status, 200);
    assert.equal((await mcpPost(entryB.entryId, alice.apiKey)).status, 200);
  });

  it('turns dynamic client registration off when the operator says so (OAUTH_DYNAMIC_REGISTRATION=false)', async function () {
    const stack = await h.startIsolatedStack({
      taskQueues: { platform: 'oauth-no-dcr-platform', browser: 'oauth-no-dcr-browser' },
      overrides: { oauth: { ...h.config.oauth, dynamicRegistration: false } },
      queues: [],
    });
    const metadata = await (await fetch(`${stack.baseUrl}/.well-known/oauth-authorization-server`)).json();
    assert.equal(metadata.issuer, stack.baseUrl);
    assert.equal(metadata.registration_endpoint, undefined);
    const refused = await fetch(`${stack.baseUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [callback.url], token_endpoint_auth_method: 'none' }),
    });
    assert.equal(refused.status, 404);
  });

  it('identifies a client by its metadata document (CIMD): fetched over HTTPS through the SSRF guard, listed and revoked in the console, exact redirect URIs, a client_id on 127.0.0.2 refused without a packet sent there', async function () {
    const certs = createTestCertificates();
    const previousCa = process.env.NODE_EXTRA_CA_CERTS;
    process.env.NODE_EXTRA_CA_CERTS = certs.caFile;
    let documentUrl = '';
    const documentServer = https.createServer({ key: certs.key, cert: certs.cert }, (req, res) => {
      if (req.url !== '/client.json') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
      res.end(
        JSON.stringify({
          client_id: documentUrl,
          client_name: 'Loopback agent',
          redirect_uris: [callback.url],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      );
    });
    let strayHits = 0;
    const stray = https.createServer({ key: certs.key, cert: certs.cert }, (_req, res) => {
      strayHits++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    stray.on('connection', () => strayHits++);
    await new Promise<void>((resolve) => documentServer.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => stray.listen(0, '127.0.0.2', resolve));
    try {
      documentUrl = `https://127.0.0.1:${(documentServer.address() as AddressInfo).port}/client.json`;
      const { resource, metadata } = await discover(entryA.entryId);
      assert.equal(metadata.client_id_metadata_document_supported, true);

      // The document's client: consent names it, the code is exchanged with PKCE, the token calls tools.
      const context = await watchedContext(browser);
      contexts.push(context);
      const page = await context.newPage();
      const { verifier, challenge } = pkce();
      const answer = await consent(
        page,
        authorizeUrl(metadata, documentUrl, resource, challenge, 'cimd'),
        true,
        'Loopback agent',
      );
      const exchanged = await form(metadata.token_endpoint, {
        grant_type: 'authorization_code',
        code: answer.get('code') ?? '',
        redirect_uri: callback.url,
        client_id: documentUrl,
        code_verifier: verifier,
        resource,
      });
      const tokens = await exchanged.json();
      assert.equal(exchanged.status, 200, JSON.stringify(tokens));
      assert.equal((await mcpPost(entryA.entryId, tokens.access_token)).status, 200);

      // The console lists the connection; revoking it there ends the access and refresh tokens at once.
      await page.goto(`${h.baseUrl}/console/connections`);
      const row = page.locator('#connections tbody tr', { hasText: 'Loopback agent' });
      assert.equal(await row.count(), 1);
      assert.match(await row.innerText(), new RegExp(entryA.name));
      assert.equal(await row.locator('input[name=budgetMonthly]').inputValue(), '3', 'the budget given on consent');
      await row.locator('input[name=budgetMonthly]').fill('4');
      await row.getByRole('button', { name: /^Save the budgets of Loopback agent/ }).click();
      await page.waitForURL(`${h.baseUrl}/console/connections`);
      assert.equal(
        await page
          .locator('#connections tbody tr', { hasText: 'Loopback agent' })
          .locator('input[name=budgetMonthly]')
          .inputValue(),
        '4',
      );
      await assertAccessible(page, 'connected apps');
      await row.getByRole('button', { name: /^Revoke Loopback agent/ }).click();
      await page.waitForURL(`${h.baseUrl}/console/connections`);
      assert.equal(await page.locator('#connections tbody tr', { hasText: 'Loopback agent' }).count(), 0);
      const afterRevoke = await mcpPost(entryA.entryId, tokens.access_token);
      assert.equal(afterRevoke.status, 401);
      assert.equal(challengeParams(afterRevoke.headers.get('www-authenticate') ?? '').error, 'invalid_token');
      const refreshAfterRevoke = await form(metadata.token_endpoint, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: documentUrl,
      });
      assert.equal(refreshAfterRevoke.status, 400);
      assert.equal((await refreshAfterRevoke.json()).error, 'invalid_grant');

      // A redirect URI that is not in the document: refused at the authorization server, no redirect.
      const elsewhere = new URL(authorizeUrl(metadata, documentUrl, resource, challenge, 'x'));
      elsewhere.searchParams.set('redirect_uri', `${callback.url}/other`);
      const wrongRedirect = await fetch(elsewhere, { redirect: 'manual' });
      assert.equal(wrongRedirect.status, 400);
      assert.match(await wrongRedirect.text(), /redirect_uri/);

      // A client_id on 127.0.0.2 (not allowlisted): refused as an unknown client, and nothing reached 127.0.0.2.
      const strayUrl = `https://127.0.0.2:${(stray.address() as AddressInfo).port}/client.json`;
      const refused = await fetch(authorizeUrl(metadata, strayUrl, resource, challenge, 'y'), { redirect: 'manual' });
      assert.equal(refused.status, 400);
      assert.match(await refused.text(), /invalid_client/);
      assert.equal(strayHits, 0, 'nothing reached 127.0.0.2');
    } finally {
      if (previousCa === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
      else process.env.NODE_EXTRA_CA_CERTS = previousCa;
      documentServer.closeAllConnections();
      stray.closeAllConnections();
      await new Promise<void>((resolve) => documentServer.close(() => resolve()));
      await new Promise<void>((resolve) => stray.close(() => resolve()));
      certs.cleanup();
    }
  });

  it('refuses an authorization without PKCE, a code exchanged without its verifier or for another resource, a resource that is not a market endpoint, and a denied consent', async function () {
    const { resource, metadata } = await discover(entryA.entryId);
    const clientId = await register(metadata);

    // No code_challenge: the authorization server sends the browser back with invalid_request.
    const noChallenge = await fetch(authorizeUrl(metadata, clientId, resource, null, 's1'), { redirect: 'manual' });
    assert.ok([302, 303].includes(noChallenge.status), String(noChallenge.status));
    const noChallengeAnswer = new URL(noChallenge.headers.get('location') ?? '').searchParams;
    assert.equal(noChallengeAnswer.get('error'), 'invalid_request');
    assert.match(noChallengeAnswer.get('error_description') ?? '', /PKCE/);

    // A resource that is not one of the market's endpoints: invalid_target.
    const { challenge: otherChallenge } = pkce();
    const wrong = await fetch(authorizeUrl(metadata, clientId, `${h.baseUrl}/mcp/not-an-entry`, otherChallenge, 's2'), {
      redirect: 'manual',
    });
    assert.ok([302, 303].includes(wrong.status), String(wrong.status));
    assert.equal(new URL(wrong.headers.get('location') ?? '').searchParams.get('error'), 'invalid_target');

    // A code whose exchange leaves out the verifier is refused.
    const context = await watchedContext(browser);
    contexts.push(context);
    const page = await context.newPage();
    const { challenge } = pkce();
    const answer = await consent(page, authorizeUrl(metadata, clientId, resource, challenge, 's3'), true);
    const code = answer.get('code');
    assert.ok(code);
    const exchanged = await form(metadata.token_endpoint, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: callback.url,
      client_id: clientId,
      resource,
    });
    assert.equal(exchanged.status, 400);
    assert.equal((await exchanged.json()).error, 'invalid_grant');

    // A code for entry A exchanged for entry B's endpoint (a wrong resource): invalid_target.
    const second = pkce();
    const again = await consent(page, authorizeUrl(metadata, clientId, resource, second.challenge, 's4'), false);
    const wrongResource = await form(metadata.token_endpoint, {
      grant_type: 'authorization_code',
      code: again.get('code') ?? '',
      redirect_uri: callback.url,
      client_id: clientId,
      code_verifier: second.verifier,
      resource: `${h.baseUrl}/mcp/${entryB.entryId}`,
    });
    assert.equal(wrongResource.status, 400);
    assert.equal((await wrongResource.json()).error, 'invalid_target');

    // Denying on the consent page sends the client access_denied.
    await page.goto(authorizeUrl(metadata, clientId, resource, pkce().challenge, 's5'));
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL((u) => u.href.startsWith(callback.url));
    const denied = new URL(page.url()).searchParams;
    assert.equal(denied.get('error'), 'access_denied');
    assert.equal(denied.get('state'), 's5');
    assert.equal(denied.get('code'), null);
  });
});

/** What oidc-provider stores through the adapter: found, consumed, found by uid, expired, revoked by grant, destroyed. */
async function exerciseAdapter(db: Db) {
  const adapter = oauthAdapterFactory(db);
  const tokens = adapter('AccessToken');
  const codes = adapter('AuthorizationCode');
  const sessions = adapter('Session');
  const grant = `grant-${randomBytes(6).toString('hex')}`;
  const id = (name: string) => `${name}-${randomBytes(6).toString('hex')}`;

  const token = id('at');
  await tokens.upsert(token, { jti: token, grantId: grant, aud: 'https://api.example/mcp/x' }, 600);
  assert.deepEqual(await tokens.find(token), { jti: token, grantId: grant, aud: 'https://api.example/mcp/x' });
  assert.equal(await codes.find(token), undefined, 'models do not share ids');

  const code = id('code');
  await codes.upsert(code, { jti: code, grantId: grant }, 60);
  await codes.consume(code);
  assert.equal(typeof (await codes.find(code))?.consumed, 'number', 'a consumed code says when');

  const session = id('session');
  const uid = id('uid');
  await sessions.upsert(session, { jti: session, uid, accountId: 'a' }, 3600);
  assert.equal((await sessions.findByUid(uid))?.jti, session);
  await sessions.upsert(session, { jti: session, uid, accountId: 'b' }, 3600);
  assert.equal((await sessions.find(session))?.accountId, 'b', 'an upsert replaces the payload');
  await sessions.destroy(session);
  assert.equal(await sessions.find(session), undefined);

  const expired = id('expired');
  await tokens.upsert(expired, { jti: expired }, -1);
  assert.equal(await tokens.find(expired), undefined, 'an expired record is absent');
  assert.ok((await pruneExpiredOAuthRecords(db)) >= 1);

  await tokens.revokeByGrantId(grant);
  assert.equal(await tokens.find(token), undefined, 'revoking the grant removes its tokens');
  assert.equal(await codes.find(code), undefined, 'and its codes');
}

describe('OAuth storage (the oidc-provider adapter)', function () {
  this.timeout(120_000);

  it('keeps, consumes, finds, expires and revokes records on Postgres', async function () {
    const h = await useHarness();
    await exerciseAdapter(h.db);
  });

  it('does the same on PGlite', async function () {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'oauth-pglite-'));
    const db = await openDatabase({ databaseUrl: null, dataDir: dir });
    try {
      await migrateToLatest(db);
      await exerciseAdapter(db);
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
