// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { codeBlocks } from '../../api/docs/markdown-to-html';
import { openMarketRun } from '../../db/repos/market-runs';
import { getWalletSummary } from '../../db/repos/ledger';
import { useHarness, type Harness } from '../support/stack/harness';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { loadGuide, runShellSamples } from '../support/guide-samples';

const GUIDE = 'docs/selling-tools.md';

/** The guide's shell samples: the runnable walkthrough, and the reference samples (the production charge). */
function sellingSamples() {
  const guide = loadGuide(GUIDE);
  const blocks = codeBlocks(guide.parsed.blocks).filter((b) => b.lang === 'sh');
  return { guide, runnable: blocks.filter((b) => b.attrs.exec), reference: blocks.filter((b) => !b.attrs.exec) };
}

/**
 * A provider follows docs/selling-tools.md word for word: its runnable shell samples go, in order, in
 * one shell (curl, jq and the admin CLI) from a URL to an approved public listing and a revision of it;
 * then the guide's charge sample runs against a market run opened for a consumer.
 */
describe('docs/selling-tools.md, followed as written', function () {
  this.timeout(240_000);
  let h: Harness;
  let mcp: TestMcpServer;
  let workDir: string;

  before(async function () {
    h = await useHarness();
    mcp = await startMcpServer();
    workDir = mkdtempSync(path.join(os.tmpdir(), 'selling-guide-'));
  });
  after(async () => {
    await mcp?.close();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('takes a provider from an MCP URL to an approved public listing, a revision under the same public id, and a paid event', async function () {
    const { guide, runnable, reference } = sellingSamples();
    assert.ok(runnable.length >= 7, `${runnable.length} runnable samples`);
    const provider = await h.createUser({ creditUsd: 0 });
    const forReader = (code: string) => code.replaceAll('https://mcp.example.com/mcp', mcp.url);
    const { outputs, epilogue } = await runShellSamples(guide, runnable, {
      env: { ...process.env, ...h.env, BASE_URL: h.baseUrl, API_KEY: provider.apiKey, ADMIN_URL: h.baseUrl },
      cwd: workDir,
      rewrite: forReader,
      epilogue: 'printf "@@ids %s %s %s\\n" "$SUBMISSION_ID" "$REVISION_ID" "$PUBLIC_ID"',
      timeoutMs: 180_000,
    });
    const output = outputs.join('\n');

    const [, submissionId, revisionId, publicId] = /@@ids (\S+) (\S+) (\S+)/.exec(epilogue) ?? [];
    assert.ok(submissionId && revisionId && publicId, epilogue);
    assert.equal(publicId, submissionId, "the public id is the first submission's id");
    const listing = await h.http('GET', `/api/v1/mcp-market/mcps/${publicId}`, { apiKey: provider.apiKey });
    assert.equal(listing.status, 200);
    assert.equal(
      listing.body.description,
      'Echo and arithmetic tools for agents, with examples',
      'the approved revision is live under the same id',
    );
    assert.deepEqual(
      listing.body.tools.map((t: { toolName: string }) => t.toolName),
      ['echo', 'add'],
    );
    assert.deepEqual(
      listing.body.pricingEvents.map((e: { eventName: string; unitPriceUsd: number }) => [e.eventName, e.unitPriceUsd]),
      [['page.scraped', 0.002]],
    );
    const history = await h.http('GET', '/api/v1/mcp-market/submissions', { apiKey: provider.apiKey });
    assert.deepEqual(
      history.body.submissions
        .map((s: { id: string; status: string; live: boolean }) => [s.id, s.status, s.live])
        .sort(),
      [
        [revisionId, 'approved', true],
        [submissionId, 'approved', false],
      ].sort(),
    );
    assert.match(output, /"status": "valid"/);
    assert.match(output, /"complete":true/);
    assert.match(output, /"status": "pending_review"/);

    // Getting paid: the charge sample, as the provider's server sends it for a consumer's run.
    const charge = reference.find((b) => b.code.includes('/charge'));
    assert.ok(charge, 'the guide shows the production charge call');
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
    const env = {
      ...process.env,
      ...h.env,
      BASE_URL: h.baseUrl,
      API_KEY: provider.apiKey,
      RUN_ID: opened.run.id,
      CHARGE_TOKEN: opened.chargeToken,
    };
    const chargeOnce = async () =>
      JSON.parse((await runShellSamples(guide, [charge], { env, cwd: workDir })).outputs[0]);
    const results = [await chargeOnce(), await chargeOnce()];
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
    assert.deepEqual(
      [results[1].replayed, results[1].chargeId, results[1].meterEventId],
      [true, chargeId, meterEventId],
      'the retry with the same key is a replay',
    );
    assert.equal((await getWalletSummary(h.db, provider.userId)).balanceMicros, 4_800);
    assert.equal((await getWalletSummary(h.db, consumer.userId)).balanceMicros, 5_000_000 - 6_000);
    const account = await h.http('GET', '/api/v1/account', { apiKey: provider.apiKey });
    assert.equal(account.body.balanceUsd, 0.0048);
  });
});
