// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { conversationMemory } from '../../activities/agent/conversation';
import type { CustomAgentRunRequest } from '../../activities/agent/job';
import { useHarness, type Harness } from '../support/stack/harness';
import { startInternalTarget, type InternalTarget } from '../support/fakes/mcp-internal-target';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { API_KEY, startOpenApiServer, type TestOpenApiServer } from '../support/openapi-api';
import { capturedOutput } from '../support/stack/output-capture';
import { workflowsHolding } from '../support/workflow-history';
import { act, actMany } from '../support/agent-script';
import type { RecordedRequest } from '../support/fakes/fake-openai';

const MCP_TOKEN = 'agent-mcp-token-5b1e77c2';
const NEVER = '0 0 1 1 *';

/** The tool messages the model was sent in a request. */
function toolMessages(request: RecordedRequest): string[] {
  return (request.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

function decisions(h: Harness, since: number): RecordedRequest[] {
  return h.llm.requests.slice(since).filter((r) => r.kind === 'chat' && Array.isArray(r.body.tools));
}

describe('custom agents on the tool runtime', function () {
  this.timeout(180_000);
  let h: Harness;
  let apiKey: string;
  let userId: string;
  let mcp: TestMcpServer;
  let api: TestOpenApiServer;
  let internal: InternalTarget;

  before(async () => {
    h = await useHarness();
    ({ apiKey, userId } = await h.createUser({ creditUsd: 5 }));
    [mcp, api, internal] = await Promise.all([
      startMcpServer({ bearerToken: MCP_TOKEN }),
      startOpenApiServer(),
      startInternalTarget(),
    ]);
  });
  after(async () => {
    h.llm.reset();
    await Promise.all([mcp.close(), api.close(), internal.close()]);
  });

  const sources = () => [
    { type: 'remote_mcp', name: 'Echo server', source_url: mcp.url, params: { Authorization: `Bearer ${MCP_TOKEN}` } },
    { type: 'openapi', name: 'Inventory', openapi_spec: api.openapiYaml, params: { 'X-API-Key': API_KEY } },
  ];

  it('runs a task with tools from two sources and returns validated structured output (one re-ask)', async () => {
    const since = h.llm.requests.length;
    h.llm.enqueue(
      actMany(
        [
          ['echo', { message: 'hello tools' }],
          ['getItem', { itemId: 'w-42' }],
        ],
        'Look both up',
      ),
      act('done', { success: true, data: { itemName: 'Blue widget' } }),
      act('done', {
        success: true,
        answer: 'Blue widget, echoed',
        data: { itemName: 'Blue widget', echoed: 'echo: hello tools' },
      }),
    );
    const accepted = await h.http('POST', '/api/v1/agents/run', {
      apiKey,
      body: {
        task: 'Echo "hello tools" and read item w-42',
        system_prompt: 'You are terse.',
        expected_output: 'The item name and the echo',
        llm_model: 'gpt-4o-mini',
        skills: [{ provider: 'test', externalId: 'x', name: 'Brevity', skillMdContent: 'Answer in five words.' }],
        custom_mcps: sources(),
        structured_output: [
          { id: 'itemName', type: 'string' },
          { id: 'echoed', type: 'string' },
        ],
      },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.deepEqual(Object.keys(accepted.body).sort(), ['jobId', 'queued', 'status']);
    assert.equal(accepted.body.queued, true);
    assert.equal(accepted.body.status, 'pending');
    const run = await h.waitForJob(apiKey, `/api/v1/agents/runs/${accepted.body.jobId}`);
    assert.equal(run.status, 'completed', run.error);
    assert.deepEqual(run.result.data, { itemName: 'Blue widget', echoed: 'echo: hello tools' });
    assert.equal(run.result.answer, 'Blue widget, echoed');
    assert.deepEqual(
      run.toolCalls.map((c: any) => [c.index, c.source, c.tool, c.status, c.error]),
      [
        [1, 'Echo server', 'echo', 'completed', null],
        [2, 'Inventory', 'getItem', 'completed', null],
      ],
    );
    for (const call of run.toolCalls) {
      assert.ok(call.durationMs >= 0 && call.costUsd === 0 && !Number.isNaN(Date.parse(call.startedAt)));
      assert.equal(call.arguments, undefined);
    }
    assert.equal(run.usage.toolCalls, 2);
    assert.ok(run.usage.llmTokens > 0);
    assert.ok(run.usage.costUsd > 0);
    // Params are redacted in the record; the upstreams got the real ones.
    assert.equal(run.request.custom_mcps[0].params.Authorization, '[redacted]');
    assert.equal(run.request.custom_mcps[1].params['X-API-Key'], '[redacted]');
    assert.equal(mcp.toolRuns('echo'), 1);
    assert.equal(api.apiRequests().filter((r) => r.path === '/api/items/w-42').length, 1);

    const sent = decisions(h, since);
    assert.equal(sent.length, 3);
    const system = String(sent[0].body.messages?.[0].content);
    assert.match(system, /You are terse\./);
    assert.match(system, /Expected output: The item name and the echo/);
    assert.match(system, /Answer in five words\./);
    const offered = (sent[0].body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    for (const name of ['echo', 'increment', 'getItem', 'done'])
      assert.ok(offered.includes(name), `${name} offered: ${offered.join(', ')}`);
    assert.ok(toolMessages(sent[1]).includes('echo: hello tools'));
    assert.ok(toolMessages(sent[1]).some((m) => m.includes('Blue widget')));
    assert.ok(
      toolMessages(sent[2]).some((m) => /does not match structured_output/.test(m)),
      'the invalid answer is re-asked',
    );

    // One transaction and one debit for the run, within its hold.
    const transactions = await h.db.selectFrom('agent_transactions').selectAll().where('job_id', '=', run.id).execute();
    assert.equal(transactions.length, 1);
    const debits = await h.db.selectFrom('ledger_entries').selectAll().where('job_id', '=', run.id).execute();
    assert.equal(debits.length, 1);
    const hold = await h.db.selectFrom('job_holds').selectAll().where('job_id', '=', run.id).executeTakeFirstOrThrow();
    assert.ok(hold.released_at !== null);

    // The secrets are in no response, log line or decoded workflow history.
    const job = await h.db
      .selectFrom('jobs')
      .select(['workflow_id', 'request', 'sealed_secrets'])
      .where('id', '=', run.id)
      .executeTakeFirstOrThrow();
    for (const secret of [MCP_TOKEN, API_KEY]) {
      assert.ok(!JSON.stringify(run).includes(secret));
      assert.ok(!JSON.stringify(job.request).includes(secret));
      assert.ok(!job.sealed_secrets?.includes(secret));
      assert.ok(!capturedOutput().includes(secret), 'a secret reached the logs');
      assert.deepEqual(await workflowsHolding(h.client, [job.workflow_id], secret), []);
    }
  });

  it('bounds tool calls with max_tool_calls: the call past it is not sent, the model is told, the run finishes', async () => {
    const since = h.llm.requests.length;
    const before = mcp.toolRuns('echo');
    h.llm.enqueue(
      actMany([
        ['echo', { message: 'one' }],
        ['echo', { message: 'two' }],
      ]),
      act('done', { success: true, answer: 'did what I could' }),
    );
    const accepted = await h.http('POST', '/api/v1/agents/run', {
      apiKey,
      body: { task: 'Echo twice', llm_model: 'gpt-4o-mini', max_tool_calls: 1, custom_mcps: sources().slice(0, 1) },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const run = await h.waitForJob(apiKey, `/api/v1/agents/runs/${accepted.body.jobId}`);
    assert.equal(run.status, 'completed', run.error);
    assert.equal(mcp.toolRuns('echo') - before, 1);
    assert.deepEqual(
      run.toolCalls.map((c: any) => c.status),
      ['completed', 'not_sent'],
    );
    assert.equal(run.usage.toolCalls, 1);
    const sent = decisions(h, since);
    assert.ok(toolMessages(sent[1]).some((m) => /max_tool_calls/.test(m)));
    assert.deepEqual(
      (sent[1].body.tools as { function: { name: string } }[]).map((t) => t.function.name),
      ['done'],
      'only done is offered once the bound is reached',
    );
  });

  it('stores a scheduled custom agent with its automation and Schedule, runs it at once, and updates the schedule', async () => {
    h.llm.enqueue(act('done', { success: true, answer: 'scheduled hello' }));
    const created = await h.http('POST', '/api/v1/agents', {
      apiKey,
      body: {
        name: 'Nightly echo',
        cron: NEVER,
        timezone: 'Europe/Berlin',
        task: 'Say hello',
        llm_model: 'gpt-4o-mini',
        system_prompt: 'Be kind.',
        custom_mcps: sources(),
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const agent = created.body.agent;
    assert.equal(agent.name, 'Nightly echo');
    assert.equal(agent.payload.custom_mcps[0].params.Authorization, '[redacted]');
    assert.equal(agent.payload.custom_mcps[1].params['X-API-Key'], '[redacted]');
    assert.equal(agent.payload.max_tool_calls, 20);

    const listed = await h.http('GET', '/api/v1/automations', { apiKey });
    const automation = listed.body.automations.find((a: any) => a.id === agent.id);
    assert.ok(automation, 'the agent is in GET /automations');
    assert.equal(automation.cron, NEVER);
    assert.equal(automation.status, 'active');
    assert.ok(!JSON.stringify(listed.body).includes(MCP_TOKEN));

    // The first execution is queued at once and runs with the stored (sealed) params.
    let runJob: any;
    for (const deadline = Date.now() + 90_000; ;) {
      runJob = await h.db
        .selectFrom('jobs')
        .selectAll()
        .where('user_id', '=', userId)
        .where('kind', '=', 'custom-agent')
        .where(({ eb, ref }) => eb(ref('request', '->>').key('automationId' as never), '=', agent.id))
        .executeTakeFirst();
      if (runJob && (runJob.status === 'completed' || runJob.status === 'failed')) break;
      assert.ok(Date.now() < deadline, 'the first run did not finish');
      await new Promise((r) => setTimeout(r, 300));
    }
    const run = await h.http('GET', `/api/v1/agents/runs/${runJob.id}`, { apiKey });
    assert.equal(run.body.status, 'completed', run.body.error);
    assert.equal(run.body.result.answer, 'scheduled hello');

    const schedule = () => h.client.schedule.getHandle(`automation-${agent.id}`).describe();
    assert.equal((await schedule()).spec.timezone, 'Europe/Berlin');

    const patched = await h.http('PATCH', `/api/v1/agents/${agent.id}`, {
      apiKey,
      body: { cron: '30 6 * * 1', timezone: null, system_prompt: null, max_tool_calls: 5 },
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(patched.body.agent.payload.cron, '30 6 * * 1');
    assert.equal(patched.body.agent.payload.system_prompt, undefined);
    assert.equal(patched.body.agent.payload.max_tool_calls, 5);
    assert.equal(patched.body.agent.payload.task, 'Say hello');
    assert.equal(patched.body.agent.payload.custom_mcps[0].params.Authorization, '[redacted]', 'kept, still redacted');
    const described = await schedule();
    assert.equal(described.spec.timezone ?? 'UTC', 'UTC');
    assert.deepEqual(
      described.spec.calendars?.map((c) => [c.hour?.[0]?.start, c.minute?.[0]?.start]),
      [[6, 30]],
    );
    const after = await h.http('GET', '/api/v1/automations', { apiKey });
    assert.equal(after.body.automations.find((a: any) => a.id === agent.id).cron, '30 6 * * 1');
    const row = await h.db
      .selectFrom('automations')
      .select('secrets_sealed')
      .where('id', '=', agent.id)
      .executeTakeFirstOrThrow();
    assert.ok(!row.secrets_sealed?.includes(MCP_TOKEN));

    // Empty or invalid patches, another user's agent.
    assert.equal((await h.http('PATCH', `/api/v1/agents/${agent.id}`, { apiKey, body: {} })).status, 400);
    assert.equal(
      (await h.http('PATCH', `/api/v1/agents/${agent.id}`, { apiKey, body: { max_tool_calls: 0 } })).status,
      400,
    );
    assert.equal((await h.http('PATCH', `/api/v1/agents/${agent.id}`, { apiKey, body: { cron: null } })).status, 400);
    const other = await h.createUser({ creditUsd: 1 });
    const foreign = await h.http('PATCH', `/api/v1/agents/${agent.id}`, {
      apiKey: other.apiKey,
      body: { name: 'mine now' },
    });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error.code, 'not_found');
    assert.equal((await h.http('GET', `/api/v1/agents/runs/${runJob.id}`, { apiKey: other.apiKey })).status, 404);
  });

  it('counts stored agents against the package automation limit (403)', async () => {
    const user = await h.createUser({ creditUsd: 1 });
    await h.db.updateTable('subscriptions').set({ automation_limit: 0 }).where('user_id', '=', user.userId).execute();
    const refused = await h.http('POST', '/api/v1/agents', {
      apiKey: user.apiKey,
      body: { cron: NEVER, task: 'x', llm_model: 'gpt-4o-mini' },
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'automation_limit_reached');
  });

  it('answers 400, 401 and 404 with the error body, and refuses internal sources without reaching them', async () => {
    const base = { task: 'x', llm_model: 'gpt-4o-mini' };
    const cases: [string, unknown, string][] = [
      ['/api/v1/agents', base, 'validation_failed'],
      ['/api/v1/agents/run', {}, 'validation_failed'],
      ['/api/v1/agents/run', { ...base, max_tool_calls: 0 }, 'validation_failed'],
      ['/api/v1/agents/run', { ...base, extra: true }, 'validation_failed'],
      ['/api/v1/agents/run', { ...base, custom_mcps: [{ type: 'remote_mcp' }] }, 'validation_failed'],
      [
        '/api/v1/agents/run',
        { ...base, custom_mcps: [{ type: 'remote_mcp', source_url: internal.httpsUrl('/mcp') }] },
        'ssrf_blocked',
      ],
      [
        '/api/v1/agents/run',
        { ...base, market_mcps: [{ mcp_id: '00000000-0000-4000-8000-000000000000' }] },
        'market_entry_not_found',
      ],
      [
        '/api/v1/agents',
        { ...base, cron: NEVER, market_mcps: [{ mcp_id: '00000000-0000-4000-8000-000000000000' }] },
        'market_entry_not_found',
      ],
    ];
    for (const [path, body, code] of cases) {
      const response = await h.http('POST', path, { apiKey, body });
      assert.equal(response.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(response.body)}`);
      assert.equal(response.body.error.code, code);
      assert.ok(response.body.error.requestId);
    }
    assert.equal(internal.connections(), 0);
    for (const [method, path] of [
      ['POST', '/api/v1/agents'],
      ['POST', '/api/v1/agents/run'],
      ['PATCH', '/api/v1/agents/00000000-0000-4000-8000-000000000000'],
      ['GET', '/api/v1/agents/runs/00000000-0000-4000-8000-000000000000'],
    ]) {
      const response = await h.http(method, path, { body: method === 'GET' ? undefined : base });
      assert.equal(response.status, 401, `${method} ${path}`);
    }
    const missing = await h.http('GET', '/api/v1/agents/runs/00000000-0000-4000-8000-000000000000', { apiKey });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
    assert.equal((await h.http('GET', '/api/v1/agents/runs/not-a-uuid', { apiKey })).status, 400);
  });
});

describe("a custom agent's conversation when a decision is retried", function () {
  let h: Harness;
  let userId: string;

  before(async () => {
    h = await useHarness();
    ({ userId } = await h.createUser({ creditUsd: 1 }));
  });

  it('shows the model the retried attempt only: what the failed attempt wrote from its position on is replaced', async () => {
    const jobId = randomUUID();
    const request = { task: 'Echo twice', llm_model: 'gpt-4o-mini', max_tool_calls: 5 };
    await h.db
      .insertInto('jobs')
      .values({
        id: jobId,
        user_id: userId,
        kind: 'custom-agent',
        status: 'processing',
        request: JSON.stringify(request),
        workflow_id: `custom-agent-${jobId}`,
      })
      .execute();
    const memory = conversationMemory(h.db);
    const prompt = (seq: number, notes: string[] = []) =>
      memory.prompt(jobId, request as unknown as CustomAgentRunRequest, { seq, notes, toolsLeft: 5 });
    const answer = (id: string, message: string) => ({
      role: 'assistant' as const,
      content: null,
      refusal: null,
      tool_calls: [
        { id, type: 'function' as const, function: { name: 'echo', arguments: JSON.stringify({ message }) } },
      ],
    });

    const opening = await prompt(0);
    const first = await memory.keepAnswer(jobId, 0, opening.fresh, answer('call-1', 'one'));
    await memory.reply(jobId, { seq: first.nextSeq, callId: 'call-1' }, 'one', true);
    // The second decision's first attempt writes a note and an answer with two calls, then fails (its
    // usage record, say); its retry is asked again from the same position and answers otherwise.
    const second = first.nextSeq + 1;
    const attempt = await prompt(second, ['a note from the workflow']);
    const failed = await memory.keepAnswer(jobId, second, attempt.fresh, {
      ...answer('call-2', 'two'),
      tool_calls: [...answer('call-2', 'two').tool_calls, ...answer('call-3', 'three').tool_calls],
    });
    await memory.reply(jobId, { seq: failed.nextSeq, callId: 'call-2' }, 'two', true);
    const retry = await prompt(second, ['a note from the workflow']);
    assert.deepEqual(
      retry.messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'user'],
      'the retry is shown what came before its position, and its own note once',
    );
    const kept = await memory.keepAnswer(jobId, second, retry.fresh, answer('call-4', 'four'));
    assert.equal(kept.nextSeq, failed.nextSeq);
    const stored = await h.db
      .selectFrom('custom_agent_messages')
      .select('seq')
      .where('job_id', '=', jobId)
      .orderBy('seq')
      .execute();
    assert.deepEqual(
      stored.map((r) => r.seq),
      Array.from({ length: kept.nextSeq }, (_, i) => i),
      "the stored conversation ends with the retry's answer: the failed attempt's tool reply after it is dropped",
    );

    const next = await prompt(kept.nextSeq);
    const calls = next.messages.flatMap((m) =>
      m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => (c as { id: string }).id) : [],
    );
    assert.deepEqual(calls, ['call-1', 'call-4'], 'the failed attempt left no answer and no call behind');
    assert.deepEqual(
      next.messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'user', 'assistant'],
    );
    assert.equal(next.messages.filter((m) => m.role === 'tool').length, 1, "the failed attempt's tool reply is gone");
  });
});
