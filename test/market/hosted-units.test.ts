import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { issueMcpCredential, openMcpCredential, paramsSchemaHash } from '../../lib/market/credential';
import { toolListHash } from '../../lib/market/fingerprint';
import type { StoredMarketTool } from '../../lib/market/listing';
import { chargeHeaders, createUpstreamToolLists } from '../../lib/market/tool-call';
import { compareToolLists } from '../../lib/market/tool-drift';

const tool = (
  toolName: string,
  description: string,
  inputSchema: Record<string, unknown> = { type: 'object' },
): StoredMarketTool => ({
  toolName,
  displayName: toolName,
  description,
  inputSchema,
  clientPriceMicros: 1,
  providerRevenueMicros: null,
  isEnabled: true,
});

describe('hosted market MCP: credentials, rug-pull comparison, charge headers', function () {
  it('seals a credential that only this master key opens, and tells a forged one apart', function () {
    const key = randomBytes(32);
    const { token, claims } = issueMcpCredential(key, {
      entryId: 'e',
      userId: 'u',
      apiKeyId: 'k',
      params: { region: 'eu', token: 's3cret' },
      paramsSchemaHash: paramsSchemaHash({}),
      capMicros: 5,
    });
    assert.ok(!token.includes('s3cret') && !token.includes('region'), 'params are encrypted, not encoded');
    assert.deepEqual(openMcpCredential(key, token), claims);
    assert.equal(openMcpCredential(randomBytes(32), token), null);
    assert.equal(openMcpCredential(key, token.slice(0, -2) + (token.endsWith('A') ? 'BB' : 'AA')), null);
    assert.equal(openMcpCredential(key, 'sk_live_plain'), null);
    assert.notEqual(paramsSchemaHash({ type: 'object', properties: { a: { type: 'string' } } }), paramsSchemaHash({}));
    assert.equal(paramsSchemaHash({ b: 1, a: 2 }), paramsSchemaHash({ a: 2, b: 1 }), 'key order does not matter');
  });

  it('compares approved tools with the upstream list per tool: unchanged, changed fields, missing; extra upstream tools ignored', function () {
    const approved = [
      tool('a', 'Adds.'),
      tool('b', 'Bakes.', { type: 'object', properties: { n: { type: 'integer' } } }),
      tool('c', 'Cuts.'),
    ];
    const same = compareToolLists(approved, [
      { name: 'a', description: 'Adds.', inputSchema: { type: 'object' } },
      { name: 'b', description: 'Bakes.', inputSchema: { properties: { n: { type: 'integer' } }, type: 'object' } },
      { name: 'c', description: 'Cuts.', inputSchema: { type: 'object' } },
      { name: 'extra', description: 'Not listed', inputSchema: null },
    ]);
    assert.deepEqual(same.drifted, []);
    assert.equal(same.upstreamHash, same.approvedHash);
    assert.equal(
      same.approvedHash,
      toolListHash(approved.map((t) => ({ name: t.toolName, description: t.description, inputSchema: t.inputSchema }))),
    );

    const drifted = compareToolLists(approved, [
      { name: 'a', description: 'Adds.', inputSchema: { type: 'object' } },
      { name: 'b', description: 'Bakes.', inputSchema: { type: 'object', properties: { n: { type: 'string' } } } },
    ]);
    assert.deepEqual(drifted.drifted, [
      {
        toolName: 'b',
        change: 'changed',
        fields: [
          {
            field: 'inputSchema',
            approved: { type: 'object', properties: { n: { type: 'integer' } } },
            upstream: { type: 'object', properties: { n: { type: 'string' } } },
          },
        ],
      },
      { toolName: 'c', change: 'missing', fields: [] },
    ]);
    assert.notEqual(drifted.upstreamHash, drifted.approvedHash);
  });

  it('caches an upstream tool list for its time to live only', function () {
    let now = 0;
    const lists = createUpstreamToolLists(1000, () => now);
    lists.set('s', [{ name: 'a', description: null, inputSchema: null }]);
    now = 1000;
    assert.equal(lists.get('s')?.length, 1);
    now = 1001;
    assert.equal(lists.get('s'), null);
  });

  it("forwards the five x-service-charge-* headers, the run's own limit in USD (never its hold, which is bounded by the wallet)", function () {
    assert.deepEqual(
      chargeHeaders(
        {
          id: 'r1',
          chargeToken: 'mct1.x.y',
          holdMicros: 120_000,
          chargedMicros: 0,
          limitMicros: 250_000,
          expiresAt: new Date(),
        },
        'entry-1',
        'sel-1',
      ),
      {
        'x-service-charge-token': 'mct1.x.y',
        'x-service-charge-run-id': 'r1',
        'x-service-charge-mcp-id': 'entry-1',
        'x-service-charge-selection-id': 'sel-1',
        'x-service-charge-max-total-usd': '0.25',
      },
    );
  });
});
