import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fakes/fake-openai';
import { startFixtureSite, type FixtureSite } from '../support/fakes/fixture-site';
import { startFakeForum, type FakeForum } from '../support/fakes/fake-forum';
import { startFakeMicroblog, type FakeMicroblog } from '../support/fakes/fake-microblog';
import { startFakeGithub, type FakeGithub } from '../support/fakes/fake-github';
import { startFakeDns, type FakeDns } from '../support/fakes/fake-dns';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { PNG } from 'pngjs';
import { freePort } from '../support/stack/ports';
import { oneJsonLine, runAdmin } from '../support/stack/admin-cli';
import { parsePrometheus } from '../support/prometheus';
import { act } from '../support/agent-script';
import { Client as McpClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startMarketProvider } from '../support/fakes/market-provider';
import { CATALOGUE_IDS, SKILLS_CATALOGUE_COUNT, SKILLS_CATALOGUE_PATH } from '../support/skills-queries';
import { createRouter } from '../../api/app';
import { routeListingDeps, routerRoutes } from '../support/router-routes';
import { loadConfig } from '../../lib/config';

/**
 * Every endpoint through the embedded `npm start` path, as a newcomer runs it: the real command in
 * its own process group, PGlite and the Temporal dev server under a fresh DATA_DIR, the API on
 * loopback, and loopback fakes for the third parties (OpenAI-compatible chat + embeddings, forum,
 * microblog, GitHub). It does not use the shared harness, whose suites run on the Postgres server.
 *
 * The endpoints are a table (CASES, run in order, sharing `ctx.state`). Each case names what it
 * covers; a later test checks that every operation of the served OpenAPI document and every admin
 * CLI command was covered by a case that passed, and that the service's access log shows a request
 * answered by each route of the app's own router (api/app.ts createRouter: the admin routes,
 * /metrics, /docs-mcp, /mcp/{entryId}, …) — so a new endpoint fails this suite until a case here
 * exercises it. To add one: append { name, covers, run } to CASES.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const API_KEY = /^sk_live_[A-Za-z0-9_-]{32}$/;
const TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';

/**
 * Every route the service answers, as "METHOD /path/{param}" (a route for every method as "ANY …"),
 * taken from the app's own router (api/app.ts createRouter): the admin API, /metrics, /docs-mcp,
 * /mcp/{entryId}, the docs pages and the user API. Built with the service's configuration; nothing
 * is served from it (the database and Temporal are never touched while routes are registered).
 */
function appRoutes(env: Env): string[] {
  const config = loadConfig({ ...env, ADMIN_TOKEN: 'embedded-start-route-listing-0123456789' });
  return routerRoutes(createRouter(routeListingDeps(config)));
}

type Env = Record<string, string>;

interface HttpAnswer {
  status: number;
  body: any;
  contentType: string;
}

interface EmbeddedContext {
  baseUrl: string;
  env: Env;
  dataDir: string;
  llm: FakeOpenAI;
  site: FixtureSite;
  forum: FakeForum;
  microblog: FakeMicroblog;
  github: FakeGithub;
  /** The service's only DNS server (DNS_SERVERS): made-up names get NXDOMAIN on loopback. */
  dns: FakeDns;
  /** A remote MCP server (Streamable HTTP, tools echo and add) for the market and custom-agent cases. */
  mcp: TestMcpServer;
  http(method: string, urlPath: string, options?: { apiKey?: string; body?: unknown }): Promise<HttpAnswer>;
  /** `npm run --silent admin -- …args` against the running service; its one JSON line. */
  admin(args: string[]): Promise<any>;
  /** Polls a job status path until the job is completed or failed. */
  waitForJob(apiKey: string, statusPath: string): Promise<any>;
  /** Values later cases use (the user, ids of what earlier cases created). */
  state: {
    user?: { userId: string; apiKey: string };
    forumAccountId?: string;
    microblogAccountId?: string;
    [key: string]: unknown;
  };
}

interface EndpointCase {
  name: string;
  /** "METHOD /path" as in the OpenAPI document (with /api/v1), or "CLI <command>". */
  covers: string[];
  timeoutMs?: number;
  run(ctx: EmbeddedContext): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function userOf(ctx: EmbeddedContext) {
  assert.ok(ctx.state.user, 'needs the user created by an earlier case');
  return ctx.state.user;
}

async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await sleep(250);
  }
}

