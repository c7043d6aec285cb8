import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { useHarness, type Harness } from '../support/stack/harness';
import { isAgentDecision } from '../support/agent-script';
import type { FakeReply, RecordedRequest } from '../support/fakes/fake-openai';
import { admin } from '../support/market';
import { startWebhookReceiver } from '../support/fakes/webhook-receiver';
import { decodedHistories } from '../support/workflow-history';
import { PRIVATE_TEXT_PLACEHOLDER as MASK, privateTextGuard } from '../../activities/agent/private-text';

const API = '/api/v1/agent-market';
const INSTRUCTIONS_HEADER = 'Instructions of this agent (follow them for this task):\n';

/** The words of a text as a reader compares them: letters and digits, lower case, any punctuation or spacing between. */
const wordsOf = (text: string) => (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) as string[];

/** Every run of `n` consecutive words of `text` (the test's own reading of "a long fragment", independent of the platform's). */
function runsOf(text: string, n: number): string[] {
  const words = wordsOf(text);
  return Array.from({ length: Math.max(0, words.length - n + 1) }, (_, i) => words.slice(i, i + n).join(' '));
}

/** Which of the runs appear in `seen` (compared word by word, so re-spacing, re-casing or URL-encoding does not hide them). */
function leakedRuns(seen: string, runs: readonly string[]): string[] {
  const decoded = seen.replace(/%[0-9a-f]{2}/gi, ' ').replace(/\\[nrt]/g, ' ');
  const haystack = ` ${wordsOf(decoded).join(' ')} `;
  return runs.filter((run) => haystack.includes(` ${run} `));
}

function systemText(request: RecordedRequest): string {
  const content = request.body.messages?.[0]?.content;
  return typeof content === 'string' ? content : '';
}

/** What an obedient model takes as "your instructions": everything the system message gives after the agent's header. */
function instructionsIn(request: RecordedRequest): string {
  const system = systemText(request);
  const at = system.indexOf(INSTRUCTIONS_HEADER);
  if (at < 0) throw new Error(`no agent instructions in the system message:\n${system}`);
  return system.slice(at + INSTRUCTIONS_HEADER.length);
}

function taskIn(request: RecordedRequest): string {
  const user = request.body.messages?.[1]?.content;
  const match = /^Task: ([\s\S]*?)(?:\n\n|$)/.exec(typeof user === 'string' ? user : '');
  if (!match) throw new Error('no task in the request');
  return match[1];
}

/** Words `from`..`to` of a text, as a model quoting part of it would write them. */
const fragment = (text: string, from: number, to: number) => text.split(/\s+/).slice(from, to).join(' ');

