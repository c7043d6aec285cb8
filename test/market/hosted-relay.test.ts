import assert from 'node:assert/strict';
import { Client, ProtocolError, StreamableHTTPClientTransport, type ClientOptions } from '@modelcontextprotocol/client';
import { sql } from 'kysely';
import { getWalletSummary } from '../../db/repos/ledger';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { approvedEntry, storeValidation } from '../support/market';
import { approvedServiceEntry, discoveredTools } from '../support/fakes/market-provider';
import { startRelayProvider, type RelayProvider } from '../support/fakes/relay-provider';
import { startConformanceServer, type ConformanceServer } from '../support/fakes/conformance-server';
import { startAskingProvider, type AskingProvider } from '../support/fakes/asking-provider';

/**
 * What the hosted endpoint /mcp/{entryId} relays between a consumer's client and a market tool, with real
 * servers on loopback: input requests (2026-07-28 input-required results, and the same asked of a 2025
 * client through its session), billed once per call; cancellation; results over the binary limit; the
 * provider's secrets scrubbed from every part of an answer; sessions that only their own consumer can use.
 */

type ToolResult = Awaited<ReturnType<Client['callTool']>>;
const billing = (result: ToolResult) => (result._meta as Record<string, any>)['scrape-platform/billing'];
const textOf = (result: ToolResult) =>
  (result.content as { type: string; text?: string }[])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(50);
  }
}

const PROVIDER_KEY = 'pk-live-7f3a9c2e51d04b8a';
const PRICE = { confirm_order: 0.05, wait_until_cancelled: 0.02, screenshot: 0.01, echo_key: 0.001, forecast: 0.002 };
const INPUT_TTL_MS = 3_000;
const BINARY_LIMIT = 100_000;

