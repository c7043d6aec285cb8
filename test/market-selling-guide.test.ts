// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../api/docs/load';
import { codeBlocks, parseMarkdown } from '../api/docs/markdown-to-html';
import { openMarketRun } from '../db/repos/market-runs';
import { getWalletSummary } from '../db/repos/ledger';
import { useHarness, type Harness } from './support/harness';
import { startMcpServer, type TestMcpServer } from './support/mcp-server';

const run = promisify(execFile);

/** The README's "Selling tools" section and its shell samples. */
function sellingSection() {
  const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Selling tools\n');
  assert.ok(start >= 0, 'the README has a "Selling tools" section');
  const end = readme.indexOf('\n## ', start + 1);
  const blocks = codeBlocks(parseMarkdown(readme.slice(start, end)).blocks).filter((b) => b.lang === 'sh');
  return { runnable: blocks.filter((b) => b.attrs.exec), reference: blocks.filter((b) => !b.attrs.exec) };
}

/**
 * A provider follows the README's "Selling tools" section word for word: its runnable samples go,
 * in order, in one shell (curl, jq and the admin CLI) from a URL to an approved public listing and a
 * revision of it; then the charge sample runs against a market run opened for a consumer.
 */
describe('the README\'s "Selling tools" section, followed as written', function () {
  this.timeout(240_000);
  let h: Harness;
  let mcp: TestMcpServer;

  before(async function () {
    h = await useHarness();
    mcp = await startMcpServer();
  });
  after(async () => mcp?.close());

  const shell = async (script: string, env: Record<string, string>) => {
    try {
      const { stdout } = await run('bash', ['-c', `set -euo pipefail\n${script}`], { cwd: REPO_ROOT, env: { ...process.env, ...h.env, ...env }, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
      return stdout;
    } catch (err) {
      const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
      assert.fail(`the samples failed: ${(err as Error).message.split('\n')[0]}\n--- stdout ---\n${stdout.slice(-4000)}\n--- stderr ---\n${stderr.slice(-4000)}`);
    }
  };

  it('takes a provider from an MCP URL to an approved public listing, a revision under the same public id, and a paid event', async function () {
    const { runnable, reference } = sellingSection();
    assert.ok(runnable.length >= 7, `${runnable.length} runnable samples`);
    const provider = await h.createUser({ creditUsd: 0 });
    const forReader = (code: string) => code.replaceAll('https://mcp.example.com/mcp', mcp.url);
    const markers = runnable.map((block, i) => `printf '\\n@@sample %s\\n' ${i}\n${forReader(block.code)}`);
    const script = [...markers, 'printf "\\n@@ids %s %s %s\\n" "$SUBMISSION_ID" "$REVISION_ID" "$PUBLIC_ID"'].join('\n');
    const output = await shell(script, { BASE_URL: h.baseUrl, API_KEY: provider.apiKey, ADMIN_URL: h.baseUrl });

    const [, submissionId, revisionId, publicId] = /@@ids (\S+) (\S+) (\S+)/.exec(output) ?? [];
    assert.ok(submissionId && revisionId && publicId, output);
    assert.equal(publicId, submissionId, 'the public id is the first submission\'s id');
    const listing = await h.http('GET', `/api/v1/mcp-market/mcps/${publicId}`, { apiKey: provider.apiKey });
    assert.equal(listing.status, 200);
    assert.equal(listing.body.description, 'Echo and arithmetic tools for agents, with examples', 'the approved revision is live under the same id');
    assert.deepEqual(listing.body.tools.map((t: { toolName: string }) => t.toolName), ['echo', 'add']);
    assert.deepEqual(listing.body.pricingEvents.map((e: { eventName: string; unitPriceUsd: number }) => [e.eventName, e.unitPriceUsd]), [['page.scraped', 0.002]]);
    const history = await h.http('GET', '/api/v1/mcp-market/submissions', { apiKey: provider.apiKey });
    assert.deepEqual(
      history.body.submissions.map((s: { id: string; status: string; live: boolean }) => [s.id, s.status, s.live]).sort(),
      [
        [revisionId, 'approved', true],
        [submissionId, 'approved', false],
      ].sort(),
    );
    assert.match(output, /"status": "valid"/);
    assert.match(output, /"complete": true/);
    assert.match(output, /"status": "pending_review"/);

    // Getting paid: the charge sample, as the provider's server sends it for a consumer's run.
    const charge = reference.find((b) => b.code.includes('/charge'));
    assert.ok(charge, 'the section shows the production charge call');
    const consumer = await h.createUser({ creditUsd: 5 });
    const opened = await openMarketRun(h.db, {
      consumerId: consumer.userId,
      entryId: publicId,
      selectionId: 'guide',
      ttlMs: 600_000,
      limitMicros: h.config.market.runChargeLimitMicros,
      chargeTokenKey: h.config.market.chargeTokenKey,
    });
    assert.equal(opened.outcome, 'opened');
    if (opened.outcome !== 'opened') return;
    const env = { BASE_URL: h.baseUrl, API_KEY: provider.apiKey, RUN_ID: opened.run.id, CHARGE_TOKEN: opened.chargeToken };
    const results = [await shell(charge.code, env), await shell(charge.code, env)].map((text) => JSON.parse(text));
    const { chargeId, meterEventId, ...rest } = results[0];
    assert.deepEqual(rest, {
      eventName: 'page.scraped',
      requestedCount: 3,
      chargedCount: 3,
      chargeableWithinLimit: 497,
      eventChargeLimitReached: false,
      unitPriceUsd: 0.002,
      totalChargedUsd: 0.006,
      commissionRate: 0.2,
      commissionUsd: 0.0012,
      providerRevenueUsd: 0.0048,
      replayed: false,
      verification: false,
    });
    assert.deepEqual([results[1].replayed, results[1].chargeId, results[1].meterEventId], [true, chargeId, meterEventId], 'the retry with the same key is a replay');
    assert.equal((await getWalletSummary(h.db, provider.userId)).balanceMicros, 4_800);
    assert.equal((await getWalletSummary(h.db, consumer.userId)).balanceMicros, 5_000_000 - 6_000);
    const account = await h.http('GET', '/api/v1/account', { apiKey: provider.apiKey });
    assert.equal(account.body.balanceUsd, 0.0048);
  });
});