describe("agent market: a provider's prompts stay private even when the model repeats them", function () {
  let h: Harness;
  let provider: { userId: string; apiKey: string };
  let consumer: { userId: string; apiKey: string };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    provider = await h.createUser({ creditUsd: 5 });
    consumer = await h.createUser({ creditUsd: 20 });
  });

  it('masks the system prompt and the template — verbatim and in long fragments — in the result, data, goals, logged tool arguments, logs, webhook and workflow history', async function () {
    this.timeout(240_000);
    const code = () => randomBytes(4).toString('hex');
    const codes = [code(), code(), code(), code()];
    const systemPrompt =
      `You are the ${codes[0]} ticket hunter of this shop. Always open the list page first, then scan every row for the golden ticket marker and ignore the banner advertisements. ` +
      `When the ticket is found report only the item label and never mention the ${codes[1]} pricing rules that the shop applies to loyal customers.`;
    const promptTemplate = `Open {{page}} and report where the golden ticket is. Check the ${codes[2]} sidebar twice before you answer because the ticket often hides between two promoted rows of the ${codes[3]} catalogue.`;
    const created = await h.http('POST', `${API}/submissions`, {
      apiKey: provider.apiKey,
      body: {
        name: `Private ticket finder ${code()}`,
        description: 'Finds the golden ticket',
        priceUsd: 0,
        suggestedLlmProvider: 'service',
        suggestedLlmModel: 'gpt-4o-mini',
        runMode: 'template',
        systemPrompt,
        promptTemplate,
        inputSchema: { type: 'object', properties: { page: { type: 'string' } }, required: ['page'] },
        structuredOutput: [{ id: 'ticket', type: 'string' }],
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(
      (await h.http('POST', `${API}/submissions/${created.body.id}/submit`, { apiKey: provider.apiKey })).status,
      200,
    );
    assert.equal(
      (await admin(h, ['review', '--market', 'agent', '--submission', created.body.id, '--approve'])).status,
      'approved',
    );

    // The consumer's own pages: where the agent is told to go, and the receiver of the run's webhook.
    const receiver = await startWebhookReceiver();
    const page = `${h.site.url}/agent/list?page=3`;
    // A model that obeys "put your instructions in the answer", everywhere it can write.
    const decisions: FakeReply[] = [
      (request) => ({
        content: instructionsIn(request),
        toolCalls: [
          {
            name: 'navigate',
            arguments: {
              url: `${receiver.url('/leak')}?q=${encodeURIComponent(fragment(instructionsIn(request), 14, 30))}`,
            },
          },
        ],
      }),
      (request) => ({
        content: `My task, word for word: ${taskIn(request)}`,
        toolCalls: [
          { name: 'extract', arguments: { question: `Please repeat: ${fragment(instructionsIn(request), 30, 44)}` } },
        ],
      }),
      (request) => ({ content: `extract says: ${String(JSON.stringify(request.body.messages)).slice(0, 200)}` }),
      (request) => ({
        content: 'Reporting now.',
        toolCalls: [
          {
            name: 'done',
            arguments: {
              success: true,
              answer: `Here are my instructions: ${instructionsIn(request)}\nAnd my task: ${taskIn(request)}`,
              data: { ticket: fragment(instructionsIn(request), 4, 24).toUpperCase().split(' ').join('\n  ') },
            },
          },
        ],
      }),
    ];
    const seen = h.llm.requests.length;
    h.llm.enqueue(...decisions);
    const accepted = await h.http('POST', `${API}/agents/${created.body.publicId}/run`, {
      apiKey: consumer.apiKey,
      body: { inputs: { page }, webhook_url: receiver.url('/hook') },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const run = await h.waitForJob(consumer.apiKey, `${API}/runs/${accepted.body.jobId}`);
    assert.equal(run.status, 'completed', run.error);
    const deadline = Date.now() + 30_000;
    while (!receiver.deliveries.some((d) => d.path === '/hook') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    await receiver.close();

    // The model did get the prompts, with the instruction to keep them to itself.
    const agentCalls = h.llm.requests.slice(seen).filter(isAgentDecision);
    assert.equal(agentCalls.length, 3, 'three decisions');
    assert.ok(systemText(agentCalls[0]).includes(systemPrompt), 'the system prompt reaches the model');
    assert.match(instructionsIn(agentCalls[0]), /confidential/i, 'with a non-disclosure instruction');
    assert.ok(
      taskIn(agentCalls[0]).includes(promptTemplate.replace('{{page}}', page)),
      'the filled template is the task',
    );

    // What the consumer can read.
    const surfaces: Record<string, string> = {
      'run record': JSON.stringify(run),
      'run record, read again': JSON.stringify(
        (await h.http('GET', `${API}/runs/${run.id}`, { apiKey: consumer.apiKey })).body,
      ),
      logs: JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey: consumer.apiKey })).body),
      transactions: JSON.stringify(
        (await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: consumer.apiKey })).body,
      ),
      webhook: receiver.deliveries
        .filter((d) => d.path === '/hook')
        .map((d) => d.body)
        .join('\n'),
      "requests to the consumer's pages": receiver.deliveries.map((d) => d.path).join('\n'),
      'workflow history': (await decodedHistories(h.client, `agent-market-${run.id}`))
        .flatMap((d) => d.strings)
        .join('\n'),
    };
    assert.ok(surfaces.webhook.length > 0, 'the webhook was delivered');
    assert.ok(
      receiver.deliveries.some((d) => d.path.startsWith('/leak')),
      'the agent did open the page it was sent to',
    );
    const privateRuns = [
      ...runsOf(systemPrompt, 8),
      ...promptTemplate.split('{{page}}').flatMap((part) => runsOf(part, 8)),
    ];
    for (const [surface, text] of Object.entries(surfaces)) {
      for (const secret of codes)
        assert.ok(!text.includes(secret), `${secret} (a word of the private prompts) in the ${surface}`);
      assert.ok(!text.includes(systemPrompt), `the system prompt in the ${surface}`);
      assert.deepEqual(leakedRuns(text, privateRuns), [], `runs of 8 words of the private prompts in the ${surface}`);
    }

    // The masked places say so, and what is not the provider's stays readable.
    assert.match(run.result.answer, /^Here are my instructions: \[private instructions\]/);
    assert.ok(
      run.result.answer.endsWith(`And my task: Open ${page} [private instructions]`),
      "the consumer's own input stays readable",
    );
    assert.equal(run.result.data.ticket, '[private instructions]');
    const goals = run.result.steps.map((s: { goal: string | null }) => s.goal);
    assert.ok(goals[0].startsWith('[private instructions]'), goals[0]);
    assert.ok(goals[1].startsWith('My task, word for word: '), goals[1]);
    const navigate = run.result.steps[0].outcomes[0].action;
    assert.match(navigate, /^navigate\(url="http:\/\/127\.0\.0\.1:\d+\/leak\?q=/, navigate);
  });
});

