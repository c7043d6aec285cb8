import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';
import { conformanceTooling, type ConformanceCheck } from '../support/stack/conformance-cli';
import { freePort } from '../support/stack/ports';
import { sharedBrowser, watchedContext, type WatchedContext } from '../support/stack/web-browser';

/** The checks of each scenario the CLI ran, from `<output>/authorization-server-<scenario>-<time>/checks.json`. */
async function readChecks(outputDir: string): Promise<Map<string, ConformanceCheck[]>> {
  const scenarios = new Map<string, ConformanceCheck[]>();
  for (const entry of await readdir(outputDir)) {
    const scenario = /^authorization-server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    const file = path.join(outputDir, entry, 'checks.json');
    if (scenario && existsSync(file)) scenarios.set(scenario, JSON.parse(await readFile(file, 'utf8')));
  }
  return scenarios;
}

/**
 * The official MCP conformance suite's `authorization` command (`@modelcontextprotocol/conformance`,
 * pinned in scripts/tool-pins.json) against the platform's authorization server: its metadata
 * (RFC 8414, client ID metadata document support) and a whole authorization code grant, with a client
 * the operator registered (the suite's redirect URI on loopback), a browser signing in and consenting
 * in between (the suite sends no `resource`, so the person chooses the listing), the code exchanged
 * by the suite itself. Every check must pass (the README's table records them).
 */
describe('the MCP conformance suite against the authorization server', function () {
  this.timeout(240_000);
  let h: Harness;
  let browser: Browser;
  let service: MarketProviderService;
  let context: WatchedContext | undefined;
  let cli: ChildProcess | undefined;
  let outputDir = '';

  before(async function () {
    h = await useHarness();
    browser = await sharedBrowser();
    service = await startMarketProvider();
  });

  after(async function () {
    if (cli && cli.exitCode === null) cli.kill('SIGTERM');
    await context?.close();
    await service?.close();
    if (outputDir) await rm(outputDir, { recursive: true, force: true });
  });

  it('passes every check of `conformance authorization` with an operator-registered client, the browser choosing the listing and consenting', async function () {
    const { node, cli: cliPath } = conformanceTooling();
    const provider = await h.createUser({ creditUsd: 0 });
    const alice = await h.createUser({ creditUsd: 5 });
    const name = `Conformance tide tables ${randomBytes(4).toString('hex')}`;
    const entry = await approvedServiceEntry(h, provider, service.url, {
      name,
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.01 }],
      requiredUserParamsSchema: {
        type: 'object',
        properties: { region: { type: 'string', enum: ['eu', 'us'] } },
        required: ['region'],
      },
    });

    // The operator registers the suite as a public client (PKCE) with its loopback redirect URI.
    const port = await freePort();
    const clientId = `conformance-${randomBytes(4).toString('hex')}`;
    const registered = await h.http('POST', '/admin/oauth/clients', {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { clientId, name: 'MCP conformance suite', redirectUris: [`http://127.0.0.1:${port}/callback`] },
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    assert.equal(registered.body.tokenEndpointAuthMethod, 'none');

    outputDir = await mkdtemp(path.join(os.tmpdir(), 'mcp-conformance-authorization-'));
    const args = [cliPath, 'authorization', '--url', h.baseUrl, '--client-id', clientId, '--port', String(port)];
    cli = spawn(node, [...args, '-o', outputDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => cli!.once('exit', (code) => resolve(code)));
    const authorizationUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no authorization URL from the suite:\n${output}`)), 60_000);
      const onData = (chunk: Buffer) => {
        output += chunk;
        const line = output.split('\n').find((l) => l.startsWith(`${h.baseUrl}/oauth/authorize?`));
        if (line) {
          clearTimeout(timer);
          resolve(line.trim());
        }
      };
      cli!.stdout!.on('data', onData);
      cli!.stderr!.on('data', (chunk) => (output += chunk));
      void exited.then(() => reject(new Error(`the suite exited before asking for the browser:\n${output}`)));
    });
    const asked = new URL(authorizationUrl).searchParams;
    assert.equal(asked.get('resource'), null, 'the suite names no resource (RFC 8707 is optional)');

    // The browser: sign in to the console, choose the listing, fill its parameter, allow.
    context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(authorizationUrl);
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
    await page.focus('#api_key');
    await page.keyboard.type(alice.apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname.startsWith('/oauth/interaction/'));
    assert.equal(await page.locator('#client-name').innerText(), 'MCP conformance suite');
    await page.fill('#q', name);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL((u) => u.searchParams.get('q') === name);
    await page.locator('#entry').selectOption({ label: name });
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL((u) => u.searchParams.get('entry') === entry.entryId);
    assert.equal(await page.locator('#listing').innerText(), name);
    await page.fill('#param-region', 'eu');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page
      .waitForURL((u) => u.href.startsWith(`http://127.0.0.1:${port}/callback`))
      .catch(async (err) => {
        throw new Error(`${page.url()}\n${(await page.content()).slice(0, 3000)}\n${output}\n${err}`);
      });

    const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 60_000))]);
    assert.notEqual(code, 'timeout', `the suite did not finish:\n${output}`);
    const scenarios = await readChecks(outputDir);
    assert.deepEqual(
      [...scenarios.keys()].sort(),
      ['authorization-code-grant', 'authorization-server-metadata-endpoint'],
      output,
    );
    const checks = [...scenarios.values()].flat();
    const results = checks.map((c) => `${c.id}: ${c.status}${c.errorMessage ? ` (${c.errorMessage})` : ''}`);
    assert.deepEqual(
      checks.filter((c) => c.status !== 'SUCCESS').map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? ''}`),
      [],
      results.join('\n'),
    );
    assert.deepEqual(checks.map((c) => c.id).sort(), [
      'authorization-code-grant',
      'authorization-server-metadata',
      'authorization-server-metadata-cimd',
    ]);
    assert.equal(code, 0, output);

    // The grant the suite's token stands for is bound to the listing the person chose.
    const grants = await h.db
      .selectFrom('oauth_market_grants')
      .select(['entry_id', 'revoked_at'])
      .where('client_id', '=', clientId)
      .execute();
    assert.deepEqual(grants, [{ entry_id: entry.entryId, revoked_at: null }]);
    assert.deepEqual(context.foreignRequests, []);
    assert.deepEqual(context.consoleErrors, []);
  });
});
