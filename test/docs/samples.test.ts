import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { useHarness, type Harness } from '../support/stack/harness';
import type { FakeReply, RecordedRequest } from '../support/fakes/fake-openai';
import { startWebhookReceiver } from '../support/fakes/webhook-receiver';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { loadDocSources, REPO_ROOT } from '../../api/docs/load';
import { codeBlocks } from '../../api/docs/markdown-to-html';
import { parseGuide, type Guide } from '../../api/docs/guides';
import {
  checkExpectation,
  runnableSamples,
  runShellSamples,
  sampleLocation,
  WALKTHROUGH_TESTS,
  type CodeBlock,
} from '../support/guide-samples';
import { signWebhook } from '../../lib/crypto';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';

/**
 * The guides' samples, run against the service the way a reader runs them: every fenced block marked
 * `exec` is a complete request. A guide's `sh exec` blocks run in order in one shell (variables set
 * by one block are there for the next); each `ts exec` block runs on its own with tsx. The readers'
 * placeholders come from the environment (BASE_URL, API_KEY, WEBHOOK_URL, METRICS_TOKEN, the social
 * credentials), `https://example.com` stands for a page of the loopback fixture site and
 * `https://mcp.example.com/mcp` for a provider's MCP server (a real one on loopback). The shell samples of
 * the guides in WALKTHROUGH_TESTS are followed by tests of their own (they need the admin CLI and two
 * accounts); their TypeScript samples run here.
 */

const run = promisify(execFile);
type Json = Record<string, any>;

const guides = loadDocSources().guides.map(parseGuide);
const runnable = (guide: Guide): CodeBlock[] =>
  runnableSamples(guide).filter((b) => !(b.lang === 'sh' && guide.path in WALKTHROUGH_TESTS));

/** A value of the schema's shape, like the one a model would answer with. */
function exampleOf(schema: Json | undefined): unknown {
  if (!schema) return 'sample';
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) return exampleOf(options[0]);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type ?? (schema.properties ? 'object' : 'string')) {
    case 'object':
      return Object.fromEntries(
        Object.entries((schema.properties ?? {}) as Record<string, Json>).map(([key, inner]) => [
          key,
          exampleOf(inner),
        ]),
      );
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => exampleOf(schema.items));
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    default:
      return 'sample';
  }
}

/** Agents finish at once with a well-formed answer; extractions get an instance of their schema. */
function sampleModel(request: RecordedRequest): FakeReply {
  const tools = (request.body.tools ?? []) as { function: { name: string; parameters?: Json } }[];
  const done = tools.find((t) => t.function.name === 'done');
  if (done)
    return {
      toolCalls: [
        {
          name: 'done',
          arguments: { ...(exampleOf(done.function.parameters) as Json), success: true, answer: 'Sample answer' },
        },
      ],
    };
  const schema = request.body.response_format?.json_schema?.schema;
  return schema ? { json: exampleOf(schema) } : { content: 'ok' };
}

function forSite(code: string, siteUrl: string, mcpUrl: string): string {
  return code
    .replace(/https:\/\/example\.com(?![\w.-])/g, `${siteUrl}/static`)
    .replaceAll('https://mcp.example.com/mcp', mcpUrl);
}

