import assert from 'node:assert/strict';
import { testChargeCommand } from '../../web/market/pages/listing-wizard';
import { tryCurlCommand } from '../../web/market/routes/try';
import { mcpHeaderValue, shellWord } from '../../web/shell';
import { claudeCodeHeaderCommand, curlCommand, mcpRemoteCommand } from '../../web/snippets';
import { runShellSnippet } from '../support/shell-snippet';

/**
 * Every shell command a page builds from text others chose (a provider's tool or event names, a consumer's
 * arguments), pasted into bash: bash parses it, the program gets exactly the values as written, and no part of a
 * value runs — each hostile value carries commands that would leave a marker file in the snippet's directory.
 * (test/web/try-and-buy.test.ts and market.test.ts run the commands the pages show, against the endpoint.)
 */
const HOSTILE = [
  'plain_name',
  'x$(touch pwned-dollar)',
  'x`touch pwned-tick`',
  "it's; touch pwned-semicolon",
  '"$(touch pwned-in-double)"',
  "'; touch pwned-quote; echo '",
  '$HOME ${PATH} !! !$ ~ * ? [a] {a,b} \\ # & | > <',
  'line one\nline two $(touch pwned-newline)',
  '=cmd -rf --flag',
  'é ü 字 \u200b',
  '',
];

describe('shell commands the pages show, with hostile values', function () {
  it('shellWord stands for each value exactly, and runs none of it', async function () {
    for (const value of HOSTILE) {
      const ran = await runShellSnippet(`probe ${shellWord(value)}`, ['probe']);
      assert.deepEqual(ran.calls, [['probe', value]], JSON.stringify(value));
      assert.deepEqual(ran.files, [], `nothing of ${JSON.stringify(value)} ran`);
    }
  });

  it("the try-a-tool curl carries a hostile tool name and arguments to curl exactly, the name's header encoded when it is not plain ASCII", async function () {
    for (const name of HOSTILE.filter(Boolean)) {
      const args = { text: HOSTILE.join(' | '), nested: { list: HOSTILE } };
      const ran = await runShellSnippet(tryCurlCommand('http://127.0.0.1:9/mcp/e-1', name, args), ['curl']);
      assert.deepEqual(ran.files, [], `nothing of ${JSON.stringify(name)} ran`);
      assert.equal(ran.calls.length, 1);
      const [argv] = ran.calls;
      const headers = argv.flatMap((arg, i) => (argv[i - 1] === '-H' ? [arg] : []));
      assert.ok(headers.includes(`Mcp-Name: ${mcpHeaderValue(name)}`), JSON.stringify(headers));
      assert.ok(headers.includes('Authorization: Bearer <credential>'));
      const body = JSON.parse(argv[argv.indexOf('-d') + 1]);
      assert.equal(body.params.name, name);
      assert.deepEqual(body.params.arguments, args);
    }
    assert.equal(mcpHeaderValue('plain_name'), 'plain_name');
    assert.equal(
      Buffer.from(/^=\?base64\?(.*)\?=$/.exec(mcpHeaderValue('é 字'))![1], 'base64').toString('utf8'),
      'é 字',
    );
  });

  it("a provider's test charge carries a hostile event name exactly and keeps its own $API_KEY and $CHARGE_TOKEN for its shell", async function () {
    for (const event of HOSTILE.filter(Boolean)) {
      const command = testChargeCommand(
        {
          id: 'v-1',
          runId: 'r-1',
          sourceFingerprint: 'f',
          eventNames: [event],
          verifiedEventNames: [],
          complete: false,
          expiresAt: new Date(0).toISOString(),
          apiBaseUrl: 'http://127.0.0.1:9/api/v1',
        },
        event,
      );
      const ran = await runShellSnippet(`API_KEY=the-key CHARGE_TOKEN=the-token\n${command}`, ['curl']);
      assert.deepEqual(ran.files, [], `nothing of ${JSON.stringify(event)} ran`);
      const [argv] = ran.calls;
      assert.ok(argv.includes(`idempotency-key: verify-${event}`));
      assert.ok(argv.includes('X-API-Key: the-key') && argv.includes('x-service-charge-token: the-token'));
      assert.deepEqual(JSON.parse(argv[argv.indexOf('-d') + 1]), { eventName: event, count: 1 });
    }
  });

  it('the connect commands pass the address and the header as one argument each', async function () {
    const target = { name: 'city-facts', url: 'https://mcp.example.com/mcp/e-1?tools=a,b&x=$(touch pwned-url)' };
    const claude = await runShellSnippet(claudeCodeHeaderCommand(target), ['claude']);
    assert.deepEqual(claude.calls, [
      [
        'claude',
        'mcp',
        'add',
        '--transport',
        'http',
        'city-facts',
        target.url,
        '--header',
        'Authorization: Bearer <credential>',
      ],
    ]);
    const remote = await runShellSnippet(mcpRemoteCommand(target), ['npx']);
    assert.deepEqual(remote.calls, [
      ['npx', 'mcp-remote', target.url, '--header', 'Authorization: Bearer <credential>'],
    ]);
    const curl = await runShellSnippet(curlCommand(target), ['curl']);
    assert.equal(curl.calls[0][2], target.url);
    assert.deepEqual([claude.files, remote.files, curl.files], [[], [], []]);
  });
});
