import assert from 'node:assert/strict';
import OpenAI from 'openai';
import {
  DEFAULT_EXTRACTION_INSTRUCTION,
  ExtractionError,
  extractStructured,
  truncateForModel,
  type ExtractInput,
} from '../../activities/llm/extract';
import { DEFAULT_PRICE_TABLE } from '../../lib/billing/pricing';
import { createLlmClient } from '../../lib/llm/client';
import { DEFAULT_SCRAPE_OUTPUT, jsonSchemaForRequest } from '../../lib/llm/structured-output';
import { startFakeOpenAI, type FakeOpenAI, type RecordedMessage } from '../support/fakes/fake-openai';
import { useHarness, type Harness } from '../support/stack/harness';

const API_KEY = 'sk-test-fake';

const page: ExtractInput['page'] = {
  url: 'https://shop.example.com/widgets/42',
  markdown: '# Blue Widget\n\nThe Blue Widget costs $19.99 and ships in 2 days.\n\n- Waterproof\n- Two-year warranty',
  metadata: { title: 'Blue Widget | Example Shop', description: 'A waterproof widget with a two-year warranty.' },
};

const productOutput = jsonSchemaForRequest([
  { id: 'title', type: 'string' },
  { id: 'price', type: 'number' },
  { id: 'features', type: 'string[]' },
]);

function textOf(message: RecordedMessage): string {
  assert.equal(typeof message.content, 'string');
  return message.content as string;
}

async function rejectsWithExtractionError(promise: Promise<unknown>, pattern: RegExp): Promise<ExtractionError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ExtractionError, `expected ExtractionError, got ${String(error)}`);
    assert.match(error.message, pattern);
    return error;
  }
  assert.fail('expected extraction to fail');
}

