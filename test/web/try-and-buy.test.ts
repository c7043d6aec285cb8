import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { act } from '../support/agent-script';
import { useHarness, type Harness } from '../support/stack/harness';
import { runShellSnippet } from '../support/shell-snippet';
import { namedToolAnswer, startNamedToolsProvider } from '../support/fakes/named-tools-provider';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import {
  assertAccessible,
  screenshot,
  sharedBrowser,
  signInContext,
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
  let agentId: string;
  const regionSchema = {
    type: 'object',
    properties: { region: { type: 'string', enum: ['eu', 'us'], description: 'Where the registry is asked' } },
    required: ['region'],
  };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    [service, browser] = await Promise.all([startMarketProvider(), sharedBrowser()]);
    provider = await h.createUser({ creditUsd: 1 });
    entry = await approvedServiceEntry(h, provider, service.url, {
      name: `Quokka city registry ${tag}`,
      description: 'Cities by name',
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.02 }],
      requiredUserParamsSchema: regionSchema,
    });
    const created = await h.http('POST', '/api/v1/agent-market/submissions', {
      apiKey: provider.apiKey,
      body: {
        name: `Quokka voyage planner ${tag}`,
        description: 'Plans a sailing voyage between two harbours',
        priceUsd: 0.5,
        suggestedLlmProvider: 'service',
        suggestedLlmModel: 'gpt-4o-mini',
        runMode: 'template',
        systemPrompt: 'You plan voyages.',
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
    const reviewed = await h.http('POST', `/admin/market/agent/submissions/${created.body.id}/review`, {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { action: 'approve' },
    });
    assert.equal(reviewed.status, 200, JSON.stringify(reviewed.body));
    agentId = created.body.publicId;
  });

  after(async function () {
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
  async function signInWithTheForm(apiKey: string, start: string, context: WatchedContext = watched): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${h.baseUrl}${start}`);
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
    await page.focus('#api_key');
    await page.keyboard.type(apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname !== '/console/sign-in');
    return page;
  }

  /** A page at `start`, signed in without the form (signInContext), for the tests that are not about signing in. */
  async function signIn(apiKey: string, start: string, context: WatchedContext = watched): Promise<Page> {
    await signInContext(context, h.baseUrl, apiKey);
    const page = await context.newPage();
    await page.goto(`${h.baseUrl}${start}`);
    assert.equal(new URL(page.url()).pathname, new URL(start, h.baseUrl).pathname, 'signed in');
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

    // Signing in from the listing goes through the form and back to the listing.
    const page = await signInWithTheForm(
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
    assert.match(curl, /-H 'Authorization: Bearer <credential>'/);
    const ran = await runShellSnippet(curl.replace('<credential>', credential));
    assert.match(ran.stdout, /Lisbon <b>&amp;: population 545000, country PT/);

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

  it('tries a tool of an entry without parameters as the signed-in API key: no credential field, free, and a form error for malformed JSON', async function () {
    const free = await approvedServiceEntry(h, provider, service.url, {
      name: `Quokka free pages ${tag}`,
      monetizationStrategy: 'free',
    });
    const consumer = await h.createUser({ creditUsd: 1 });
    const page = await signIn(consumer.apiKey, `/market/tools/${free.entryId}/try/scrape_pages`);
    assert.equal(await page.locator('#credential').count(), 0, 'no credential needed');
    assert.match(await page.locator('main').innerText(), /Price: free\./);
    // Arrays are JSON: a malformed one is said before anything is called.
    await page.fill('#arg-batches', '[1,');
    await page.getByRole('button', { name: 'Call scrape_pages' }).click();
    await page.waitForLoadState();
    assert.match(await page.getByRole('alert').innerText(), /batches is not valid JSON/);
    assert.equal(await page.locator('#arg-batches').inputValue(), '[1,');
    await assertAccessible(page, 'try page with a form error');
    await page.goto(`${h.baseUrl}/market/tools/${free.entryId}/try/lookup_city`);
    await page.fill('#arg-city', 'Faro');
    await page.getByRole('button', { name: 'Call lookup_city' }).click();
    await page.waitForSelector('#result');
    assert.equal(await page.locator('#result-cost').innerText(), '$0.00');
    assert.equal((await page.locator('#result pre').first().innerText()).trim(), 'Faro: population 545000, country PT');
  });

  it('quotes the curl of a tool whose name and arguments are shell code: pasted into bash it runs nothing but curl, and calls exactly that tool with exactly those arguments', async function () {
    // A provider chooses its tool names; a consumer pastes the curl the page shows. Each marker command, if the
    // shell ran it, would leave a file in the snippet's (empty) directory.
    const hostileName = "probe$(touch pwned-dollar)`touch pwned-tick`it's!é";
    const hostileText = `$(touch pwned-arg) \`touch pwned-arg-tick\` "quoted" it's $HOME`;
    const named = await startNamedToolsProvider([hostileName]);
    try {
      const hostile = await approvedServiceEntry(h, provider, named.url, {
        name: `Quokka odd names ${tag}`,
        monetizationStrategy: 'free',
      });
      const consumer = await h.createUser({ creditUsd: 1 });
      const page = await signIn(consumer.apiKey, `/market/tools/${hostile.entryId}`);
      await page.getByRole('link', { name: `Try ${hostileName}` }).click();
      await page.waitForURL((url) => url.pathname.includes('/try/'));
      await page.fill('#arg-text', hostileText);
      await page.getByRole('button', { name: `Call ${hostileName}` }).click();
      await page.waitForSelector('#result');
      assert.equal(
        (await page.locator('#result pre').first().innerText()).trim(),
        namedToolAnswer(hostileName, { text: hostileText }),
      );

      const curl = await page.locator('#try-curl').innerText();
      const ran = await runShellSnippet(curl.replace('<credential>', consumer.apiKey));
      assert.deepEqual(ran.files, [], 'no command of the name or the arguments ran');
      assert.ok(
        ran.stdout.includes(JSON.stringify(namedToolAnswer(hostileName, { text: hostileText }))),
        `the endpoint answered the call: ${ran.stdout}`,
      );
      assert.deepEqual(named.calls.at(-1), { name: hostileName, args: { text: hostileText } });
      assert.equal(named.calls.length, 2, "the page's call and the pasted one");
    } finally {
      await named.close();
    }
  });

  it('buys an agent after showing its price (twice charges once) and runs it from a form made from its input schema, on to its run page', async function () {
    const consumer = await h.createUser({ creditUsd: 5 });
    const page = await signIn(consumer.apiKey, `/market/agents/${agentId}`);
    assert.equal(new URL(page.url()).pathname, `/market/agents/${agentId}`);
    await page.getByRole('link', { name: 'Buy it for $0.50' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/market/agents/${agentId}/buy`);
    // The price first, and what is available to pay it; nothing is charged until the confirm.
    assert.equal(await page.locator('#agent-price').innerText(), '$0.50');
    assert.equal(await page.locator('#available').innerText(), '$5.00');
    await assertAccessible(page, 'buy page');
    await screenshot(page, 'agent-buy');
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey: consumer.apiKey })).body.balanceUsd, 5);

    await page.getByRole('button', { name: 'Confirm: buy for $0.50' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/market/agents/${agentId}/run?bought=now`);
    assert.equal(await page.locator('#order-notice').innerText(), 'Bought for $0.50. Run it below.');
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey: consumer.apiKey })).body.balanceUsd, 4.5);

    // Buying again (the confirm form sent a second time, as a stale tab would) charges nothing.
    const csrf = await page.locator('input[name="csrf"]').first().inputValue();
    const again = await page.request.post(`${h.baseUrl}/market/agents/${agentId}/buy`, {
      headers: { origin: h.baseUrl },
      form: { csrf },
      maxRedirects: 0,
    });
    assert.equal(again.status(), 303);
    assert.equal(again.headers().location, `/market/agents/${agentId}/run?bought=before`);
    await page.goto(`${h.baseUrl}${again.headers().location}`);
    assert.equal(
      await page.locator('#order-notice').innerText(),
      'You had bought this agent already: nothing was charged.',
    );
    assert.equal((await h.http('GET', '/api/v1/account', { apiKey: consumer.apiKey })).body.balanceUsd, 4.5);
    // Bought: the listing now offers the run, and /buy leads there.
    await page.goto(`${h.baseUrl}/market/agents/${agentId}/buy`);
    assert.equal(new URL(page.url()).pathname, `/market/agents/${agentId}/run`);
    await assertAccessible(page, 'run form');
    await screenshot(page, 'agent-run-form');

    // A missing field is said before anything starts.
    await page.focus('#in-from');
    await page.keyboard.type('Lisbon');
    await page.locator('#in-to').evaluate((el) => el.removeAttribute('required'));
    await page.getByRole('button', { name: 'Start the run' }).click();
    await page.waitForLoadState();
    assert.match(await page.getByRole('alert').innerText(), /to is required/);
    assert.equal(await page.locator('#in-from').inputValue(), 'Lisbon', 'what was typed is kept');

    h.llm.enqueue(act('done', { success: true, data: { route: 'Lisbon <to> Porto, along the coast' } }));
    await page.focus('#in-to');
    await page.keyboard.type('Porto');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/runs\/[0-9a-f-]{36}$/);
    const runId = new URL(page.url()).pathname.split('/').pop()!;
    const run = await h.waitForJob(consumer.apiKey, `/api/v1/agent-market/runs/${runId}`);
    assert.equal(run.status, 'completed', run.error);
    assert.equal(run.agentId, agentId);
    assert.deepEqual(run.request.inputs, { from: 'Lisbon', to: 'Porto' });
    await page.reload();
    await page.locator('#run-status.status-completed').waitFor({ timeout: 30_000 });
    assert.match(await page.locator('#run-outcome').innerText(), /Lisbon <to> Porto, along the coast/);
    await assertAccessible(page, 'agent run page');
    await screenshot(page, 'agent-run');

    // The listing shows it bought; the run is the consumer's own (another account gets a 404 page).
    await page.goto(`${h.baseUrl}/market/agents/${agentId}`);
    assert.equal(await page.getByRole('link', { name: 'Run it now' }).count(), 1);
    const other = await h.createUser({ creditUsd: 1 });
    const elsewhere = await watchedContext(browser);
    try {
      const intruder = await signIn(other.apiKey, `/console/runs/${runId}`, elsewhere);
      assert.equal(await intruder.locator('h1').innerText(), 'Page not found');
      assert.deepEqual(elsewhere.foreignRequests, []);
    } finally {
      await elsewhere.close();
    }
  });
});
