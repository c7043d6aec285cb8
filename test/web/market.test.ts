import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { findValidationReports } from '../../db/repos/market-validations';
import { findPublicMcpEntry } from '../../db/repos/market-mcp';
import { useHarness, type Harness } from '../support/stack/harness';
import { runShellSnippet } from '../support/shell-snippet';
import { connectWithOAuth, InMemoryOAuthClient, signInAndAllow, startLoopbackRedirect } from '../support/oauth-client';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import {
  assertAccessible,
  sharedBrowser,
  screenshot,
  watchedContext,
  type WatchedContext,
} from '../support/stack/web-browser';

/** The pages' Content-Security-Policy, as a browser reads it. */
const EXPECTED_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** A page's HTML runs nothing inline: no script body, no event-handler attribute, no style attribute or element, no javascript: URL. */
function assertNothingInline(html: string, where: string): void {
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/i, `${where}: inline script`);
  assert.doesNotMatch(html, /<[a-z][^>]*\son[a-z]+\s*=/i, `${where}: event-handler attribute`);
  assert.doesNotMatch(html, /<[a-z][^>]*\sstyle\s*=/i, `${where}: style attribute`);
  assert.doesNotMatch(html, /<style[\s>]/i, `${where}: style element`);
  assert.doesNotMatch(html, /javascript:/i, `${where}: javascript: URL`);
  assert.doesNotMatch(html, /(src|href)="(https?:)?\/\/(?!127\.0\.0\.1)/i, `${where}: loads from another host`);
}