describe('extractStructured against the fake OpenAI server', () => {
  let fake: FakeOpenAI;
  let client: OpenAI;

  before(async () => {
    fake = await startFakeOpenAI({ requireApiKey: API_KEY });
    client = createLlmClient({ baseURL: fake.baseURL, apiKey: API_KEY, timeoutMs: 5_000 });
  });
  afterEach(() => fake.reset());
  after(() => fake.close());

  it('sends model, system prompt, page and a json_schema response_format', async () => {
    fake.enqueue({ json: { title: 'Blue Widget', price: 19.99, features: ['Waterproof'] } });
    const result = await extractStructured(
      { client },
      { model: 'gpt-4o-mini', systemPrompt: 'Prices are in USD.', page, output: productOutput, temperature: 0 },
    );
    assert.deepEqual(result.data, { title: 'Blue Widget', price: 19.99, features: ['Waterproof'] });

    assert.equal(fake.requests.length, 1);
    const [request] = fake.requests;
    assert.equal(request.kind, 'chat');
    assert.equal(request.path, '/v1/chat/completions');
    assert.equal(request.headers.authorization, `Bearer ${API_KEY}`);
    assert.equal(request.body.model, 'gpt-4o-mini');
    assert.equal(request.body.temperature, 0);
    assert.deepEqual(request.body.response_format, {
      type: 'json_schema',
      json_schema: { name: 'extraction', schema: productOutput.schema, strict: true },
    });
    const [system, user] = request.body.messages ?? [];
    assert.equal(system.role, 'system');
    assert.ok(textOf(system).startsWith(DEFAULT_EXTRACTION_INSTRUCTION));
    assert.match(textOf(system), /Prices are in USD\.$/);
    assert.equal(user.role, 'user');
    assert.match(textOf(user), /URL: https:\/\/shop\.example\.com\/widgets\/42/);
    assert.match(textOf(user), /Title: Blue Widget \| Example Shop/);
    assert.ok(textOf(user).includes(page.markdown));
  });

  it('omits temperature and extra instructions when not given', async () => {
    await extractStructured({ client }, { model: 'gpt-4o', page, output: productOutput });
    const { body } = fake.requests[0];
    assert.equal('temperature' in body, false);
    assert.equal(textOf(body.messages![0]), DEFAULT_EXTRACTION_INSTRUCTION);
  });

  it('reports usage from the response, priced by the requested model', async () => {
    const result = await extractStructured({ client }, { model: 'gpt-4o-mini', page, output: productOutput });
    assert.equal(result.usage.model, 'gpt-4o-mini');
    assert.equal(result.usage.calls, 1);
    assert.ok(result.usage.promptTokens > 0 && result.usage.completionTokens > 0);
    const cost = DEFAULT_PRICE_TABLE.costMicros(
      result.usage.model,
      result.usage.promptTokens,
      result.usage.completionTokens,
    );
    assert.ok(Number.isSafeInteger(cost) && cost > 0);
  });

  it('works with the default scrape output and the built-in fake answer', async () => {
    const result = await extractStructured({ client }, { model: 'gpt-4o-mini', page, output: DEFAULT_SCRAPE_OUTPUT });
    assert.deepEqual(result.data, { summary: page.metadata.description, key_points: [] });
  });

  it('re-asks once with the validation errors, then succeeds, summing usage', async () => {
    fake.enqueue(
      { json: { title: 'Blue Widget', price: '19.99' } },
      { json: { title: 'Blue Widget', price: 19.99, features: [] } },
    );
    const result = await extractStructured({ client }, { model: 'gpt-4.1-mini', page, output: productOutput });
    assert.deepEqual(result.data, { title: 'Blue Widget', price: 19.99, features: [] });
    assert.equal(fake.requests.length, 2);

    const retryMessages = fake.requests[1].body.messages ?? [];
    assert.equal(retryMessages.length, 4);
    assert.equal(retryMessages[2].role, 'assistant');
    assert.equal(textOf(retryMessages[2]), JSON.stringify({ title: 'Blue Widget', price: '19.99' }));
    assert.equal(retryMessages[3].role, 'user');
    assert.match(textOf(retryMessages[3]), /\/price must be number/);
    assert.match(textOf(retryMessages[3]), /must have required property 'features'/);

    const fakeTokens = (chars: number) => Math.ceil(chars / 4);
    const promptChars = (messages: RecordedMessage[]) =>
      messages.reduce((sum, message) => sum + textOf(message).length, 0);
    assert.deepEqual(result.usage, {
      model: 'gpt-4.1-mini',
      calls: 2,
      promptTokens:
        fakeTokens(promptChars(fake.requests[0].body.messages ?? [])) + fakeTokens(promptChars(retryMessages)),
      completionTokens:
        fakeTokens(JSON.stringify({ title: 'Blue Widget', price: '19.99' }).length) +
        fakeTokens(JSON.stringify({ title: 'Blue Widget', price: 19.99, features: [] }).length),
    });
  });

  it('re-asks on an answer that is not JSON and accepts fenced JSON', async () => {
    fake.enqueue(
      { content: 'Sure! Here is the data: title Blue Widget' },
      { content: '```json\n{"title":"t","price":1,"features":[]}\n```' },
    );
    const result = await extractStructured({ client }, { model: 'gpt-4o-mini', page, output: productOutput });
    assert.deepEqual(result.data, { title: 't', price: 1, features: [] });
    assert.match(textOf(fake.requests[1].body.messages![3]), /not valid JSON/);
  });

  it('throws ExtractionError after two invalid answers, keeping the usage of both calls', async () => {
    fake.enqueue({ json: { title: 1 } }, { json: { title: 'x', price: 1, features: [], extra: true } });
    const error = await rejectsWithExtractionError(
      extractStructured({ client }, { model: 'gpt-4o-mini', page, output: productOutput }),
      /after one retry: .*additional property 'extra'/,
    );
    assert.equal(error.usage.calls, 2);
    assert.ok(error.usage.promptTokens > 0 && error.usage.completionTokens > 0);
    assert.equal(fake.requests.length, 2);
  });

  it('treats a refusal as an ExtractionError without retrying', async () => {
    fake.enqueue({ refusal: 'I cannot help with that.' });
    await rejectsWithExtractionError(
      extractStructured({ client }, { model: 'gpt-4o-mini', page, output: productOutput }),
      /refused: I cannot help with that\./,
    );
    assert.equal(fake.requests.length, 1);
  });

  it('re-asks when the answer was cut off by the token limit', async () => {
    fake.enqueue(
      { content: '{"title": "Blue', finishReason: 'length' },
      { json: { title: 'B', price: 2, features: [] } },
    );
    const result = await extractStructured({ client }, { model: 'gpt-4o-mini', page, output: productOutput });
    assert.deepEqual(result.data, { title: 'B', price: 2, features: [] });
    assert.match(textOf(fake.requests[1].body.messages![3]), /cut off/);
  });

  it('hands each call to recordCall as soon as it answers, before a re-ask that then fails', async () => {
    const recorded: { promptTokens: number; completionTokens: number; index: number; requestsSoFar: number }[] = [];
    fake.enqueue({ json: { title: 1 } }, { status: 503, error: 'upstream overloaded' });
    const recordCall = async (call: { promptTokens: number; completionTokens: number }, index: number) => {
      recorded.push({ ...call, index, requestsSoFar: fake.requests.length });
    };
    await assert.rejects(
      extractStructured({ client, recordCall }, { model: 'gpt-4o-mini', page, output: productOutput }),
      (error: unknown) => error instanceof OpenAI.APIError && error.status === 503,
    );
    assert.equal(recorded.length, 1, 'the answered first call was recorded');
    assert.equal(recorded[0].index, 0);
    assert.equal(recorded[0].requestsSoFar, 1, 'recorded before the re-ask was sent');
    assert.ok(recorded[0].promptTokens > 0 && recorded[0].completionTokens > 0);
    assert.equal(fake.requests.length, 2);
  });

  it('lets API errors through unchanged for Temporal to retry, without client-side retries', async () => {
    fake.enqueue({ status: 503, error: 'upstream overloaded' });
    await assert.rejects(
      extractStructured({ client }, { model: 'gpt-4o-mini', page, output: productOutput }),
      (error: unknown) =>
        error instanceof OpenAI.APIError && error.status === 503 && /upstream overloaded/.test(error.message),
    );
    assert.equal(fake.requests.length, 1);
  });

  it('truncates long markdown with a marker', async () => {
    const markdown = 'a'.repeat(500);
    await extractStructured(
      { client },
      { model: 'gpt-4o-mini', page: { ...page, markdown }, output: productOutput, maxInputChars: 100 },
    );
    const user = textOf(fake.requests[0].body.messages![1]);
    assert.ok(user.includes(`${'a'.repeat(100)}\n\n[content truncated: showing the first 100 of 500 characters]`));
    assert.ok(!user.includes('a'.repeat(101)));
  });

  it('does not split a surrogate pair when truncating', () => {
    assert.equal(truncateForModel('ab😀cd', 3).startsWith('ab\n\n[content truncated'), true);
    assert.equal(truncateForModel('short', 10), 'short');
  });
});

