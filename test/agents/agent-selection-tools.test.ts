import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { useHarness, type Harness } from '../support/stack/harness';
import { act, isAgentDecision, toolNames } from '../support/agent-script';
import { admin } from '../support/market';
import { startMarketProvider, type MarketProviderService } from '../support/fakes/market-provider';
import { completeVerification, storeValidation, approvedEntry } from '../support/market';
import { discoveredTools } from '../support/fakes/market-provider';
import { startMcpServer, type TestMcpServer } from '../support/fakes/mcp-server';
import { workflowsHolding } from '../support/workflow-history';
import { capturedOutput } from '../support/stack/output-capture';
import { findLedgerProblems } from '../support/ledger-reconciliation';
import { getWalletSummary } from '../../db/repos/ledger';

/**
 * The shared browser/social agent loop offers a job's MCP/OpenAPI tools next to its own: an
 * agent-market listing's market tool (billed through the market path) and a forum automation's
 * custom MCP (its params sealed into the run job).
 */
describe('agent loop with MCP/OpenAPI tool selections', function () {
  this.timeout(180_000);
  let h: Harness;
  let service: MarketProviderService;
  let mcp: TestMcpServer;
  const MCP_TOKEN = `mcp-token-${randomBytes(6).toString('hex')}`;

  before(async function () {
    h = await useHarness();
    [service, mcp] = await Promise.all([startMarketProvider(), startMcpServer({ bearerToken: MCP_TOKEN })]);
    h.forum.addCommunity('selection_tools');
  });

  after(async () => {
    h.llm.reset();
    await service?.close();
    await mcp?.close();
  });

  const wallet = async (userId: string) => (await getWalletSummary(h.db, userId)).balanceMicros;
  const marker = () => `PRIVATE-${randomBytes(6).toString('hex')}`;

  it('an agent-market run takes a browser step and calls its provider_event market tool, which charges provider events', async function () {
    const toolProvider = await h.createUser({ creditUsd: 0 });
    const agentProvider = await h.createUser({ creditUsd: 1 });
    const consumer = await h.createUser({ creditUsd: 5 });

    // The market tool: an approved provider_event entry whose service charges page.scraped events.
    const validation = await storeValidation(h, toolProvider.userId, {
      url: service.url,
      tools: await discoveredTools(service.url),
    });
    const eventVerificationId = await completeVerification(h, toolProvider.apiKey, validation.sourceFingerprint, [
      'page.scraped',
    ]);
    const entry = await approvedEntry(
      h,
      toolProvider,
      {
        monetizationStrategy: 'provider_event',
        pricingEvents: [{ eventName: 'page.scraped', unitPriceUsd: 0.1 }],
        eventVerificationId,
      },
      validation,
    );
    service.configureCharging({ apiBase: h.baseUrl, apiKey: toolProvider.apiKey });
    const toolProviderBefore = await wallet(toolProvider.userId);

    // The agent: its selection is that entry's scrape_pages tool.
    const secrets = { system: marker(), template: marker() };
    const created = await h.http('POST', '/api/v1/agent-market/submissions', {
      apiKey: agentProvider.apiKey,
      body: {
        name: `Page scraper ${randomBytes(3).toString('hex')}`,
        description: 'Opens a page and scrapes it through a market tool',
        priceUsd: 0,
        suggestedLlmProvider: 'service',
        suggestedLlmModel: 'gpt-4o-mini',
        runMode: 'template',
        systemPrompt: `${secrets.system}: scrape what you open.`,
        promptTemplate: `Open {{page}} and scrape it. ${secrets.template}`,
        inputSchema: { type: 'object', properties: { page: { type: 'string', format: 'uri' } }, required: ['page'] },
        mcpSelections: [{ mcp_id: entry.entryId, tool_names: ['scrape_pages'] }],
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(
      (
        await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, {
          apiKey: agentProvider.apiKey,
        })
      ).status,
      200,
    );
    assert.equal(
      (await admin(h, ['review', '--market', 'agent', '--submission', created.body.id, '--approve'])).status,
      'approved',
    );
    const agentId = created.body.publicId as string;

    const page = `${h.site.url}/agent/list?page=3`;
    const seen = h.llm.requests.length;
    h.llm.enqueue(
      act('navigate', { url: page }, 'Open the page'),
      act('scrape_pages', { batches: [3] }, 'Scrape it'),
      act('done', { success: true, answer: 'scraped 3 pages' }),
    );
    const consumerBefore = await wallet(consumer.userId);
    const accepted = await h.http('POST', `/api/v1/agent-market/agents/${agentId}/run`, {
      apiKey: consumer.apiKey,
      body: { inputs: { page } },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const run = await h.waitForJob(consumer.apiKey, `/api/v1/agent-market/runs/${accepted.body.jobId}`);
    assert.equal(run.status, 'completed', run.error);

    // The model was offered the market tool next to the browser tools, and the run used both.
    const decisions = h.llm.requests.slice(seen).filter(isAgentDecision);
    assert.ok(
      toolNames(decisions[0]).includes('scrape_pages') && toolNames(decisions[0]).includes('navigate'),
      toolNames(decisions[0]).join(','),
    );
    assert.ok(run.result.steps.some((s: any) => s.url.includes('/agent/list?page=3')));
    const scraped = run.result.steps
      .flatMap((s: any) => s.outcomes)
      .find((o: any) => o.action.startsWith('scrape_pages'));
    assert.ok(scraped?.ok, JSON.stringify(run.result.steps));
    assert.match(scraped.message, /"chargedCount":3/, 'the tool result is the step outcome');
    assert.deepEqual(
      run.toolCalls.map((c: any) => [c.index, c.tool, c.status]),
      [[1, 'scrape_pages', 'completed']],
    );
    assert.equal(run.usage.toolCalls, 1);
    assert.equal(service.runs('scrape_pages'), 1);

    // One market run for the execution and its selection; the provider's 3 events are charged to the consumer.
    const runs = await h.db.selectFrom('market_runs').selectAll().where('job_id', '=', run.id).execute();
    assert.equal(runs.length, 1);
    assert.equal(Number(runs[0].charged_micros), 300_000);
    const usageMicros = Math.round(run.usage.costUsd * 1_000_000);
    assert.ok(usageMicros > 300_000, `the run's cost includes the provider charges: ${JSON.stringify(run.usage)}`);
    assert.equal(
      consumerBefore - (await wallet(consumer.userId)),
      usageMicros,
      "the run record's cost is what the wallet paid: LLM/browser usage plus the provider charges",
    );
    const providerRevenue = (await wallet(toolProvider.userId)) - toolProviderBefore;
    assert.equal(
      providerRevenue,
      300_000 * (1 - h.config.market.commissionRate),
      'the tool provider earns the charges less the commission',
    );

    // The prompts went to the model but nowhere the consumer can read.
    const toModel = JSON.stringify(decisions.map((r) => r.body.messages));
    assert.ok(toModel.includes(secrets.system) && toModel.includes(secrets.template));
    const record =
      JSON.stringify(run) +
      JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey: consumer.apiKey })).body);
    for (const secret of Object.values(secrets)) {
      assert.ok(!record.includes(secret), `${secret} in the run record or logs`);
      assert.ok(!capturedOutput().includes(secret), `${secret} in a log line`);
    }
    assert.deepEqual(await workflowsHolding(h.client, [`agent-market-${run.id}`], secrets.system), []);
  });

  it("an agent-market run calls the owner's private custom MCP tool with its sealed params, which no consumer sees", async function () {
    const agentProvider = await h.createUser({ creditUsd: 1 });
    const consumer = await h.createUser({ creditUsd: 5 });
    const secrets = { system: marker(), template: marker() };
    const created = await h.http('POST', '/api/v1/agent-market/submissions', {
      apiKey: agentProvider.apiKey,
      body: {
        name: `Echo agent ${randomBytes(3).toString('hex')}`,
        description: "Answers through its owner's private echo tool",
        priceUsd: 0,
        suggestedLlmProvider: 'service',
        suggestedLlmModel: 'gpt-4o-mini',
        runMode: 'template',
        systemPrompt: `${secrets.system}: use the echo tool.`,
        promptTemplate: `Echo {{phrase}}. ${secrets.template}`,
        inputSchema: { type: 'object', properties: { phrase: { type: 'string' } }, required: ['phrase'] },
        customMcpSelections: [
          {
            type: 'remote_mcp',
            name: 'Private echo',
            source_url: mcp.url,
            tool_names: ['echo'],
            params: { Authorization: `Bearer ${MCP_TOKEN}` },
          },
        ],
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(
      (
        await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, {
          apiKey: agentProvider.apiKey,
        })
      ).status,
      200,
    );
    assert.equal(
      (await admin(h, ['review', '--market', 'agent', '--submission', created.body.id, '--approve'])).status,
      'approved',
    );
    const agentId = created.body.publicId as string;

    const echoesBefore = mcp.toolRuns('echo');
    const seen = h.llm.requests.length;
    h.llm.enqueue(
      act('echo', { message: 'honey is sweet' }, 'Echo the phrase'),
      act('done', { success: true, answer: 'echo: honey is sweet' }),
    );
    const accepted = await h.http('POST', `/api/v1/agent-market/agents/${agentId}/run`, {
      apiKey: consumer.apiKey,
      body: { inputs: { phrase: 'honey is sweet' } },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const run = await h.waitForJob(consumer.apiKey, `/api/v1/agent-market/runs/${accepted.body.jobId}`);
    assert.equal(run.status, 'completed', run.error);

    // The private tool was offered to the model, called once with the sealed params (the server
    // refuses calls without its bearer token), and its answer is the step's outcome.
    const decisions = h.llm.requests.slice(seen).filter(isAgentDecision);
    assert.ok(toolNames(decisions[0]).includes('echo'), toolNames(decisions[0]).join(','));
    assert.equal(mcp.toolRuns('echo') - echoesBefore, 1);
    const outcome = run.result.steps.flatMap((s: any) => s.outcomes).find((o: any) => o.action.startsWith('echo'));
    assert.ok(outcome?.ok && /echo: honey is sweet/.test(outcome.message), JSON.stringify(run.result.steps));
    assert.deepEqual(
      run.toolCalls.map((c: any) => [c.index, c.tool, c.status]),
      [[1, 'echo', 'completed']],
    );
    assert.equal(run.usage.toolCalls, 1);

    // The params and the prompts reach the tool server and the model only.
    const consumerView =
      JSON.stringify(run) +
      JSON.stringify(
        (await h.http('GET', `/api/v1/agent-market/agents/${agentId}`, { apiKey: consumer.apiKey })).body,
      ) +
      JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey: consumer.apiKey })).body) +
      JSON.stringify((await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: consumer.apiKey })).body);
    const ownerView = JSON.stringify(
      (await h.http('GET', `/api/v1/agent-market/submissions/${created.body.id}`, { apiKey: agentProvider.apiKey }))
        .body,
    );
    for (const secret of [MCP_TOKEN, ...Object.values(secrets)])
      assert.ok(!consumerView.includes(secret), `${secret} visible to the consumer`);
    assert.ok(!ownerView.includes(MCP_TOKEN), "the owner's view masks the params");
    assert.ok(!capturedOutput().includes(MCP_TOKEN));
    assert.deepEqual(
      await workflowsHolding(h.client, [`agent-market-${run.id}`], MCP_TOKEN),
      [],
      'nor in the workflow history',
    );
  });

  it('a forum automation calls a custom MCP tool; its params never show', async function () {
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const creds = {
      forumClientId: 'sel-client',
      forumClientSecret: 'sel-secret-zzz',
      forumUsername: 'sel_poster',
      forumPassword: 'sel-pass-yyy',
    };
    h.forum.addApp({ clientId: creds.forumClientId, clientSecret: creds.forumClientSecret });
    h.forum.addUser({ username: creds.forumUsername, password: creds.forumPassword });
    const account = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: { platform: 'forum', name: 'Selection tools', credentials: creds },
    });
    assert.equal(account.status, 201, JSON.stringify(account.body));

    const echoesBefore = mcp.toolRuns('echo');
    const seen = h.llm.requests.length;
    h.llm.enqueue(
      act('echo', { message: 'bee fact of the day' }, 'Fetch a fact'),
      act(
        'submit_post',
        { community: 'selection_tools', title: 'Bee fact', text: 'echo: bee fact of the day' },
        'Post it',
      ),
      act('done', { success: true, answer: 'posted' }),
    );
    const response = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: {
        name: 'Facts with tools',
        cron: '0 9 * * 1',
        task: 'Fetch a bee fact with the echo tool and post it to r/selection_tools',
        automation_type: 'forum-agent',
        forum: { mode: 'saved', accountIds: [account.body.account.id] },
        custom_mcps: [
          {
            type: 'remote_mcp',
            name: 'Echo server',
            source_url: mcp.url,
            tool_names: ['echo'],
            params: { Authorization: `Bearer ${MCP_TOKEN}` },
          },
        ],
      },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const automationId = response.body.automation.id as string;
    let job;
    for (const deadline = Date.now() + 60_000; ;) {
      job = await h.db
        .selectFrom('jobs')
        .selectAll()
        .where('kind', '=', 'automation')
        .where(sql`request->>'automationId'`, '=', automationId)
        .executeTakeFirst();
      if (job && (job.status === 'completed' || job.status === 'failed')) break;
      if (Date.now() > deadline) throw new Error(`the run did not finish: ${JSON.stringify(job)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(job.status, 'completed', job.error ?? '');
    await h.client.schedule.getHandle(`automation-${automationId}`).delete();

    const decisions = h.llm.requests.slice(seen).filter(isAgentDecision);
    assert.ok(
      toolNames(decisions[0]).includes('echo') && toolNames(decisions[0]).includes('submit_post'),
      toolNames(decisions[0]).join(','),
    );
    assert.equal(mcp.toolRuns('echo') - echoesBefore, 1);
    assert.ok(h.forum.posts().some((p) => p.title === 'Bee fact' && p.community === 'selection_tools'));
    assert.ok(
      job.logs.some((l) => /tool call 1: Echo server \/ echo → ok/.test(l)),
      job.logs.join('\n'),
    );
    const steps = (job.result as any).steps;
    assert.ok(
      steps.some((s: any) => s.outcomes.some((o: any) => o.ok && /echo: bee fact of the day/.test(o.message))),
      JSON.stringify(steps),
    );
    const calls = await h.db.selectFrom('agent_tool_calls').selectAll().where('job_id', '=', job.id).execute();
    assert.deepEqual(
      calls.map((c) => [c.call_index, c.source, c.tool, c.status]),
      [[1, 'Echo server', 'echo', 'completed']],
    );

    const visible =
      JSON.stringify(response.body) +
      JSON.stringify((await h.http('GET', '/api/v1/automations', { apiKey })).body) +
      JSON.stringify((await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey })).body) +
      JSON.stringify(job) +
      JSON.stringify(await h.db.selectFrom('automations').selectAll().where('id', '=', automationId).execute());
    assert.ok(!visible.includes(MCP_TOKEN), 'the params are in no response, log or row');
    assert.ok(!capturedOutput().includes(MCP_TOKEN));
    assert.deepEqual(await workflowsHolding(h.client, [job.workflow_id], MCP_TOKEN), [], 'nor in the workflow history');
  });

  it('leaves the books balanced', async function () {
    assert.deepEqual(await findLedgerProblems(h.db), []);
  });
});
