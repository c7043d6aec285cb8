// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../api/docs/load';
import { codeBlocks, parseMarkdown } from '../api/docs/markdown-to-html';
import { useHarness, type Harness } from './support/harness';
import { act } from './support/agent-script';

const run = promisify(execFile);

/** The README's "Agent market" section and its runnable shell samples. */
function agentMarketSection() {
  const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Agent market\n');
  assert.ok(start >= 0, 'the README has an "Agent market" section');
  const end = readme.indexOf('\n## ', start + 1);
  return codeBlocks(parseMarkdown(readme.slice(start, end)).blocks).filter((b) => b.lang === 'sh' && b.attrs.exec);
}

/**
 * A provider and a consumer follow the README's "Agent market" section word for word, in one shell
 * (curl, jq and the admin CLI): submission, review, approval, catalogue, purchase, run and poll.
 */
describe('the README\'s "Agent market" section, followed as written', function () {
  this.timeout(240_000);
  let h: Harness;

  before(async function () {
    h = await useHarness();
  });

  it('takes a provider from submission to approval and a consumer from the catalogue to a finished run', async function () {
    const blocks = agentMarketSection();
    assert.ok(blocks.length >= 7, `${blocks.length} runnable samples`);
    const provider = await h.createUser({ creditUsd: 1 });
    const consumer = await h.createUser({ creditUsd: 5 });
    h.llm.enqueue(act('navigate', { url: `${h.site.url}/static` }), act('done', { success: true, data: { title: 'Static page' } }));
    const script = [
      'set -euo pipefail',
      ...blocks.map((block, i) => `printf '\\n@@sample %s\\n' ${i}\n${block.code.replaceAll('https://example.com', `${h.site.url}/static`)}`),
      'printf "\\n@@ids %s %s\\n" "$AGENT_ID" "$JOB_ID"',
    ].join('\n');
    let output = '';
    try {
      ({ stdout: output } = await run('bash', ['-c', script], {
        cwd: REPO_ROOT,
        env: { ...process.env, ...h.env, ADMIN_URL: h.baseUrl, BASE_URL: h.baseUrl, PROVIDER_KEY: provider.apiKey, API_KEY: consumer.apiKey },
        timeout: 200_000,
        maxBuffer: 16 * 1024 * 1024,
      }));
    } catch (err) {
      const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
      assert.fail(`the samples failed: ${(err as Error).message.split('\n')[0]}\n--- stdout ---\n${stdout.slice(-4000)}\n--- stderr ---\n${stderr.slice(-4000)}`);
    }
    const [, agentId, jobId] = /@@ids (\S+) (\S+)/.exec(output) ?? [];
    assert.ok(agentId && jobId, output);
    assert.match(output, /"status": "pending_review"/);
    assert.match(output, /"status": "approved"/);
    assert.match(output, /"purchased": false/);
    assert.match(output, /"priceUsd":0.5/);
    const record = await h.http('GET', `/api/v1/agent-market/runs/${jobId}`, { apiKey: consumer.apiKey });
    assert.equal(record.body.status, 'completed', record.body.error);
    assert.deepEqual(record.body.result.data, { title: 'Static page' });
    assert.equal(record.body.agentId, agentId);
    assert.ok(!JSON.stringify(record.body).includes('careful web researcher'), 'no prompt in the run record');
    const seller = await h.http('GET', '/api/v1/account', { apiKey: provider.apiKey });
    assert.equal(seller.body.balanceUsd, 1 + 0.5 * (1 - h.config.market.commissionRate));
  });
});
