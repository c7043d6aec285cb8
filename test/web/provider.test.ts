import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { useHarness, type Harness } from '../support/stack/harness';
import { discoveredTools, startMarketProvider, type MarketProviderService } from '../support/fakes/market-provider';
import { approvedEntry, createSubmission, review, storeValidation, submissionBody } from '../support/market';
import {
  API_KEY as INVENTORY_KEY,
  BEARER_TOKEN,
  COOKIE_KEY,
  QUERY_KEY,
  startOpenApiServer,
  type TestOpenApiServer,
} from '../support/openapi-api';

/** The Inventory API's credentials, by the names its discovery asks for them. */
const CREDENTIALS: Record<string, string> = {
  'X-API-Key': INVENTORY_KEY,
  api_key: QUERY_KEY,
  session: COOKIE_KEY,
  Authorization: BEARER_TOKEN,
};
import {
  assertAccessible,
  operatorSignInContext,
  screenshot,
  sharedBrowser,
  signedInPage,
  watchedContext,
  type WatchedContext,
} from '../support/stack/web-browser';

const SUBMISSIONS = '/api/v1/mcp-market/submissions';

describe('web pages: provider and review queue', function () {
  this.timeout(120_000);
  let h: Harness;
  let browser: Browser;
  let service: MarketProviderService;
  let inventory: TestOpenApiServer;
  let provider: { userId: string; apiKey: string };
  let other: { userId: string; apiKey: string };
  let consumer: { userId: string; apiKey: string };
  const tag = randomBytes(4).toString('hex');
  let live: { entryId: string; submissionId: string; slug: string };
  let pending: { id: string; name: string };
  let shady: { id: string; name: string };
  let validation: Awaited<ReturnType<typeof storeValidation>>;
  const contexts: WatchedContext[] = [];

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    [service, browser, inventory] = await Promise.all([startMarketProvider(), sharedBrowser(), startOpenApiServer()]);
    provider = await h.createUser({ creditUsd: 0 });
    other = await h.createUser({ creditUsd: 0 });
    consumer = await h.createUser({ creditUsd: 5 });
    const tools = await discoveredTools(service.url);
    validation = await storeValidation(h, provider.userId, { url: service.url, tools });
    live = await approvedEntry(
      h,
      provider,
      {
        name: `Pilot charts ${tag}`,
        monetizationStrategy: 'tool_call_fixed',
        tools: [{ toolName: 'lookup_city', displayName: 'Look up a harbour town', clientPriceUsd: 0.02 }],
      },
      validation,
    );
    // A consumer calls the priced tool once: the provider has a sale.
    const client = new Client(
      { name: 'provider-page-test', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/mcp/${live.entryId}`), {
        requestInit: { headers: { authorization: `Bearer ${consumer.apiKey}` } },
      }),
    );
    try {
      const called = await client.callTool({ name: 'lookup_city', arguments: { city: 'Porto' } });
      assert.equal(called.isError, false);
    } finally {
      await client.close();
    }

    const submitted = async (name: string, price: number) => {
      const created = await createSubmission(
        h,
        provider.apiKey,
        submissionBody(validation, {
          name,
          monetizationStrategy: 'tool_call_fixed',
          tools: [{ toolName: 'lookup_city', displayName: 'Look up a harbour town', clientPriceUsd: price }],
        }),
      );
      const response = await h.http('POST', `${SUBMISSIONS}/${created.id}/submit`, { apiKey: provider.apiKey });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return { id: created.id as string, name };
    };
    pending = await submitted(`Harbour almanac ${tag}`, 0.01);
    shady = await submitted(`Shady almanac ${tag}`, 0.03);
  });

  after(async function () {
    await service?.close();
    await inventory?.close();
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

  const signIn = (context: WatchedContext, apiKey: string, start: string) =>
    signedInPage(context, h.baseUrl, apiKey, start);

  /**
   * The review queue, signed in with the admin token without the form (operatorSignInWithTheForm, in the test
   * of the operator sign-in, uses the form), searched for this file's submissions (`q`): the queue of the
   * whole run can hold more than the page shows.
   */
  async function operatorSignIn(context: WatchedContext): Promise<Page> {
    await operatorSignInContext(context, h.baseUrl, h.config.adminToken);
    const page = await context.newPage();
    await page.goto(`${h.baseUrl}/console/review`);
    assert.equal(new URL(page.url()).pathname, '/console/review', 'signed in as an operator');
    await page.goto(`${h.baseUrl}/console/review?q=${encodeURIComponent(tag)}`);
    return page;
  }

  /** Signs in to the review queue with the admin token through the form, with the keyboard, then searches as above. */
  async function operatorSignInWithTheForm(context: WatchedContext): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${h.baseUrl}/console/review`);
    assert.equal(new URL(page.url()).pathname, '/console/review/sign-in');
    await page.focus('#admin_token');
    await page.keyboard.type(h.config.adminToken);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname === '/console/review');
    await page.goto(`${h.baseUrl}/console/review?q=${encodeURIComponent(tag)}`);
    return page;
  }

  const rowOf = (page: Page, table: string, text: string) => page.locator(`${table} tbody tr`, { hasText: text });

  it('shows the provider its submissions of both markets with their status, and its revenue per day, listing and event as GET /provider/revenue counts it', async function () {
    // The call's charge is in the provider's revenue (as the REST API reports it) before the page is read.
    let revenue: { totals: { runs: number; providerRevenueUsd: number }; runs: { createdAt: string }[] } | undefined;
    for (;;) {
      revenue = (await h.http('GET', '/api/v1/provider/revenue', { apiKey: provider.apiKey })).body;
      if (revenue!.totals.providerRevenueUsd > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const context = await newContext();
    const home = await signIn(context, provider.apiKey, '/console');
    await home.getByRole('link', { name: 'Provider' }).first().click();
    await home.waitForURL(`${h.baseUrl}/console/provider`);
    const page = home;
    await assertAccessible(page, 'provider page');
    await screenshot(page, 'provider');

    assert.match(await rowOf(page, '#submissions-mcp', `Pilot charts ${tag}`).innerText(), /Approved/);
    assert.match(await rowOf(page, '#submissions-mcp', pending.name).innerText(), /Waiting for review/);
    assert.equal(await page.locator('#submissions-mcp tbody tr').count(), 3);
    assert.match(
      await page.locator('#submissions-heading ~ section').last().innerText(),
      /No agent market submissions yet/,
    );

    const money = (usd: number) =>
      `$${usd.toFixed(Math.min(6, Math.max(2, (String(usd).split('.')[1] ?? '').length)))}`;
    const earned = money(revenue!.totals.providerRevenueUsd);
    assert.equal(await page.locator('#revenue-total').innerText(), earned);
    // The day of the charge, from the server's own time of the run (a charge soon after; across midnight UTC the next day).
    const opened = revenue!.runs[0].createdAt.slice(0, 10);
    const nextDay = new Date(Date.parse(`${opened}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    const chargeDays = await Promise.all(
      [opened, nextDay].map(async (day) => {
        const row = rowOf(page, '#revenue-per-day', day);
        return (await row.count()) === 1 && new RegExp(`\\${earned}`).test(await row.innerText()) ? day : null;
      }),
    );
    assert.equal(chargeDays.filter(Boolean).length, 1, `one row of ${opened}/${nextDay} shows ${earned}`);
    assert.equal(await page.locator('#revenue-per-day tbody tr').count(), 30);
    assert.equal(await page.locator('#revenue-chart rect.bar').count(), 30);
    const perListing = await rowOf(page, '#revenue-per-listing', `Pilot charts ${tag}`).innerText();
    assert.match(perListing, new RegExp(`\\b1\\b[\\s\\S]*\\${earned}`));
    assert.match(await page.locator('#revenue-per-event tbody').innerText(), /lookup_city/);
  });

  it('shows another provider none of these submissions or sales', async function () {
    const context = await newContext();
    const page = await signIn(context, other.apiKey, '/console/provider');
    assert.equal(new URL(page.url()).pathname, '/console/provider');
    const text = await page.locator('main').innerText();
    assert.doesNotMatch(text, new RegExp(tag));
    assert.match(text, /No tool market submissions yet/);
    assert.match(await page.locator('#revenue-per-listing-heading + p').innerText(), /No sales/);
    await assertAccessible(page, 'provider page without submissions');
  });

  it('keeps the review queue to operators: an API-key session is not enough, a wrong token is refused, a form from elsewhere is refused', async function () {
    const context = await newContext();
    const page = await signIn(context, provider.apiKey, '/console');
    await page.goto(`${h.baseUrl}/console/review`);
    assert.equal(
      new URL(page.url()).pathname,
      '/console/review/sign-in',
      'a console session is not an operator sign-in',
    );
    await assertAccessible(page, 'operator sign-in');
    await page.fill('#admin_token', 'not-the-admin-token-at-all');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /not the admin token/);
    assert.equal(
      (await context.context.cookies()).find((c) => c.name === '__Host-console-operator'),
      undefined,
    );

    const noSignIn = await fetch(`${h.baseUrl}/console/review/mcp/${pending.id}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: h.baseUrl },
      body: new URLSearchParams({ action: 'approve' }).toString(),
    });
    assert.equal(noSignIn.status, 401);

    const operator = await operatorSignInWithTheForm(context);
    const cookie = (await context.context.cookies()).find((c) => c.name === '__Host-console-operator')!;
    const crossSite = await fetch(`${h.baseUrl}/console/review/mcp/${pending.id}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'http://127.0.0.2:9',
        cookie: `${cookie.name}=${cookie.value}`,
      },
      body: new URLSearchParams({ action: 'approve', csrf: 'x' }).toString(),
    });
    assert.equal(crossSite.status, 403);
    const noToken = await fetch(`${h.baseUrl}/console/review/mcp/${pending.id}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: h.baseUrl,
        cookie: `${cookie.name}=${cookie.value}`,
      },
      body: new URLSearchParams({ action: 'approve' }).toString(),
    });
    assert.equal(noToken.status, 403);
    const status = (await h.http('GET', `${SUBMISSIONS}/${pending.id}`, { apiKey: provider.apiKey })).body.status;
    assert.equal(status, 'pending_review', 'nothing was decided');
    await operator.close();
  });

  it('reviews in the queue: shows the report, scan, prices and parameters, rejects with a reason the provider sees, approves a listing that then appears on /market', async function () {
    const context = await newContext();
    const page = await operatorSignIn(context);
    await assertAccessible(page, 'review queue');
    await screenshot(page, 'review-queue');

    const item = page.locator(`article[data-submission="${pending.id}"]`);
    const text = await item.innerText();
    assert.match(text, /Quality \d+\/100/);
    assert.match(text, /No findings/);
    assert.match(text, /Fixed price per call/);
    assert.match(text, /lookup_city[\s\S]*\$0\.01/);
    assert.match(text, /first version/);
    assert.match(text, /Parameters each consumer supplies/);
    const tools = (
      await h.http('GET', `/admin/market/mcp/submissions?status=pending_review&q=${pending.id}`, {
        headers: { authorization: `Bearer ${h.config.adminToken}` },
      })
    ).body.submissions as { id: string }[];
    assert.ok(
      tools.some((s) => s.id === pending.id),
      'the admin API lists the same submission',
    );

    // Rejecting needs a reason: without one the decision is refused and nothing changes.
    const shadyItem = page.locator(`article[data-submission="${shady.id}"]`);
    await shadyItem.getByRole('button', { name: `Reject ${shady.name}` }).click();
    await page.waitForLoadState();
    assert.match(await page.locator('main').innerText(), /needs a reason/);
    await page.goBack();
    await page.waitForURL((url) => url.pathname === '/console/review');
    await shadyItem.getByLabel(/Reason/).focus();
    await page.keyboard.type('The <b>price</b> is three times the live listing’s');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), `${shady.name} was rejected.`);

    // Approve with the keyboard alone: focus the approve button, press Enter.
    await item.getByRole('button', { name: `Approve ${pending.name}` }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), `${pending.name} was approved.`);
    assert.equal(await page.locator(`article[data-submission="${pending.id}"]`).count(), 0, 'it left the queue');
    await assertAccessible(page, 'review queue after a decision', { colorContrast: true });

    const market = await context.newPage();
    await market.goto(`${h.baseUrl}/market?q=${encodeURIComponent(`almanac ${tag}`)}`);
    const names = await market.locator('section[aria-labelledby="tools-heading"] .card h3').allTextContents();
    assert.deepEqual(names, [pending.name], 'the approved listing is in the market, the rejected one is not');

    // The provider sees both decisions, the rejection with its reason, escaped.
    const providerContext = await newContext();
    const providerPage = await signIn(providerContext, provider.apiKey, '/console/provider');
    assert.match(await rowOf(providerPage, '#submissions-mcp', pending.name).innerText(), /Approved/);
    const rejected = await rowOf(providerPage, '#submissions-mcp', shady.name).innerText();
    assert.match(rejected, /Rejected/);
    assert.match(rejected, /The <b>price<\/b> is three times the live listing’s/);
    assert.equal(await providerPage.locator('#submissions-mcp b').count(), 0, 'the reason is text, not markup');
  });

  it('shows a pending agent-market submission with its price, run mode, input fields and output, and rejects it with a reason', async function () {
    const name = `Voyage planner ${tag}`;
    const created = await h.http('POST', '/api/v1/agent-market/submissions', {
      apiKey: provider.apiKey,
      body: {
        name,
        description: 'Plans a sailing voyage between two harbours',
        priceUsd: 0.75,
        suggestedLlmProvider: 'service',
        suggestedLlmModel: 'gpt-4o-mini',
        runMode: 'template',
        systemPrompt: 'Sealed system prompt: never shown to reviewers.',
        promptTemplate: 'Plan a voyage from {{from}} to {{to}}.',
        inputSchema: {
          type: 'object',
          properties: {
            from: { type: 'string', description: 'Harbour of departure' },
            to: { type: 'string', description: 'Harbour of arrival' },
          },
          required: ['from', 'to'],
        },
        structuredOutput: [{ id: 'route', type: 'string', description: 'The route, leg by leg' }],
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const submitted = await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, {
      apiKey: provider.apiKey,
    });
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));

    const context = await newContext();
    const page = await operatorSignIn(context);
    const item = page.locator(`#queue-agent article[data-submission="${created.body.id}"]`);
    const text = await item.innerText();
    assert.match(text, /\$0\.75/);
    assert.match(text, /template/);
    assert.match(text, /Harbour of departure/);
    assert.match(text, /The route, leg by leg/);
    assert.doesNotMatch(text, /Sealed system prompt/, 'prompts stay sealed');
    await assertAccessible(page, 'review queue with an agent submission');

    await item.getByLabel(/Reason/).fill('Say which harbours it knows');
    await item.getByRole('button', { name: `Reject ${name}` }).click();
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), `${name} was rejected.`);
    const providerPage = await signIn(await newContext(), provider.apiKey, '/console/provider');
    assert.match(
      await rowOf(providerPage, '#submissions-agent', name).innerText(),
      /Rejected[\s\S]*Say which harbours it knows/,
    );
  });

  it("shows a revision's tool-definition diff against the live entry, and disables a live listing", async function () {
    const revision = await h.http('POST', `${SUBMISSIONS}/${live.submissionId}/revisions`, { apiKey: provider.apiKey });
    assert.equal(revision.status, 201, JSON.stringify(revision.body));
    const edited = await h.http('PUT', `${SUBMISSIONS}/${revision.body.id}`, {
      apiKey: provider.apiKey,
      body: submissionBody(validation, {
        slug: live.slug,
        name: `Pilot charts ${tag}`,
        monetizationStrategy: 'tool_call_fixed',
        tools: [{ toolName: 'lookup_city', displayName: 'Look up a harbour town', clientPriceUsd: 0.05 }],
      }),
    });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    assert.equal(
      (await h.http('POST', `${SUBMISSIONS}/${revision.body.id}/submit`, { apiKey: provider.apiKey })).status,
      200,
    );

    const context = await newContext();
    const page = await operatorSignIn(context);
    const item = page.locator(`article[data-submission="${revision.body.id}"]`);
    assert.match(await item.innerText(), /revision of/);
    const diff = await item.locator('ul.revision-diff').innerText();
    assert.match(diff, /lookup_city changed/);
    assert.match(diff, /clientPriceUsd: 0\.02 → 0\.05/);
    await assertAccessible(page, 'review queue with a revision');
    await screenshot(page, 'review-revision');

    // Among every approved listing of the suite, found by its name.
    await page.selectOption('#status', 'approved');
    await page.fill('#q', `Pilot charts ${tag}`);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/status=approved/);
    assert.equal(await page.locator('#q').inputValue(), `Pilot charts ${tag}`);
    const liveItem = page.locator(`article[data-submission="${live.submissionId}"]`);
    await liveItem.getByRole('button', { name: `Disable Pilot charts ${tag}` }).click();
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), `Pilot charts ${tag} was disabled.`);
    const listing = await context.newPage();
    const response = await listing.goto(`${h.baseUrl}/market/tools/${live.entryId}`);
    assert.equal(response?.status(), 404, 'a disabled listing leaves the market');
  });

  it('walks a new listing through the wizard (source, validation report, tools and prices, submit) to approval in the review queue and onto /market', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const name = `Harbour wizard ${tag}`;
    const context = await newContext();
    const page = await signIn(context, seller.apiKey, '/console/provider');
    await page.getByRole('link', { name: 'List a tool source' }).click();
    await page.waitForURL(`${h.baseUrl}/console/provider/new`);
    await assertAccessible(page, 'wizard: source');
    await page.focus('#url');
    await page.keyboard.type(service.url);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => /^\/console\/provider\/new\/[0-9a-f-]{36}$/.test(url.pathname));
    assert.equal(await page.locator('#validation-status').innerText(), 'valid');
    assert.equal(await page.locator('#scan-result').innerText(), 'No findings');
    await assertAccessible(page, 'wizard: report, tools and prices');
    await screenshot(page, 'listing-wizard');

    await page.fill('#name', name);
    await page.fill('#description', 'Harbour towns, their population and their country');
    const toolSets = page.locator('fieldset.wizard-tool');
    for (let i = 0; i < (await toolSets.count()); i++) {
      const legend = await toolSets.nth(i).locator('legend').innerText();
      if (legend !== 'lookup_city') await toolSets.nth(i).getByRole('checkbox').uncheck();
    }
    // A fixed price needs a price: the form comes back with the problem and what was typed.
    await page.getByRole('button', { name: 'Submit for review' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /not submitted/);
    assert.equal(await page.inputValue('#name'), name);
    await assertAccessible(page, 'wizard: a problem with the listing');

    await page.getByLabel('Price per call of lookup_city (USD, with a fixed price)').fill('0.015');
    await page.getByRole('button', { name: 'Submit for review' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${h.baseUrl}/console/provider`);
    assert.match(await rowOf(page, '#submissions-mcp', name).innerText(), /Waiting for review/);

    const mine = (await h.http('GET', `${SUBMISSIONS}?pageSize=100`, { apiKey: seller.apiKey })).body.submissions as {
      id: string;
      name: string;
      status: string;
      tools: { toolName: string; clientPriceUsd?: number }[];
    }[];
    assert.equal(mine.length, 1);
    assert.deepEqual(
      {
        name: mine[0]!.name,
        status: mine[0]!.status,
        tools: mine[0]!.tools.map((t) => [t.toolName, t.clientPriceUsd]),
      },
      { name, status: 'pending_review', tools: [['lookup_city', 0.015]] },
      'the REST API sees the submission the wizard made',
    );

    const operator = await operatorSignIn(await newContext());
    const item = operator.locator(`article[data-submission="${mine[0]!.id}"]`);
    assert.match(await item.innerText(), /lookup_city[\s\S]*\$0\.015/);
    await item.getByRole('button', { name: `Approve ${name}` }).click();
    await operator.getByRole('status').waitFor();

    await page.goto(`${h.baseUrl}/market?q=${encodeURIComponent(`wizard ${tag}`)}`);
    const card = page.locator('section[aria-labelledby="tools-heading"] .card', { hasText: name });
    assert.match(await card.innerText(), /\$0\.015 per call/);
  });

  type OwnSubmission = {
    id: string;
    name: string;
    type: string;
    status: string;
    openapiSpec: Record<string, unknown> | null;
    monetizationStrategy: string;
    requiredUserParamsSchema: Record<string, unknown>;
    pricingEvents: { eventName: string; title?: string | null; unitPriceUsd: number }[];
    tools: { toolName: string; clientPriceUsd?: number }[];
  };
  const ownSubmissions = async (apiKey: string) =>
    (await h.http('GET', `${SUBMISSIONS}?pageSize=100`, { apiKey })).body.submissions as OwnSubmission[];

  /** Signs a new provider in and validates `url` from the wizard's source step (as `type`), with the keyboard. */
  async function validateFromWizard(
    context: WatchedContext,
    apiKey: string,
    type: 'remote_mcp' | 'openapi',
    url: string,
  ): Promise<Page> {
    const page = await signIn(context, apiKey, '/console/provider/new');
    assert.equal(new URL(page.url()).pathname, '/console/provider/new');
    // The source step is checked by axe in the walk through the wizard.
    if (type === 'openapi') {
      await page.focus('#type-openapi');
      await page.keyboard.press('Space');
    }
    await page.focus('#url');
    await page.keyboard.type(url);
    await page.getByRole('button', { name: 'Discover and validate' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => /^\/console\/provider\/new\/[0-9a-f-]{36}$/.test(u.pathname));
    return page;
  }

  it('lists an OpenAPI source from its document URL: the validation asks for credentials, validates with them, declares the consumer parameter, and is submitted, approved and in /market', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const name = `Warehouse inventory ${tag}`;
    const context = await newContext();
    const page = await validateFromWizard(context, seller.apiKey, 'openapi', inventory.openapiYamlUrl);
    assert.match(await page.locator('#source-url').innerText(), /openapi\.yaml$/);

    if ((await page.locator('#validation-status').innerText()) === 'needs_parameters') {
      // The document's security schemes want credentials: validate again with the provider's own.
      await assertAccessible(page, 'wizard: the source needs credentials');
      await screenshot(page, 'listing-wizard-needs-parameters');
      assert.match(await page.locator('#needed-parameters').innerText(), /X-API-Key[\s\S]*api_key/);
      for (let i = 0; i < (await page.locator('[id^="again-"][id$="-name"]').count()); i++) {
        const value = CREDENTIALS[await page.inputValue(`#again-${i}-name`)];
        if (!value) continue;
        await page.focus(`#again-${i}-value`);
        await page.keyboard.type(value);
      }
      await page.getByRole('button', { name: 'Validate again with these credentials' }).click();
      await page.waitForURL((u) => /^\/console\/provider\/new\/[0-9a-f-]{36}$/.test(u.pathname));
    }
    assert.equal(await page.locator('#validation-status').innerText(), 'valid');
    const html = await page.content();
    for (const value of Object.values(CREDENTIALS))
      assert.ok(!html.includes(value), 'credentials are never shown again');
    assert.ok((await page.locator('fieldset.wizard-tool').count()) > 3, 'every operation is a tool');
    assert.equal(await page.inputValue('#uparam-0-name'), 'X-API-Key', 'the parameter discovery found');
    await assertAccessible(page, 'wizard: OpenAPI report, tools and prices');
    await screenshot(page, 'listing-wizard-openapi');

    await page.fill('#name', name);
    await page.fill('#description', 'Items of a small warehouse, with their stock levels');
    await page.fill('#uparam-0-description', 'Your Inventory API key');
    await page.check('#uparam-0-secret');
    await page.check('#uparam-0-required');
    await page.check('#strategy-free');
    await page.getByRole('button', { name: 'Submit for review' }).click();
    await page.waitForURL(`${h.baseUrl}/console/provider`);
    assert.match(await rowOf(page, '#submissions-mcp', name).innerText(), /Waiting for review/);

    const [mine] = await ownSubmissions(seller.apiKey);
    assert.equal(mine!.type, 'openapi');
    assert.equal(mine!.status, 'pending_review');
    assert.equal((mine!.openapiSpec as { info: { title: string } }).info.title, 'Inventory API');
    const declared = mine!.requiredUserParamsSchema as {
      properties: Record<string, Record<string, unknown>>;
      required: string[];
    };
    assert.deepEqual(Object.keys(declared.properties).sort(), ['Authorization', 'X-API-Key', 'api_key', 'session']);
    assert.deepEqual(declared.properties['X-API-Key'], {
      type: 'string',
      description: 'Your Inventory API key',
      writeOnly: true,
    });
    assert.ok(
      Object.values(declared.properties).every((p) => p.writeOnly === true),
      'every credential is secret',
    );
    assert.deepEqual(declared.required.sort(), ['Authorization', 'X-API-Key', 'api_key', 'session']);

    const operator = await operatorSignIn(await newContext());
    const item = operator.locator(`article[data-submission="${mine!.id}"]`);
    assert.match(await item.innerText(), /X-API-Key/);
    await item.getByRole('button', { name: `Approve ${name}` }).click();
    await operator.getByRole('status').waitFor();
    await page.goto(`${h.baseUrl}/market?q=${encodeURIComponent(`inventory ${tag}`)}`);
    const card = page.locator('section[aria-labelledby="tools-heading"] .card', { hasText: name });
    assert.equal(await card.count(), 1, 'the approved OpenAPI listing is in the market');
  });

  it('declares the parameters each consumer supplies to a remote MCP source: a secret-sounding name must be marked secret, choices become an enum', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const name = `Harbour params ${tag}`;
    const context = await newContext();
    const page = await validateFromWizard(context, seller.apiKey, 'remote_mcp', service.url);
    assert.equal(await page.locator('#validation-status').innerText(), 'valid');
    await page.fill('#name', name);
    await page.check('#strategy-free');
    await page.fill('#uparam-0-name', 'X-Api-Key');
    await page.fill('#uparam-0-description', 'Your key for the harbour registry');
    await page.check('#uparam-0-required');
    await page.fill('#uparam-1-name', 'X-Region');
    await page.fill('#uparam-1-choices', 'eu, us, eu');
    await page.getByRole('button', { name: 'Submit for review' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /not submitted[\s\S]*X-Api-Key/);
    assert.equal(await page.inputValue('#uparam-1-choices'), 'eu, us, eu', 'what was typed comes back');
    await assertAccessible(page, 'wizard: an unmarked secret parameter');

    await page.check('#uparam-0-secret');
    await page.getByRole('button', { name: 'Submit for review' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${h.baseUrl}/console/provider`);
    const [mine] = await ownSubmissions(seller.apiKey);
    assert.equal(mine!.name, name);
    assert.deepEqual(mine!.requiredUserParamsSchema, {
      type: 'object',
      properties: {
        'X-Api-Key': { type: 'string', description: 'Your key for the harbour registry', writeOnly: true },
        'X-Region': { type: 'string', enum: ['eu', 'us'] },
      },
      required: ['X-Api-Key'],
    });
  });

  it('prices per event with plain forms: names the events, shows the test charges the verification expects and their status, and submits once every event is verified', async function () {
    const seller = await h.createUser({ creditUsd: 0 });
    const name = `Harbour events ${tag}`;
    const context = await newContext();
    const page = await validateFromWizard(context, seller.apiKey, 'remote_mcp', service.url);
    assert.equal(await page.locator('script').count(), 0, 'the wizard runs no script: it works without JavaScript');
    assert.equal(await page.locator('#strategy-event').count(), 0, 'no per-event pricing before a verification');
    await page.getByRole('link', { name: 'verify your events' }).click();
    await page.waitForURL((u) => u.pathname.endsWith('/events'));
    await assertAccessible(page, 'wizard: events to verify');
    await page.fill('#event-0', 'page.scraped');
    await page.fill('#event-1', 'row.exported');
    await page.getByRole('button', { name: 'Start the verification' }).click();
    await page.locator('#charge-token').waitFor();
    await assertAccessible(page, 'wizard: verification started');
    await screenshot(page, 'listing-wizard-events');
    assert.match(await page.locator('#verification-status').innerText(), /0 of 2 verified/);
    const token = (await page.locator('#charge-token').innerText()).trim();
    const runId = (await page.locator('#verification-run').innerText()).trim();
    const expected = await page.locator('#verification-events tbody').innerText();
    assert.match(expected, new RegExp(`/api/v1/provider/runs/${runId}/charge`));
    assert.match(expected, /"eventName":"row\.exported","count":1/);
    assert.equal(await page.locator('#continue').count(), 0, 'nothing to continue to before the charges');

    // The provider's server sends the test charges the page shows (no money moves).
    const charge = async (event: string) => {
      const response = await fetch(`${h.baseUrl}/api/v1/provider/runs/${runId}/charge`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': seller.apiKey,
          'x-service-charge-token': token,
          'idempotency-key': `verify-${event}`,
        },
        body: JSON.stringify({ eventName: event, count: 1 }),
      });
      const body = await response.json();
      assert.equal(response.status, 200, JSON.stringify(body));
      assert.equal(body.verification, true);
    };
    await charge('page.scraped');
    await page.getByRole('link', { name: 'Check the verification again' }).click();
    await page.waitForURL((u) => /\/events\/[0-9a-f-]{36}$/.test(u.pathname));
    assert.match(await page.locator('#verification-status').innerText(), /1 of 2 verified/);
    assert.equal(await page.locator('#charge-token').count(), 0, 'the token is shown once');
    assert.match(await rowOf(page, '#verification-events', 'page.scraped').innerText(), /Verified/);
    assert.match(await rowOf(page, '#verification-events', 'row.exported').innerText(), /Waiting/);
    await charge('row.exported');
    await page.reload();
    assert.match(await page.locator('#verification-status').innerText(), /Complete/);
    await assertAccessible(page, 'wizard: verification complete');
    await page.getByRole('link', { name: 'Continue to tools and prices' }).click();
    await page.waitForURL((u) => u.searchParams.has('verification'));
    assert.equal(await page.isChecked('#strategy-event'), true);
    await assertAccessible(page, 'wizard: tools and event prices');
    await screenshot(page, 'listing-wizard-event-prices');

    await page.fill('#name', name);
    await page.fill('#event-0-title', 'Page scraped');
    await page.fill('#event-0-price', '0.002');
    await page.fill('#event-1-price', '0.0005');
    await page.getByRole('button', { name: 'Submit for review' }).click();
    await page.waitForURL(`${h.baseUrl}/console/provider`);
    const [mine] = await ownSubmissions(seller.apiKey);
    assert.equal(mine!.monetizationStrategy, 'provider_event');
    assert.deepEqual(
      mine!.pricingEvents.map((e) => [e.eventName, e.title ?? null, e.unitPriceUsd]),
      [
        ['page.scraped', 'Page scraped', 0.002],
        ['row.exported', null, 0.0005],
      ],
    );
    assert.equal(mine!.status, 'pending_review');
  });

  /** A live approved tool listing of a new provider, priced per call, with one consumer parameter. */
  async function liveListing(name: string) {
    const seller = await h.createUser({ creditUsd: 0 });
    const validated = await storeValidation(h, seller.userId, {
      url: service.url,
      tools: await discoveredTools(service.url),
    });
    const entry = await approvedEntry(
      h,
      seller,
      {
        name,
        description: 'Harbour towns and their tides',
        monetizationStrategy: 'tool_call_fixed',
        requiredUserParamsSchema: {
          type: 'object',
          properties: { 'X-Region': { type: 'string', description: 'Your region', enum: ['eu', 'us'] } },
        },
        tools: [{ toolName: 'lookup_city', displayName: 'Look up a harbour town', clientPriceUsd: 0.02 }],
      },
      validated,
    );
    return { seller, entry };
  }

  /** Presses "Make a revision" of `name` on the provider page with the keyboard, and validates the source again. */
  async function reviseFromProviderPage(
    page: Page,
    name: string,
    entry: { submissionId: string },
    options: { checkAccessible?: boolean } = {},
  ) {
    const action = page.getByRole('button', { name: `Make a revision of ${name}` });
    assert.equal(await action.count(), 1, 'the live listing has the action');
    await action.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(
      (u) => u.pathname === '/console/provider/new' && u.searchParams.get('revision') === entry.submissionId,
    );
    assert.equal(await page.locator('h1').innerText(), `Revision of ${name}`);
    assert.equal(await page.inputValue('#url'), service.url, 'the source is the live one');
    assert.equal(await page.isChecked('#type-mcp'), true);
    if (options.checkAccessible) await assertAccessible(page, 'wizard in revision mode: source');
    await page.getByRole('button', { name: 'Discover and validate' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => /^\/console\/provider\/new\/[0-9a-f-]{36}$/.test(u.pathname));
    assert.equal(await page.locator('#validation-status').innerText(), 'valid');
    assert.equal(await page.locator('h1').innerText(), `Revision of ${name}`);
  }

  it('makes a revision of a live listing from the console with the keyboard: prefilled from the live one, a new price, approved in the review queue and shown on its listing page', async function () {
    const name = `Tide tables ${tag}`;
    const { seller, entry } = await liveListing(name);
    const context = await newContext();
    const page = await signIn(context, seller.apiKey, '/console/provider');
    assert.equal(
      await page.getByRole('button', { name: /^Make a revision/ }).count(),
      1,
      'only the live approved listing can be revised',
    );
    await reviseFromProviderPage(page, name, entry, { checkAccessible: true });

    // Everything is prefilled from the live listing.
    assert.equal(await page.inputValue('#name'), name);
    assert.equal(await page.inputValue('#description'), 'Harbour towns and their tides');
    assert.equal(await page.isChecked('#strategy-fixed'), true);
    const price = page.getByLabel('Price per call of lookup_city (USD, with a fixed price)');
    assert.equal(await price.inputValue(), '0.02');
    const toolSets = page.locator('fieldset.wizard-tool');
    const listed: string[] = [];
    for (let i = 0; i < (await toolSets.count()); i++)
      if (await toolSets.nth(i).getByRole('checkbox').isChecked())
        listed.push(await toolSets.nth(i).locator('legend').innerText());
    assert.deepEqual(listed, ['lookup_city'], 'the tools listed live are listed, the others not');
    assert.equal(await page.inputValue('#uparam-0-name'), 'X-Region');
    assert.equal(await page.inputValue('#uparam-0-choices'), 'eu, us');
    assert.equal(await page.inputValue('#uparam-0-description'), 'Your region');
    await assertAccessible(page, 'wizard in revision mode: report, tools and prices');
    await screenshot(page, 'listing-wizard-revision');

    // The new price, typed with the keyboard; then the revision is submitted.
    await price.focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.type('0.05');
    await page.getByRole('button', { name: 'Submit the revision for review' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${h.baseUrl}/console/provider`);
    const revisionRow = page.locator('#submissions-mcp tbody tr', { hasText: 'Revision of' }).filter({ hasText: name });
    assert.match(await revisionRow.innerText(), /Waiting for review/);
    assert.match(await rowOf(page, '#submissions-mcp', '(live)').innerText(), /Approved/, 'the live one is unchanged');

    const mine = (await ownSubmissions(seller.apiKey)) as (OwnSubmission & {
      parentEntryId: string | null;
      slug: string;
      description: string;
    })[];
    const revision = mine.find((s) => s.parentEntryId === entry.submissionId)!;
    assert.ok(revision, 'the REST API sees the revision the wizard made');
    assert.deepEqual(
      {
        status: revision.status,
        slug: revision.slug,
        description: revision.description,
        tools: revision.tools.map((t) => [t.toolName, t.clientPriceUsd]),
        params: revision.requiredUserParamsSchema,
      },
      {
        status: 'pending_review',
        slug: entry.slug,
        description: 'Harbour towns and their tides',
        tools: [['lookup_city', 0.05]],
        params: {
          type: 'object',
          properties: { 'X-Region': { type: 'string', description: 'Your region', enum: ['eu', 'us'] } },
        },
      },
    );

    const operator = await operatorSignIn(await newContext());
    const item = operator.locator(`article[data-submission="${revision.id}"]`);
    assert.match(await item.locator('ul.revision-diff').innerText(), /clientPriceUsd: 0\.02 → 0\.05/);
    await item.getByRole('button', { name: `Approve ${name}` }).click();
    await operator.getByRole('status').waitFor();

    await page.goto(`${h.baseUrl}/market/tools/${entry.entryId}`);
    const listing = await page.locator('main').innerText();
    assert.match(listing, /\$0\.05 per call/, 'the public listing shows the new price under the same id');
    assert.doesNotMatch(listing, /\$0\.02 per call/);

    // The replaced version can no longer be revised: a clear page, not an error.
    await page.goto(`${h.baseUrl}/console/provider`);
    assert.equal(await page.getByRole('button', { name: /^Make a revision/ }).count(), 1);
    const csrf = await page.locator('input[name="csrf"]').first().inputValue();
    const stale = await page.request.post(`${h.baseUrl}/console/provider/new/revision/${entry.submissionId}`, {
      form: { csrf },
      headers: { origin: h.baseUrl },
      maxRedirects: 0,
    });
    assert.equal(stale.status(), 409);
    assert.match(await stale.text(), /replaced by a newer one; make a revision of the live listing/);
  });

  it('shows why a revision was not submitted (the listing was disabled meanwhile) and keeps another account out of a listing it does not own', async function () {
    const name = `Tide clocks ${tag}`;
    const { seller, entry } = await liveListing(name);
    const page = await signIn(await newContext(), seller.apiKey, '/console/provider');
    await reviseFromProviderPage(page, name, entry);
    await review(h, entry.submissionId, 'disable');
    await page.getByRole('button', { name: 'Submit the revision for review' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(
      await page.getByRole('alert').innerText(),
      /The revision was not submitted: .*only an approved entry can be revised/,
    );
    assert.equal(await page.inputValue('#name'), name, 'the form keeps what was there');
    await assertAccessible(page, 'wizard in revision mode: a problem with the revision');
    assert.deepEqual(
      (await ownSubmissions(seller.apiKey)).map((s) => s.status),
      ['disabled'],
      'a refused revision leaves no draft behind',
    );

    // Another provider: no action for it, and neither the form nor the wizard reaches the listing.
    const intruder = await signIn(await newContext(), other.apiKey, '/console/provider');
    assert.equal(await intruder.getByRole('button', { name: /^Make a revision/ }).count(), 0);
    await intruder.goto(`${h.baseUrl}/console/provider/new`);
    const csrf = await intruder.locator('input[name="csrf"]').first().inputValue();
    const { entry: theirs } = await liveListing(`Tide charts ${tag}`);
    const refused = await intruder.request.post(`${h.baseUrl}/console/provider/new/revision/${theirs.submissionId}`, {
      form: { csrf },
      headers: { origin: h.baseUrl },
      maxRedirects: 0,
    });
    assert.equal(refused.status(), 404);
    assert.match(await refused.text(), /Page not found/);
    const wizard = await intruder.goto(
      `${h.baseUrl}/console/provider/new?type=remote_mcp&url=${encodeURIComponent(service.url)}&revision=${theirs.submissionId}`,
    );
    assert.equal(wizard?.status(), 404);
    assert.doesNotMatch(await intruder.content(), /Tide charts/);
  });

  it("shows the LLM review's verdict, reason and quote where the report is read (the wizard's report, the review queue), as text", async function () {
    const reason = 'The <b>description</b> of lookup_city asks for "the chat so far" & sends it on';
    const evidence = '<img src=x onerror=alert(1)> include the chat so far';
    const reviewed = await storeValidation(h, provider.userId, {
      url: service.url,
      tools: await discoveredTools(service.url),
      llmReview: {
        model: 'gpt-4o-mini',
        verdict: 'suspicious',
        reason,
        evidence,
        reviewedAt: new Date().toISOString(),
      },
    });
    assert.equal(reviewed.status, 'valid', 'a suspicious verdict is a warning, not a refusal');

    const page = await signIn(
      await newContext(),
      provider.apiKey,
      `/console/provider/new/${reviewed.id}?type=remote_mcp&url=${encodeURIComponent(service.url)}`,
    );
    assert.equal(await page.locator('#llm-verdict').innerText(), 'Suspicious');
    assert.equal(await page.locator('#llm-reason').innerText(), reason);
    assert.equal(await page.locator('#llm-evidence').innerText(), evidence);
    assert.match(await page.locator('#llm-review').innerText(), /gpt-4o-mini/);
    assert.equal(await page.locator('#llm-review b, #llm-review img').count(), 0, "the model's text stays text");

    const name = `Second opinion ${randomBytes(3).toString('hex')}`;
    const created = await createSubmission(h, provider.apiKey, submissionBody(reviewed, { name }));
    const submitted = await h.http('POST', `${SUBMISSIONS}/${created.id}/submit`, { apiKey: provider.apiKey });
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
    const context = await newContext();
    const queue = await operatorSignIn(context);
    await queue.goto(`${h.baseUrl}/console/review?q=${encodeURIComponent(name)}`);
    const facts = queue.locator(`#s-${created.id}-llm-review`);
    assert.equal((await queue.locator(`#s-${created.id}-llm-verdict`).textContent())?.trim(), 'Suspicious');
    assert.equal(await queue.locator(`#s-${created.id}-llm-reason`).textContent(), reason);
    assert.equal(await queue.locator(`#s-${created.id}-llm-evidence`).textContent(), evidence);
    assert.equal(await facts.locator('b, img').count(), 0);
    await assertAccessible(queue, 'review queue with an LLM review');
    await review(h, created.id, 'reject', 'Not this one');
  });
});
