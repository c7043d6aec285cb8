import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { findApiKeyOwner } from '../../db/repos/market-tool-calls';
import { createSession, findLiveSession } from '../../db/repos/sessions';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import { startFixtureSite, type FixtureSite } from '../support/fakes/fixture-site';
import {
  assertAccessible,
  screenshot,
  sharedBrowser,
  signedInPage,
  watchedContext,
  type WatchedContext,
} from '../support/stack/web-browser';

const SESSION_COOKIE = '__Host-console-session';

describe('web pages: the console', function () {
  this.timeout(120_000);
  let h: Harness;
  let browser: Browser;
  let site: FixtureSite;
  let alice: { userId: string; apiKey: string };
  let bob: { userId: string; apiKey: string };
  /** The scrape target holds its answer until the test opens the gate: the run is still going when its page is opened. */
  let openGate: () => void = () => undefined;
  let openSecondGate: () => void = () => undefined;
  let gateHits = 0;
  /** A finished scrape of Alice's, made before the tests so none of them depends on another. */
  let aliceRun: { id: string; logs: string[] };
  const contexts: WatchedContext[] = [];

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const secondGate = new Promise<void>((resolve) => (openSecondGate = resolve));
    site = await startFixtureSite({
      '/gate': async (_req, res) => {
        gateHits++;
        await gate;
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          '<!doctype html><html><head><title>Harbour gate</title></head><body><h1>Harbour gate</h1><p>The gate opened at dawn.</p></body></html>',
        );
      },
      '/open': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          '<!doctype html><html><head><title>Open harbour</title></head><body><p>Ships come and go.</p></body></html>',
        );
      },
      '/second-gate': async (_req, res) => {
        await secondGate;
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!doctype html><html><head><title>Second gate</title></head><body><p>Open.</p></body></html>');
      },
    });
    browser = await sharedBrowser();
    alice = await h.createUser({ creditUsd: 5 });
    bob = await h.createUser({ creditUsd: 3 });
    const started = await h.http('POST', '/api/v1/scrape', { apiKey: alice.apiKey, body: { url: `${site.url}/open` } });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const finished = await h.waitForJob(alice.apiKey, `/api/v1/scrape/status/${started.body.jobId}`);
    assert.equal(finished.status, 'completed', JSON.stringify(finished));
    aliceRun = { id: started.body.jobId, logs: finished.logs };
  });

  after(async function () {
    openGate();
    openSecondGate();
    await site?.close();
  });

  afterEach(async function () {
    const watched = contexts.splice(0);
    for (const context of watched) await context.close();
    assert.deepEqual(
      watched.flatMap((c) => c.foreignRequests),
      [],
      'requests to non-loopback hosts',
    );
    assert.deepEqual(
      watched.flatMap((c) => c.consoleErrors),
      [],
      'console errors (CSP violations among them)',
    );
  });

  async function newContext(options: { javaScriptEnabled?: boolean } = {}): Promise<WatchedContext> {
    const context = await watchedContext(browser, options);
    contexts.push(context);
    return context;
  }

  /** Signs in through the form, with the keyboard, as a person does; returns the page (where sign-in led). */
  async function signInWithTheForm(context: WatchedContext, apiKey: string, start = '/console'): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${h.baseUrl}${start}`);
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
    await page.focus('#api_key');
    await page.keyboard.type(apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname !== '/console/sign-in');
    return page;
  }

  const signIn = (context: WatchedContext, apiKey: string, start = '/console') =>
    signedInPage(context, h.baseUrl, apiKey, start);

  const sessionCookie = async (context: BrowserContext) =>
    (await context.cookies()).find((c) => c.name === SESSION_COOKIE);

  /** A form POST as another client would send it (no browser to add Origin or Sec-Fetch-Site unless told). */
  const post = (
    path: string,
    options: { cookie?: string; fields?: Record<string, string>; headers?: Record<string, string> },
  ) =>
    fetch(`${h.baseUrl}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(options.cookie && { cookie: options.cookie }),
        ...options.headers,
      },
      body: new URLSearchParams(options.fields ?? {}).toString(),
    });

  it('signs in with an API key into a server-side session and shows the balance, held and available amounts GET /account gives', async function () {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${h.baseUrl}/console`);
    assert.equal(new URL(page.url()).pathname, '/console/sign-in', 'the console asks for sign-in first');
    await assertAccessible(page, 'sign-in page');
    await screenshot(page, 'sign-in');

    await page.fill('#api_key', 'sk_live_not-a-key-of-anyone-at-all-000000');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /not valid/);
    assert.equal(await sessionCookie(context.context), undefined);
    await assertAccessible(page, 'sign-in page with an error');

    await page.fill('#api_key', alice.apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${h.baseUrl}/console`);
    const cookie = (await sessionCookie(context.context))!;
    assert.deepEqual(
      { httpOnly: cookie.httpOnly, secure: cookie.secure, sameSite: cookie.sameSite, path: cookie.path },
      { httpOnly: true, secure: true, sameSite: 'Lax', path: '/' },
    );
    const stored = await h.db
      .selectFrom('sessions')
      .select(['token_hash'])
      .where('user_id', '=', alice.userId)
      .where('revoked_at', 'is', null)
      .execute();
    assert.deepEqual(
      stored.map((s) => s.token_hash),
      [createHash('sha256').update(cookie.value).digest('hex')],
      'only the hash of the token is stored',
    );

    const account = (await h.http('GET', '/api/v1/account', { apiKey: alice.apiKey })).body;
    // Whole cents show two decimals; anything finer shows to the micro-dollar.
    const money = (usd: number) => `$${usd.toFixed(6).replace(/(\.\d\d\d*?)0+$/, '$1')}`;
    assert.deepEqual(
      {
        balance: await page.locator('#balance').innerText(),
        held: await page.locator('#held').innerText(),
        available: await page.locator('#available').innerText(),
      },
      { balance: money(account.balanceUsd), held: money(account.heldUsd), available: money(account.availableUsd) },
    );
    assert.match(
      await page.locator('header').innerText(),
      new RegExp(`Signed in as ${account.email.replace(/[.]/g, '\\.')}`),
    );
    await assertAccessible(page, 'console home');
    await screenshot(page, 'console-home');
  });

  it('follows a scrape started from the REST API live on its run page until it completes, logs included', async function () {
    this.timeout(180_000);
    const accepted = await h.http('POST', '/api/v1/scrape', {
      apiKey: alice.apiKey,
      body: { url: `${site.url}/gate` },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const jobId: string = accepted.body.jobId;

    const context = await newContext();
    // The SSE extension arrives well after htmx (as on a slow link): it must still be in place before htmx starts.
    await context.context.route('**/hx-sse.min.js', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      await route.continue();
    });
    const home = await signIn(context, alice.apiKey);
    await home.getByRole('link', { name: jobId.slice(0, 8) }).click();
    await home.waitForURL(`**/console/runs/${jobId}`);
    const page = home;
    assert.match(
      await page.locator('#run-status').innerText(),
      /^(pending|processing)$/,
      'the run is still going when its page opens',
    );
    await page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true));
    await assertAccessible(page, 'run page while the run goes on');

    openGate();
    // The run ends (the API says so), then the page shows it without a reload: a failure says which of the two went wrong.
    const ended = await h.waitForJob(alice.apiKey, `/api/v1/scrape/status/${jobId}`);
    assert.equal(ended.status, 'completed', JSON.stringify(ended).slice(0, 2000));
    await page.locator('#run-status.status-completed').waitFor({ timeout: 30_000 });
    await page.locator('#run-live-note', { hasText: 'The run has ended.' }).waitFor();
    assert.equal(
      await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed),
      true,
      'the page updated in place, without reloading',
    );
    assert.ok(gateHits > 0);

    const record = (await h.http('GET', `/api/v1/scrape/status/${jobId}`, { apiKey: alice.apiKey })).body;
    assert.equal(record.status, 'completed');
    assert.ok(record.logs.length >= 2, JSON.stringify(record.logs));
    assert.deepEqual(await page.locator('#run-logs li').allInnerTexts(), record.logs, 'every log line, in order, once');
    assert.match(await page.locator('#run-outcome').innerText(), /The gate opened at dawn/);
    await assertAccessible(page, 'run page after the run ended');
    await screenshot(page, 'run');

    // A reconnect resumes after the last event the browser saw (Last-Event-ID = log lines received).
    const cookie = (await sessionCookie(context.context))!;
    const resumed = await fetch(`${h.baseUrl}/console/runs/${jobId}/events`, {
      headers: { cookie: `${SESSION_COOKIE}=${cookie.value}`, 'last-event-id': '1' },
    });
    assert.equal(resumed.status, 200);
    assert.match(resumed.headers.get('content-type')!, /^text\/event-stream/);
    const stream = await resumed.text();
    const firstMessage = stream.split('\n\n')[0];
    assert.equal(/^id: (\d+)$/m.exec(firstMessage)?.[1], String(record.logs.length));
    assert.equal((firstMessage.match(/<li>/g) ?? []).length, record.logs.length - 1, 'only the lines after the first');
    assert.match(stream, /^event: done$/m);
  });

  it('works without JavaScript: sign-in, the console home and a run page are plain HTML', async function () {
    const context = await newContext({ javaScriptEnabled: false });
    const page = await signInWithTheForm(context, alice.apiKey, `/console/runs/${aliceRun.id}`);
    assert.equal(new URL(page.url()).pathname, `/console/runs/${aliceRun.id}`, 'sign-in returns to the page asked for');
    assert.deepEqual(await page.locator('#run-logs li').allInnerTexts(), aliceRun.logs);
    assert.equal(await page.locator('#run-status').innerText(), 'completed');
  });

  it('shows usage and money: spend per day as a chart with a table beside, per kind, per market listing, the transactions and what is held', async function () {
    const service: MarketProviderService = await startMarketProvider();
    try {
      const provider = await h.createUser({ creditUsd: 0 });
      const entry = await approvedServiceEntry(h, provider, service.url, {
        name: `Harbour pilot ${Date.now()}`,
        monetizationStrategy: 'tool_call_fixed',
        tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.0125 }],
      });
      const client = new Client({ name: 'usage-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/mcp/${entry.entryId}`), {
          requestInit: { headers: { authorization: `Bearer ${alice.apiKey}` } },
        }),
      );
      try {
        const called = await client.callTool({ name: 'lookup_city', arguments: { city: 'Porto' } });
        assert.equal(called.isError, false);
      } finally {
        await client.close();
      }

      const transactions = (await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: alice.apiKey })).body
        .transactions as { agentName: string; cost: number; executedAt: string; jobId: string | null }[];
      const dayBefore = new Date().toISOString().slice(0, 10);
      const micros = (usd: number) => Math.round(usd * 1e6);
      const money = (m: number) =>
        `$${(m / 1e6).toFixed(Math.min(6, Math.max(2, (String(m / 1e6).split('.')[1] ?? '').length)))}`;
      const spentOn = (day: string) =>
        transactions.filter((t) => t.executedAt.startsWith(day)).reduce((sum, t) => sum + micros(t.cost), 0);
      const marketSpent = transactions
        .filter((t) => t.agentName === `market:${entry.slug}`)
        .reduce((sum, t) => sum + micros(t.cost), 0);
      assert.equal(marketSpent, 12_500, 'the call was charged its price');

      const context = await newContext();
      const home = await signIn(context, alice.apiKey);
      await home.getByRole('link', { name: 'Usage and money' }).first().click();
      await home.waitForURL(`${h.baseUrl}/console/usage`);
      const page = home;
      const dayRows = await page.locator('#spend-per-day tbody tr').allInnerTexts();
      const dayAfter = new Date().toISOString().slice(0, 10);
      assert.equal(dayRows.length, 30);
      // The page's today is the server's when it rendered: the day the test began or, across midnight UTC, the next.
      const today = dayRows.at(-1)!.split('\t')[0];
      assert.ok([dayBefore, dayAfter].includes(today), `the last row is today (${dayBefore}/${dayAfter}): ${today}`);
      const spentToday = spentOn(today);
      assert.equal(
        dayRows.at(-1),
        `${today}\t${money(spentToday)}`,
        "today's spend is the sum of today's transactions",
      );
      assert.equal(await page.locator('#spend-chart rect.bar').count(), 30, 'one bar per day');
      assert.equal(
        await page.locator('#spend-chart rect.bar').last().locator('title').textContent(),
        `${today}: ${money(spentToday)}`,
      );
      const kinds = await page.locator('#spend-per-kind tbody tr').allInnerTexts();
      assert.ok(kinds.includes(`Market tool calls\t1\t${money(12_500)}`), kinds.join(' | '));
      assert.ok(
        kinds.some((row) => row.startsWith('Scrape\t')),
        kinds.join(' | '),
      );
      const listing = page.locator('#spend-per-listing tbody tr', { hasText: entry.slug });
      assert.equal(await listing.innerText(), `${entry.slug}\t1\t${money(12_500)}`);
      assert.equal(await listing.getByRole('link').getAttribute('href'), `/market/tools/${entry.entryId}`);
      const newest = await page.locator('#transactions tbody tr').first().locator('th, td').allInnerTexts();
      assert.deepEqual(
        newest.slice(1),
        [`market:${entry.slug}`, '—', money(12_500)],
        'the newest transaction is the call, with no run',
      );
      const account = (await h.http('GET', '/api/v1/account', { apiKey: alice.apiKey })).body;
      assert.equal(await page.locator('#balance').innerText(), money(micros(account.balanceUsd)));
      assert.equal(account.heldUsd, 0);
      assert.match(await page.locator('section[aria-labelledby="holds-heading"]').innerText(), /Nothing is held/);
      await assertAccessible(page, 'usage page');
      await screenshot(page, 'usage');

      // A run that is going on holds money: the page lists its hold, the amount GET /account calls held.
      const going = await h.http('POST', '/api/v1/scrape', {
        apiKey: alice.apiKey,
        body: { url: `${site.url}/second-gate` },
      });
      assert.equal(going.status, 202, JSON.stringify(going.body));
      const held = (await h.http('GET', '/api/v1/account', { apiKey: alice.apiKey })).body.heldUsd;
      assert.ok(held > 0);
      await page.reload();
      assert.deepEqual(
        (await page.locator('#holds tbody tr').allInnerTexts()).map((row) => [row.split('\t')[0], row.split('\t')[2]]),
        [[`Scrape ${going.body.jobId.slice(0, 8)}`, money(micros(held))]],
      );
      assert.equal(await page.locator('#held').innerText(), money(micros(held)));
      await assertAccessible(page, 'usage page with a hold');
      openSecondGate();
      await h.waitForJob(alice.apiKey, `/api/v1/scrape/status/${going.body.jobId}`);
    } finally {
      await service.close();
    }
  });

  it("shows a run only to its account: another account's run id is a 404 page, its events too", async function () {
    const context = await newContext();
    const page = await signIn(context, bob.apiKey);
    assert.equal(
      await page.getByRole('link', { name: aliceRun.id.slice(0, 8) }).count(),
      0,
      "Bob's console does not list Alice's run",
    );
    const response = await page.goto(`${h.baseUrl}/console/runs/${aliceRun.id}`);
    assert.equal(response?.status(), 404);
    assert.equal(await page.locator('h1').innerText(), 'Page not found');
    const html = await page.content();
    for (const line of aliceRun.logs) assert.ok(!html.includes(line), 'no log line of the run reaches the page');
    const cookie = (await sessionCookie(context.context))!;
    const events = await fetch(`${h.baseUrl}/console/runs/${aliceRun.id}/events`, {
      headers: { cookie: `${SESSION_COOKIE}=${cookie.value}` },
    });
    assert.equal(events.status, 404);
    assert.doesNotMatch(await events.text(), /gate/i);
    const anonymous = await fetch(`${h.baseUrl}/console/runs/${aliceRun.id}/events`);
    assert.equal(anonymous.status, 401);
  });

  it('signs out: the old cookie then gets the sign-in page; "sign out everywhere" ends every session of the account', async function () {
    const first = await newContext();
    const page = await signIn(first, bob.apiKey);
    const old = (await sessionCookie(first.context))!;
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(`${h.baseUrl}/console/sign-in`);
    assert.equal(await sessionCookie(first.context), undefined, 'the browser forgets the cookie');

    const replay = await newContext();
    await replay.context.addCookies([{ ...old }]);
    const replayed = await replay.newPage();
    await replayed.goto(`${h.baseUrl}/console`);
    assert.equal(new URL(replayed.url()).pathname, '/console/sign-in', 'the revoked cookie opens nothing');
    assert.equal(await replayed.locator('h1').innerText(), 'Sign in to the console');

    // A fresh account, so no other test's session is counted.
    const carol = await h.createUser({ creditUsd: 0 });
    const [x, y] = [await newContext(), await newContext()];
    const onX = await signIn(x, carol.apiKey);
    const onY = await signIn(y, carol.apiKey);
    await onX.reload();
    assert.match(
      await onX.locator('section[aria-labelledby="session-heading"]').innerText(),
      /signed in on 2 browsers/,
    );
    await onX.getByRole('button', { name: 'Sign out everywhere' }).click();
    await onX.waitForURL(`${h.baseUrl}/console/sign-in`);
    await onY.goto(`${h.baseUrl}/console`);
    assert.equal(new URL(onY.url()).pathname, '/console/sign-in', 'the other browser is signed out too');
  });

  it('refuses a POST without its form token, from a foreign origin or from no page at all (CSRF), and the session lives on', async function () {
    const context = await newContext();
    const page = await signIn(context, bob.apiKey);
    const cookie = `${SESSION_COOKIE}=${(await sessionCookie(context.context))!.value}`;
    const csrf = (await page.locator('form[action="/console/sign-out"] input[name="csrf"]').getAttribute('value'))!;
    const own = { origin: h.baseUrl, 'sec-fetch-site': 'same-origin' };

    const refusals: { why: string; fields: Record<string, string>; headers: Record<string, string> }[] = [
      { why: 'no token', fields: {}, headers: own },
      { why: 'a wrong token', fields: { csrf: `${csrf}x` }, headers: own },
      { why: 'a foreign Origin', fields: { csrf }, headers: { origin: 'http://evil.example' } },
      { why: 'a cross-site fetch', fields: { csrf }, headers: { 'sec-fetch-site': 'cross-site' } },
      { why: 'neither Origin nor Sec-Fetch-Site', fields: { csrf }, headers: {} },
    ];
    for (const refusal of refusals) {
      const response = await post('/console/sign-out', { cookie, fields: refusal.fields, headers: refusal.headers });
      assert.equal(response.status, 403, refusal.why);
      assert.match(await response.text(), /<h1>Request refused<\/h1>/, refusal.why);
    }
    const still = await fetch(`${h.baseUrl}/console`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(still.status, 200, 'the refused requests did not sign anyone out');

    // Sign-in has no session yet: its form is paired with the browser by a cookie of its own.
    const unpaired = await post('/console/sign-in', { fields: { api_key: bob.apiKey, csrf: 'made-up' }, headers: own });
    assert.equal(unpaired.status, 403);
    assert.equal(unpaired.headers.get('set-cookie'), null, 'no session is made');

    const accepted = await post('/console/sign-out', { cookie, fields: { csrf }, headers: own });
    assert.equal(accepted.status, 303);
    assert.equal(accepted.headers.get('location'), '/console/sign-in');
    // The page itself is the console home, which axe checks in the first test ('console home').
    assert.equal(new URL(page.url()).pathname, '/console');
  });

  it('ends a session after the idle time, at its absolute expiry, and when its API key is rotated', async function () {
    const carol = await h.createUser({ creditUsd: 0 });
    const { apiKeyId } = (await findApiKeyOwner(h.db, carol.apiKey))!;
    const lifetimes = { idleMs: 10 * 60_000, maxMs: 60 * 60_000 };
    const t0 = new Date();
    const at = (ms: number) => new Date(t0.getTime() + ms);

    const idle = await createSession(h.db, { userId: carol.userId, apiKeyId, lifetimes, now: t0 });
    assert.ok(await findLiveSession(h.db, idle.token, lifetimes, at(9 * 60_000)), 'used within the idle time');
    assert.ok(await findLiveSession(h.db, idle.token, lifetimes, at(18 * 60_000)), 'the use above counted as activity');
    assert.equal(
      await findLiveSession(h.db, idle.token, lifetimes, at(29 * 60_000)),
      null,
      'idle for longer than allowed',
    );

    const busy = await createSession(h.db, { userId: carol.userId, apiKeyId, lifetimes, now: t0 });
    for (let minute = 8; minute < 60; minute += 8)
      assert.ok(await findLiveSession(h.db, busy.token, lifetimes, at(minute * 60_000)));
    assert.equal(
      await findLiveSession(h.db, busy.token, lifetimes, at(60 * 60_000 + 1)),
      null,
      'past its absolute expiry, however busy',
    );

    const rotated = await createSession(h.db, { userId: carol.userId, apiKeyId, lifetimes });
    assert.ok(await findLiveSession(h.db, rotated.token, lifetimes));
    const rotation = await h.http('POST', `/admin/users/${carol.userId}/rotate-key`, {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
    });
    assert.equal(rotation.status, 200, JSON.stringify(rotation.body));
    assert.equal(
      await findLiveSession(h.db, rotated.token, lifetimes),
      null,
      'a rotated key ends the sessions made with it',
    );
  });
});
