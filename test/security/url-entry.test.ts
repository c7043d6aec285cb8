// No packet leaves this file: every check here is made without DNS or a connection.
import assert from 'node:assert/strict';

import { preflightUrl } from '../../api/services/shared/url-preflight';
import { ApiError } from '../../api/errors';
import { MarketRuleError } from '../../lib/market/errors';
import { requireSecureSourceUrl } from '../../lib/market/source-url';
import { assertFetchableUrl } from '../../lib/net/transport';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { isAllowlistedHost, judgeUrlEntry } from '../../lib/net/url-entry';
import { ToolSourceError } from '../../lib/tools/errors';
import { preflightSourceUrl } from '../../lib/tools/network';

/** A development allowlist naming a host, loopback, a public address and the link-local range (which holds the metadata address). */
const policy = parseNetworkAllowlist('dev.test,127.0.0.0/8,8.8.8.8,169.254.0.0/16');

type Verdict = 'accepted' | 'insecure';

function verdictOf(check: () => void, isInsecure: (error: unknown) => boolean): Verdict {
  try {
    check();
    return 'accepted';
  } catch (error) {
    if (isInsecure(error)) return 'insecure';
    throw error;
  }
}

/** How each door judges "https unless allowlisted" for one URL. */
function judgements(url: string): Record<string, Verdict> {
  return {
    'market submission (remoteMcpUrl)': verdictOf(
      () => requireSecureSourceUrl(url, 'remoteMcpUrl', policy),
      (error) => error instanceof MarketRuleError && error.code === 'insecure_url',
    ),
    'market agent run (webhook_url)': verdictOf(
      () => preflightUrl('webhook_url', url, policy, { requireHttps: true }, 'insecure_webhook_url'),
      (error) => error instanceof ApiError && error.code === 'insecure_webhook_url',
    ),
    'custom agent / tool discovery (source_url)': verdictOf(
      () => preflightSourceUrl(new URL(url), policy),
      (error) => error instanceof ToolSourceError && error.code === 'insecure_url',
    ),
    'tool call (every hop of the transport)': verdictOf(
      () => assertFetchableUrl(new URL(url), policy, true),
      (error) => (error as { code?: string }).code === 'insecure',
    ),
  };
}

describe('one URL entry check: "https unless allowlisted" answers the same at submission and at call time', () => {
  const cases: Array<[string, Verdict]> = [
    ['https://tools.example.com/mcp', 'accepted'],
    ['https://8.8.8.8/mcp', 'accepted'],
    ['http://dev.test:8080/mcp', 'accepted'],
    ['http://DEV.test./mcp', 'accepted'],
    ['http://127.0.0.1:3000/mcp', 'accepted'],
    ['http://[::ffff:127.0.0.1]:3000/mcp', 'accepted'],
    ['http://tools.example.com/mcp', 'insecure'],
    ['http://10.0.0.5/mcp', 'insecure'],
    // A public address is reachable anyway: listing it does not open plain http to it (the market said so, the transport did not).
    ['http://8.8.8.8/mcp', 'insecure'],
    // Inside an allowlisted range, but a cloud metadata address is never opened.
    ['http://169.254.169.254/latest/meta-data', 'insecure'],
  ];

  for (const [url, expected] of cases) {
    it(`${url}: ${expected} at every door`, () => {
      const seen = judgements(url);
      for (const [door, verdict] of Object.entries(seen))
        assert.equal(verdict, expected, `${door} judged ${url} ${verdict}`);
    });
  }

  it('opens hosts by name or as non-public addresses inside an allowed range', () => {
    assert.equal(isAllowlistedHost('dev.test', policy), true);
    assert.equal(isAllowlistedHost('[::1]', policy), false);
    assert.equal(isAllowlistedHost('127.5.5.5', policy), true);
    assert.equal(isAllowlistedHost('169.254.1.1', policy), true);
    assert.equal(isAllowlistedHost('169.254.169.254', policy), false);
    assert.equal(isAllowlistedHost('8.8.8.8', policy), false);
  });

  it('refuses literal internal addresses and localhost names without DNS, and credentials only when asked', () => {
    const closed = parseNetworkAllowlist(undefined);
    assert.deepEqual(
      [
        'http://127.0.0.1/',
        'http://localhost:8080/',
        'http://app.localhost/',
        'https://[::1]/',
        'http://169.254.169.254/',
      ].map((url) => judgeUrlEntry(url, closed)?.code),
      ['blocked', 'blocked', 'blocked', 'blocked', 'blocked'],
    );
    assert.equal(judgeUrlEntry('https://example.com/', closed), null);
    assert.equal(judgeUrlEntry('ftp://example.com/', closed)?.code, 'bad_scheme');
    assert.equal(judgeUrlEntry('https://user:pw@example.com/', closed), null);
    assert.equal(
      judgeUrlEntry('https://user:pw@example.com/', closed, { refuseCredentials: true })?.code,
      'credentials_in_url',
    );
  });
});
