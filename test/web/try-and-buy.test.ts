import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import {
  assertAccessible,
  launchBrowser,
  screenshot,
  watchedContext,
  type WatchedContext,
} from '../support/stack/web-browser';

describe('web pages: try a tool, buy and run an agent', function () {
  this.timeout(120_000);
  let h: Harness;
  let browser: Browser;
  let service: MarketProviderService;
  let provider: { userId: string; apiKey: string };
  const tag = randomBytes(4).toString('hex');
  let entry: { entryId: string; slug: string };
  const regionSchema = {
    type: 'object',
    properties: { region: { type: 'string', enum: ['eu', 'us'], description: 'Where the registry is asked' } },
    required: ['region'],
  };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    [service, browser] = await Promise.all([startMarketProvider(), launchBrowser()]);
    provider = await h.createUser({ creditUsd: 1 });
    entry = await approvedServiceEntry(h, provider, service.url, {
      name: `Quokka city registry ${tag}`,
      description: 'Cities by name',
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.02 }],
      requiredUserParamsSchema: regionSchema,
    });
  });

  after(async function () {
    await browser?.close();
    await service?.close();
  });

  let watched: WatchedContext;
  beforeEach(async function () {
    watched = await watchedContext(browser);
  });
  afterEach(async function () {
    const { foreignRequests, consoleErrors } = watched;
    await watched.close();
    assert.deepEqual(foreignRequests, [], 'requests to non-loopback hosts');
    assert.deepEqual(consoleErrors, [], 'console errors (CSP violations among them)');
  });

  /** Signs in through the form with the keyboard, starting from `start` (a page that asks for sign-in). */
  async function signIn(apiKey: string, start: string): Promise<Page> {
    const page = await watched.newPage();
    await page.goto(`${h.baseUrl}${start}`);
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
    await page.focus('#api_key');
    await page.keyboard.type(apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname !== '/console/sign-in');
    return page;
  }

  it('tries a tool from its listing: creates a credential, calls the tool with it, shows the escaped answer, its cost and the curl, and the charge appears in usage', async function () {
    const consumer = await h.createUser({ creditUsd: 5 });
    const tryPath = `/market/tools/${entry.entryId}/try/lookup_city`;

    // Signed out, the listing offers no "Try"; signed in, each tool has one.
    const anonymous = await watched.newPage();
    await anonymous.goto(`${h.baseUrl}/market/tools/${entry.entryId}`);
    assert.equal(await anonymous.getByRole('link', { name: 'Try lookup_city' }).count(), 0);
    await anonymous.close();

    const page = await signIn(
      consumer.apiKey,
      `/console/sign-in?next=${encodeURIComponent(`/market/tools/${entry.entryId}`)}`,
    );
    assert.equal(new URL(page.url()).pathname, `/market/tools/${entry.entryId}`);
    await page.getByRole('link', { name: 'Try lookup_city' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`**${tryPath}`);
    const intro = await page.locator('main').innerText();
    assert.match(intro, /Price: \$0\.02 per call/);
    assert.match(intro, /You have none yet\? Create one below/);
    await assertAccessible(page, 'try page');
    await screenshot(page, 'try-tool');

    // No credential yet: create one from the entry's parameter form, with the keyboard.
    await page.focus('#param-region');
    await page.selectOption('#param-region', 'eu');
    await page.getByRole('button', { name: 'Create credential' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForLoadState();
    const credential = (await page.locator('#new-credential').innerText()).trim();
    assert.match(credential, /^mcpc1\./);
    assert.equal(await page.locator('#credential').inputValue(), credential, 'filled in for the call');
    await assertAccessible(page, 'try page with a new credential');

    // Call the tool: the answer is shown as text (escaped), with its price.
    await page.focus('#arg-city');
    await page.keyboard.type('Lisbon <b>&amp;');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#result');
    assert.equal(await page.locator('#result-outcome').innerText(), 'The tool answered');
    assert.equal(await page.locator('#result-cost').innerText(), '$0.02');
    assert.equal(
      (await page.locator('#result pre').first().innerText()).trim(),
      'Lisbon <b>&amp;: population 545000, country PT',
    );
    assert.equal(await page.locator('#result b').count(), 0, 'the answer is text, never markup');
    await assertAccessible(page, 'try page with a result');
    await screenshot(page, 'try-tool-result');

    // The curl beside it is the same call: sent with the credential, the endpoint answers it.
    const curl = await page.locator('#try-curl').innerText();
    assert.match(curl, new RegExp(`^curl -sS ${h.baseUrl}/mcp/${entry.entryId} \\\\`));
    const body = /-d '(.*)'$/s.exec(curl)![1].replace(/'\\''/g, "'");
    const headers: Record<string, string> = {};
    for (const [, name, value] of curl.matchAll(/-H "([^:]+): ([^"]*)"/g)) headers[name] = value;
    assert.equal(headers.Authorization, 'Bearer <credential>');
    const answered = await fetch(`${h.baseUrl}/mcp/${entry.entryId}`, {
      method: 'POST',
      headers: { ...headers, Authorization: `Bearer ${credential}` },
      body,
    });
    const text = await answered.text();
    assert.equal(answered.status, 200, text);
    assert.match(text, /Lisbon <b>&amp;: population 545000, country PT/);

    // Both calls were billed to the consumer, as any call: usage shows them on the listing.
    await page.goto(`${h.baseUrl}/console/usage`);
    const listing = page.locator('#spend-per-listing tbody tr', { hasText: entry.slug });
    assert.equal(await listing.innerText(), `${entry.slug}\t2\t$0.04`);
    const account = (await h.http('GET', '/api/v1/account', { apiKey: consumer.apiKey })).body;
    assert.equal(account.balanceUsd, 4.96);
  });

  it("refuses another account's credential, says why and charges nobody", async function () {
    const [alice, bob] = await Promise.all([h.createUser({ creditUsd: 5 }), h.createUser({ creditUsd: 5 })]);
    const bobs = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
      apiKey: bob.apiKey,
      body: { params: { region: 'us' } },
    });
    assert.equal(bobs.status, 201, JSON.stringify(bobs.body));
    const runsBefore = service.runs('lookup_city');
    const page = await signIn(alice.apiKey, `/market/tools/${entry.entryId}/try/lookup_city`);
    await page.fill('#credential', bobs.body.credential);
    await page.fill('#arg-city', 'Porto');
    await page.getByRole('button', { name: 'Call lookup_city' }).click();
    await page.waitForLoadState();
    assert.match(await page.getByRole('alert').innerText(), /This credential belongs to another account/);
    assert.equal(await page.locator('#result').count(), 0);
    await assertAccessible(page, 'try page refusing a credential');
    for (const who of [alice, bob]) {
      const account = (await h.http('GET', '/api/v1/account', { apiKey: who.apiKey })).body;
      assert.equal(account.balanceUsd, 5, 'nobody was charged');
    }
    assert.equal(service.runs('lookup_city'), runsBefore, 'the tool was not called');
  });
});
