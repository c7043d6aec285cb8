import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { openMcpCredential } from '../../lib/market/credential';
import { approvedEntry } from '../support/market';
import { useHarness, type Harness } from '../support/stack/harness';
import { startFixtureSite, type FixtureSite } from '../support/fakes/fixture-site';
import {
  assertAccessible,
  screenshot,
  sharedBrowser,
  signedInPage,
  watchedContext,
  type WatchedContext,
} from '../support/stack/web-browser';

/** A cron that fires once a year: the stored agent runs once at creation (the Schedule's first trigger) and then waits. */
const YEARLY = '0 0 1 1 *';

describe('web pages: the console runs, automations and credentials pages', function () {
  this.timeout(120_000);
  let h: Harness;
  let browser: Browser;
  let site: FixtureSite;
  let alice: { userId: string; apiKey: string };
  let bob: { userId: string; apiKey: string };
  const contexts: WatchedContext[] = [];

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    site = await startFixtureSite({
      '/quay': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          '<!doctype html><html><head><title>Quay</title></head><body><p>Ships <b>&amp;</b> cranes.</p></body></html>',
        );
      },
    });
    browser = await sharedBrowser();
    alice = await h.createUser({ creditUsd: 5 });
    bob = await h.createUser({ creditUsd: 3 });
  });

  after(async function () {
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

  const signIn = (context: WatchedContext, apiKey: string, start = '/console') =>
    signedInPage(context, h.baseUrl, apiKey, start);

  /** The runs table's rows as text cells (run, kind, status, cost, started, last change). */
  async function runRows(page: Page): Promise<string[][]> {
    const rows = page.locator('#runs tbody tr');
    const cells: string[][] = [];
    for (let i = 0; i < (await rows.count()); i++) cells.push(await rows.nth(i).locator('th, td').allInnerTexts());
    return cells;
  }

  async function scrape(apiKey: string, path: string): Promise<string> {
    const accepted = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${site.url}${path}` } });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`);
    return accepted.body.jobId as string;
  }

  it('lists every run of the account with kind, status, cost and time, filtered by a plain GET form that works without JavaScript', async function () {
    const first = await scrape(alice.apiKey, '/quay');
    const second = await scrape(alice.apiKey, '/quay');
    const bobs = await scrape(bob.apiKey, '/quay');

    const context = await newContext();
    const page = await signIn(context, alice.apiKey, '/console/runs');
    assert.equal(new URL(page.url()).pathname, '/console/runs');
    assert.equal(await page.locator('h1').innerText(), 'Runs');

    const transactions = (await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: alice.apiKey })).body
      .transactions as { jobId: string | null; cost: number }[];
    const costOf = (jobId: string) =>
      transactions.filter((t) => t.jobId === jobId).reduce((sum, t) => Math.round((sum + t.cost) * 1e6) / 1e6, 0);
    const shown = (usd: number) =>
      `$${usd.toFixed(Math.min(6, Math.max(2, (String(usd).split('.')[1] ?? '').length)))}`;

    const rows = await runRows(page);
    assert.deepEqual(
      rows.map((cells) => cells.slice(0, 4)),
      [
        [second.slice(0, 8), 'Scrape', 'completed', shown(costOf(second))],
        [first.slice(0, 8), 'Scrape', 'completed', shown(costOf(first))],
      ],
      'newest first, with what each run was charged (its transactions)',
    );
    assert.ok(!(await page.content()).includes(bobs), "Bob's run is not on Alice's list");
    await assertAccessible(page, 'runs list');
    await screenshot(page, 'runs');

    // Filtering is a GET form: it works with the keyboard, and without script.
    await page.selectOption('#kind', 'agentic');
    await page.focus('#status');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Filter');
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.searchParams.get('kind') === 'agentic');
    assert.match(await page.locator('main').innerText(), /No run matches these filters/);
    assert.equal(await page.locator('#kind').inputValue(), 'agentic', 'the form keeps its filter');
    await assertAccessible(page, 'runs list with nothing matching');

    const plain = await signIn(await newContext({ javaScriptEnabled: false }), alice.apiKey, '/console/runs');
    await plain.selectOption('#status', 'completed');
    await plain.getByRole('button', { name: 'Filter' }).click();
    await plain.waitForURL((url) => url.searchParams.get('status') === 'completed');
    assert.deepEqual(
      (await runRows(plain)).map((cells) => cells[0]),
      [second.slice(0, 8), first.slice(0, 8)],
    );

    await page.goto(`${h.baseUrl}/console/runs?kind=scrape&status=completed`);
    assert.equal((await runRows(page)).length, 2);
    await page.goto(`${h.baseUrl}/console/runs?kind=scrape&status=failed`);
    assert.equal(await page.locator('#runs').count(), 0);

    // Each row leads to its run page, which links to the run's workflow in the Temporal UI.
    await page.goto(`${h.baseUrl}/console/runs`);
    await page.getByRole('link', { name: first.slice(0, 8) }).click();
    await page.waitForURL(`**/console/runs/${first}`);
    const temporal = page.getByRole('link', { name: 'open in the Temporal UI' });
    const workflowId = (await page.locator('dd code').nth(1).innerText()).trim();
    assert.ok(workflowId.includes(first), workflowId);
    assert.equal(
      await temporal.getAttribute('href'),
      `${h.config.temporalUiUrl}/namespaces/${h.config.temporalNamespace}/workflows/${workflowId}`,
    );
    await assertAccessible(page, 'run page with its Temporal link');
  });

  it("lists automations and custom agents with their next fire times and last runs, only the signed-in account's", async function () {
    const created = await h.http('POST', '/api/v1/agents', {
      apiKey: alice.apiKey,
      body: {
        name: 'Yearly <harbour> report',
        cron: YEARLY,
        timezone: 'Europe/Berlin',
        task: 'Say hello',
        llm_model: 'gpt-4o-mini',
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const agentId: string = created.body.agent.id;
    const bobsAgent = await h.http('POST', '/api/v1/agents', {
      apiKey: bob.apiKey,
      body: { name: 'Bob secret agent', cron: YEARLY, task: 'Say hello', llm_model: 'gpt-4o-mini' },
    });
    assert.equal(bobsAgent.status, 201, JSON.stringify(bobsAgent.body));

    // The Schedule triggers the first run at once: wait until it is a job of the account.
    let runId: string | undefined;
    for (let tries = 0; tries < 300 && !runId; tries++) {
      const row = await h.db
        .selectFrom('jobs')
        .select('id')
        .where('user_id', '=', alice.userId)
        .where('kind', '=', 'custom-agent')
        .executeTakeFirst();
      runId = row?.id;
      if (!runId) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(runId, 'the first run of the stored agent started');

    const context = await newContext();
    const page = await signIn(context, alice.apiKey);
    await page.getByRole('link', { name: 'Automations and agents' }).click();
    await page.waitForURL('**/console/automations');
    const card = page.getByRole('region', { name: 'Yearly <harbour> report' });
    await card.waitFor();
    const text = await card.innerText();
    assert.match(text, /Custom agent/);
    assert.match(text, /0 0 1 1 \* \(Europe\/Berlin\)/);
    assert.match(text, /active/);
    assert.match(text, new RegExp(agentId));
    const nextFires = await card.locator('dd ul li').allInnerTexts();
    assert.equal(nextFires.length, 3, nextFires.join(', '));
    for (const at of nextFires) assert.match(at, /^\d{4}-\d{2}-\d{2} \d{2}:00:00 UTC$/);
    assert.ok(new Date(nextFires[0].replace(' UTC', 'Z').replace(' ', 'T')).getTime() > Date.now());
    await card.getByRole('link', { name: runId!.slice(0, 8) }).waitFor();
    const html = await page.content();
    assert.ok(html.includes('Yearly &lt;harbour&gt; report'), 'the name is escaped');
    assert.ok(!html.includes('Bob secret agent'), "Bob's agent is not on Alice's page");
    await assertAccessible(page, 'automations page');
    await screenshot(page, 'automations');

    await card.getByRole('link', { name: runId!.slice(0, 8) }).click();
    await page.waitForURL(`**/console/runs/${runId}`);
    assert.match(await page.locator('h1').innerText(), /^Custom agent run/);
  });

  it("creates a market credential from a form generated from the entry's requiredUserParamsSchema, secrets as password fields, shown once", async function () {
    const provider = await h.createUser({ creditUsd: 0 });
    const entry = await approvedEntry(h, provider, {
      name: `Tide tables ${Date.now()}`,
      requiredUserParamsSchema: {
        type: 'object',
        properties: {
          region: { type: 'string', enum: ['eu', 'us'], description: 'Where your tide gauges are' },
          apiKey: { type: 'string', writeOnly: true, description: 'Your <gauge> API key' },
        },
        required: ['region', 'apiKey'],
      },
    });

    const context = await newContext();
    const page = await signIn(context, alice.apiKey);
    await page.getByRole('link', { name: 'Market credentials' }).click();
    await page.waitForURL('**/console/credentials');
    await assertAccessible(page, 'credentials page');
    await page.focus('#entry');
    await page.keyboard.type(entry.entryId);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.searchParams.get('entry') === entry.entryId);
    assert.equal(
      await page.locator('#param-apiKey').getAttribute('type'),
      'password',
      'the secret is a password field',
    );
    assert.deepEqual(await page.locator('#param-region option').allInnerTexts(), ['eu', 'us']);
    assert.ok((await page.content()).includes('Your &lt;gauge&gt; API key'), 'descriptions are escaped');
    await assertAccessible(page, 'credential form');
    await screenshot(page, 'credential-form');

    // A cap the API refuses: the form comes back with the reason, the secret not echoed.
    await page.selectOption('#param-region', 'us');
    await page.fill('#param-apiKey', 'gauge-secret-123');
    await page.fill('#cap', '0.0000001');
    await page.locator('#cap').press('Enter');
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /whole micro-USD/);
    assert.ok(!(await page.content()).includes('gauge-secret-123'), 'the secret is not sent back');
    assert.equal(await page.locator('#param-region').inputValue(), 'us');
    await assertAccessible(page, 'credential form with a problem');

    await page.fill('#param-apiKey', 'gauge-secret-123');
    await page.fill('#cap', '0.25');
    await page.locator('#cap').press('Enter');
    await page.locator('#credential').waitFor();
    const token = (await page.locator('#credential').innerText()).trim();
    const claims = openMcpCredential(h.config.masterKey, token);
    assert.ok(claims, 'a credential this server sealed');
    assert.deepEqual(
      { entryId: claims.entryId, userId: claims.userId, params: claims.params, capMicros: claims.capMicros },
      {
        entryId: entry.entryId,
        userId: alice.userId,
        params: { region: 'us', apiKey: 'gauge-secret-123' },
        capMicros: 250_000,
      },
    );
    assert.equal(await page.locator('#credential-id').innerText(), claims.id);
    assert.equal(await page.locator('#credential-mcp-url').innerText(), `${h.baseUrl}/mcp/${entry.entryId}`);
    assert.equal(await page.locator('#credential-cap').innerText(), '$0.25');
    assert.ok(!(await page.content()).includes('gauge-secret-123'), 'the secret itself is not on the page');
    await assertAccessible(page, 'credential issued');
    await screenshot(page, 'credential-issued');

    // Shown once: the form, opened again from the listing page's Connect section, shows no credential.
    await page.goto(`${h.baseUrl}/market/tools/${entry.entryId}`);
    await page.getByRole('link', { name: 'in your console' }).click();
    await page.waitForURL((url) => url.searchParams.get('entry') === entry.entryId);
    await page.locator('#param-apiKey').waitFor();
    assert.equal(await page.locator('#credential').count(), 0);

    // The form needs its CSRF token; an unknown entry is a 404 page.
    const cookie = (await context.context.cookies()).find((c) => c.name === '__Host-console-session')!;
    const forged = await fetch(`${h.baseUrl}/console/credentials/${entry.entryId}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: `${cookie.name}=${cookie.value}`,
        origin: h.baseUrl,
        'sec-fetch-site': 'same-origin',
      },
      body: new URLSearchParams({ 'param.region': 'eu', 'param.apiKey': 'x' }).toString(),
    });
    assert.equal(forged.status, 403);
    const missing = await page.goto(`${h.baseUrl}/console/credentials?entry=00000000-0000-4000-8000-000000000000`);
    assert.equal(missing?.status(), 404);
    assert.equal(await page.locator('h1').innerText(), 'Page not found');
  });
  it('chooses the listing of a new credential by name: the listings the account uses, a search that answers as the person types (and works without script), the id as a fallback', async function () {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 1 });
    // A made-up word of letters only (the catalogue's full-text search stems words), unique to this test.
    const word = `quorl${Array.from(randomBytes(5), (b) => String.fromCharCode(97 + (b % 26))).join('')}`;
    const gauges = await approvedEntry(h, provider, {
      name: `Tide gauges ${word}`,
      description: 'Sea levels <live> from harbour gauges',
    });
    const cranes = await approvedEntry(h, provider, { name: `Crane hire ${word}` });
    const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${cranes.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: {},
    });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));

    const context = await newContext();
    const page = await signIn(context, consumer.apiKey, '/console/credentials');
    assert.deepEqual(await page.locator('#used-listings a').allInnerTexts(), [`Crane hire ${word}`]);
    await assertAccessible(page, 'credential chooser: listings in use');

    // Typed with the keyboard: the matching listings appear in place (htmx), the page is not left.
    await page.focus('#listing-q');
    await page.keyboard.type(`${word} tid`);
    await page.locator('#found-listings').waitFor();
    assert.deepEqual(await page.locator('#found-listings a').allInnerTexts(), [`Tide gauges ${word}`]);
    assert.match(await page.locator('#found-listings li').innerText(), /Sea levels <live> from harbour gauges/);
    assert.equal(await page.locator('#found-listings live').count(), 0, 'descriptions are text, never markup');
    assert.equal(new URL(page.url()).search, '', 'the results came without leaving the page');
    await assertAccessible(page, 'credential chooser: listings found');
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Backspace');
    await page.waitForFunction(() => document.querySelectorAll('#found-listings a').length === 2);
    await page.getByRole('link', { name: `Tide gauges ${word}` }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.searchParams.get('entry') === gauges.entryId);
    assert.equal(await page.locator('#create-heading').innerText(), `A credential for Tide gauges ${word}`);

    // Without script the same search is a plain form; what matches nothing says so, the query escaped.
    const plain = await newContext({ javaScriptEnabled: false });
    const plainPage = await signIn(plain, consumer.apiKey, '/console/credentials');
    await plainPage.fill('#listing-q', word);
    await plainPage.locator('#listing-q').press('Enter');
    await plainPage.waitForURL((url) => url.searchParams.get('q') === word);
    assert.deepEqual((await plainPage.locator('#found-listings a').allInnerTexts()).sort(), [
      `Crane hire ${word}`,
      `Tide gauges ${word}`,
    ]);
    await plainPage.fill('#listing-q', `<i>${word}xyz`);
    await plainPage.locator('#listing-q').press('Enter');
    await plainPage.waitForURL((url) => url.searchParams.get('q') === `<i>${word}xyz`);
    assert.match(
      await plainPage.locator('#no-listings').innerText(),
      new RegExp(`No live listing matches “<i>${word}xyz”`),
    );
    assert.equal(await plainPage.locator('#listing-results i').count(), 0);

    // The id still works, and the results alone need a session.
    await plainPage.fill('#entry', cranes.entryId);
    await plainPage.locator('#entry').press('Enter');
    await plainPage.waitForURL((url) => url.searchParams.get('entry') === cranes.entryId);
    assert.equal(await plainPage.locator('#create-heading').innerText(), `A credential for Crane hire ${word}`);
    const anonymous = await fetch(`${h.baseUrl}/console/credentials/listings?q=${word}`);
    assert.equal(anonymous.status, 401);
    assert.ok(!(await anonymous.text()).includes(word));
  });

  it('lists market credentials with entry, label, created, cap and last use, and revokes one from the console: the next hosted request with it is refused', async function () {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 1 });
    const name = `Harbour lights ${Date.now()}`;
    const entry = await approvedEntry(h, provider, { name });
    const issue = async (apiKey: string, body: Record<string, unknown>) => {
      const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, { apiKey, body });
      assert.equal(issued.status, 201, JSON.stringify(issued.body));
      return issued.body as { credential: string; credentialId: string };
    };
    const laptop = await issue(consumer.apiKey, { label: 'laptop <Claude>', maxTotalUsdPerRun: 0.5 });
    const server = await issue(consumer.apiKey, {});
    const initialize = (token: string) =>
      fetch(`${h.baseUrl}/mcp/${entry.entryId}`, {
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
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      });
    assert.equal((await initialize(laptop.credential)).status, 200, 'used once: last used is set');

    const context = await newContext();
    const page = await signIn(context, consumer.apiKey, '/console/credentials');
    const rows = page.locator('#credentials tbody tr');
    assert.equal(await rows.count(), 2);
    const cells = async (id: string) =>
      (await page.locator(`#credential-${id} > *`).allInnerTexts()).map((t) => t.trim());
    const laptopRow = await cells(laptop.credentialId);
    assert.match(laptopRow[0], new RegExp(`^${name}`));
    assert.equal(laptopRow[1], 'laptop <Claude>', 'the label, escaped');
    assert.equal(laptopRow[3], '$0.50');
    assert.notEqual(laptopRow[4], 'Never');
    assert.equal(laptopRow[5], 'Active');
    const serverRow = await cells(server.credentialId);
    assert.deepEqual([serverRow[1], serverRow[3], serverRow[4], serverRow[5]], ['—', 'None', 'Never', 'Active']);
    assert.ok(!(await page.content()).includes('mcpc1.'), 'no token on the page');
    await assertAccessible(page, 'credentials list');

    // Revoke with the keyboard alone.
    await page.getByRole('button', { name: `Revoke laptop <Claude> (${name})` }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.searchParams.get('revoked') === laptop.credentialId);
    assert.match(await page.locator('#revoked-notice').innerText(), /is revoked/);
    assert.match((await cells(laptop.credentialId))[5], /^Revoked /);
    assert.equal(await page.locator(`#credential-${laptop.credentialId} button`).count(), 0);
    assert.equal((await cells(server.credentialId))[5], 'Active');
    await assertAccessible(page, 'credential revoked');
    await screenshot(page, 'credentials-list');

    const refused = await initialize(laptop.credential);
    assert.equal(refused.status, 401);
    assert.equal((await refused.json()).error.message, 'This credential has been revoked; create a new one');
    assert.equal((await initialize(server.credential)).status, 200, 'the other credential keeps working');

    // Another account's credential is a 404, even with a valid session and CSRF token of its own.
    await issue(bob.apiKey, {});
    const bobs = await newContext();
    const bobPage = await signIn(bobs, bob.apiKey, '/console/credentials');
    assert.equal(await bobPage.locator(`#credential-${server.credentialId}`).count(), 0);
    const csrf = await bobPage.locator('#credentials input[name=csrf]').first().inputValue();
    const cookie = (await bobs.context.cookies()).find((c) => c.name === '__Host-console-session')!;
    const foreign = await fetch(`${h.baseUrl}/console/credentials/revoke/${server.credentialId}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: `${cookie.name}=${cookie.value}`,
        origin: h.baseUrl,
        'sec-fetch-site': 'same-origin',
      },
      body: new URLSearchParams({ csrf }).toString(),
    });
    assert.equal(foreign.status, 404);
    assert.equal((await initialize(server.credential)).status, 200, 'still working');
  });

  it("shows each credential's budgets and what it spent, and changes them from the console; an amount not in whole micro-USD is refused, never dropped", async function () {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 1 });
    const entry = await approvedEntry(h, provider, { name: `Budget lights ${Date.now()}` });
    const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: { label: 'desk', budgetMonthlyUsd: 5 },
    });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    const id = issued.body.credentialId as string;
    const context = await newContext();
    const page = await signIn(context, consumer.apiKey, '/console/credentials');
    const row = page.locator(`#credential-${id}`);
    assert.equal((await row.locator('> *').nth(6).innerText()).trim(), '$0.00 / $0.00', 'spent this month / in all');
    assert.equal(await row.locator('input[name=budgetMonthly]').inputValue(), '5');
    assert.equal(await row.locator('input[name=budgetTotal]').inputValue(), '');
    await assertAccessible(page, 'credential budgets');

    await row.locator('input[name=budgetMonthly]').fill('0.0100001');
    await row.getByRole('button', { name: /^Save the budgets of desk/ }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /monthly budget must be .* whole micro-USD/);
    const unchanged = await h.http('GET', '/api/v1/mcp-market/credentials', { apiKey: consumer.apiKey });
    assert.deepEqual(
      [unchanged.body.credentials[0].budgetMonthlyUsd, unchanged.body.credentials[0].budgetTotalUsd],
      [5, null],
      'the refused amount changed nothing',
    );

    await page.locator(`#credential-${id} input[name=budgetMonthly]`).fill('2.5');
    await page.locator(`#credential-${id} input[name=budgetTotal]`).fill('10');
    await page
      .locator(`#credential-${id}`)
      .getByRole('button', { name: /^Save the budgets of desk/ })
      .click();
    await page.waitForURL((url) => url.searchParams.get('budgets') === id);
    assert.match(await page.locator('#budgets-notice').innerText(), /are saved/);
    assert.equal(await page.locator(`#credential-${id} input[name=budgetMonthly]`).inputValue(), '2.5');
    assert.equal(await page.locator(`#credential-${id} input[name=budgetTotal]`).inputValue(), '10');
    const saved = await h.http('GET', '/api/v1/mcp-market/credentials', { apiKey: consumer.apiKey });
    assert.deepEqual([saved.body.credentials[0].budgetMonthlyUsd, saved.body.credentials[0].budgetTotalUsd], [2.5, 10]);

    // Emptied: no budget.
    await page.goto(`${h.baseUrl}/console/credentials`);
    await page.locator(`#credential-${id} input[name=budgetTotal]`).fill('');
    await page
      .locator(`#credential-${id}`)
      .getByRole('button', { name: /^Save the budgets of desk/ })
      .click();
    await page.waitForURL((url) => url.searchParams.get('budgets') === id);
    const emptied = await h.http('GET', '/api/v1/mcp-market/credentials', { apiKey: consumer.apiKey });
    assert.equal(emptied.body.credentials[0].budgetTotalUsd, null);
    await screenshot(page, 'credential-budgets');
  });

  it('shows the signed-in API key (never its value), what its own calls spent and its budgets, and changes them; an amount not in whole micro-USD is refused, never dropped', async function () {
    const consumer = await h.createUser({ creditUsd: 1 });
    const context = await newContext();
    const page = await signIn(context, consumer.apiKey, '/console');
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'API key' }).click();
    await page.waitForURL(`${h.baseUrl}/console/api-key`);
    assert.equal(await page.locator('#api-key-prefix').innerText(), `${consumer.apiKey.slice(0, 12)}…`);
    assert.ok(!(await page.content()).includes(consumer.apiKey), 'never the key itself');
    assert.deepEqual(
      [await page.locator('#api-key-spent-month').innerText(), await page.locator('#api-key-spent').innerText()],
      ['$0.00', '$0.00'],
    );
    const monthly = page.getByRole('textbox', { name: 'Monthly budget in USD of this API key (empty: none)' });
    const total = page.getByRole('textbox', { name: 'Total budget in USD of this API key (empty: none)' });
    const save = page.getByRole('button', { name: 'Save the budgets of this API key' });
    assert.deepEqual([await monthly.inputValue(), await total.inputValue()], ['', '']);

    await total.fill('0.0100001');
    await save.click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /total budget must be .* whole micro-USD/);
    await assertAccessible(page, 'api key page with a problem');
    const unchanged = await h.http('GET', '/api/v1/account/api-key', { apiKey: consumer.apiKey });
    assert.deepEqual(
      [unchanged.body.budgetMonthlyUsd, unchanged.body.budgetTotalUsd],
      [null, null],
      'the refused amount changed nothing',
    );

    await monthly.fill('2.5');
    await total.fill('10');
    await save.click();
    await page.waitForURL((url) => url.searchParams.get('saved') === '1');
    assert.match(await page.getByRole('status').innerText(), /budgets are saved/);
    assert.deepEqual([await monthly.inputValue(), await total.inputValue()], ['2.5', '10']);
    const saved = await h.http('GET', '/api/v1/account/api-key', { apiKey: consumer.apiKey });
    assert.deepEqual([saved.body.budgetMonthlyUsd, saved.body.budgetTotalUsd], [2.5, 10]);

    // Emptied: no budget.
    await total.fill('');
    await save.click();
    await page.waitForURL((url) => url.searchParams.get('saved') === '1');
    const emptied = await h.http('GET', '/api/v1/account/api-key', { apiKey: consumer.apiKey });
    assert.deepEqual([emptied.body.budgetMonthlyUsd, emptied.body.budgetTotalUsd], [2.5, null]);
    await screenshot(page, 'api-key-budgets');
  });
});