describe('extraction usage through the scrape pipeline', function () {
  let h: Harness;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  it('charges the first call when the re-ask fails at the provider, once per call', async function () {
    const { apiKey, userId } = await h.createUser({ creditUsd: 1 });
    // An invalid first answer, then the provider refuses the re-ask (a final 4xx: the job fails).
    h.llm.enqueue({ json: { hive_count: 'three' } }, { status: 400, error: 'context too long' });
    const accepted = await h.http('POST', '/api/v1/scrape', {
      apiKey,
      body: { url: `${h.site.url}/static`, structured_output: [{ id: 'hive_count', type: 'integer' }] },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`);
    assert.equal(job.status, 'failed');
    assert.match(job.error, /refused the request \(HTTP 400\)/);

    const rows = await h.db
      .selectFrom('job_usage')
      .selectAll()
      .where('job_id', '=', job.id)
      .where('kind', '=', 'llm')
      .execute();
    assert.equal(rows.length, 1, 'one usage row for the one answered call');
    assert.ok(rows[0].prompt_tokens > 0 && rows[0].completion_tokens > 0);
    assert.equal(
      rows[0].cost_micros,
      DEFAULT_PRICE_TABLE.costMicros('gpt-4o-mini', rows[0].prompt_tokens, rows[0].completion_tokens),
    );
    const tx = (await h.http('GET', '/api/v1/transactions', { apiKey })).body.transactions;
    assert.equal(tx.length, 1);
    assert.equal(tx[0].jobId, job.id);
    assert.equal(tx[0].payload.llm[0].calls, 1);
    assert.equal(Math.round(tx[0].cost * 1e6), rows[0].cost_micros);
    const debits = await h.db
      .selectFrom('ledger_entries')
      .selectAll()
      .where('user_id', '=', userId)
      .where('kind', '=', 'usage')
      .execute();
    assert.deepEqual(
      debits.map((d) => d.amount_micros),
      [-rows[0].cost_micros],
    );
  });
});

describe('fake OpenAI server', () => {
  let fake: FakeOpenAI;
  let client: OpenAI;

  before(async () => {
    fake = await startFakeOpenAI({ embeddingDimensions: 16 });
    client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'anything', maxRetries: 0 });
  });
  afterEach(() => fake.reset());
  after(() => fake.close());

  it('answers "ok" without a schema and echoes the model', async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(completion.choices[0].message.content, 'ok');
    assert.equal(completion.model, 'gpt-4o');
    assert.equal(completion.choices[0].finish_reason, 'stop');
    assert.deepEqual(completion.usage, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });
  });

  it('returns scripted tool calls, errors and function replies in order, then the default', async () => {
    fake.enqueue(
      { toolCalls: [{ name: 'click', arguments: { selector: '#buy' } }] },
      { status: 429, error: 'slow down' },
      (request) => ({ content: `echo ${request.body.model}` }),
    );
    const messages = [{ role: 'user' as const, content: 'go' }];
    const first = await client.chat.completions.create({ model: 'm', messages });
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    const [call] = first.choices[0].message.tool_calls ?? [];
    assert.ok(call.type === 'function' && call.id.startsWith('call_'));
    assert.deepEqual(JSON.parse(call.function.arguments), { selector: '#buy' });
    await assert.rejects(
      client.chat.completions.create({ model: 'm', messages }),
      (error: unknown) => error instanceof OpenAI.RateLimitError,
    );
    assert.equal(
      (await client.chat.completions.create({ model: 'm2', messages })).choices[0].message.content,
      'echo m2',
    );
    assert.equal(fake.pendingReplies(), 0);
  });

  it('rejects a wrong API key with a 401 in OpenAI error shape', async () => {
    const guarded = await startFakeOpenAI({ requireApiKey: 'right' });
    try {
      const wrong = new OpenAI({ baseURL: guarded.baseURL, apiKey: 'wrong', maxRetries: 0 });
      await assert.rejects(wrong.models.list(), (error: unknown) => error instanceof OpenAI.AuthenticationError);
      const right = new OpenAI({ baseURL: guarded.baseURL, apiKey: 'right', maxRetries: 0 });
      const models = [];
      for await (const model of right.models.list()) models.push(model.id);
      assert.ok(models.includes('gpt-4o-mini'));
    } finally {
      await guarded.close();
    }
  });

  it('serves the same routes without the /v1 prefix', async () => {
    const response = await fetch(`${fake.baseURL.replace(/\/v1$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
    });
    const completion = (await response.json()) as OpenAI.ChatCompletion;
    assert.equal(completion.object, 'chat.completion');
    assert.equal(fake.requests[0].path, '/chat/completions');
  });

  it('makes deterministic, normalised embeddings of the configured size', async () => {
    const first = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['alpha', 'beta'] });
    const again = await client.embeddings.create({
      model: 'text-embedding-3-small',
      input: 'alpha',
      encoding_format: 'float',
    });
    assert.equal(first.data.length, 2);
    assert.equal(first.data[0].embedding.length, 16);
    assert.deepEqual(Array.from(first.data[0].embedding), again.data[0].embedding);
    assert.notDeepEqual(first.data[0].embedding, first.data[1].embedding);
    const norm = Math.hypot(...first.data[0].embedding);
    assert.ok(Math.abs(norm - 1) < 1e-5);
    const wide = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'x', dimensions: 64 });
    assert.equal(wide.data[0].embedding.length, 64);
  });

  it('holds a chat request until released', async () => {
    const held = fake.hold();
    let settled = false;
    const pending = client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'wait' }] })
      .finally(() => (settled = true));
    const reached = await held.reached;
    assert.equal(reached.body.model, 'm');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(settled, false);
    held.release();
    assert.equal((await pending).choices[0].message.content, 'ok');
  });

  it('notices when a held client gives up', async () => {
    const held = fake.hold();
    const abort = new AbortController();
    const pending = client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'x' }] },
      { signal: abort.signal },
    );
    const reached = await held.reached;
    abort.abort();
    await assert.rejects(pending, OpenAI.APIUserAbortError);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(reached.clientAborted, true);
    held.release();
  });

  it('streams a completion with usage', async () => {
    fake.enqueue({ content: 'streamed text' });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let totalTokens = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      totalTokens = chunk.usage?.total_tokens ?? totalTokens;
    }
    assert.equal(text, 'streamed text');
    assert.ok(totalTokens > 0);
  });

  it('fills schema-shaped defaults from the user message', async () => {
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: '# Release notes\n\nSee https://example.org/notes for details.' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'x',
          strict: true,
          schema: {
            type: 'object',
            properties: {
              headline: { type: 'string' },
              source_url: { type: 'string' },
              status: { type: 'string', enum: ['draft', 'final'] },
              count: { type: 'integer', minimum: 3 },
              tags: { type: 'array', items: { type: 'string' }, minItems: 1 },
              author: { $ref: '#/$defs/person' },
              note: { anyOf: [{ type: 'null' }, { type: 'string' }] },
            },
            required: ['headline', 'source_url', 'status', 'count', 'tags', 'author', 'note'],
            additionalProperties: false,
            $defs: {
              person: {
                type: 'object',
                properties: { name: { type: 'string' } },
                required: ['name'],
                additionalProperties: false,
              },
            },
          },
        },
      },
    });
    assert.deepEqual(JSON.parse(completion.choices[0].message.content ?? ''), {
      headline: 'Release notes',
      source_url: 'https://example.org/notes',
      status: 'draft',
      count: 3,
      tags: ['fake'],
      author: { name: 'Release notes' },
      note: 'fake',
    });
  });
});