const CASES: EndpointCase[] = [
  {
    name: 'serves the API docs and the OpenAPI document',
    covers: ['GET /api/v1/docs', 'GET /api/v1/openapi.json'],
    async run(ctx) {
      const docs = await ctx.http('GET', '/api/v1/docs');
      assert.equal(docs.status, 200);
      assert.match(docs.contentType, /^text\/html/);
      assert.match(docs.body, /<html/i);
      const spec = await ctx.http('GET', '/api/v1/openapi.json');
      assert.equal(spec.status, 200);
      assert.equal(spec.body.openapi, '3.1.0');
      // The page's own links: its stylesheet, the README and a guide.
      const style = await ctx.http('GET', '/api/v1/docs/style.css');
      assert.equal(style.status, 200);
      assert.match(style.contentType, /^text\/css/);
      const readme = await ctx.http('GET', '/api/v1/docs/readme');
      assert.equal(readme.status, 200);
      assert.match(readme.body, /<html/i);
      const guide = /href="(\/api\/v1\/docs\/guides\/[^"]+)"/.exec(docs.body)?.[1];
      assert.ok(guide, 'the docs page links no guide');
      const guidePage = await ctx.http('GET', guide);
      assert.equal(guidePage.status, 200);
      assert.match(guidePage.body, /<html/i);
      // The console guide's pictures, served from docs/console/.
      const consoleGuide = await ctx.http('GET', '/api/v1/docs/guides/console');
      const picture = /<img src="(\/api\/v1\/docs\/console\/[^"]+\.png)"/.exec(consoleGuide.body)?.[1];
      assert.ok(picture, 'the console guide shows no picture');
      const png = await ctx.http('GET', picture);
      assert.equal(png.status, 200);
      assert.match(png.contentType, /^image\/png/);
    },
  },
  {
    name: 'serves the documentation MCP server at /docs-mcp: its tools, and a search that finds a guide',
    covers: ['POST /docs-mcp'],
    async run(ctx) {
      const client = new McpClient(
        { name: 'embedded-docs', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto' } },
      );
      await client.connect(new StreamableHTTPClientTransport(new URL(`${ctx.baseUrl}/docs-mcp`)));
      try {
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), [
          'get_operation',
          'list_operations',
          'read_doc',
          'search_docs',
        ]);
        const found = await client.callTool({ name: 'search_docs', arguments: { query: 'webhooks signature' } });
        assert.ok(!found.isError, JSON.stringify(found));
        assert.match(JSON.stringify(found.content), /docs\/[a-z-]+\.md/);
      } finally {
        await client.close();
      }
    },
  },
  {
    name: 'creates a user through the admin CLI: one JSON line with userId and apiKey',
    covers: ['CLI create-user', 'POST /admin/users'],
    async run(ctx) {
      const created = await ctx.admin(['create-user', '--email', 'newcomer@example.com', '--credit-usd', '5']);
      assert.deepEqual(Object.keys(created).sort(), ['apiKey', 'userId']);
      assert.match(created.userId, UUID);
      assert.match(created.apiKey, API_KEY);
      ctx.state.user = created;
    },
  },
  {
    name: 'credits the wallet and sets limits through the CLI',
    covers: [
      'CLI credit',
      'POST /admin/users/{userId}/credit',
      'CLI set-limits',
      'PATCH /admin/users/{userId}/subscription',
    ],
    async run(ctx) {
      const user = userOf(ctx);
      assert.deepEqual(await ctx.admin(['credit', '--user', user.userId, '--usd', '2.5']), {
        userId: user.userId,
        balanceUsd: 7.5,
        replayed: false,
      });
      const limited = await ctx.admin([
        'set-limits',
        '--user',
        user.userId,
        '--monthly-operation-limit',
        '50',
        '--automation-limit',
        '3',
      ]);
      assert.equal(limited.userId, user.userId);
      assert.equal(limited.status, 'active');
      assert.equal(limited.monthlyOperationLimit, 50);
    },
  },
  {
    name: 'shows the account and its webhook secret',
    covers: ['GET /api/v1/account', 'GET /api/v1/account/webhook-secret'],
    async run(ctx) {
      const user = userOf(ctx);
      const account = await ctx.http('GET', '/api/v1/account', { apiKey: user.apiKey });
      assert.equal(account.status, 200, JSON.stringify(account.body));
      assert.equal(account.body.userId, user.userId);
      assert.equal(account.body.balanceUsd, 7.5);
      assert.equal(account.body.subscription.monthlyOperationLimit, 50);
      const secret = await ctx.http('GET', '/api/v1/account/webhook-secret', { apiKey: user.apiKey });
      assert.equal(secret.status, 200);
      assert.equal(typeof secret.body.webhookSecret, 'string');
      assert.ok(secret.body.webhookSecret.length >= 16);
    },
  },
  {
    name: 'scrapes a fixture page asynchronously and polls its status',
    covers: ['POST /api/v1/scrape', 'GET /api/v1/scrape/status/{jobId}'],
    async run(ctx) {
      const user = userOf(ctx);
      const accepted = await ctx.http('POST', '/api/v1/scrape', {
        apiKey: user.apiKey,
        body: { url: `${ctx.site.url}/static`, structured_output: [{ id: 'title', type: 'string' }] },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      assert.match(accepted.body.jobId, UUID);
      // Long polling (?wait=N) on the embedded path: the in-process notifier and the PGlite re-read.
      let held = await ctx.http('GET', `/api/v1/scrape/status/${accepted.body.jobId}?wait=30`, { apiKey: user.apiKey });
      for (
        let i = 0;
        i < 3 && held.status === 200 && held.body.status !== 'completed' && held.body.status !== 'failed';
        i++
      ) {
        held = await ctx.http('GET', `/api/v1/scrape/status/${accepted.body.jobId}?wait=30`, { apiKey: user.apiKey });
      }
      assert.equal(held.status, 200, JSON.stringify(held.body));
      assert.equal(held.body.status, 'completed', held.body.error);
      assert.equal(
        (await ctx.http('GET', `/api/v1/scrape/status/${accepted.body.jobId}?wait=31`, { apiKey: user.apiKey })).status,
        400,
      );
      const job = await ctx.waitForJob(user.apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`);
      assert.equal(job.status, 'completed', job.error);
      assert.ok(job.result.markdown.includes('Field Guide to Urban Beekeeping'), job.result.markdown.slice(0, 300));
      assert.equal(typeof job.result.data.title, 'string');
      assert.ok(ctx.site.hits('/static') >= 1);
    },
  },
  {
    name: 'scrapes synchronously (async: false), rendering a script-built page in Chromium',
    covers: ['POST /api/v1/scrape'],
    async run(ctx) {
      const user = userOf(ctx);
      const answered = await ctx.http('POST', '/api/v1/scrape', {
        apiKey: user.apiKey,
        body: { url: `${ctx.site.url}/spa`, async: false },
      });
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.equal(answered.body.renderedWith, 'browser', JSON.stringify(answered.body).slice(0, 500));
      assert.match(answered.body.markdown, /Client Rendered/);
      assert.ok(answered.body.usage.costUsd > 0);
    },
  },
  {
    name: 'runs a browser agent and polls its status',
    covers: ['POST /api/v1/agentscraper', 'GET /api/v1/agentscraper/status/{jobId}'],
    async run(ctx) {
      const user = userOf(ctx);
      ctx.llm.enqueue(
        act('navigate', { url: `${ctx.site.url}/static` }, 'Open the page'),
        act('done', { success: true, answer: 'Field Guide to Urban Beekeeping' }),
      );
      const accepted = await ctx.http('POST', '/api/v1/agentscraper', {
        apiKey: user.apiKey,
        body: { task: `Open ${ctx.site.url}/static and tell me its title`, headless: true },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const job = await ctx.waitForJob(user.apiKey, `/api/v1/agentscraper/status/${accepted.body.jobId}`);
      assert.equal(job.status, 'completed', job.error);
      assert.equal(job.result.answer, 'Field Guide to Urban Beekeeping');
      assert.equal(job.result.summary.steps, 2);
    },
  },
  {
    name: 'saves, lists, updates and deletes social accounts (forum and microblog fakes)',
    covers: [
      'POST /api/v1/social-accounts',
      'GET /api/v1/social-accounts',
      'PATCH /api/v1/social-accounts/{id}',
      'DELETE /api/v1/social-accounts/{id}',
    ],
    async run(ctx) {
      const user = userOf(ctx);
      const forumCredentials = {
        forumClientId: 'embedded-app',
        forumClientSecret: 'embedded-secret-123',
        forumUsername: 'embedded_poster',
        forumPassword: 'embedded-pass-456',
      };
      ctx.forum.addApp({ clientId: forumCredentials.forumClientId, clientSecret: forumCredentials.forumClientSecret });
      ctx.forum.addUser({ username: forumCredentials.forumUsername, password: forumCredentials.forumPassword });
      const forum = await ctx.http('POST', '/api/v1/social-accounts', {
        apiKey: user.apiKey,
        body: { platform: 'forum', name: 'Forum', credentials: forumCredentials },
      });
      assert.equal(forum.status, 201, JSON.stringify(forum.body));
      assert.equal(forum.body.account.validationStatus, 'valid');
      ctx.state.forumAccountId = forum.body.account.id;

      ctx.microblog.addAccount({
        username: 'embedded_bird',
        email: 'bird@example.com',
        password: 'bird-pass-789',
        totpSecret: TOTP_SECRET,
      });
      const microblog = await ctx.http('POST', '/api/v1/social-accounts', {
        apiKey: user.apiKey,
        body: {
          platform: 'microblog',
          name: 'Bird',
          credentials: {
            username: 'embedded_bird',
            email: 'bird@example.com',
            password: 'bird-pass-789',
            totp_secret: TOTP_SECRET,
          },
        },
      });
      assert.equal(microblog.status, 201, JSON.stringify(microblog.body));
      ctx.state.microblogAccountId = microblog.body.account.id;

      const listed = await ctx.http('GET', '/api/v1/social-accounts', { apiKey: user.apiKey });
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.body.accounts.map((a: { platform: string }) => a.platform).sort(), [
        'forum',
        'microblog',
      ]);
      assert.ok(!JSON.stringify(listed.body).includes(forumCredentials.forumClientSecret));

      const renamed = await ctx.http('PATCH', `/api/v1/social-accounts/${ctx.state.microblogAccountId}`, {
        apiKey: user.apiKey,
        body: { name: 'Bird (renamed)', isActive: false },
      });
      assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
      assert.equal(renamed.body.account.name, 'Bird (renamed)');
      assert.equal(renamed.body.account.isActive, false);

      const deleted = await ctx.http('DELETE', `/api/v1/social-accounts/${ctx.state.microblogAccountId}`, {
        apiKey: user.apiKey,
      });
      assert.equal(deleted.status, 204);
      assert.equal((await ctx.http('GET', '/api/v1/social-accounts', { apiKey: user.apiKey })).body.accounts.length, 1);
    },
  },
  {
    name: 'creates an automation whose first run posts to the forum, and lists it',
    covers: ['POST /api/v1/automations', 'GET /api/v1/automations'],
    async run(ctx) {
      const user = userOf(ctx);
      assert.ok(ctx.state.forumAccountId, 'needs the forum account of an earlier case');
      ctx.forum.addCommunity('embedded_bees');
      ctx.llm.enqueue(
        act('submit_post', { community: 'embedded_bees', title: 'Embedded tip', text: 'Water your bees.' }),
        act('done', { success: true, answer: 'posted' }),
      );
      const created = await ctx.http('POST', '/api/v1/automations', {
        apiKey: user.apiKey,
        body: {
          name: 'Weekly tip',
          cron: '0 9 * * 1',
          task: 'Post a tip to r/embedded_bees',
          automation_type: 'forum-agent',
          forum: { mode: 'saved', accountIds: [ctx.state.forumAccountId] },
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      await until('the first run to post', async () => ctx.forum.posts().find((p) => p.title === 'Embedded tip'));
      const listed = await ctx.http('GET', '/api/v1/automations', { apiKey: user.apiKey });
      assert.equal(listed.status, 200);
      assert.equal(listed.body.meta.total, 1);
      assert.equal(listed.body.automations[0].status, 'active');
      const tooOften = await ctx.http('POST', '/api/v1/automations', {
        apiKey: user.apiKey,
        body: {
          name: 'Spam',
          cron: '* * * * *',
          task: 't',
          automation_type: 'forum-agent',
          forum: { mode: 'saved', accountIds: [ctx.state.forumAccountId] },
        },
      });
      assert.equal(tooOften.status, 400);
      assert.equal(tooOften.body.error.code, 'cron_too_frequent');
    },
  },
  {
    name: 'lists system logs and transactions',
    covers: ['GET /api/v1/logs', 'GET /api/v1/transactions'],
    async run(ctx) {
      const user = userOf(ctx);
      const logs = await ctx.http('GET', '/api/v1/logs?pageSize=100', { apiKey: user.apiKey });
      assert.equal(logs.status, 200, JSON.stringify(logs.body));
      assert.ok(logs.body.logs.some((l: { logMessage: string }) => /automation "Weekly tip"/.test(l.logMessage)));
      const transactions = await until('the automation run to be charged', async () => {
        const answer = await ctx.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: user.apiKey });
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        return (
          answer.body.transactions.some((t: { agentName: string }) => t.agentName === 'forum-agent') &&
          answer.body.transactions
        );
      });
      assert.deepEqual([...new Set(transactions.map((t: { agentName: string }) => t.agentName))].sort(), [
        'browser-agent',
        'forum-agent',
        'scrape',
      ]);
    },
  },
  {
    name: 'imports the skills catalogue through the CLI (embedding it) and searches it',
    covers: ['CLI import-skills', 'POST /admin/skills/import', 'GET /api/v1/skills/directory/search'],
    async run(ctx) {
      const user = userOf(ctx);
      const imported = await ctx.admin(['import-skills', SKILLS_CATALOGUE_PATH]);
      assert.deepEqual(
        { inserted: imported.inserted, embedded: imported.embedded, errors: imported.errors },
        { inserted: SKILLS_CATALOGUE_COUNT, embedded: SKILLS_CATALOGUE_COUNT, errors: [] },
      );
      const found = await ctx.http('GET', '/api/v1/skills/directory/search?q=pdf&pageSize=5', { apiKey: user.apiKey });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.equal(found.body.items[0].externalId, CATALOGUE_IDS.pdfToolkit);
      const short = await ctx.http('GET', '/api/v1/skills/directory/search?q=ui', { apiKey: user.apiKey });
      assert.equal(short.status, 200, JSON.stringify(short.body));
    },
  },
  {
    name: 'AI search with an OpenAI-compatible model answering: plans, embeds, reranks and charges (also a plan of short words)',
    covers: ['GET /api/v1/skills/directory/ai-search'],
    async run(ctx) {
      const user = userOf(ctx);
      const embeddingsBefore = ctx.llm.requests.filter((r) => r.kind === 'embeddings').length;
      // The default answers of the fake model (schema-shaped: keywords ["fake"], ranking [0]).
      const answered = await ctx.http(
        'GET',
        '/api/v1/skills/directory/ai-search?q=fill%20in%20a%20pdf%20form&pageSize=5',
        { apiKey: user.apiKey },
      );
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.equal(answered.body.meta.mode, 'ai', JSON.stringify(answered.body.meta));
      assert.ok(ctx.llm.requests.filter((r) => r.kind === 'embeddings').length > embeddingsBefore);
      // The regression: plan words too short for trigrams, and fractional "candidate numbers".
      ctx.llm.enqueue(
        { json: { keywords: ['ui', 'qa'], tags: ['go'], intent: 'Test a UI' } },
        { json: { ranking: [0.5, 1, 2.5] } },
      );
      const short = await ctx.http('GET', '/api/v1/skills/directory/ai-search?q=ui%20qa&pageSize=5', {
        apiKey: user.apiKey,
      });
      assert.equal(short.status, 200, JSON.stringify(short.body));
      assert.equal(short.body.meta.mode, 'ai');
      assert.deepEqual(short.body.meta.plan.keywords, ['ui', 'qa']);
      const charged = (
        await ctx.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: user.apiKey })
      ).body.transactions.filter((t: { agentName: string }) => t.agentName === 'skills-ai-search');
      assert.equal(charged.length, 2);
    },
  },
  {
    name: 'refreshes the skills directory from the GitHub fake through the CLI',
    covers: ['CLI refresh-skills', 'POST /admin/skills/refresh'],
    async run(ctx) {
      const user = userOf(ctx);
      const refreshed = await ctx.admin(['refresh-skills']);
      const [repo] = refreshed.result.repos;
      assert.equal(repo.ok, true, JSON.stringify(repo));
      assert.equal(repo.summary.found, 1);
      const found = await ctx.http('GET', '/api/v1/skills/directory/search?q=yak%20shaving', { apiKey: user.apiKey });
      assert.equal(found.body.items[0]?.name, 'yak-shaver', JSON.stringify(found.body));
    },
  },
  {
    name: 'stores a router key through the CLI: the router provider then works, and can be cleared again',
    covers: ['CLI set-router-key', 'PUT /admin/users/{userId}/router-key'],
    async run(ctx) {
      const user = userOf(ctx);
      assert.deepEqual(
        Object.keys(
          await ctx.admin(['set-router-key', '--user', user.userId, '--key', 'sk-router-embedded-0123456789']),
        ).includes('userId'),
        true,
      );
      const accepted = await ctx.http('POST', '/api/v1/scrape', {
        apiKey: user.apiKey,
        body: { url: `${ctx.site.url}/static`, llm_provider: 'router', llm_model: 'vendor/any-model' },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const job = await ctx.waitForJob(user.apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`);
      assert.equal(job.status, 'completed', job.error);
      assert.ok(ctx.llm.requests.some((r) => r.headers.authorization === 'Bearer sk-router-embedded-0123456789'));
      await ctx.admin(['set-router-key', '--user', user.userId, '--clear']);
    },
  },
  {
    name: 'rotates the key through the CLI: the old key is refused, the new one works',
    covers: ['CLI rotate-key', 'POST /admin/users/{userId}/rotate-key'],
    async run(ctx) {
      const user = userOf(ctx);
      const rotated = await ctx.admin(['rotate-key', '--user', user.userId]);
      assert.deepEqual(Object.keys(rotated).sort(), ['apiKey', 'userId']);
      assert.match(rotated.apiKey, API_KEY);
      assert.notEqual(rotated.apiKey, user.apiKey);
      assert.equal((await ctx.http('GET', '/api/v1/logs', { apiKey: user.apiKey })).status, 401);
      assert.equal((await ctx.http('GET', '/api/v1/logs', { apiKey: rotated.apiKey })).status, 200);
      ctx.state.user = rotated;
    },
  },
  {
    name: 'deactivates the user through the CLI (new scrapes get 403) and activates it again',
    covers: ['CLI deactivate', 'CLI activate'],
    async run(ctx) {
      const user = userOf(ctx);
      const deactivated = await ctx.admin(['deactivate', '--user', user.userId]);
      assert.equal(deactivated.status, 'inactive');
      const refused = await ctx.http('POST', '/api/v1/scrape', {
        apiKey: user.apiKey,
        body: { url: `${ctx.site.url}/static` },
      });
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, 'subscription_inactive');
      const activated = await ctx.admin(['activate', '--user', user.userId]);
      assert.equal(activated.status, 'active');
      const accepted = await ctx.http('POST', '/api/v1/scrape', {
        apiKey: user.apiKey,
        body: { url: `${ctx.site.url}/static` },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      await ctx.waitForJob(user.apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`);
    },
  },
  {
    name: 'serves GET /metrics from PGlite to the admin token only',
    covers: ['GET /metrics'],
    async run(ctx) {
      const adminToken = readFileSync(path.join(ctx.dataDir, 'admin-token'), 'utf8').trim();
      assert.equal((await fetch(`${ctx.baseUrl}/metrics`)).status, 401);
      const response = await fetch(`${ctx.baseUrl}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
      assert.equal(response.status, 200);
      const metrics = parsePrometheus(await response.text());
      assert.equal(metrics.value('platform_state_up'), 1);
      assert.ok(metrics.value('platform_jobs', { kind: 'scrape', state: 'completed' }) >= 1);
      assert.ok(metrics.value('platform_job_duration_seconds_count', { kind: 'scrape', status: 'completed' }) >= 1);
      assert.ok(metrics.value('platform_debits_total') >= 1);
    },
  },
  {
    name: 'registers, lists and deletes an operator-managed OAuth client through the CLI (the secret printed once, never listed)',
    covers: [
      'CLI register-oauth-client',
      'CLI oauth-clients',
      'CLI delete-oauth-client',
      'POST /admin/oauth/clients',
      'GET /admin/oauth/clients',
      'DELETE /admin/oauth/clients/{clientId}',
    ],
    async run(ctx) {
      const created = await ctx.admin([
        'register-oauth-client',
        '--name',
        'Embedded desktop agent',
        '--redirect-uri',
        'http://127.0.0.1:8765/callback',
        '--client-id',
        'embedded-agent',
        '--confidential',
      ]);
      assert.equal(created.clientId, 'embedded-agent');
      assert.equal(created.tokenEndpointAuthMethod, 'client_secret_basic');
      assert.ok(typeof created.clientSecret === 'string' && created.clientSecret.length >= 32);
      const listed = await ctx.admin(['oauth-clients']);
      const mine = listed.clients.find((c: { clientId: string }) => c.clientId === 'embedded-agent');
      assert.deepEqual(mine.redirectUris, ['http://127.0.0.1:8765/callback']);
      assert.equal(mine.clientSecret, undefined);
      // The authorization server knows it: a token request with a wrong secret is refused as the client's.
      const token = await fetch(`${ctx.baseUrl}/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from('embedded-agent:wrong').toString('base64')}`,
        },
        body: 'grant_type=authorization_code&code=x&redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2Fcallback',
      });
      assert.equal(token.status, 401);
      assert.equal((await token.json()).error, 'invalid_client');
      assert.deepEqual(await ctx.admin(['delete-oauth-client', '--client-id', 'embedded-agent']), {
        clientId: 'embedded-agent',
        deleted: true,
      });
      assert.equal((await ctx.admin(['oauth-clients'])).clients.length, listed.clients.length - 1);
    },
  }, // ---- Tool market, custom-agent discovery and the provider charge endpoint (issue 8: every endpoint on PGlite) ----
  {
    name: 'market: discovers and validates the loopback MCP server through the embedded workers; a host that does not resolve is 400 host_not_found',
    covers: ['POST /api/v1/mcp-market/discover', 'POST /api/v1/mcp-market/validate'],
    async run(ctx) {
      const user = userOf(ctx);
      const source = { type: 'remote_mcp', url: ctx.mcp.url };
      const discovered = await ctx.http('POST', '/api/v1/mcp-market/discover', { apiKey: user.apiKey, body: source });
      assert.equal(discovered.status, 200, JSON.stringify(discovered.body));
      const names: string[] = discovered.body.tools.map((t: { name: string }) => t.name);
      assert.ok(names.includes('echo') && names.includes('add'), names.join(', '));
      assert.equal(discovered.body.source.transport, 'streamable_http');
      const validated = await ctx.http('POST', '/api/v1/mcp-market/validate', { apiKey: user.apiKey, body: source });
      assert.equal(validated.status, 200, JSON.stringify(validated.body));
      assert.equal(validated.body.status, 'valid', JSON.stringify(validated.body.report));
      assert.match(validated.body.sourceFingerprint, /^[0-9a-f]{64}$/);
      assert.match(validated.body.validationId, UUID);
      ctx.state.marketValidation = { id: validated.body.validationId, fingerprint: validated.body.sourceFingerprint };
      // The service's only DNS server is the loopback fake: a made-up name is NXDOMAIN there, the caller's error.
      const nowhere = await ctx.http('POST', '/api/v1/mcp-market/validate', {
        apiKey: user.apiKey,
        body: { type: 'remote_mcp', url: 'https://nowhere-embedded.aa/mcp' },
      });
      assert.equal(nowhere.status, 400, JSON.stringify(nowhere.body));
      assert.equal(nowhere.body.error.code, 'host_not_found');
      assert.match(nowhere.body.error.message, /nowhere-embedded\.aa/);
      assert.ok(
        ctx.dns.queries().some((q) => q.name === 'nowhere-embedded.aa'),
        'the fake DNS was not asked',
      );
    },
  },
  {
    name: 'sells a tool and calls it through the hosted MCP endpoint /mcp/{entryId}: credential, priced tools/list, a billed call, provider revenue',
    covers: [
      'POST /api/v1/mcp-market/validate',
      'POST /api/v1/mcp-market/submissions',
      'POST /api/v1/mcp-market/submissions/{id}/submit',
      'CLI review',
      'POST /api/v1/mcp-market/mcps/{id}/credentials',
      'GET /api/v1/mcp-market/credentials',
      'PATCH /api/v1/mcp-market/credentials/{credentialId}',
      'DELETE /api/v1/mcp-market/credentials/{credentialId}',
      'GET /api/v1/provider/revenue',
      'POST /mcp/{entryId}',
      'PATCH /api/v1/account/api-key',
      'GET /api/v1/account/api-key',
    ],
    async run(ctx) {
      const service = await startMarketProvider();
      try {
        const provider = await ctx.admin(['create-user', '--email', 'tool-seller@example.com', '--credit-usd', '0']);
        const consumer = await ctx.admin(['create-user', '--email', 'tool-buyer@example.com', '--credit-usd', '1']);
        const validated = await ctx.http('POST', '/api/v1/mcp-market/validate', {
          apiKey: provider.apiKey,
          body: { type: 'remote_mcp', url: service.url },
        });
        assert.equal(validated.status, 200, JSON.stringify(validated.body));
        const created = await ctx.http('POST', '/api/v1/mcp-market/submissions', {
          apiKey: provider.apiKey,
          body: {
            validationId: validated.body.validationId,
            sourceFingerprint: validated.body.sourceFingerprint,
            type: 'remote_mcp',
            name: 'City facts',
            remoteMcpUrl: service.url,
            monetizationStrategy: 'tool_call_fixed',
            tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.002 }],
          },
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        assert.equal(
          (
            await ctx.http('POST', `/api/v1/mcp-market/submissions/${created.body.id}/submit`, {
              apiKey: provider.apiKey,
            })
          ).status,
          200,
        );
        await ctx.admin(['review', '--market', 'mcp', '--submission', created.body.id, '--approve']);
        const issued = await ctx.http('POST', `/api/v1/mcp-market/mcps/${created.body.publicId}/credentials`, {
          apiKey: consumer.apiKey,
          body: {},
        });
        assert.equal(issued.status, 201, JSON.stringify(issued.body));
        assert.equal(issued.body.mcpUrl, `${ctx.baseUrl}/mcp/${created.body.publicId}`);
        const client = new McpClient(
          { name: 'embedded-consumer', version: '1.0.0' },
          { versionNegotiation: { mode: 'auto' } },
        );
        await client.connect(
          new StreamableHTTPClientTransport(new URL(issued.body.mcpUrl), {
            requestInit: { headers: { authorization: `Bearer ${issued.body.credential}` } },
          }),
        );
        try {
          const { tools } = await client.listTools();
          assert.deepEqual(
            tools.map((t) => [
              t.name,
              (t._meta?.['scrape-platform/pricing'] as { clientPriceUsd: number }).clientPriceUsd,
            ]),
            [['lookup_city', 0.002]],
          );
          const answered = await client.callTool({ name: 'lookup_city', arguments: { city: 'Lisbon' } });
          assert.equal(answered.isError, false, JSON.stringify(answered));
        } finally {
          await client.close();
        }
        const charged = (
          await ctx.http('GET', '/api/v1/transactions?pageSize=10', { apiKey: consumer.apiKey })
        ).body.transactions.filter((t: { agentName: string }) => t.agentName.startsWith('market:'));
        assert.deepEqual(
          charged.map((t: { cost: number }) => t.cost),
          [0.002],
        );
        const revenue = await ctx.http('GET', '/api/v1/provider/revenue', { apiKey: provider.apiKey });
        assert.equal(revenue.status, 200, JSON.stringify(revenue.body));
        assert.equal(revenue.body.totals.totalChargedUsd, 0.002);
        // The credential is listed (no token) and revoked alone: the endpoint refuses it at once.
        const listed = await ctx.http('GET', '/api/v1/mcp-market/credentials', { apiKey: consumer.apiKey });
        assert.equal(listed.status, 200, JSON.stringify(listed.body));
        assert.deepEqual(
          listed.body.credentials.map((c: { id: string; status: string }) => [c.id, c.status]),
          [[issued.body.credentialId, 'active']],
        );
        // Its budgets are set on PGlite as on Postgres: the list shows them.
        const budgeted = await ctx.http('PATCH', `/api/v1/mcp-market/credentials/${issued.body.credentialId}`, {
          apiKey: consumer.apiKey,
          body: { budgetMonthlyUsd: 1.5, budgetTotalUsd: 10 },
        });
        assert.equal(budgeted.status, 200, JSON.stringify(budgeted.body));
        assert.deepEqual([budgeted.body.budgetMonthlyUsd, budgeted.body.budgetTotalUsd], [1.5, 10]);
        const revoked = await ctx.http('DELETE', `/api/v1/mcp-market/credentials/${issued.body.credentialId}`, {
          apiKey: consumer.apiKey,
        });
        assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
        const refused = await fetch(issued.body.mcpUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            authorization: `Bearer ${issued.body.credential}`,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
        });
        assert.equal(refused.status, 401);
        assert.match((await refused.json()).error.message, /revoked/);

        // The account's own calls (the API key as the bearer token) are bounded by the key's budget on PGlite too.
        const keyBudget = await ctx.http('PATCH', '/api/v1/account/api-key', {
          apiKey: consumer.apiKey,
          body: { budgetTotalUsd: 0.003 },
        });
        assert.equal(keyBudget.status, 200, JSON.stringify(keyBudget.body));
        const own = new McpClient({ name: 'embedded-own', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
        await own.connect(
          new StreamableHTTPClientTransport(new URL(issued.body.mcpUrl), {
            requestInit: { headers: { authorization: `Bearer ${consumer.apiKey}` } },
          }),
        );
        try {
          const first = await own.callTool({ name: 'lookup_city', arguments: { city: 'Porto' } });
          assert.equal(first.isError, false, JSON.stringify(first));
          const second = await own.callTool({ name: 'lookup_city', arguments: { city: 'Faro' } });
          assert.equal(
            (second._meta as Record<string, { code: string }>)['scrape-platform/billing']!.code,
            'budget_reached',
          );
        } finally {
          await own.close();
        }
        const key = await ctx.http('GET', '/api/v1/account/api-key', { apiKey: consumer.apiKey });
        assert.equal(key.status, 200, JSON.stringify(key.body));
        assert.deepEqual(
          [key.body.prefix, key.body.budgetTotalUsd, key.body.budgetMonthlyUsd, key.body.spentUsd],
          [consumer.apiKey.slice(0, 12), 0.003, null, 0.002],
        );
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'market: verifies a provider event through the charge endpoint and reads the verification back',
    covers: [
      'POST /api/v1/mcp-market/event-verifications',
      'GET /api/v1/mcp-market/event-verifications/{id}',
      'POST /api/v1/provider/runs/{runId}/charge',
    ],
    async run(ctx) {
      const user = userOf(ctx);
      const validation = ctx.state.marketValidation as { fingerprint: string };
      assert.ok(validation, 'needs the validation of the previous case');
      const created = await ctx.http('POST', '/api/v1/mcp-market/event-verifications', {
        apiKey: user.apiKey,
        body: { sourceFingerprint: validation.fingerprint, eventNames: ['page.scraped'] },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.match(created.body.id, UUID);
      assert.equal(typeof created.body.chargeToken, 'string');
      const charge = (idempotencyKey: string) =>
        fetch(`${ctx.baseUrl}/api/v1/provider/runs/${created.body.runId}/charge`, {
          method: 'POST',
          headers: {
            'x-api-key': user.apiKey,
            'x-service-charge-token': created.body.chargeToken,
            'idempotency-key': idempotencyKey,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ eventName: 'page.scraped', count: 1 }),
        }).then(async (r) => ({ status: r.status, body: await r.json() }));
      const charged = await charge('verify-page.scraped');
      assert.equal(charged.status, 200, JSON.stringify(charged.body));
      assert.equal(charged.body.verification, true);
      const replayed = await charge('verify-page.scraped');
      assert.equal(replayed.status, 200);
      assert.equal(replayed.body.replayed, true);
      const read = await ctx.http('GET', `/api/v1/mcp-market/event-verifications/${created.body.id}`, {
        apiKey: user.apiKey,
      });
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.deepEqual(
        [read.body.verifiedEventNames, read.body.complete, read.body.chargeToken],
        [['page.scraped'], true, undefined],
      );
      assert.equal(
        (await ctx.http('GET', `/api/v1/mcp-market/event-verifications/${randomUUID()}`, { apiKey: user.apiKey }))
          .status,
        404,
      );
      ctx.state.marketVerificationId = created.body.id;
    },
  },
  {
    name: 'market: uploads a PNG icon and serves it publicly as image/png',
    covers: ['POST /api/v1/market/icons', 'GET /api/v1/market/icons/{key}.png'],
    async run(ctx) {
      const user = userOf(ctx);
      const png = PNG.sync.write(new PNG({ width: 32, height: 32 }));
      const uploaded = await ctx.http('POST', '/api/v1/market/icons', {
        apiKey: user.apiKey,
        body: { fileName: 'tools.png', contentType: 'image/png', base64: png.toString('base64') },
      });
      assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
      assert.deepEqual([uploaded.body.width, uploaded.body.height], [32, 32]);
      const served = await fetch(`${ctx.baseUrl}/api/v1/market/icons/${uploaded.body.iconObjectKey}.png`);
      assert.equal(served.status, 200);
      assert.equal(served.headers.get('content-type'), 'image/png');
      assert.ok(Buffer.from(await served.arrayBuffer()).equals(png), 'the icon came back changed');
      const notPng = await ctx.http('POST', '/api/v1/market/icons', {
        apiKey: user.apiKey,
        body: {
          fileName: 'x.png',
          contentType: 'image/png',
          base64: Buffer.from('GIF89a not a png').toString('base64'),
        },
      });
      assert.equal(notPng.status, 400);
      ctx.state.marketIconKey = uploaded.body.iconObjectKey;
    },
  },
  {
    name: 'market: drafts, replaces, submits, reviews through the CLI, lists publicly and revises a submission',
    covers: [
      'POST /api/v1/mcp-market/submissions',
      'GET /api/v1/mcp-market/submissions',
      'GET /api/v1/mcp-market/submissions/{id}',
      'PUT /api/v1/mcp-market/submissions/{id}',
      'POST /api/v1/mcp-market/submissions/{id}/submit',
      'POST /api/v1/mcp-market/submissions/{id}/revisions',
      'GET /api/v1/mcp-market/mcps',
      'GET /api/v1/mcp-market/mcps/{id}',
      'CLI submissions',
      'CLI review',
    ],
    async run(ctx) {
      const user = userOf(ctx);
      const validation = ctx.state.marketValidation as { id: string; fingerprint: string };
      assert.ok(
        validation && ctx.state.marketVerificationId && ctx.state.marketIconKey,
        'needs the validation, verification and icon of the previous cases',
      );
      const body = {
        validationId: validation.id,
        sourceFingerprint: validation.fingerprint,
        eventVerificationId: ctx.state.marketVerificationId,
        type: 'remote_mcp',
        remoteMcpUrl: ctx.mcp.url,
        name: 'Embedded Lighthouse Tools',
        description: 'Echo and arithmetic tools for agents',
        iconObjectKey: ctx.state.marketIconKey,
        monetizationStrategy: 'provider_event',
        pricingEvents: [{ eventName: 'page.scraped', title: 'Page scraped', unitPriceUsd: 0.002 }],
        tools: [
          { toolName: 'echo', displayName: 'Echo' },
          { toolName: 'add', displayName: 'Add numbers' },
        ],
      };
      const created = await ctx.http('POST', '/api/v1/mcp-market/submissions', { apiKey: user.apiKey, body });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.status, 'draft');
      const id = created.body.id;
      const replaced = await ctx.http('PUT', `/api/v1/mcp-market/submissions/${id}`, {
        apiKey: user.apiKey,
        body: { ...body, description: 'Echo and arithmetic tools for agents, replaced' },
      });
      assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
      assert.equal(replaced.body.description, 'Echo and arithmetic tools for agents, replaced');
      const submitted = await ctx.http('POST', `/api/v1/mcp-market/submissions/${id}/submit`, { apiKey: user.apiKey });
      assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
      assert.equal(submitted.body.status, 'pending_review');
      const one = await ctx.http('GET', `/api/v1/mcp-market/submissions/${id}`, { apiKey: user.apiKey });
      assert.equal(one.status, 200);
      assert.equal(one.body.status, 'pending_review');
      const own = await ctx.http('GET', '/api/v1/mcp-market/submissions', { apiKey: user.apiKey });
      assert.equal(own.status, 200);
      assert.ok(own.body.submissions.some((s: { id: string }) => s.id === id));

      const queue = await ctx.admin(['submissions', '--market', 'mcp', '--status', 'pending_review']);
      assert.ok(
        queue.submissions.some((s: { id: string; status: string }) => s.id === id && s.status === 'pending_review'),
        JSON.stringify(queue),
      );
      const approved = await ctx.admin(['review', '--market', 'mcp', '--submission', id, '--approve']);
      assert.equal(approved.status, 'approved');

      const listed = await ctx.http('GET', '/api/v1/mcp-market/mcps?q=lighthouse', { apiKey: user.apiKey });
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      const publicId = listed.body.mcps[0]?.id;
      assert.equal(publicId, id, 'the approved entry is listed under its first submission id');
      const entry = await ctx.http('GET', `/api/v1/mcp-market/mcps/${publicId}`, { apiKey: user.apiKey });
      assert.equal(entry.status, 200);
      assert.deepEqual(
        entry.body.tools.map((t: { toolName: string }) => t.toolName),
        ['echo', 'add'],
      );
      assert.equal(entry.body.remoteMcpUrl, undefined, 'the public listing must not show the source URL');

      const revision = await ctx.http('POST', `/api/v1/mcp-market/submissions/${id}/revisions`, {
        apiKey: user.apiKey,
      });
      assert.equal(revision.status, 201, JSON.stringify(revision.body));
      const revised = await ctx.http('PUT', `/api/v1/mcp-market/submissions/${revision.body.id}`, {
        apiKey: user.apiKey,
        body: { ...body, description: 'Echo and arithmetic tools for agents, revised' },
      });
      assert.equal(revised.status, 200, JSON.stringify(revised.body));
      assert.equal(revised.body.parentEntryId, id);
      assert.equal(
        (await ctx.http('POST', `/api/v1/mcp-market/submissions/${revision.body.id}/submit`, { apiKey: user.apiKey }))
          .status,
        200,
      );
      assert.equal(
        (await ctx.admin(['review', '--market', 'mcp', '--submission', revision.body.id, '--approve'])).status,
        'approved',
      );
      const live = await ctx.http('GET', `/api/v1/mcp-market/mcps/${publicId}`, { apiKey: user.apiKey });
      assert.equal(
        live.body.description,
        'Echo and arithmetic tools for agents, revised',
        'the approved revision is live under the same public id',
      );
    },
  },
  {
    name: 'pages: the market finds the listed entry and shows its tools; the console signs in with the key and shows the balance and a run; the provider page starts a revision of the live listing in the wizard',
    covers: [
      'GET /',
      'GET /market',
      'GET /market/tools/{id}',
      'GET /console/sign-in',
      'POST /console/sign-in',
      'GET /console',
      'GET /console/runs/{id}',
      'GET /console/usage',
      'GET /console/provider',
      'POST /console/provider/new/revision/{id}',
      'GET /console/provider/new',
    ],
    async run(ctx) {
      const user = userOf(ctx);
      const page = async (path: string, init: RequestInit = {}) => {
        const response = await fetch(`${ctx.baseUrl}${path}`, { redirect: 'manual', ...init });
        return { status: response.status, headers: response.headers, html: await response.text() };
      };
      const root = await page('/');
      assert.deepEqual([root.status, root.headers.get('location')], [302, '/market']);
      const market = await page('/market?q=lighthouse&market=tools&pricing=per_event&min=0.001&sort=price_asc');
      assert.equal(market.status, 200);
      assert.match(
        market.headers.get('content-security-policy') ?? '',
        /^default-src 'self'; script-src 'self'; style-src 'self'/,
      );
      const id = /href="\/market\/tools\/([0-9a-f-]{36})">Embedded Lighthouse Tools</.exec(market.html)?.[1];
      assert.ok(id, 'the catalogue page finds the approved entry (PGlite full text and price filter)');
      const listing = await page(`/market/tools/${id}`);
      assert.equal(listing.status, 200);
      assert.ok(
        listing.html.includes('Add numbers') && listing.html.includes(`${ctx.baseUrl}/mcp/${id}`),
        'the listing shows its tools and its endpoint',
      );

      const form = await page('/console/sign-in');
      const pairing = form.headers.getSetCookie().map((c) => c.split(';')[0]);
      const token = /name="csrf" value="([^"]+)"/.exec(form.html)?.[1] ?? '';
      const signedIn = await page('/console/sign-in', {
        method: 'POST',
        headers: {
          origin: ctx.baseUrl,
          cookie: pairing.join('; '),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ csrf: token, api_key: user.apiKey }).toString(),
      });
      assert.deepEqual([signedIn.status, signedIn.headers.get('location')], [303, '/console'], signedIn.html);
      const session = signedIn.headers
        .getSetCookie()
        .find((c) => c.startsWith('__Host-console-session='))!
        .split(';')[0];
      const home = await page('/console', { headers: { cookie: session } });
      assert.equal(home.status, 200);
      assert.match(home.html, /<dd id="balance">\$\d+\.\d{2,6}<\/dd>/);
      const runId = /href="\/console\/runs\/([0-9a-f-]{36})"/.exec(home.html)?.[1];
      assert.ok(runId, 'the home page lists the runs of the earlier cases');
      const run = await page(`/console/runs/${runId}`, { headers: { cookie: session } });
      assert.equal(run.status, 200);
      assert.match(run.html, /<ol id="run-logs"><li>/);
      const usage = await page('/console/usage', { headers: { cookie: session } });
      assert.equal(usage.status, 200, usage.html);
      assert.equal(
        (usage.html.match(/<rect [^>]*class="bar"/g) ?? []).length,
        30,
        'a bar per day of spend (PGlite date grouping)',
      );
      assert.match(usage.html, /<table id="transactions">/);

      // "Make a revision" of the live listing (the revision approved in an earlier case) opens the wizard in revision mode.
      const provider = await page('/console/provider', { headers: { cookie: session } });
      assert.equal(provider.status, 200, provider.html);
      const action =
        /<form method="post" action="(\/console\/provider\/new\/revision\/[0-9a-f-]{36})"[^>]*><input type="hidden" name="csrf" value="([^"]+)"/.exec(
          provider.html,
        );
      assert.ok(action, 'the live listing has its "Make a revision" form');
      const started = await page(action[1]!, {
        method: 'POST',
        headers: { origin: ctx.baseUrl, cookie: session, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: action[2]! }).toString(),
      });
      assert.equal(started.status, 303, started.html);
      const wizardAt = started.headers.get('location') ?? '';
      assert.match(wizardAt, /^\/console\/provider\/new\?type=remote_mcp&url=[^&]+&revision=[0-9a-f-]{36}$/);
      const wizard = await page(wizardAt, { headers: { cookie: session } });
      assert.equal(wizard.status, 200, wizard.html);
      assert.ok(
        wizard.html.includes('<h1>Revision of Embedded Lighthouse Tools</h1>'),
        'the wizard is in revision mode',
      );
    },
  },
  {
    name: 'custom agents: discovers the tools of the loopback MCP server; a host that does not resolve is 400 host_not_found',
    covers: ['POST /api/v1/agents/discover-mcp'],
    async run(ctx) {
      const user = userOf(ctx);
      const discovered = await ctx.http('POST', '/api/v1/agents/discover-mcp', {
        apiKey: user.apiKey,
        body: { type: 'remote_mcp', url: ctx.mcp.url },
      });
      assert.equal(discovered.status, 200, JSON.stringify(discovered.body));
      const names = discovered.body.tools.map((t: { name: string }) => t.name);
      assert.ok(names.includes('echo') && names.includes('add'), names.join(', '));
      const nowhere = await ctx.http('POST', '/api/v1/agents/discover-mcp', {
        apiKey: user.apiKey,
        body: { type: 'remote_mcp', url: 'https://nowhere-agents.aa/mcp' },
      });
      assert.equal(nowhere.status, 400, JSON.stringify(nowhere.body));
      assert.equal(nowhere.body.error.code, 'host_not_found');
      assert.ok(
        ctx.dns.queries().some((q) => q.name === 'nowhere-agents.aa'),
        'the fake DNS was not asked',
      );
    },
  },
  // ---- end of the tool market block ----
  {
    name: 'discovers an MCP server, runs a custom agent with its tools, stores and changes a scheduled one',
    covers: [
      'POST /api/v1/agents/discover-mcp',
      'POST /api/v1/agents/run',
      'GET /api/v1/agents/runs/{jobId}',
      'POST /api/v1/agents',
      'PATCH /api/v1/agents/{id}',
    ],
    async run(ctx) {
      const user = userOf(ctx);
      const mcp = await startMcpServer({ bearerToken: 'embedded-mcp-token' });
      try {
        const custom_mcps = [
          { type: 'remote_mcp', name: 'Echo', source_url: mcp.url, params: { Authorization: 'embedded-mcp-token' } },
        ];
        const discovered = await ctx.http('POST', '/api/v1/agents/discover-mcp', {
          apiKey: user.apiKey,
          body: { type: 'remote_mcp', url: mcp.url, params: { Authorization: 'embedded-mcp-token' } },
        });
        assert.equal(discovered.status, 200, JSON.stringify(discovered.body));
        assert.ok(discovered.body.tools.some((t: { name: string }) => t.name === 'echo'));
        ctx.llm.enqueue(act('echo', { message: 'embedded' }), act('done', { success: true, answer: 'echo: embedded' }));
        const accepted = await ctx.http('POST', '/api/v1/agents/run', {
          apiKey: user.apiKey,
          body: { task: 'Echo "embedded"', llm_model: 'gpt-4o-mini', custom_mcps },
        });
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        const run = await ctx.waitForJob(user.apiKey, `/api/v1/agents/runs/${accepted.body.jobId}`);
        assert.equal(run.status, 'completed', run.error);
        assert.deepEqual(
          run.toolCalls.map((c: { tool: string; status: string }) => [c.tool, c.status]),
          [['echo', 'completed']],
        );
        assert.equal(run.request.custom_mcps[0].params.Authorization, '[redacted]');
        ctx.llm.enqueue(act('done', { success: true, answer: 'scheduled' }));
        const created = await ctx.http('POST', '/api/v1/agents', {
          apiKey: user.apiKey,
          body: { name: 'Embedded agent', cron: '0 0 1 1 *', task: 'Say hi', llm_model: 'gpt-4o-mini', custom_mcps },
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        assert.equal(created.body.agent.payload.custom_mcps[0].params.Authorization, '[redacted]');
        const patched = await ctx.http('PATCH', `/api/v1/agents/${created.body.agent.id}`, {
          apiKey: user.apiKey,
          body: { cron: '0 6 * * 1' },
        });
        assert.equal(patched.status, 200, JSON.stringify(patched.body));
        assert.equal(patched.body.agent.payload.cron, '0 6 * * 1');
      } finally {
        await mcp.close();
      }
    },
  },
  {
    name: 'agent market: submits, reviews with the CLI, lists, buys (once), runs and revises an agent',
    covers: [
      'POST /api/v1/agent-market/submissions',
      'GET /api/v1/agent-market/submissions',
      'GET /api/v1/agent-market/submissions/{id}',
      'PUT /api/v1/agent-market/submissions/{id}',
      'POST /api/v1/agent-market/submissions/{id}/submit',
      'POST /api/v1/agent-market/submissions/{id}/revisions',
      'DELETE /api/v1/agent-market/submissions/{id}',
      'GET /api/v1/agent-market/agents',
      'GET /api/v1/agent-market/agents/{agentId}',
      'POST /api/v1/agent-market/agents/{agentId}/purchase',
      'POST /api/v1/agent-market/agents/{agentId}/run',
      'GET /api/v1/agent-market/runs/{jobId}',
      'CLI submissions',
      'CLI review',
    ],
    timeoutMs: 180_000,
    async run(ctx) {
      const consumer = userOf(ctx);
      const provider = await ctx.admin(['create-user', '--email', 'agent-provider@example.com', '--credit-usd', '1']);
      const body = {
        name: 'Embedded ticket finder',
        priceUsd: 0.2,
        suggestedLlmProvider: 'service',
        suggestedLlmModel: 'gpt-4o-mini',
        runMode: 'template',
        systemPrompt: 'EMBEDDED-PRIVATE-SYSTEM answer briefly',
        promptTemplate: 'Open {{page}} and report its title.',
        inputSchema: { type: 'object', properties: { page: { type: 'string' } }, required: ['page'] },
        structuredOutput: [{ id: 'title', type: 'string' }],
      };
      const created = await ctx.http('POST', '/api/v1/agent-market/submissions', { apiKey: provider.apiKey, body });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const { id, publicId } = created.body;
      assert.equal(
        (
          await ctx.http('PUT', `/api/v1/agent-market/submissions/${id}`, {
            apiKey: provider.apiKey,
            body: { ...body, description: 'Reports page titles' },
          })
        ).status,
        200,
      );
      assert.equal(
        (await ctx.http('GET', '/api/v1/agent-market/submissions', { apiKey: provider.apiKey })).body.submissions
          .length,
        1,
      );
      assert.equal(
        (await ctx.http('GET', `/api/v1/agent-market/submissions/${id}`, { apiKey: provider.apiKey })).body
          .systemPrompt,
        body.systemPrompt,
      );
      assert.equal(
        (await ctx.http('POST', `/api/v1/agent-market/submissions/${id}/submit`, { apiKey: provider.apiKey })).body
          .status,
        'pending_review',
      );
      const queue = await ctx.admin(['submissions', '--market', 'agent', '--status', 'pending_review']);
      assert.deepEqual(
        queue.submissions.map((s: any) => s.id),
        [id],
      );
      assert.equal(
        (await ctx.admin(['review', '--market', 'agent', '--submission', id, '--approve'])).status,
        'approved',
      );

      const catalogue = await ctx.http('GET', '/api/v1/agent-market/agents?q=ticket', { apiKey: consumer.apiKey });
      assert.deepEqual(
        catalogue.body.agents.map((a: any) => a.id),
        [publicId],
      );
      assert.ok(!JSON.stringify(catalogue.body).includes('EMBEDDED-PRIVATE'));
      assert.equal(
        (await ctx.http('GET', `/api/v1/agent-market/agents/${publicId}`, { apiKey: consumer.apiKey })).body.priceUsd,
        0.2,
      );
      assert.equal(
        (
          await ctx.http('POST', `/api/v1/agent-market/agents/${publicId}/run`, {
            apiKey: consumer.apiKey,
            body: { inputs: { page: ctx.site.url } },
          })
        ).status,
        402,
      );
      assert.equal(
        (await ctx.http('POST', `/api/v1/agent-market/agents/${publicId}/purchase`, { apiKey: consumer.apiKey }))
          .status,
        201,
      );
      assert.equal(
        (await ctx.http('POST', `/api/v1/agent-market/agents/${publicId}/purchase`, { apiKey: consumer.apiKey }))
          .status,
        200,
      );

      ctx.llm.enqueue(act('done', { success: true, data: { title: 'Fixture' } }));
      const accepted = await ctx.http('POST', `/api/v1/agent-market/agents/${publicId}/run`, {
        apiKey: consumer.apiKey,
        body: { inputs: { page: ctx.site.url }, headless: true },
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const run = await ctx.waitForJob(consumer.apiKey, `/api/v1/agent-market/runs/${accepted.body.jobId}`);
      assert.equal(run.status, 'completed', run.error);
      assert.deepEqual(run.result.data, { title: 'Fixture' });
      assert.equal(run.agentId, publicId);
      assert.ok(!JSON.stringify(run).includes('EMBEDDED-PRIVATE'));

      const revision = await ctx.http('POST', `/api/v1/agent-market/submissions/${id}/revisions`, {
        apiKey: provider.apiKey,
      });
      assert.equal(revision.status, 201);
      assert.match(revision.body.id, UUID);
      assert.equal(
        (await ctx.http('DELETE', `/api/v1/agent-market/submissions/${revision.body.id}`, { apiKey: provider.apiKey }))
          .status,
        204,
        'a draft revision is deleted',
      );
      assert.equal(
        (await ctx.http('DELETE', `/api/v1/agent-market/submissions/${id}`, { apiKey: provider.apiKey })).status,
        409,
        'an approved one is not',
      );
    },
  },
];

/** process.env without the variables that would select external Postgres/Temporal or another admin URL. */
function embeddedEnv(extra: Env): Env {
  const env: Env = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !['DATABASE_URL', 'TEMPORAL_ADDRESS', 'ADMIN_URL'].includes(name)) env[name] = value;
  }
  return { ...env, ...extra };
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

describe('npm start (embedded PGlite + Temporal dev server): every endpoint', function () {
  this.timeout(240_000);

  const ctx = { state: {} } as EmbeddedContext;
  const passed = new Set<string>();
  let child: ChildProcess | null = null;
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  let output = '';
  /** "METHOD route → statuses" from the service's access lines: which routes answered a request, and how. */
  const served = new Map<string, Set<number>>();
  const readAccessLines = (stream: NodeJS.ReadableStream) => {
    let partial = '';
    stream.on('data', (chunk) => {
      const lines = (partial + String(chunk)).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const access = /"method":"([A-Z-]+)","route":"([^"]+)","status":(\d{3})/.exec(line);
        if (!access) continue;
        const key = `${access[1]} ${access[2].replace(/:([A-Za-z_]+)/g, '{$1}')}`;
        served.set(key, (served.get(key) ?? new Set()).add(Number(access[3])));
      }
    });
  };
  const killGroup = () => {
    if (child?.pid && groupAlive(child.pid)) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  };

  before(async function () {
    const [llm, site, forum, microblog, github, dns] = await Promise.all([
      startFakeOpenAI(),
      startFixtureSite(),
      startFakeForum(),
      startFakeMicroblog(),
      startFakeGithub(),
      startFakeDns(),
    ]);
    Object.assign(ctx, { llm, site, forum, microblog, github, dns, mcp: await startMcpServer() });
    github.setRepo('embedded/skills', {
      stars: 3,
      license: 'MIT',
      files: {
        'yak-shaver/SKILL.md':
          '---\nname: yak-shaver\ndescription: Shave yaks before starting the real work.\n---\n\nFirst the yak.\n',
      },
    });
    ctx.dataDir = mkdtempSync(path.join(os.tmpdir(), 'embedded-start-'));
    const [port, temporalPort, uiPort] = await distinctFreePorts(3);
    ctx.baseUrl = `http://127.0.0.1:${port}`;
    ctx.env = embeddedEnv({
      DATA_DIR: ctx.dataDir,
      PORT: String(port),
      TEMPORAL_DEV_PORT: String(temporalPort),
      TEMPORAL_UI_PORT: String(uiPort),
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'sk-embedded-start-test',
      ROUTER_BASE_URL: llm.baseURL,
      NETWORK_ALLOWLIST: '127.0.0.1',
      DNS_SERVERS: dns.server,
      FORUM_API_BASE: forum.apiBase,
      FORUM_AUTH_BASE: forum.authBase,
      MICROBLOG_BASE: microblog.base,
      GITHUB_API_BASE: github.apiBase,
      SKILLS_GITHUB_REPOS: 'embedded/skills',
    });
    ctx.http = async (method, urlPath, options = {}) => {
      const headers: Record<string, string> = {};
      if (options.apiKey) headers['x-api-key'] = options.apiKey;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${ctx.baseUrl}${urlPath}`, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      const text = await response.text();
      let body: any = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      return { status: response.status, body, contentType: response.headers.get('content-type') ?? '' };
    };
    ctx.admin = async (args) => oneJsonLine(await runAdmin(args, ctx.env));
    ctx.waitForJob = async (apiKey, statusPath) =>
      until(`${statusPath} to finish`, async () => {
        const status = await ctx.http('GET', statusPath, { apiKey });
        assert.equal(status.status, 200, JSON.stringify(status.body));
        return (status.body.status === 'completed' || status.body.status === 'failed') && status.body;
      });

    child = spawn('npm', ['start'], { cwd: ROOT, env: ctx.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    // The whole run's output (bounded): the log-format case looks for an access line of an early case.
    child.stdout!.on('data', (chunk) => (output = (output + chunk).slice(-2_000_000)));
    child.stderr!.on('data', (chunk) => (output = (output + chunk).slice(-2_000_000)));
    readAccessLines(child.stdout!);
    readAccessLines(child.stderr!);
    exited = new Promise((resolve) => child!.once('exit', (code, signal) => resolve({ code, signal })));
    // Never leave the process group behind, even if mocha exits abruptly.
    process.once('exit', killGroup);
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed') return;
    await sleep(500); // lets the last lines of a dying service arrive
    console.error(`--- npm start output (tail) ---\n${output.slice(-6000)}\n---`);
  });

  after(async function () {
    killGroup();
    process.removeListener('exit', killGroup);
    await Promise.all([
      ctx.llm?.close(),
      ctx.site?.close(),
      ctx.forum?.close(),
      ctx.microblog?.close(),
      ctx.github?.close(),
      ctx.dns?.close(),
      ctx.mcp?.close(),
    ]);
    if (ctx.dataDir) rmSync(ctx.dataDir, { recursive: true, force: true });
  });

  it('answers /health with 503 or a refused connection, then 200 once database, Temporal and workers are up', async function () {
    // Generous: on a loaded 2-core machine the first start (tsx, PGlite, migrations, the dev server) is slow.
    this.timeout(480_000);
    const deadline = Date.now() + 420_000;
    const seen: string[] = [];
    for (;;) {
      assert.ok(Date.now() < deadline, `not healthy within 420s; saw ${[...new Set(seen)].join(', ')}`);
      if (child!.exitCode !== null || child!.signalCode !== null)
        assert.fail(`npm start exited early (${child!.exitCode ?? child!.signalCode})`);
      let status: number;
      let body: any;
      try {
        const response = await fetch(`${ctx.baseUrl}/health`);
        status = response.status;
        body = await response.json();
      } catch (err) {
        const code = (err as { cause?: { code?: string } }).cause?.code;
        assert.equal(code, 'ECONNREFUSED', `unexpected /health failure: ${String(err)}`);
        seen.push('ECONNREFUSED');
        await sleep(250);
        continue;
      }
      if (status === 200) {
        assert.equal(body.status, 'ok');
        assert.deepEqual(
          { database: body.checks.database, temporal: body.checks.temporal, workers: body.checks.workers },
          { database: true, temporal: true, workers: true },
        );
        break;
      }
      assert.equal(status, 503, `unexpected /health status ${status}: ${JSON.stringify(body)}`);
      assert.equal(body.status, 'starting');
      seen.push('503');
      await sleep(250);
    }
    assert.ok(seen.length > 0, '/health was never observed before it became ready');
    passed.add('GET /health');
  });

  it('keeps PGlite and the Temporal SQLite file under DATA_DIR', function () {
    assert.ok(statSync(path.join(ctx.dataDir, 'pglite')).isDirectory(), 'DATA_DIR/pglite is missing');
    assert.ok(
      existsSync(path.join(ctx.dataDir, 'pglite', 'PG_VERSION')),
      'DATA_DIR/pglite is not a Postgres data directory',
    );
    assert.ok(statSync(path.join(ctx.dataDir, 'temporal.db')).isFile(), 'DATA_DIR/temporal.db is missing');
    assert.ok(existsSync(path.join(ctx.dataDir, 'admin-token')), 'DATA_DIR/admin-token is missing');
    assert.ok(existsSync(path.join(ctx.dataDir, 'master.key')), 'DATA_DIR/master.key is missing');
  });

  for (const endpointCase of CASES) {
    it(endpointCase.name, async function () {
      this.timeout(endpointCase.timeoutMs ?? 120_000);
      await endpointCase.run(ctx);
      for (const covered of endpointCase.covers) passed.add(covered);
    });
  }

  it("sent a request to every route of the app's router (admin, /metrics, /docs-mcp, /mcp/{entryId}, …) that it answered", function () {
    const routes = appRoutes(ctx.env);
    for (const expected of ['POST /admin/users', 'GET /metrics', 'ANY /docs-mcp', 'ANY /mcp/{entryId}'])
      assert.ok(routes.includes(expected), `the router has no ${expected}: ${routes.join(', ')}`);
    const answered = (route: string) => {
      const [method, template] = route.split(' ');
      const statuses = [...served.entries()]
        .filter(([key]) => (method === 'ANY' ? key.endsWith(` ${template}`) : key === route))
        .flatMap(([, seen]) => [...seen]);
      return statuses.some((status) => status < 400);
    };
    const missing = routes.filter((route) => !answered(route));
    assert.deepEqual(
      missing,
      [],
      'no successful request reached these routes: add a case to CASES that exercises each',
    );
  });

  it('covered every operation of the OpenAPI document and every admin CLI command', async function () {
    const spec = (await ctx.http('GET', '/api/v1/openapi.json')).body;
    const prefix = spec.servers[0].url.replace(/\/+$/, '');
    const operations = Object.entries(spec.paths as Record<string, Record<string, unknown>>).flatMap(([p, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map((method) => `${method.toUpperCase()} ${prefix}${p}`),
    );
    const usage = (await runAdmin(['list-commands-please'], ctx.env)).stderr;
    const commands = [...usage.matchAll(/^ {2}([a-z][a-z-]+)(?= |$)/gm)].map((m) => `CLI ${m[1]}`);
    assert.ok(
      operations.length >= 15 && commands.length >= 9,
      `${operations.length} operations, ${commands.length} CLI commands`,
    );
    const missing = [...operations, ...commands, 'GET /api/v1/docs', 'GET /health'].filter((what) => !passed.has(what));
    assert.deepEqual(missing, [], 'add a case for each to CASES in this file');
  });

  it('logs human-readable lines, not JSON, with an access line per request', function () {
    assert.match(
      output,
      /INFO: GET \/api\/v1\/logs 200 \{"requestId":"[^"]+","method":"GET","route":"\/api\/v1\/logs","status":200/,
    );
    assert.ok(!/^\{"level"/m.test(output), 'npm start wrote JSON log lines');
  });

  it('stops the whole process group on SIGTERM within 20s, closing PGlite cleanly', async function () {
    assert.ok(child?.pid);
    const pgid = child.pid;
    const deadline = Date.now() + 20_000;
    process.kill(-pgid, 'SIGTERM');
    const result = await Promise.race([exited, sleep(20_000).then(() => null)]);
    assert.ok(result, 'npm start did not exit within 20s of SIGTERM');
    assert.ok(
      result.code === 0 || result.code === 143 || result.signal === 'SIGTERM',
      `unexpected exit: ${JSON.stringify(result)}`,
    );
    // npm itself exits at once; what matters is that nothing of the group (tsx, the service, the
    // Temporal dev server) outlives the deadline.
    while (groupAlive(pgid) && Date.now() < deadline) await sleep(100);
    assert.ok(!groupAlive(pgid), 'processes of the group are still running 20s after SIGTERM');
    // A clean stop closes PGlite, which writes a shutdown checkpoint: pg_control's state field
    // (uint32 at offset 16) is 1 (DB_SHUTDOWNED), not 6 (DB_IN_PRODUCTION, i.e. killed mid-flight).
    const control = readFileSync(path.join(ctx.dataDir, 'pglite', 'global', 'pg_control'));
    assert.equal(
      control.readUInt32LE(16),
      1,
      'PGlite was not shut down cleanly (the service did not finish its stop sequence)',
    );
  });
});

describe('admin CLI without a running service', function () {
  this.timeout(60_000);
  let dataDir: string;
  let dns: FakeDns;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'admin-cli-'));
    dns = await startFakeDns();
  });
  after(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await dns.close();
  });

  it('prints a clear error to stderr and exits non-zero when the service is unreachable', async function () {
    const closedPort = await freePort();
    const env = embeddedEnv({
      DATA_DIR: dataDir,
      DNS_SERVERS: dns.server,
      ADMIN_URL: `http://127.0.0.1:${closedPort}`,
    });
    const result = await runAdmin(['create-user', '--email', 'nobody@example.com'], env);
    assert.notEqual(result.code, 0);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, new RegExp(`cannot reach the service at http://127\\.0\\.0\\.1:${closedPort}`));
  });

  it('exits 2 with the usage text for an unknown command', async function () {
    const result = await runAdmin(['frobnicate'], embeddedEnv({ DATA_DIR: dataDir, DNS_SERVERS: dns.server }));
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /unknown command "frobnicate"/);
    assert.match(result.stderr, /usage: npm run --silent admin -- <command>/);
    assert.match(result.stderr, /create-user --email E/);
  });
});

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