describe('hosted market MCP endpoint: what it relays', function () {
  const stacks = stoppedAfter();
  this.timeout(120_000);
  let h: Harness;
  let baseUrl: string;
  let provider: RelayProvider;
  let entryId: string;
  const clients: Client[] = [];

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    // An API of its own with small limits: waiting rounds expire after 3 s, binary blocks above 100 kB are refused.
    const stack = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'relay-unused', browser: 'relay-unused-browser' },
        overrides: {
          market: {
            ...h.config.market,
            inputRequiredTtlMs: INPUT_TTL_MS,
            toolResultMaxBinaryBytes: BINARY_LIMIT,
            mcpRateLimitPerMinute: 1_000_000,
          },
        },
        queues: [],
      }),
    );
    baseUrl = stack.baseUrl;
    provider = await startRelayProvider();
    const owner = await h.createUser({ creditUsd: 0 });
    const entry = await approvedServiceEntry(h, owner, provider.url, {
      monetizationStrategy: 'tool_call_fixed',
      staticConfig: { 'X-Provider-Key': PROVIDER_KEY },
      tools: Object.entries(PRICE).map(([toolName, clientPriceUsd]) => ({
        toolName,
        displayName: toolName,
        clientPriceUsd,
      })),
    });
    entryId = entry.entryId;
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await provider?.close();
  });

  async function consumer() {
    const user = await h.createUser({ creditUsd: 5 });
    const response = await h.http('POST', `/api/v1/mcp-market/mcps/${entryId}/credentials`, {
      apiKey: user.apiKey,
      body: {},
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    return { ...user, credential: response.body.credential as string };
  }

  /** A client of the current revision (`modern`) or of the 2025 revisions (`legacy`, a session). */
  async function connect(token: string, era: 'modern' | 'legacy', options: ClientOptions = {}) {
    const client = new Client(
      { name: 'relay-consumer', version: '1.0.0' },
      { ...(era === 'modern' && { versionNegotiation: { mode: 'auto' } }), ...options },
    );
    const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp/${entryId}`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    assert.equal(client.getProtocolEra(), era);
    clients.push(client);
    return { client, transport };
  }

  const wallet = (userId: string) => getWalletSummary(h.db, userId);
  const micros = (usd: number) => Math.round(usd * 1_000_000);

  it("lists each tool exactly as the provider's server listed it (input schema with $schema, output schema, annotations, icons, _meta), the price beside its _meta, and passes its structured content through", async function () {
    const buyer = await consumer();
    const { client } = await connect(buyer.credential, 'modern');
    const direct = new Client({ name: 'direct', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await direct.connect(
      new StreamableHTTPClientTransport(new URL(provider.url), {
        requestInit: { headers: { 'x-provider-key': PROVIDER_KEY } },
      }),
    );
    clients.push(direct);
    const upstream = (await direct.listTools()).tools.find((t) => t.name === 'forecast')!;
    const hosted = (await client.listTools()).tools.find((t) => t.name === 'forecast')!;
    const { _meta: hostedMeta, ...hostedRest } = hosted;
    const { _meta: upstreamMeta, ...upstreamRest } = upstream;
    assert.deepEqual(hostedRest, upstreamRest);
    assert.deepEqual(Object.keys(hostedRest), Object.keys(upstreamRest), "in the server's key order");
    assert.equal(
      (hosted.inputSchema as Record<string, unknown>).$schema,
      'https://json-schema.org/draft/2020-12/schema',
    );
    assert.deepEqual(hostedMeta, {
      ...upstreamMeta,
      'scrape-platform/pricing': {
        monetizationStrategy: 'tool_call_fixed',
        clientPriceUsd: PRICE.forecast,
        currency: 'USD',
        per: 'call',
      },
    });
    // The consumer's SDK checks structured content against the output schema it was shown.
    const answer = await client.callTool({ name: 'forecast', arguments: { city: 'Porto', days: 3 } });
    assert.deepEqual(answer.structuredContent, { city: 'Porto', highs: [20, 21, 22] });
    assert.equal(textOf(answer), 'Porto: 20, 21, 22');
  });

  it('keeps serving an entry approved before listings were kept: its tools as they were listed then, and calls not refused for the $schema its server always sent', async function () {
    const owner = await h.createUser({ creditUsd: 0 });
    // What a validation stored before issue 21: name, description and the input schema without $schema.
    const tools = (await discoveredTools(provider.url)).map(({ listing: _listing, ...tool }) => tool);
    const validation = await storeValidation(h, owner.userId, { url: provider.url, tools });
    const { entryId: oldEntryId } = await approvedEntry(
      h,
      owner,
      { monetizationStrategy: 'free', staticConfig: { 'X-Provider-Key': PROVIDER_KEY } },
      validation,
    );
    const user = await h.createUser({ creditUsd: 1 });
    const client = new Client({ name: 'relay-consumer', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp/${oldEntryId}`), {
        requestInit: { headers: { authorization: `Bearer ${user.apiKey}` } },
      }),
    );
    clients.push(client);
    const forecast = (await client.listTools()).tools.find((t) => t.name === 'forecast')!;
    assert.deepEqual(forecast.inputSchema, tools.find((t) => t.name === 'forecast')!.inputSchema);
    assert.equal((forecast.inputSchema as Record<string, unknown>).$schema, undefined);
    const answer = await client.callTool({ name: 'forecast', arguments: { city: 'Faro' } });
    assert.equal(answer.isError, false, JSON.stringify(answer));
    assert.equal(textOf(answer), 'Faro: 20, 21');
  });

  it("relays a tool input request both ways on 2026-07-28 and bills the call once, when it is answered; its requestState is single-use and only its consumer's", async function () {
    const buyer = await consumer();
    const { client } = await connect(buyer.credential, 'modern', { capabilities: { elicitation: {} } });
    const before = await wallet(buyer.userId);

    const first = (await client.callTool(
      { name: 'confirm_order', arguments: { item: 'book' } },
      { allowInputRequired: true },
    )) as Record<string, any>;
    assert.equal(first.resultType, 'input_required');
    const request = first.inputRequests.confirm;
    assert.equal(request.method, 'elicitation/create');
    assert.equal(
      request.params.message,
      'Order book? (provider key [redacted])',
      'the request is scrubbed like any answer',
    );
    assert.equal(typeof first.requestState, 'string');
    assert.ok(
      !first.requestState.includes('provider-state'),
      "the provider's own requestState stays with the platform",
    );
    const waiting = await wallet(buyer.userId);
    assert.equal(waiting.balanceMicros, before.balanceMicros, 'nothing charged while the call waits');
    assert.equal(
      waiting.heldMicros - before.heldMicros,
      micros(PRICE.confirm_order),
      'the call holds its price while it waits',
    );

    const answer = { confirm: { action: 'accept', content: { ok: true } } };
    // A round answered without what the tool asked for: the tool asks again, under a new requestState; the
    // used one cannot continue the call a second time.
    const again = (await client.callTool(
      {
        name: 'confirm_order',
        arguments: { item: 'book' },
        inputResponses: { other: answer.confirm },
        requestState: first.requestState,
      } as never,
      { allowInputRequired: true },
    )) as Record<string, any>;
    assert.equal(again.resultType, 'input_required');
    assert.notEqual(again.requestState, first.requestState);
    await assert.rejects(
      client.callTool(
        {
          name: 'confirm_order',
          arguments: { item: 'book' },
          inputResponses: answer,
          requestState: first.requestState,
        } as never,
        { allowInputRequired: true },
      ),
      (error: unknown) => error instanceof ProtocolError && error.code === -32602,
    );
    const done = await client.callTool(
      {
        name: 'confirm_order',
        arguments: { item: 'book' },
        inputResponses: answer,
        requestState: again.requestState,
      } as never,
      { allowInputRequired: true },
    );
    assert.equal(textOf(done), 'ordered book');
    assert.equal(billing(done).chargedUsd, PRICE.confirm_order);
    assert.deepEqual(
      provider.statesReceived().slice(-1),
      ['provider-state:book'],
      "the provider's requestState came back to it unchanged",
    );

    // The answered requestState again: refused, nothing more charged.
    await assert.rejects(
      client.callTool(
        {
          name: 'confirm_order',
          arguments: { item: 'book' },
          inputResponses: answer,
          requestState: again.requestState,
        } as never,
        { allowInputRequired: true },
      ),
      (error: unknown) => error instanceof ProtocolError && error.code === -32602,
    );
    // Another consumer with this consumer's requestState: refused (bound to the credential it was given to).
    const other = await consumer();
    const { client: otherClient } = await connect(other.credential, 'modern', { capabilities: { elicitation: {} } });
    const second = (await client.callTool(
      { name: 'confirm_order', arguments: { item: 'pen' } },
      { allowInputRequired: true },
    )) as Record<string, any>;
    await assert.rejects(
      otherClient.callTool(
        {
          name: 'confirm_order',
          arguments: { item: 'pen' },
          inputResponses: answer,
          requestState: second.requestState,
        } as never,
        { allowInputRequired: true },
      ),
      (error: unknown) => error instanceof ProtocolError && error.code === -32602,
    );
    assert.equal((await wallet(other.userId)).balanceMicros, 5_000_000, 'the other consumer paid nothing');

    const finalDone = await client.callTool(
      {
        name: 'confirm_order',
        arguments: { item: 'pen' },
        inputResponses: answer,
        requestState: second.requestState,
      } as never,
      { allowInputRequired: true },
    );
    assert.equal(textOf(finalDone), 'ordered pen', 'its own consumer can still answer it');
    const after = await wallet(buyer.userId);
    assert.equal(
      before.balanceMicros - after.balanceMicros,
      2 * micros(PRICE.confirm_order),
      'two calls, each charged once',
    );
    assert.equal(after.heldMicros, before.heldMicros, 'nothing stays held');
  });

  it('asks a 2025 client for the same input in its session (its answer reaches the waiting call) and bills the call once', async function () {
    const buyer = await consumer();
    const { client } = await connect(buyer.credential, 'legacy', { capabilities: { elicitation: {} } });
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(String((request.params as { message?: string }).message));
      return { action: 'accept', content: { ok: true } };
    });
    const before = await wallet(buyer.userId);
    const done = await client.callTool({ name: 'confirm_order', arguments: { item: 'lamp' } });
    assert.equal(textOf(done), 'ordered lamp');
    assert.deepEqual(asked, ['Order lamp? (provider key [redacted])']);
    assert.equal(billing(done).chargedUsd, PRICE.confirm_order);
    const after = await wallet(buyer.userId);
    assert.equal(before.balanceMicros - after.balanceMicros, micros(PRICE.confirm_order));
    assert.equal(after.heldMicros, before.heldMicros);
  });

  it('charges nothing for a call whose input request is never answered, and releases its hold when the request expires', async function () {
    const buyer = await consumer();
    const { client } = await connect(buyer.credential, 'modern', { capabilities: { elicitation: {} } });
    const before = await wallet(buyer.userId);
    const first = (await client.callTool(
      { name: 'confirm_order', arguments: { item: 'chair' } },
      { allowInputRequired: true },
    )) as Record<string, any>;
    assert.equal(first.resultType, 'input_required');
    assert.equal((await wallet(buyer.userId)).heldMicros - before.heldMicros, micros(PRICE.confirm_order));
    await until(
      'the waiting call is given back',
      async () => (await wallet(buyer.userId)).heldMicros === before.heldMicros,
      INPUT_TTL_MS + 5_000,
    );
    assert.equal((await wallet(buyer.userId)).balanceMicros, before.balanceMicros, 'nothing charged');
    // Answering after the expiry is refused, and still charges nothing.
    await assert.rejects(
      client.callTool(
        {
          name: 'confirm_order',
          arguments: { item: 'chair' },
          inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
          requestState: first.requestState,
        } as never,
        { allowInputRequired: true },
      ),
      (error: unknown) => error instanceof ProtocolError && error.code === -32602,
    );
    assert.equal((await wallet(buyer.userId)).balanceMicros, before.balanceMicros);
  });

  it('refuses to continue a waiting call whose run ends before the round could finish (never answered unbilled), and gives its hold back', async function () {
    const buyer = await consumer();
    const { client } = await connect(buyer.credential, 'modern', { capabilities: { elicitation: {} } });
    const before = await wallet(buyer.userId);
    const first = (await client.callTool(
      { name: 'confirm_order', arguments: { item: 'late lamp' } },
      { allowInputRequired: true },
    )) as Record<string, any>;
    assert.equal(first.resultType, 'input_required');
    // The call's run is near its end: 5 s left, less than a round may take (the call timeout).
    const runs = await sql<{ id: string }>`
      update market_runs set expires_at = now() + interval '5 seconds'
        where consumer_id = ${buyer.userId}::uuid and status = 'open' returning id`.execute(h.db);
    assert.equal(runs.rows.length, 1);
    // Should the round be forwarded, it lasts past the run's end (the provider answers after the run expired).
    provider.beforeConfirmedAnswer(async () => {
      await sql`update market_runs set expires_at = now() - interval '1 second' where id = ${runs.rows[0]!.id}::uuid`.execute(
        h.db,
      );
    });
    const finished = provider.finished('confirm_order');
    try {
      const continued = client.callTool(
        {
          name: 'confirm_order',
          arguments: { item: 'late lamp' },
          inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
          requestState: first.requestState,
        } as never,
        { allowInputRequired: true },
      );
      await assert.rejects(
        continued,
        (error: unknown) =>
          error instanceof ProtocolError && error.code === -32602 && /ends before this round/.test(error.message),
      );
    } finally {
      provider.beforeConfirmedAnswer(null);
    }
    assert.equal(provider.finished('confirm_order'), finished, 'the round was not forwarded: nothing done unbilled');
    const after = await wallet(buyer.userId);
    assert.equal(after.balanceMicros, before.balanceMicros, 'nothing charged');
    assert.equal(after.heldMicros, before.heldMicros, 'the call gave its reservation back');
  });

  for (const era of ['legacy', 'modern'] as const) {
    it(`cancels the upstream call when a ${era === 'legacy' ? '2025 client sends notifications/cancelled' : '2026-07-28 client closes its request'}: nothing charged; an answered call costs its fixed price`, async function () {
      const buyer = await consumer();
      const { client } = await connect(buyer.credential, era);
      const before = await wallet(buyer.userId);
      const startedBefore = provider.started();
      const cancelledBefore = provider.cancelled();
      const abort = new AbortController();
      const call = client.callTool({ name: 'wait_until_cancelled', arguments: {} }, { signal: abort.signal });
      await until('the tool runs', () => provider.started() === startedBefore + 1);
      abort.abort();
      await assert.rejects(call, { name: 'SdkError', message: /abort/i });
      await until('the tool sees its cancellation', () => provider.cancelled() === cancelledBefore + 1);
      await until(
        'the call gives its run back',
        async () => (await wallet(buyer.userId)).heldMicros === before.heldMicros,
      );
      assert.equal((await wallet(buyer.userId)).balanceMicros, before.balanceMicros, 'a cancelled call is not charged');

      const answered = await client.callTool({ name: 'screenshot', arguments: { bytes: 10 } });
      assert.equal(billing(answered).chargedUsd, PRICE.screenshot);
      assert.equal(before.balanceMicros - (await wallet(buyer.userId)).balanceMicros, micros(PRICE.screenshot));
    });
  }

  it('passes an image through as it is, and answers an image over the binary limit with an error result, nothing charged', async function () {
    const buyer = await consumer();
    const { client } = await connect(buyer.credential, 'modern');
    const small = await client.callTool({ name: 'screenshot', arguments: { bytes: 1_000 } });
    assert.equal(small.isError, false);
    assert.deepEqual(small.content, [
      { type: 'text', text: 'a screenshot of 1000 bytes' },
      { type: 'image', mimeType: 'image/png', data: Buffer.alloc(1_000, 7).toString('base64') },
    ]);
    const before = await wallet(buyer.userId);
    const large = await client.callTool({ name: 'screenshot', arguments: { bytes: BINARY_LIMIT + 50_000 } });
    assert.equal(large.isError, true);
    assert.deepEqual(
      (large.content as { type: string }[]).map((c) => c.type),
      ['text'],
      'an explicit error, not a description of the image',
    );
    assert.match(textOf(large), /too large/);
    assert.deepEqual(
      { outcome: billing(large).outcome, code: billing(large).code, chargedUsd: billing(large).chargedUsd },
      { outcome: 'failed', code: 'too_large', chargedUsd: 0 },
    );
    assert.equal((await wallet(buyer.userId)).balanceMicros, before.balanceMicros);
  });

  it("scrubs the provider's key from every text of an answer (blocks, resources, links, structured content, _meta), binary data passed as sent; an error answer loses the provider's host too", async function () {
    const buyer = await consumer();
    const { client } = await connect(buyer.credential, 'modern');
    const answer = await client.callTool({ name: 'echo_key', arguments: {} });
    assert.equal(answer.isError, false);
    const { image, ...readable } = {
      ...answer,
      image: (answer.content as { type: string; data?: string }[]).find((c) => c.type === 'image'),
    };
    const shown = JSON.stringify({
      ...readable,
      content: (answer.content as { type: string }[]).filter((c) => c.type !== 'image'),
    });
    assert.ok(!shown.includes(PROVIDER_KEY), shown);
    assert.equal(textOf(answer).split(' at ')[0], 'key [redacted]');
    assert.deepEqual(answer.structuredContent, {
      key: '[redacted]',
      nested: [{ again: 'still [redacted]' }],
      '[redacted]': 'as a property name',
      endpoint: `${new URL(provider.url).origin}/mcp`,
    });
    const resource = (answer.content as any[]).find((c) => c.type === 'resource');
    assert.deepEqual(resource.resource, {
      uri: 'test://keys/[redacted]',
      mimeType: 'text/plain',
      text: 'the key is [redacted]',
    });
    const link = (answer.content as any[]).find((c) => c.type === 'resource_link');
    assert.equal(link.name, 'link [redacted]');
    assert.deepEqual((answer._meta as any)['relay-provider/debug'].key, '[redacted]');
    assert.ok((answer._meta as any)['scrape-platform/billing'], "the billing _meta sits beside the tool's own");
    assert.equal(
      Buffer.from(image!.data!, 'base64').toString(),
      `pixels ${PROVIDER_KEY}`,
      'binary payloads are passed as they are',
    );

    const failed = await client.callTool({ name: 'echo_key', arguments: { fail: true } });
    assert.equal(failed.isError, true);
    const host = new URL(provider.url).host;
    const failedShown = JSON.stringify({
      ...failed,
      content: (failed.content as { type: string }[]).filter((c) => c.type !== 'image'),
    });
    assert.ok(!failedShown.includes(PROVIDER_KEY));
    assert.ok(!failedShown.includes(host), failedShown);
    assert.equal((failed.structuredContent as any).endpoint, 'http://[provider host]/mcp');
  });

  describe('a tool server of the 2025 revisions (its requests and log messages carry no call reference)', function () {
    let legacyServer: ConformanceServer;
    let legacyEntryId: string;

    before(async function () {
      legacyServer = await startConformanceServer({ revisions: '2025' });
      const owner = await h.createUser({ creditUsd: 0 });
      legacyEntryId = (await approvedServiceEntry(h, owner, legacyServer.url, { monetizationStrategy: 'free' }))
        .entryId;
    });

    after(async () => {
      await legacyServer?.close();
    });

    async function connectLegacyEntry(
      apiKey: string,
      era: 'modern' | 'legacy',
      capabilities: ClientOptions['capabilities'],
    ) {
      const client = new Client(
        { name: 'relay-consumer', version: '1.0.0' },
        { ...(era === 'modern' && { versionNegotiation: { mode: 'auto' } }), capabilities },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp/${legacyEntryId}`), {
          requestInit: { headers: { authorization: `Bearer ${apiKey}` } },
        }),
      );
      clients.push(client);
      return client;
    }

    it("relays its requests (elicitation, roots) and its log messages to a 2025 client's session, and the answers back", async function () {
      const user = await h.createUser({ creditUsd: 1 });
      const client = await connectLegacyEntry(user.apiKey, 'legacy', { elicitation: {}, roots: {} });
      client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
      client.setRequestHandler('roots/list', async () => ({
        roots: [{ uri: 'file:///work/project', name: 'project' }],
      }));
      const logs: string[] = [];
      client.setNotificationHandler(
        'notifications/message',
        (notification) => void logs.push(`${notification.params.level}: ${String(notification.params.data)}`),
      );

      assert.equal(
        textOf(await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} })),
        'Hello, Ada!',
      );
      assert.equal(
        textOf(await client.callTool({ name: 'test_input_required_result_list_roots', arguments: {} })),
        'Roots: file:///work/project',
      );
      await client.setLoggingLevel('info');
      assert.equal(
        textOf(await client.callTool({ name: 'test_tool_with_logging', arguments: {} })),
        'Tool with logging executed successfully',
      );
      await until('the log messages arrive', () => logs.length >= 3);
      assert.deepEqual(logs, [
        'info: Tool execution started',
        'info: Tool processing data',
        'info: Tool execution completed',
      ]);
    });

    it('answers its request with a clear MCP error when the client speaks 2026-07-28 (no requests from server to client there)', async function () {
      const user = await h.createUser({ creditUsd: 1 });
      const client = await connectLegacyEntry(user.apiKey, 'modern', { elicitation: {} });
      const answer = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
      assert.equal(answer.isError, true);
      assert.match(
        textOf(answer),
        /elicitation\/create cannot be relayed to this client: it speaks the 2026-07-28 revision/,
      );
    });
  });

  describe('concurrent calls on one pooled upstream session (a tool server of the 2025 revisions)', function () {
    let asking: AskingProvider;
    let askingEntryId: string;

    before(async function () {
      asking = await startAskingProvider({ together: 2 });
      const owner = await h.createUser({ creditUsd: 0 });
      askingEntryId = (await approvedServiceEntry(h, owner, asking.url, { monetizationStrategy: 'free' })).entryId;
    });

    after(async () => {
      await asking?.close();
    });

    it("relays each call's elicitation, sampling and log messages to the client that made that call, and no other", async function () {
      // Two clients of one account (one API key: one credential's calls share one upstream session), each a 2025
      // session that can answer elicitation and sampling, calling at the same moment.
      const user = await h.createUser({ creditUsd: 1 });
      const seen: Record<string, { asked: string[]; sampled: string[]; logs: string[] }> = {};
      const clientFor = async (tag: string) => {
        const mine: (typeof seen)[string] = { asked: [], sampled: [], logs: [] };
        seen[tag] = mine;
        const client = new Client(
          { name: `relay-consumer-${tag}`, version: '1.0.0' },
          { capabilities: { elicitation: {}, sampling: {} } },
        );
        client.setRequestHandler('elicitation/create', async (request) => {
          mine.asked.push(String((request.params as { message?: string }).message));
          return { action: 'accept', content: { answer: `yes from ${tag}` } };
        });
        client.setRequestHandler('sampling/createMessage', async (request) => {
          const content = request.params.messages[0]?.content;
          const block = Array.isArray(content) ? content[0] : content;
          mine.sampled.push(block?.type === 'text' ? block.text : String(block?.type));
          return { role: 'assistant', content: { type: 'text', text: `model of ${tag}` }, model: 'test-model' };
        });
        client.setNotificationHandler('notifications/message', (notification) => {
          mine.logs.push(String(notification.params.data));
        });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp/${askingEntryId}`), {
            requestInit: { headers: { authorization: `Bearer ${user.apiKey}` } },
          }),
        );
        assert.equal(client.getProtocolEra(), 'legacy');
        clients.push(client);
        return client;
      };
      const [alpha, beta] = await Promise.all([clientFor('alpha'), clientFor('beta')]);
      const sessionsBefore = asking.callSessions.length;
      const [alphaAnswer, betaAnswer] = await Promise.all([
        alpha.callTool({ name: 'ask_user', arguments: { tag: 'alpha' } }),
        beta.callTool({ name: 'ask_user', arguments: { tag: 'beta' } }),
      ]);
      const callSessions = asking.callSessions.slice(sessionsBefore);
      assert.equal(callSessions.length, 2);
      assert.equal(callSessions[0], callSessions[1], 'both calls went over one (pooled) upstream session');

      assert.equal(textOf(alphaAnswer), 'alpha: confirmed yes from alpha, summarised model of alpha');
      assert.equal(textOf(betaAnswer), 'beta: confirmed yes from beta, summarised model of beta');
      await until('the log messages arrive', () => seen.alpha.logs.length >= 2 && seen.beta.logs.length >= 2);
      for (const tag of ['alpha', 'beta']) {
        assert.deepEqual(seen[tag].asked, [`Confirm ${tag}?`], `${tag} was asked only its own confirmation`);
        assert.deepEqual(seen[tag].sampled, [`Summarise ${tag}`], `${tag}'s model got only its own prompt`);
        assert.deepEqual(seen[tag].logs, [`working on ${tag}`, `done with ${tag}`], `${tag} got only its own logs`);
      }
    });
  });

  it('refuses a 2025 session id to anyone but the consumer who opened it (the same 404 as for an unknown session)', async function () {
    const owner = await consumer();
    const { client, transport } = await connect(owner.credential, 'legacy');
    const sessionId = transport.sessionId!;
    assert.match(sessionId, /^[0-9a-f-]{36}$/);
    const intruder = await consumer();
    const post = (token: string, session: string) =>
      fetch(`${baseUrl}/mcp/${entryId}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'mcp-session-id': session,
          'mcp-protocol-version': '2025-11-25',
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }),
      });
    const stolen = await post(intruder.credential, sessionId);
    assert.equal(stolen.status, 404);
    const unknown = await post(intruder.credential, '00000000-0000-4000-8000-000000000000');
    assert.equal(unknown.status, 404);
    assert.deepEqual(await stolen.json(), await unknown.json(), 'nothing tells a stolen id from an unknown one');
    const deleted = await fetch(`${baseUrl}/mcp/${entryId}`, {
      method: 'DELETE',
      headers: {
        authorization: `Bearer ${intruder.credential}`,
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-11-25',
      },
    });
    assert.equal(deleted.status, 404, 'nor can it end the session');
    // The owner's session is untouched.
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), Object.keys(PRICE).sort());
    assert.equal((await post(owner.credential, sessionId)).status, 200);
  });
});
