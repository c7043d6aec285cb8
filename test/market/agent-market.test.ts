import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import https from 'node:https';
import type { ChildProcess } from 'node:child_process';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { act, isAgentDecision } from '../support/agent-script';
import { admin, adminRaw, approvedEntry } from '../support/market';
import { capturedOutput } from '../support/stack/output-capture';
import { workflowsHolding } from '../support/workflow-history';
import { createTestCertificates, type TestCertificates } from '../support/mcp-tls';
import { startWorkerProcess } from '../support/stack/worker-process';
import { verifyWebhookSignature } from '../../lib/crypto';

const API = '/api/v1/agent-market';

describe('agent market: providers publish agents, consumers buy and run them', function () {
  const stacks = stoppedAfter();
  let h: Harness;
  let provider: { userId: string; apiKey: string };
  let consumer: { userId: string; apiKey: string };
  /** Every body a consumer (not the provider) received, to search for the private prompts. */
  const consumerSaw: string[] = [];

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    provider = await h.createUser({ creditUsd: 5 });
    consumer = await h.createUser({ creditUsd: 20 });
  });

  /** A request as a consumer; the body is kept for the prompt-leak checks. */
  async function asConsumer(method: string, path: string, body?: unknown, apiKey = consumer.apiKey) {
    const response = await h.http(method, path, { apiKey, body });
    consumerSaw.push(JSON.stringify(response.body ?? null));
    return response;
  }

  const marker = () => `PRIVATE-${randomBytes(6).toString('hex')}`;

  function templateAgent(secrets: { system: string; template: string }, overrides: Record<string, unknown> = {}) {
    return {
      name: `Ticket finder ${randomBytes(3).toString('hex')}`,
      description: 'Finds the golden ticket on a list page',
      priceUsd: 0.5,
      suggestedLlmProvider: 'service',
      suggestedLlmModel: 'gpt-4o-mini',
      runMode: 'template',
      systemPrompt: `${secrets.system}: answer with the item only.`,
      promptTemplate: `Open {{page}} and report where the golden ticket is. ${secrets.template}`,
      inputSchema: { type: 'object', properties: { page: { type: 'string', format: 'uri' } }, required: ['page'] },
      structuredOutput: [{ id: 'ticket', type: 'string' }],
      ...overrides,
    };
  }

  async function submitted(body: Record<string, unknown>, apiKey = provider.apiKey) {
    const created = await h.http('POST', `${API}/submissions`, { apiKey, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const sent = await h.http('POST', `${API}/submissions/${created.body.id}/submit`, { apiKey });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    return created.body;
  }

  async function approved(body: Record<string, unknown>, apiKey = provider.apiKey) {
    const sub = await submitted(body, apiKey);
    const reviewed = await admin(h, ['review', '--market', 'agent', '--submission', sub.id, '--approve']);
    assert.equal(reviewed.status, 'approved');
    return sub.publicId as string;
  }

  async function runAndWait(agentId: string, body: Record<string, unknown>, apiKey = consumer.apiKey, base = '') {
    const accepted = await asConsumer('POST', `${base}${API}/agents/${agentId}/run`, body, apiKey);
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.deepEqual(Object.keys(accepted.body).sort(), ['jobId', 'status']);
    assert.equal(accepted.body.status, 'pending');
    const run = await h.waitForJob(apiKey, `${base}${API}/runs/${accepted.body.jobId}`);
    consumerSaw.push(JSON.stringify(run));
    return run;
  }

  const page3 = () => `${h.site.url}/agent/list?page=3`;

  it('walks a provider from submission to approval with the admin CLI, and a consumer from the catalogue to a finished template run', async function () {
    this.timeout(180_000);
    const secrets = { system: marker(), template: marker() };
    const body = templateAgent(secrets);
    const created = await h.http('POST', `${API}/submissions`, { apiKey: provider.apiKey, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.status, 'draft');
    assert.equal(created.body.systemPrompt, body.systemPrompt, 'the owner reads the prompts');
    assert.equal(created.body.promptTemplate, body.promptTemplate);
    const id = created.body.id;
    const agentId = created.body.publicId;

    const replaced = await h.http('PUT', `${API}/submissions/${id}`, {
      apiKey: provider.apiKey,
      body: { ...body, description: 'Finds tickets' },
    });
    assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
    assert.equal(replaced.body.description, 'Finds tickets');
    const own = await h.http('GET', `${API}/submissions?page=1&pageSize=10`, { apiKey: provider.apiKey });
    assert.ok(own.body.submissions.some((s: any) => s.id === id));
    assert.equal(
      (await h.http('GET', `${API}/submissions/${id}`, { apiKey: consumer.apiKey })).status,
      404,
      "submissions are the owner's",
    );

    assert.equal(
      (await h.http('POST', `${API}/submissions/${id}/submit`, { apiKey: provider.apiKey })).body.status,
      'pending_review',
    );
    assert.equal((await h.http('POST', `${API}/submissions/${id}/submit`, { apiKey: provider.apiKey })).status, 409);
    assert.equal((await asConsumer('GET', `${API}/agents/${agentId}`)).status, 404, 'not listed before approval');

    const queue = await admin(h, ['submissions', '--market', 'agent', '--status', 'pending_review']);
    const listed = queue.submissions.find((s: any) => s.id === id);
    assert.equal(listed.runMode, 'template');
    assert.equal(listed.priceUsd, 0.5);
    const rejected = await admin(h, [
      'review',
      '--market',
      'agent',
      '--submission',
      id,
      '--reject',
      '--reason',
      'Describe the output',
    ]);
    assert.equal(rejected.status, 'rejected');
    assert.equal(
      (await h.http('PUT', `${API}/submissions/${id}`, { apiKey: provider.apiKey, body })).body.status,
      'draft',
    );
    assert.equal((await h.http('POST', `${API}/submissions/${id}/submit`, { apiKey: provider.apiKey })).status, 200);
    const approval = await adminRaw(h, ['review', '--market', 'agent', '--submission', id, '--approve']);
    assert.equal(approval.code, 0, approval.stderr);
    for (const secret of Object.values(secrets))
      assert.ok(
        !approval.stdout.includes(secret) && !JSON.stringify(queue).includes(secret),
        'the reviewer view holds no prompt',
      );

    const catalogue = await asConsumer('GET', `${API}/agents?q=ticket%20finder&pageSize=100`);
    assert.equal(catalogue.status, 200);
    const entry = catalogue.body.agents.find((a: any) => a.id === agentId);
    assert.ok(entry, JSON.stringify(catalogue.body));
    assert.equal(entry.priceUsd, 0.5);
    assert.equal(entry.purchased, false);
    assert.deepEqual(entry.structuredOutput, body.structuredOutput);
    for (const hidden of [
      'systemPrompt',
      'promptTemplate',
      'mcpSelections',
      'customMcpSelections',
      'ownerId',
      'reviewReason',
    ])
      assert.ok(!(hidden in entry), hidden);

    const unpaid = await asConsumer('POST', `${API}/agents/${agentId}/run`, { inputs: { page: page3() } });
    assert.equal(unpaid.status, 402);
    assert.equal(unpaid.body.error.code, 'purchase_required');

    const balanceBefore = (await h.http('GET', '/api/v1/account', { apiKey: consumer.apiKey })).body.balanceUsd;
    const bought = await asConsumer('POST', `${API}/agents/${agentId}/purchase`);
    assert.equal(bought.status, 201, JSON.stringify(bought.body));
    assert.equal(bought.body.priceUsd, 0.5);
    const again = await asConsumer('POST', `${API}/agents/${agentId}/purchase`);
    assert.equal(again.status, 200);
    assert.equal(again.body.purchaseId, bought.body.purchaseId);
    assert.equal(
      (await h.http('GET', '/api/v1/account', { apiKey: consumer.apiKey })).body.balanceUsd,
      balanceBefore - 0.5,
    );
    assert.equal((await asConsumer('GET', `${API}/agents/${agentId}`)).body.purchased, true);

    const seen = h.llm.requests.length;
    h.llm.enqueue(
      act('navigate', { url: page3() }, 'Open the page'),
      act('done', { success: true, data: { ticket: 'item 13' } }, 'Report'),
    );
    const run = await runAndWait(agentId, { inputs: { page: page3() } });
    assert.equal(run.status, 'completed', run.error);
    assert.deepEqual(run.result.data, { ticket: 'item 13' });
    assert.equal(run.agentId, agentId);
    assert.deepEqual(run.toolCalls, []);
    assert.ok(run.usage.llmCalls >= 2 && run.usage.costUsd > 0, JSON.stringify(run.usage));
    assert.ok(run.result.steps.some((s: any) => s.url.includes('/agent/list?page=3')));
    assert.equal(run.request.headless, false, 'a headed browser (virtual display) by default');
    assert.equal(run.request.llm_model, 'gpt-4o-mini', "the listing's suggestion");

    // The prompts reached the model, filled with the consumer's input...
    const toModel = JSON.stringify(
      h.llm.requests
        .slice(seen)
        .filter(isAgentDecision)
        .map((r) => r.body.messages),
    );
    assert.ok(toModel.includes(secrets.system), "the provider's system prompt is sent to the model");
    assert.ok(
      toModel.includes(`Open ${page3()} and report where the golden ticket is. ${secrets.template}`),
      'the filled template is the task',
    );
    // ...and nowhere a consumer can read: responses, the run record, logs, transactions, captured output, the workflow history.
    const logs = await asConsumer('GET', '/api/v1/logs?pageSize=100');
    const transactions = await asConsumer('GET', '/api/v1/transactions?pageSize=100');
    assert.ok(
      transactions.body.transactions.some((t: any) => t.jobId === run.id && t.cost > 0),
      "the run's usage is billed",
    );
    assert.ok(logs.body.logs.length > 0);
    const histories = await workflowsHolding(h.client, [`agent-market-${run.id}`], secrets.system);
    assert.deepEqual(histories, [], 'no system prompt in the decoded workflow history');
    assert.deepEqual(
      await workflowsHolding(h.client, [`agent-market-${run.id}`], secrets.template),
      [],
      'no template in the decoded workflow history',
    );
    const output = capturedOutput();
    for (const secret of Object.values(secrets)) {
      assert.ok(!consumerSaw.some((text) => text.includes(secret)), `${secret} in a consumer-visible response`);
      assert.ok(!output.includes(secret), `${secret} in a log line`);
    }

    // The provider sees aggregates, never the consumer's run.
    const stats = (await h.http('GET', `${API}/submissions/${id}`, { apiKey: provider.apiKey })).body.stats;
    assert.deepEqual(stats, { purchases: 1, runs: 1, revenueUsd: 0.4 });
    assert.equal((await h.http('GET', `${API}/runs/${run.id}`, { apiKey: provider.apiKey })).status, 404);
  });

  it('refuses submissions and runs that break the rules, with the rule as the error code', async function () {
    this.timeout(120_000);
    const secrets = { system: marker(), template: marker() };
    const post = (body: unknown) => h.http('POST', `${API}/submissions`, { apiKey: provider.apiKey, body });
    const code = async (body: unknown) => {
      const response = await post(body);
      return `${response.status} ${response.body?.error?.code}`;
    };
    assert.equal(await code(templateAgent(secrets, { promptTemplate: null })), '400 prompt_template_required');
    assert.equal(
      await code(templateAgent(secrets, { promptTemplate: 'Go to {{page}} then {{city}}' })),
      '400 undeclared_placeholder',
    );
    assert.equal(await code(templateAgent(secrets, { inputSchema: { type: 'string' } })), '400 invalid_input_schema');
    assert.equal(
      await code(templateAgent(secrets, { structuredOutput: [{ id: 'a', type: 'date' }] })),
      '400 invalid_structured_output',
    );
    assert.equal(await code(templateAgent(secrets, { suggestedLlmModel: 'no-such-model' })), '400 model_not_supported');
    assert.equal(await code(templateAgent(secrets, { runMode: 'chat' })), '400 validation_failed');

    const tools = await approvedEntry(h, provider, {
      requiredUserParamsSchema: { type: 'object', properties: { apiKey: { type: 'string', writeOnly: true } } },
    });
    assert.equal(
      await code(templateAgent(secrets, { mcpSelections: [{ mcp_id: randomUUID() }] })),
      '400 unknown_market_tool',
    );
    assert.equal(
      await code(
        templateAgent(secrets, { mcpSelections: [{ mcp_id: tools.entryId, tool_names: ['launch_rockets'] }] }),
      ),
      '400 unknown_market_tool',
    );
    assert.equal(
      await code(
        templateAgent(secrets, {
          customMcpSelections: [{ type: 'remote_mcp', source_url: 'http://tools.example.com/mcp' }],
        }),
      ),
      '400 insecure_url',
    );
    const withTools = await post(
      templateAgent(secrets, {
        mcpSelections: [
          { mcp_id: tools.entryId, tool_names: ['get_weather'], params: { apiKey: 'weather-secret-123' } },
        ],
        customMcpSelections: [
          { type: 'remote_mcp', source_url: 'https://tools.example.com/mcp', params: { token: 'custom-secret-456' } },
        ],
      }),
    );
    assert.equal(withTools.status, 201, JSON.stringify(withTools.body));
    assert.deepEqual(
      withTools.body.mcpSelections,
      [{ mcp_id: tools.entryId, tool_names: ['get_weather'], params: { apiKey: '********' } }],
      'params sealed, shown masked',
    );
    assert.equal(withTools.body.customMcpSelections[0].params.token, '********');

    // Runs: inputs against the schema, the task rules, HTTPS webhooks.
    const agentId = await approved(templateAgent(secrets, { priceUsd: 0 }));
    const run = (body: unknown) => asConsumer('POST', `${API}/agents/${agentId}/run`, body);
    const refusal = async (body: unknown) => {
      const response = await run(body);
      return `${response.status} ${response.body?.error?.code}`;
    };
    assert.equal(await refusal({ inputs: { page: page3(), extra: 1 } }), '400 unknown_input');
    assert.equal(await refusal({ inputs: {} }), '400 invalid_inputs');
    assert.equal(await refusal({ inputs: { page: page3() }, task: 'Do something else' }), '400 task_not_allowed');
    assert.equal(
      await refusal({ inputs: { page: page3() }, webhook_url: 'http://hooks.example.com/x' }),
      '400 insecure_webhook_url',
    );
    assert.equal(await refusal({ inputs: { page: page3() }, llm_model: 'no-such-model' }), '400 model_not_supported');
    assert.equal(
      (await run({ inputs: { page: page3() }, webhook_url: 'https://127.0.0.2/hook' })).status,
      400,
      'internal webhook targets refused',
    );
    assert.equal((await asConsumer('POST', `${API}/agents/${agentId}/purchase`)).body.error.code, 'free_agent');
    assert.equal(
      (await h.http('POST', `${API}/agents/${agentId}/purchase`, { apiKey: provider.apiKey })).body.error.code,
      'own_agent',
    );

    const taskAgent = await approved({
      ...templateAgent(secrets, { priceUsd: 0 }),
      runMode: 'task',
      promptTemplate: null,
      inputSchema: undefined,
    });
    const noTask = await asConsumer('POST', `${API}/agents/${taskAgent}/run`, {});
    assert.equal(noTask.status, 400);
    assert.equal(noTask.body.error.code, 'task_required');

    // An approved submission changes only through a revision.
    const live = (
      await h.http('GET', `${API}/submissions?pageSize=100`, { apiKey: provider.apiKey })
    ).body.submissions.find((s: any) => s.publicId === agentId);
    assert.equal(
      (await h.http('PUT', `${API}/submissions/${live.id}`, { apiKey: provider.apiKey, body: templateAgent(secrets) }))
        .status,
      409,
    );
  });

  it("runs a free task agent for anyone, a template agent with allowTaskOverride, and the owner's paid agent without a purchase", async function () {
    this.timeout(180_000);
    const secrets = { system: marker(), template: marker() };
    const taskAgent = await approved({
      ...templateAgent(secrets, { priceUsd: 0 }),
      runMode: 'task',
      promptTemplate: null,
      inputSchema: undefined,
      structuredOutput: [
        { id: 'found', type: 'boolean' },
        { id: 'where', type: 'string' },
      ],
    });
    const seen = h.llm.requests.length;
    h.llm.enqueue(
      act('navigate', { url: page3() }),
      act('done', { success: true, data: { found: true, where: 'item 13' } }),
    );
    const run = await runAndWait(taskAgent, {
      task: `Find the golden ticket on ${page3()}`,
      headless: true,
      llm_provider: 'service',
      llm_model: 'gpt-4o',
    });
    assert.equal(run.status, 'completed', run.error);
    assert.deepEqual(run.result.data, { found: true, where: 'item 13' });
    assert.equal(run.result.tasks[0].task, `Find the golden ticket on ${page3()}`);
    const decisions = h.llm.requests.slice(seen).filter(isAgentDecision);
    assert.equal(decisions[0].body.model, 'gpt-4o', "the request's model over the suggestion");
    assert.ok(JSON.stringify(decisions[0].body.messages).includes(secrets.system));

    const overridable = await approved(templateAgent(secrets, { allowTaskOverride: true }));
    const before = h.llm.requests.length;
    h.llm.enqueue(act('done', { success: true, data: { ticket: 'none' } }));
    const own = await runAndWait(overridable, { inputs: { page: page3() }, task: 'Also say hello.' }, provider.apiKey);
    assert.equal(own.status, 'completed', own.error);
    const firstDecision = h.llm.requests.slice(before).find(isAgentDecision)!;
    assert.match(
      JSON.stringify(firstDecision.body.messages),
      new RegExp(`${secrets.template}\\\\n\\\\nAlso say hello\\.`),
      'the task follows the filled template',
    );
    assert.equal(own.result.tasks[0].task, 'Also say hello.', "the result shows the caller's task, not the template");
  });

  it("bills a failed run's usage within its hold", async function () {
    this.timeout(120_000);
    const secrets = { system: marker(), template: marker() };
    const agentId = await approved(templateAgent(secrets, { priceUsd: 0 }));
    // Invalid structured output twice (balanced mode re-asks once): the run fails after two paid model calls.
    h.llm.enqueue(
      act('done', { success: true, data: { wrong: 1 } }),
      act('done', { success: true, data: { wrong: 2 } }),
    );
    const run = await runAndWait(agentId, { inputs: { page: page3() } });
    assert.equal(run.status, 'failed');
    assert.match(run.error, /structured output/);
    assert.ok(run.usage.costUsd > 0);
    const tx = (await asConsumer('GET', '/api/v1/transactions?pageSize=100')).body.transactions.find(
      (t: any) => t.jobId === run.id,
    );
    assert.ok(tx && tx.cost > 0 && tx.cost <= h.config.holds['agent-market'] / 1_000_000, JSON.stringify(tx));
    assert.equal(tx.agentName.startsWith('agent-market:'), true);
  });

  it('debits one purchase under 50 concurrent requests and credits the provider less the commission', async function () {
    this.timeout(120_000);
    const secrets = { system: marker(), template: marker() };
    const seller = await h.createUser({ creditUsd: 1 });
    const agentId = await approved(templateAgent(secrets, { priceUsd: 0.25 }), seller.apiKey);
    const buyer = await h.createUser({ creditUsd: 3 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => h.http('POST', `${API}/agents/${agentId}/purchase`, { apiKey: buyer.apiKey })),
    );
    const statuses = responses.map((r) => r.status).sort();
    assert.deepEqual(
      statuses,
      [...Array(49).fill(200), 201],
      JSON.stringify(responses.filter((r) => r.status >= 300).map((r) => r.body)),
    );
    assert.equal(new Set(responses.map((r) => r.body.purchaseId)).size, 1);
    const account = (key: string) => h.http('GET', '/api/v1/account', { apiKey: key }).then((r) => r.body.balanceUsd);
    assert.equal(await account(buyer.apiKey), 2.75);
    assert.equal(await account(seller.apiKey), 1 + 0.25 * (1 - h.config.market.commissionRate));
    const purchases = (
      await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: buyer.apiKey })
    ).body.transactions.filter((t: any) => t.result === 'purchase');
    assert.equal(purchases.length, 1);
    assert.equal(purchases[0].cost, 0.25);

    const broke = await h.createUser({ creditUsd: 0.1 });
    const poor = await h.http('POST', `${API}/agents/${agentId}/purchase`, { apiKey: broke.apiKey });
    assert.equal(poor.status, 402);
    assert.equal(poor.body.error.code, 'insufficient_funds');
  });

  it('swaps in an approved revision under the same public id; purchases carry over', async function () {
    this.timeout(180_000);
    const first = { system: marker(), template: marker() };
    const body = templateAgent(first, { priceUsd: 0.3 });
    const original = await submitted(body);
    await admin(h, ['review', '--market', 'agent', '--submission', original.id, '--approve']);
    const agentId = original.publicId;
    assert.equal((await asConsumer('POST', `${API}/agents/${agentId}/purchase`)).status, 201);

    const revision = await h.http('POST', `${API}/submissions/${original.id}/revisions`, { apiKey: provider.apiKey });
    assert.equal(revision.status, 201);
    const revised = await h.http('GET', `${API}/submissions/${revision.body.id}`, { apiKey: provider.apiKey });
    assert.equal(revised.body.systemPrompt, body.systemPrompt, 'the revision copies the prompts');
    assert.equal(revised.body.parentEntryId, original.id);
    const second = { system: marker(), template: marker() };
    const updated = await h.http('PUT', `${API}/submissions/${revision.body.id}`, {
      apiKey: provider.apiKey,
      body: { ...templateAgent(second, { priceUsd: 0.3 }), name: body.name, description: 'Revised' },
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(
      (await asConsumer('GET', `${API}/agents/${agentId}`)).body.description,
      'Finds the golden ticket on a list page',
      'the live listing is unchanged until approval',
    );
    assert.equal(
      (await h.http('POST', `${API}/submissions/${revision.body.id}/submit`, { apiKey: provider.apiKey })).status,
      200,
    );
    await admin(h, ['review', '--market', 'agent', '--submission', revision.body.id, '--approve']);

    const live = await asConsumer('GET', `${API}/agents/${agentId}`);
    assert.equal(live.body.id, agentId);
    assert.equal(live.body.description, 'Revised');
    assert.equal(live.body.purchased, true, 'the purchase carries over');
    const seen = h.llm.requests.length;
    h.llm.enqueue(act('done', { success: true, data: { ticket: 'x' } }));
    const run = await runAndWait(agentId, { inputs: { page: page3() } });
    assert.equal(run.status, 'completed', run.error);
    const toModel = JSON.stringify(
      h.llm.requests
        .slice(seen)
        .filter(isAgentDecision)
        .map((r) => r.body.messages),
    );
    assert.ok(toModel.includes(second.system) && !toModel.includes(first.system), 'runs use the revision');
    const buys = (
      await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: consumer.apiKey })
    ).body.transactions.filter((t: any) => t.result === 'purchase' && t.payload?.agentId === agentId);
    assert.equal(buys.length, 1, 'bought once');
  });

  it('checks the market tools again at run time, and takes a disabled agent out of the catalogue', async function () {
    this.timeout(120_000);
    const secrets = { system: marker(), template: marker() };
    const tools = await approvedEntry(h, provider);
    const agentId = await approved(
      templateAgent(secrets, { priceUsd: 0, mcpSelections: [{ mcp_id: tools.entryId, tool_names: ['get_forecast'] }] }),
    );
    const disabledTools = await adminRaw(h, [
      'review',
      '--market',
      'mcp',
      '--submission',
      tools.submissionId,
      '--disable',
    ]);
    assert.equal(disabledTools.code, 0, disabledTools.stderr);
    const refused = await asConsumer('POST', `${API}/agents/${agentId}/run`, { inputs: { page: page3() } });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, 'market_tool_unavailable');

    const own = (
      await h.http('GET', `${API}/submissions?pageSize=100`, { apiKey: provider.apiKey })
    ).body.submissions.find((s: any) => s.publicId === agentId);
    assert.equal(
      (await admin(h, ['review', '--market', 'agent', '--submission', own.id, '--disable'])).status,
      'disabled',
    );
    assert.equal((await asConsumer('GET', `${API}/agents/${agentId}`)).status, 404);
    assert.equal((await asConsumer('POST', `${API}/agents/${agentId}/run`, { inputs: { page: page3() } })).status, 404);
    assert.equal((await asConsumer('POST', `${API}/agents/${agentId}/purchase`)).status, 404);
    assert.ok(!(await asConsumer('GET', `${API}/agents?pageSize=100`)).body.agents.some((a: any) => a.id === agentId));
  });

  describe('webhooks', function () {
    let certs: TestCertificates;
    let worker: ChildProcess | null = null;
    let server: https.Server;
    const deliveries: { headers: Record<string, unknown>; body: string }[] = [];

    before(async function () {
      this.timeout(120_000);
      certs = createTestCertificates();
      server = https.createServer({ key: certs.key, cert: certs.cert }, async (req, res) => {
        let body = '';
        for await (const chunk of req) body += chunk;
        deliveries.push({ headers: req.headers, body });
        res.writeHead(200).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });

    after(async function () {
      worker?.kill('SIGTERM');
      await new Promise<void>((resolve) => server.close(() => resolve()));
      certs.cleanup();
    });

    it('delivers the finished run, signed, to an HTTPS receiver whose certificate a private CA issued', async function () {
      this.timeout(180_000);
      const taskQueues = { platform: 'agent-market-tls-platform', browser: 'agent-market-tls-browser' };
      // The platform worker trusts the test CA the way an operator's would: NODE_EXTRA_CA_CERTS, read at process start.
      const stack = stacks.add(await h.startIsolatedStack({ taskQueues, queues: ['browser'] }));
      worker = await startWorkerProcess({
        ...h.env,
        PLATFORM_TASK_QUEUE: taskQueues.platform,
        BROWSER_TASK_QUEUE: taskQueues.browser,
        WORKER_QUEUES: 'platform',
        NODE_EXTRA_CA_CERTS: certs.caFile,
      });
      const secrets = { system: marker(), template: marker() };
      const agentId = await approved(templateAgent(secrets, { priceUsd: 0 }));
      const hook = `https://127.0.0.1:${(server.address() as { port: number }).port}/agent-hook`;
      h.llm.enqueue(act('done', { success: true, data: { ticket: 'item 13' } }));
      const run = await runAndWait(
        agentId,
        { inputs: { page: page3() }, webhook_url: hook },
        consumer.apiKey,
        stack.baseUrl,
      );
      assert.equal(run.status, 'completed', run.error);
      const deadline = Date.now() + 30_000;
      while (deliveries.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(deliveries.length, 1, 'one delivery');
      const [delivery] = deliveries;
      const payload = JSON.parse(delivery.body);
      assert.equal(payload.event, 'job.completed');
      assert.equal(payload.kind, 'agent-market');
      assert.equal(payload.job.id, run.id);
      assert.deepEqual(payload.job.result.data, { ticket: 'item 13' });
      const secret = (await h.http('GET', '/api/v1/account/webhook-secret', { apiKey: consumer.apiKey })).body
        .webhookSecret;
      assert.ok(
        verifyWebhookSignature(secret, delivery.body, String(delivery.headers['x-webhook-signature'])),
        "signed with the consumer's webhook secret",
      );
      for (const value of Object.values(secrets)) assert.ok(!delivery.body.includes(value), 'no prompt in the webhook');
    });
  });
});
