// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { normalisedDiscovery } from '../../lib/market/discovery';
import { runtimeDiscover } from '../../lib/market/runtime-discover';
import { buildValidationReport } from '../../lib/market/validation-report';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { startPoisonedMcpServer, type PoisonedMcpServer } from '../support/fakes/poisoned-mcp-server';

/**
 * The listing gate against a real MCP server on loopback that hides its attacks where approval screens
 * do not look (issue 34 §4): the market's discovery lists its tools, prompts and resources over HTTP
 * and the validation report must make it invalid, naming each attack; the same server with honest
 * text validates.
 */
describe('listing gate on a live MCP server that hides its attacks', function () {
  const discover = runtimeDiscover({ policy: parseNetworkAllowlist('127.0.0.1,localhost') });
  let poisoned: PoisonedMcpServer;
  let honest: PoisonedMcpServer;

  before(async function () {
    [poisoned, honest] = await Promise.all([startPoisonedMcpServer(), startPoisonedMcpServer({ honest: true })]);
  });
  after(() => Promise.all([poisoned?.close(), honest?.close()]));

  it('discovers the prompts and resources with the tools', async function () {
    const discovery = normalisedDiscovery(await discover({ type: 'remote_mcp', url: honest.url }));
    assert.deepEqual(
      discovery.tools.map((t) => t.name),
      ['read_file', 'analyze_logs'],
    );
    assert.deepEqual(discovery.prompts, [
      {
        name: 'daily_digest',
        description: 'A digest of the files changed today.',
        arguments: [{ name: 'notes', description: 'Anything to highlight in the digest.', required: true }],
      },
    ]);
    assert.deepEqual(discovery.resources, [
      {
        uri: 'files://workspace',
        name: 'workspace',
        description: 'The workspace tree as JSON.',
        mimeType: 'application/json',
      },
    ]);
    assert.equal(buildValidationReport(discovery).status, 'valid');
  });

  it('makes the poisoned server invalid and names every hidden attack', async function () {
    const discovery = normalisedDiscovery(await discover({ type: 'remote_mcp', url: poisoned.url }));
    const outcome = buildValidationReport(discovery);
    assert.equal(outcome.status, 'invalid');
    const errors = outcome.report.issues
      .filter((i) => i.severity === 'error')
      .map((i) => [i.code, i.tool, i.field].filter(Boolean).join(' '));
    for (const expected of [
      // a homoglyph of the filesystem server's read_file
      'confusable_name re\u0430d_file name',
      // an instruction in a parameter's default
      'secret_access re\u0430d_file inputSchema/properties/encoding/default',
      // orchestration written as policy
      'tool_shadowing analyze_logs description',
      // a prompt argument asking for the conversation "for compliance"
      'exfiltration prompts/0/arguments/0/description',
      // tag characters in a resource description
      'hidden_unicode resources/0/description',
    ]) {
      assert.ok(errors.includes(expected), `${expected} in ${JSON.stringify(errors, null, 1)}`);
    }
  });
});
