// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useHarness, type Harness } from '../support/stack/harness';
import { act } from '../support/agent-script';
import { loadGuide, runnableSamples, runShellSamples } from '../support/guide-samples';

const GUIDE = 'docs/agent-market.md';

/**
 * A provider and a consumer follow docs/agent-market.md word for word, in one shell (curl, jq and the
 * admin CLI): submission, review, approval, catalogue, purchase, run and poll.
 */
describe('docs/agent-market.md, followed as written', function () {
  this.timeout(240_000);
  let h: Harness;
  let workDir: string;

  before(async function () {
    h = await useHarness();
    workDir = mkdtempSync(path.join(os.tmpdir(), 'agent-market-guide-'));
  });
  after(() => {
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('takes a provider from submission to approval and a consumer from the catalogue to a finished run', async function () {
    const guide = loadGuide(GUIDE);
    const blocks = runnableSamples(guide).filter((b) => b.lang === 'sh');
    assert.ok(blocks.length >= 7, `${blocks.length} runnable samples`);
    const provider = await h.createUser({ creditUsd: 1 });
    const consumer = await h.createUser({ creditUsd: 5 });
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/static` }),
      act('done', { success: true, data: { headline: 'Static page' } }),
    );
    const { outputs, epilogue } = await runShellSamples(guide, blocks, {
      env: {
        ...process.env,
        ...h.env,
        ADMIN_URL: h.baseUrl,
        BASE_URL: h.baseUrl,
        PROVIDER_KEY: provider.apiKey,
        API_KEY: consumer.apiKey,
      },
      cwd: workDir,
      rewrite: (code) => code.replaceAll('https://example.com', `${h.site.url}/static`),
      epilogue: 'printf "@@ids %s %s\\n" "$AGENT_ID" "$JOB_ID"',
      timeoutMs: 200_000,
    });
    const output = outputs.join('\n');
    const [, agentId, jobId] = /@@ids (\S+) (\S+)/.exec(epilogue) ?? [];
    assert.ok(agentId && jobId, epilogue);
    assert.match(output, /"status": "pending_review"/);
    assert.match(output, /"status": "approved"/);
    assert.match(output, /"purchased": false/);
    assert.match(output, /"priceUsd":0.25/);
    const record = await h.http('GET', `/api/v1/agent-market/runs/${jobId}`, { apiKey: consumer.apiKey });
    assert.equal(record.body.status, 'completed', record.body.error);
    assert.deepEqual(record.body.result.data, { headline: 'Static page' });
    assert.equal(record.body.agentId, agentId);
    assert.ok(!JSON.stringify(record.body).includes('You read news sites'), 'no prompt in the run record');
    const seller = await h.http('GET', '/api/v1/account', { apiKey: provider.apiKey });
    assert.equal(seller.body.balanceUsd, 1 + 0.25 * (1 - h.config.market.commissionRate));
  });
});