describe('docs samples run against the service', function () {
  let h: Harness;
  let apiKey: string;
  let userId: string;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let mcp: TestMcpServer;
  let workDir: string;
  let env: Record<string, string>;
  let marketProvider: MarketProviderService;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey, userId } = await h.createUser({ creditUsd: 50 }));
    receiver = await startWebhookReceiver();
    mcp = await startMcpServer();
    workDir = mkdtempSync(path.join(os.tmpdir(), 'docs-samples-'));
    symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(workDir, 'node_modules'));
    const forum = {
      clientId: 'docs-sample-app',
      clientSecret: 'docs-sample-secret',
      username: 'docs_reader',
      password: 'docs-reader-pass',
    };
    h.forum.addApp({ clientId: forum.clientId, clientSecret: forum.clientSecret });
    h.forum.addUser({ username: forum.username, password: forum.password });
    const microblog = {
      username: 'docs_brand',
      email: 'brand@example.com',
      password: 'brand-pass-123',
      totpSecret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
    };
    h.microblog.addAccount(microblog);
    env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: workDir,
      BASE_URL: h.baseUrl,
      API_KEY: apiKey,
      WEBHOOK_URL: receiver.url('/hooks/docs'),
      METRICS_TOKEN: h.config.metrics.token ?? h.config.adminToken,
      FORUM_CLIENT_ID: forum.clientId,
      FORUM_CLIENT_SECRET: forum.clientSecret,
      FORUM_USERNAME: forum.username,
      FORUM_PASSWORD: forum.password,
      MICROBLOG_USERNAME: microblog.username,
      MICROBLOG_EMAIL: microblog.email,
      MICROBLOG_PASSWORD: microblog.password,
      MICROBLOG_TOTP_SECRET: microblog.totpSecret,
    };
    // An approved market entry for docs/using-market-tools.md (ENTRY_ID), served by a loopback provider.
    marketProvider = await startMarketProvider();
    const seller = await h.createUser({ creditUsd: 0 });
    const listing = await approvedServiceEntry(h, seller, marketProvider.url, {
      name: 'City facts',
      monetizationStrategy: 'tool_call_fixed',
      tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.002 }],
    });
    env.ENTRY_ID = listing.entryId;
    h.llm.setDefault(sampleModel);
  });

  after(async function () {
    // The automations guide schedules a weekday run; it must not fire later in the same test run.
    const schedules = h
      ? await h.db.selectFrom('automations').select('schedule_id').where('user_id', '=', userId).execute()
      : [];
    for (const { schedule_id } of schedules) await h.client.schedule.getHandle(schedule_id).delete();
    h?.llm.reset();
    await receiver?.close();
    await marketProvider?.close();
    await mcp?.close();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  /** Waits until every job the samples started has ended, and lists those that did not complete. */
  async function jobsThatDidNotComplete(): Promise<string[]> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const jobs = await h.db
        .selectFrom('jobs')
        .select(['id', 'kind', 'status', 'error'])
        .where('user_id', '=', userId)
        .execute();
      const running = jobs.filter((j) => j.status === 'pending' || j.status === 'processing');
      if (running.length === 0)
        return jobs.filter((j) => j.status !== 'completed').map((j) => `${j.kind} ${j.id}: ${j.error}`);
      if (Date.now() > deadline) return running.map((j) => `${j.kind} ${j.id} still ${j.status}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  async function runShellBlocks(guide: Guide, blocks: CodeBlock[]): Promise<void> {
    if (blocks.length === 0) return;
    await runShellSamples(guide, blocks, { env, cwd: workDir, rewrite: (code) => forSite(code, h.site.url, mcp.url) });
  }

  async function runTypeScriptBlock(guide: Guide, block: CodeBlock, index: number): Promise<void> {
    const file = path.join(workDir, `${guide.slug}-${index}.mts`);
    writeFileSync(file, forSite(block.code, h.site.url, mcp.url));
    const where = sampleLocation(guide, block);
    try {
      const { stdout } = await run(path.join(REPO_ROOT, 'node_modules/.bin/tsx'), [file], {
        env,
        cwd: workDir,
        timeout: 120_000,
        maxBuffer: 8 * 1024 * 1024,
      });
      checkExpectation(block, stdout, where);
    } catch (err) {
      if (err instanceof assert.AssertionError) throw err;
      assert.fail(`${where} failed: ${(err as Error).message}\n${(err as { stderr?: string }).stderr ?? ''}`);
    }
  }

  for (const guide of guides.filter((g) => runnable(g).length > 0)) {
    it(`${guide.path}: its ${runnable(guide).length} runnable samples work as written`, async function () {
      this.timeout(360_000);
      const blocks = runnable(guide);
      await runShellBlocks(
        guide,
        blocks.filter((b) => b.lang === 'sh'),
      );
      const scripts = blocks.filter((b) => b.lang === 'ts');
      for (const [i, block] of scripts.entries()) await runTypeScriptBlock(guide, block, i);
      assert.deepEqual(await jobsThatDidNotComplete(), [], 'every job a sample started completes');
    });
  }

  describe('the webhook verification examples', function () {
    const webhooks = guides.find((g) => g.slug === 'webhooks')!;
    const example = (lang: string) => {
      const block = codeBlocks(webhooks.parsed.blocks).find((b) => b.lang === lang && b.attrs.id === 'verify-webhook');
      assert.ok(block, `no ${lang} block with id=verify-webhook in docs/webhooks.md`);
      return block.code;
    };
    type Case = { body: string; header: string; secret: string; now: number };
    let cases: Record<string, Case>;

    before(async function () {
      this.timeout(120_000);
      const { body: accepted } = await h.http('POST', '/api/v1/scrape', {
        apiKey,
        body: { url: `${h.site.url}/static`, webhook_url: receiver.url('/hooks/verify') },
      });
      const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.jobId}`, (j) =>
        j.logs.some((l: string) => /webhook delivered/.test(l)),
      );
      const delivery = receiver.deliveries.find((d) => d.path === '/hooks/verify' && d.body.includes(job.id))!;
      const secret = (await h.http('GET', '/api/v1/account/webhook-secret', { apiKey })).body.webhookSecret;
      const header = String(delivery.headers['x-webhook-signature']);
      const now = Number(delivery.headers['x-webhook-timestamp']) * 1000;
      const workedBody = '{"event":"job.completed","kind":"scrape","job":{"id":"0c9f"}}';
      const worked = {
        body: workedBody,
        header: signWebhook('whsec_test_secret', workedBody, 1767225600),
        secret: 'whsec_test_secret',
        now: 1767225600 * 1000,
      };
      assert.ok(
        webhooks.markdown.includes(`X-Webhook-Signature: ${worked.header}`),
        'the worked example shows the signature the service computes',
      );
      cases = {
        delivered: { body: delivery.body, header, secret, now },
        worked,
        tamperedBody: { body: delivery.body.replace('"completed"', '"failed"'), header, secret, now },
        wrongSecret: { body: delivery.body, header, secret: `${secret}x`, now },
        replayedLater: { body: delivery.body, header, secret, now: now + 10 * 60_000 },
        garbageHeader: { body: delivery.body, header: 'v1=zz,t=never', secret, now },
      };
    });

    const expected = {
      delivered: true,
      worked: true,
      tamperedBody: false,
      wrongSecret: false,
      replayedLater: false,
      garbageHeader: false,
    };

    it('the TypeScript function accepts real and worked-example deliveries and refuses altered or stale ones', function () {
      const file = path.join(workDir, 'verify-webhook.ts');
      writeFileSync(file, example('ts'));
      const { verifyWebhook } = require(file) as {
        verifyWebhook: (body: string, header: string, secret: string, tolerance?: number, now?: number) => boolean;
      };
      const verdicts = Object.fromEntries(
        Object.entries(cases).map(([name, c]) => [name, verifyWebhook(c.body, c.header, c.secret, 300, c.now)]),
      );
      assert.deepEqual(verdicts, expected);
    });

    it('the Python function gives the same verdicts', async function () {
      this.timeout(30_000);
      const file = path.join(workDir, 'verify_webhook.py');
      const driver = [
        '',
        'import json, sys',
        'cases = json.load(sys.stdin)',
        'print(json.dumps({name: verify_webhook(c["body"].encode(), c["header"], c["secret"], 300, c["now"] / 1000) for name, c in cases.items()}))',
      ].join('\n');
      writeFileSync(file, example('python') + '\n' + driver);
      const child = execFile('python3', [file], { timeout: 20_000 });
      child.stdin!.end(JSON.stringify(cases));
      let stdout = '';
      child.stdout!.on('data', (chunk) => (stdout += chunk));
      let stderr = '';
      child.stderr!.on('data', (chunk) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      assert.equal(code, 0, stderr);
      assert.deepEqual(JSON.parse(stdout), expected);
    });
  });
});