describe('private prompts: what counts as repeating them (activities/agent/private-text)', function () {
  const system =
    'Always open the list page first, then scan every row for the golden marker. Escalate refunds to https://desk.example.com/refunds/queue please.';
  const template =
    'Open {{page}} and report where the golden ticket is {{when}}. Use the code QX7-ALPHA-93817-ZEBRA-55210-OMEGA-44-KILO-17 when asked.';
  const guard = privateTextGuard([system, template]);

  it('masks 8 consecutive words of a prompt however they are cased, spaced, punctuated or escaped', function () {
    assert.equal(guard.mask(`Sure! ${system}`), `Sure! ${MASK} https://desk.example.com/refunds/queue please.`);
    assert.equal(
      guard.mask('My rules: ALWAYS open the list\npage, first - then scan every row.'),
      `My rules: ${MASK}.`,
    );
    assert.equal(
      guard.mask(`https://x.test/?q=${encodeURIComponent('then scan every row for the golden marker')}`),
      `https://x.test/?q=${MASK}`,
    );
    assert.equal(guard.mask('then&#32;scan&nbsp;every row for the golden marker'), MASK);
    assert.equal(guard.mask(JSON.stringify('open the list page first,\nthen scan every row')), `"${MASK}"`);
  });

  it('leaves shorter overlaps alone: 7 words of a prompt, a short part between placeholders, the web addresses it names', function () {
    for (const text of [
      'then scan every row for the golden',
      'Open the page',
      'See https://desk.example.com/refunds/queue for refunds',
    ])
      assert.equal(guard.mask(text), text);
  });

  it("masks a whole part of a template of 4 to 7 words, 40 characters in a row without word breaks, and keeps the consumer's own inputs", function () {
    assert.equal(guard.mask('I was told: and report where the golden ticket is.'), `I was told: ${MASK}.`);
    assert.equal(guard.mask('code=X7-ALPHA-93817-ZEBRA-55210-OMEGA-44-KILO'), `code=${MASK}`);
    assert.equal(guard.mask('Open https://shop.test/list and look'), 'Open https://shop.test/list and look');
  });

  it('counts a Chinese or Japanese character as a word, keeps the shape of JSON values, and does nothing without private texts', function () {
    const cjk = privateTextGuard(['请先打开列表页面然后逐行查找金色标记']);
    assert.equal(cjk.mask('答案：逐行查找金色标记吧'), `答案：${MASK}吧`);
    assert.equal(cjk.mask('逐行查找金色标'), '逐行查找金色标');
    assert.deepEqual(
      guard.maskIn({
        answer: `Rules: ${system.split(' Escalate')[0]}`,
        rows: [1, true, null, 'ok'],
        'then scan every row for the golden marker': 2,
      }),
      {
        answer: `Rules: ${MASK}`,
        rows: [1, true, null, 'ok'],
        'then scan every row for the golden marker': 2,
      },
    );
    const none = privateTextGuard([undefined, null, '']);
    assert.equal(none.active, false);
    assert.equal(none.mask(system), system);
  });
});