describe('web pages: the market', function () {
  this.timeout(120_000);
  let h: Harness;
  let browser: Browser;
  let service: MarketProviderService;
  let provider: { userId: string; apiKey: string };
  let consumer: { userId: string; apiKey: string };
  const tag = randomBytes(4).toString('hex');
  let fixed: { entryId: string; slug: string };
  let free: { entryId: string; slug: string };
  let agentId: string;
  const clients: Client[] = [];

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    [service, browser] = await Promise.all([startMarketProvider(), sharedBrowser()]);
    provider = await h.createUser({ creditUsd: 1 });
    consumer = await h.createUser({ creditUsd: 5 });
    fixed = await approvedServiceEntry(h, provider, service.url, {
      name: `Zephyr tide tables ${tag}`,
      description: 'Tide tables and harbour times for sailors',
      monetizationStrategy: 'tool_call_fixed',
      tools: [
        { toolName: 'lookup_city', displayName: 'Look up a harbour town', clientPriceUsd: 0.02 },
        { toolName: 'broken_lookup', displayName: 'Broken lookup', clientPriceUsd: 0.005 },
      ],
    });
    free = await approvedServiceEntry(h, provider, service.url, {
      name: `Zephyr harbour notes ${tag}`,
      description: 'Free notes about harbours',
      monetizationStrategy: 'free',
    });
    const created = await h.http('POST', '/api/v1/agent-market/submissions', {
      apiKey: provider.apiKey,
      body: {
        name: `Zephyr voyage planner ${tag}`,
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
    assert.equal(
      (await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, { apiKey: provider.apiKey }))
        .status,
      200,
    );
    const reviewed = await h.http('POST', `/admin/market/agent/submissions/${created.body.id}/review`, {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { action: 'approve' },
    });
    assert.equal(reviewed.status, 200, JSON.stringify(reviewed.body));
    agentId = created.body.publicId;
  });

  after(async function () {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await service?.close();
  });

  let watched: WatchedContext;
  beforeEach(async function () {
    watched = await watchedContext(browser);
  });
  afterEach(async function () {
    // Whatever a test did, no page asked another host for anything, and nothing broke the CSP.
    const { foreignRequests, consoleErrors } = watched;
    await watched.close();
    assert.deepEqual(foreignRequests, [], 'requests to non-loopback hosts');
    assert.deepEqual(consoleErrors, [], 'console errors (CSP violations among them)');
  });

  const cardNames = async (page: Page, section: 'tools' | 'agents') =>
    page.locator(`section[aria-labelledby="${section}-heading"] .card h3`).allTextContents();

  it('finds a seeded listing by search and narrows both markets by market, pricing model and price, with the keyboard alone', async function () {
    const page = await watched.newPage();
    await page.goto(`${h.baseUrl}/`);
    assert.equal(new URL(page.url()).pathname, '/market', 'the root leads to the market');
    await assertAccessible(page, '/market');
    await screenshot(page, 'market');

    await page.focus('#q');
    await page.keyboard.type(`zephyr ${tag}`);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/market\?q=/);
    assert.deepEqual((await cardNames(page, 'tools')).sort(), [
      `Zephyr harbour notes ${tag}`,
      `Zephyr tide tables ${tag}`,
    ]);
    assert.deepEqual(await cardNames(page, 'agents'), [`Zephyr voyage planner ${tag}`]);
    const fixedCard = page.locator('.card', { hasText: `Zephyr tide tables ${tag}` });
    assert.match(await fixedCard.innerText(), /\$0\.005 to \$0\.02 per call/);
    assert.match(await fixedCard.innerText(), /Quality \d+\/100/);
    assert.match(
      await page.locator('.card', { hasText: `Zephyr voyage planner ${tag}` }).innerText(),
      /\$0\.50 one-time purchase/,
    );
    await assertAccessible(page, '/market with results');
    await screenshot(page, 'market-search');

    // Pricing model: per call keeps the fixed-price entry and excludes the agent market.
    await page.selectOption('#pricing', 'per_call');
    await page.focus('#q');
    await page.keyboard.press('Enter');
    await page.waitForURL(/pricing=per_call/);
    assert.deepEqual(await cardNames(page, 'tools'), [`Zephyr tide tables ${tag}`]);
    assert.equal(await page.locator('section[aria-labelledby="agents-heading"] .card').count(), 0);

    // Price range over the cheapest call: 0.004–0.006 keeps it, from 0.01 drops it (and the free one).
    const search = (params: Record<string, string>) =>
      page.goto(`${h.baseUrl}/market?${new URLSearchParams({ q: `zephyr ${tag}`, ...params })}`);
    await search({ market: 'tools', min: '0.004', max: '0.006' });
    assert.deepEqual(await cardNames(page, 'tools'), [`Zephyr tide tables ${tag}`]);
    await search({ market: 'tools', min: '0.01' });
    assert.deepEqual(await cardNames(page, 'tools'), []);
    await search({ market: 'tools', sort: 'price_desc' });
    assert.deepEqual(await cardNames(page, 'tools'), [`Zephyr tide tables ${tag}`, `Zephyr harbour notes ${tag}`]);
    await search({ market: 'tools', sort: 'price_asc' });
    assert.deepEqual(await cardNames(page, 'tools'), [`Zephyr harbour notes ${tag}`, `Zephyr tide tables ${tag}`]);
    await search({ market: 'agents' });
    assert.equal(await page.locator('section[aria-labelledby="tools-heading"]').count(), 0);
    assert.deepEqual(await cardNames(page, 'agents'), [`Zephyr voyage planner ${tag}`]);
    await search({ market: 'tools', min: 'a lot' });
    assert.match(await page.getByRole('alert').innerText(), /"a lot" is not an amount/);

    // The page reads the search the REST catalogue serves: the same entries for the same words.
    const rest = await h.http('GET', `/api/v1/mcp-market/mcps?q=${encodeURIComponent(`zephyr ${tag}`)}`, {
      apiKey: consumer.apiKey,
    });
    assert.deepEqual(rest.body.mcps.map((m: { name: string }) => m.name).sort(), [
      `Zephyr harbour notes ${tag}`,
      `Zephyr tide tables ${tag}`,
    ]);
  });

  it('shows a tool listing: its tools with their input fields and prices, the quality score, the scan result and the provider', async function () {
    const page = await watched.newPage();
    await page.goto(`${h.baseUrl}/market?q=${encodeURIComponent(`tide ${tag}`)}`);
    await page.getByRole('link', { name: `Zephyr tide tables ${tag}` }).click();
    await page.waitForURL(`**/market/tools/${fixed.entryId}`);
    assert.equal(await page.locator('h1').innerText(), `Zephyr tide tables ${tag}`);
    const text = await page.locator('main').innerText();
    const entry = (await findPublicMcpEntry(h.db, fixed.entryId))!;
    const report = (await findValidationReports(h.db, [entry.validationId])).get(entry.validationId)!.report;
    assert.match(text, new RegExp(`Quality ${report.qualityScore}/100`));
    assert.match(text, /Tool-poisoning scan\s+Passed/);
    assert.match(text, /Provider\s+An account at example\.com/);
    assert.match(text, /A fixed price per call: \$0\.005 to \$0\.02 per call/);
    const lookup = page.locator('article', { has: page.locator('h3#tool-lookup_city') });
    assert.match(await lookup.innerText(), /Look up a harbour town lookup_city/);
    assert.match(await lookup.innerText(), /\$0\.02 per call/);
    assert.deepEqual(await lookup.locator('tbody tr').allInnerTexts(), ['city\tstring\tyes\tCity name']);
    assert.equal(await page.locator('h3#tool-scrape_pages').count(), 0, 'a tool left out of the listing is not shown');
    await assertAccessible(page, 'tool listing');
    await screenshot(page, 'tool-listing');
  });

  it('gives connect snippets that connect a real MCP client with exactly what they show: the address alone through OAuth, or the address and a header', async function () {
    const page = await watched.newPage();
    await page.goto(`${h.baseUrl}/market/tools/${fixed.entryId}`);
    const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${fixed.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: { params: {} },
    });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    const credential: string = issued.body.credential;
    const shownUrl = await page.locator('#mcp-url').innerText();
    assert.equal(shownUrl, issued.body.mcpUrl, 'the page shows the address the credential answer gives');
    assert.match(await page.locator('#connect-oauth').innerText(), /sign in with OAuth need only this address/);
    const expectedTools = ['broken_lookup', 'lookup_city'];
    const toolNames = async (client: Client) => (await client.listTools()).tools.map((t) => t.name).sort();

    // The OAuth snippets: Claude Code, VS Code and Cursor get the address alone, no key or header.
    const claude = /^claude mcp add --transport http (\S+) (\S+)$/.exec(
      await page.locator('#snippet-claude').innerText(),
    );
    assert.ok(claude, 'the Claude Code command has its documented shape (no header)');
    assert.equal(claude[1], fixed.slug);
    const vscode = JSON.parse(await page.locator('#snippet-vscode').innerText());
    assert.deepEqual(Object.keys(vscode), ['servers'], 'no inputs to prompt for a secret');
    const vscodeServer = vscode.servers[fixed.slug];
    assert.deepEqual(Object.keys(vscodeServer).sort(), ['type', 'url']);
    assert.equal(vscodeServer.type, 'http');
    const link = new URL((await page.locator('#cursor-install').getAttribute('href'))!);
    assert.equal(`${link.protocol}//${link.host}${link.pathname}`, 'cursor://anysphere.cursor-deeplink/mcp/install');
    assert.equal(link.searchParams.get('name'), fixed.slug);
    const cursor = JSON.parse(Buffer.from(link.searchParams.get('config')!, 'base64').toString('utf8'));
    assert.deepEqual(Object.keys(cursor), ['url']);
    assert.deepEqual(JSON.parse(await page.locator('#snippet-cursor').innerText()), {
      mcpServers: { [fixed.slug]: cursor },
    });
    // Each connects the SDK's OAuth client (a client of its own, registered by DCR) with that configuration
    // alone: the consumer signs in and allows in the browser, and the client lists the tools.
    const consent = await watched.newPage();
    const redirect = await startLoopbackRedirect();
    try {
      for (const [name, url] of [
        ['Claude Code', claude[2]],
        ['VS Code', vscodeServer.url],
        ['Cursor', cursor.url],
      ] as const) {
        const oauth = new InMemoryOAuthClient({
          redirect,
          clientName: `${name} (snippet test)`,
          signIn: (authorizationUrl) =>
            signInAndAllow(consent, authorizationUrl, { apiKey: consumer.apiKey, redirectUrl: redirect.url }).then(
              (shown) => assert.equal(shown, `${name} (snippet test)`),
            ),
        });
        const { client } = await connectWithOAuth(url, oauth);
        clients.push(client);
        assert.deepEqual(await toolNames(client), expectedTools, `${name}'s configuration`);
        assert.equal(oauth.authorizationUrls.length, 1);
      }
    } finally {
      await redirect.close();
    }

    // The header variants: the address and an Authorization header with the credential.
    const listed = async (url: string, headers: Record<string, string>) => {
      const client = new Client({ name: 'web-snippet', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      clients.push(client);
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
      return toolNames(client);
    };
    const withCredential = (value: string) => value.replace('<credential>', credential);

    // The shell commands as bash parses them (the programs stubbed: what each would receive).
    const header = (argument: string) => {
      const [, name, value] = /^([^:]+): (.+)$/.exec(argument)!;
      return { [name]: withCredential(value) };
    };
    const claudeRun = await runShellSnippet(await page.locator('#snippet-claude-header').innerText(), ['claude']);
    assert.equal(claudeRun.calls.length, 1);
    const [claudeArgs] = claudeRun.calls;
    assert.deepEqual(claudeArgs.slice(0, 5), ['claude', 'mcp', 'add', '--transport', 'http'], 'its documented shape');
    assert.deepEqual([claudeArgs[5], claudeArgs[7], claudeArgs.length], [fixed.slug, '--header', 9]);
    assert.deepEqual(await listed(claudeArgs[6], header(claudeArgs[8])), expectedTools);

    const headerConfig = JSON.parse(await page.locator('#snippet-header-config').innerText());
    const server = headerConfig.mcpServers[fixed.slug];
    assert.equal(server.type, 'http');
    assert.deepEqual(
      await listed(
        server.url,
        Object.fromEntries(
          Object.entries(server.headers as Record<string, string>).map(([k, v]) => [k, withCredential(v)]),
        ),
      ),
      expectedTools,
    );

    const genericRun = await runShellSnippet(await page.locator('#snippet-generic').innerText(), ['npx']);
    assert.equal(genericRun.calls.length, 1);
    const [genericArgs] = genericRun.calls;
    assert.deepEqual(
      [genericArgs[0], genericArgs[1], genericArgs[3], genericArgs.length],
      ['npx', 'mcp-remote', '--header', 5],
    );
    assert.deepEqual(await listed(genericArgs[2], header(genericArgs[4])), expectedTools);

    // curl itself, run by bash as pasted, with the credential in place of the placeholder.
    const curlRun = await runShellSnippet(withCredential(await page.locator('#snippet-curl').innerText()));
    assert.match(curlRun.stdout, /"serverInfo"/, 'the curl request is answered by the MCP endpoint');
  });

  it('shows an agent listing: run mode, input fields, structured output, price', async function () {
    const page = await watched.newPage();
    await page.goto(`${h.baseUrl}/market/agents/${agentId}`);
    assert.equal(await page.locator('h1').innerText(), `Zephyr voyage planner ${tag}`);
    const text = await page.locator('main').innerText();
    assert.match(text, /Price\s+\$0\.50 one-time purchase/);
    assert.match(text, /Run mode\s+Template: you fill in the fields below/);
    const inputs = await page.locator('section[aria-labelledby="inputs-heading"] tbody tr').allInnerTexts();
    assert.deepEqual(inputs.sort(), ['from\tstring\tyes\tHarbour of departure', 'to\tstring\tyes\tHarbour of arrival']);
    assert.deepEqual(await page.locator('section[aria-labelledby="output-heading"] tbody tr').allInnerTexts(), [
      'route\tstring\tThe route, leg by leg',
    ]);
    assert.match(text, /This agent uses no market tools/);
    assert.doesNotMatch(
      await page.content(),
      /You plan voyages|Plan a voyage from/,
      'the private prompts never reach the page',
    );
    await assertAccessible(page, 'agent listing');
    await screenshot(page, 'agent-listing');
  });

  it('answers an unknown listing, a free listing of the other market and an unknown page with a 404 page, and the API with its JSON error', async function () {
    const page = await watched.newPage();
    for (const path of [
      `/market/tools/${agentId}`,
      `/market/agents/${free.entryId}`,
      '/market/tools/not-an-id',
      '/console/nothing-here',
      '/market/tools',
    ]) {
      const response = await page.goto(`${h.baseUrl}${path}`);
      assert.equal(response?.status(), 404, path);
      assert.equal(await page.locator('h1').innerText(), 'Page not found', path);
    }
    await assertAccessible(page, '404 page');
    const api = await h.http('GET', '/api/v1/no-such-route');
    assert.equal(api.status, 404);
    assert.equal(api.body.error.code, 'not_found');
  });

  it('sends a strict CSP with every page, runs no inline script or style, and serves its assets from this origin with long caching', async function () {
    const pages = [
      '/market',
      `/market?q=${tag}`,
      `/market/tools/${fixed.entryId}`,
      `/market/agents/${agentId}`,
      '/console/sign-in',
      '/market/tools/00000000-0000-4000-8000-000000000000',
    ];
    for (const path of pages) {
      const response = await h.http('GET', path);
      assert.equal(response.headers.get('content-security-policy'), EXPECTED_CSP, path);
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(response.headers.get('x-frame-options'), 'DENY', path);
      assert.match(response.headers.get('content-type')!, /^text\/html; charset=utf-8/, path);
      assertNothingInline(response.body as string, path);
    }
    const html = (await h.http('GET', '/market')).body as string;
    const stylesheet = /<link rel="stylesheet" href="(\/assets\/[0-9a-f]{12}\/web\.css)"/.exec(html)![1];
    const css = await h.http('GET', stylesheet);
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type')!, /^text\/css/);
    assert.equal(css.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(
      (await h.http('GET', stylesheet.replace(/[0-9a-f]{12}/, '000000000000'))).status,
      404,
      'an outdated address is not served',
    );
    // The public pages load no script at all: they work without JavaScript.
    assert.doesNotMatch(html, /<script/);
  });
});
