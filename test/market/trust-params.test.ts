import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { marketCallPath } from '../../api/services/market/call-path';
import { createMarketSelectionCaller } from '../../activities/tools/market';
import { admitJob } from '../../db/repos/jobs';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { sealRequestSecrets, type RequestSecrets } from '../../lib/request-secrets';
import { act } from '../support/agent-script';
import { useHarness, type Harness } from '../support/stack/harness';
import { approvedEntry } from '../support/market';
import {
  approvedServiceEntry,
  startMarketProvider,
  type MarketProviderService,
} from '../support/fakes/market-provider';

/**
 * Issue 20, "params only where declared": a consumer's params reach an entry only under the names
 * its requiredUserParamsSchema declares, valid for that schema, at every door they come in by; an
 * entry without parameters takes none. What an attacker sends: the provider's charge-token header
 * (so the provider's own token arrives doubled and its charge fails), or a value that bends the
 * provider's URL.
 */
describe('market trust: consumer params only where the entry declares them', function () {
  this.timeout(120_000);
  let h: Harness;
  let provider: { userId: string; apiKey: string };
  let consumer: { userId: string; apiKey: string };
  /** An approved entry without parameters, and one that declares `region` (eu or us). */
  let bare: string;
  let regional: string;
  const REGION_SCHEMA = {
    type: 'object',
    properties: { region: { type: 'string', enum: ['eu', 'us'] } },
    required: ['region'],
  };
  const SMUGGLED = { 'X-Service-Charge-Token': 'x' };
  const BENT = { region: 'attacker.example/#' };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    provider = await h.createUser({ creditUsd: 0 });
    consumer = await h.createUser({ creditUsd: 5 });
    bare = (await approvedEntry(h, provider)).entryId;
    regional = (await approvedEntry(h, provider, { requiredUserParamsSchema: REGION_SCHEMA })).entryId;
  });

  const selection = (mcpId: string, params: Record<string, unknown>) => ({
    mcp_id: mcpId,
    tool_names: ['get_weather'],
    params,
  });

  function assertInvalidParams(response: { status: number; body: any }, path: string) {
    assert.equal(response.status, 400, JSON.stringify(response.body));
    assert.equal(response.body.error.code, 'invalid_params', JSON.stringify(response.body));
    assert.ok(
      response.body.error.details.some((d: { path: string }) => d.path === path),
      `a detail at ${path}: ${JSON.stringify(response.body.error.details)}`,
    );
    assert.ok(response.body.error.requestId);
  }

  const jobsOf = async (userId: string) =>
    (await h.db.selectFrom('jobs').select('id').where('user_id', '=', userId).execute()).length;

  it('POST /mcp-market/mcps/{id}/credentials: only declared names, valid values', async function () {
    const credential = (entryId: string, params: Record<string, unknown>) =>
      h.http('POST', `/api/v1/mcp-market/mcps/${entryId}/credentials`, { apiKey: consumer.apiKey, body: { params } });
    const smuggled = await credential(bare, SMUGGLED);
    assertInvalidParams(smuggled, 'body/params/X-Service-Charge-Token');
    assert.match(smuggled.body.error.message, /X-Service-Charge-Token/);
    assertInvalidParams(await credential(bare, BENT), 'body/params/region');
    assertInvalidParams(await credential(regional, BENT), 'body/params/region');
    assertInvalidParams(await credential(regional, { region: 'eu', 'x-api-key': 'k' }), 'body/params/x-api-key');
    assertInvalidParams(await credential(regional, { region: 'eu', 'a/b': 'k' }), 'body/params/a~1b');
    assert.equal((await credential(regional, { region: 'eu' })).status, 201);
    assert.equal((await credential(bare, {})).status, 201);
  });

  it("POST /agents/run: market_mcps params beyond the entry's declaration are refused before anything runs", async function () {
    const before = await jobsOf(consumer.userId);
    const run = (market: unknown) =>
      h.http('POST', '/api/v1/agents/run', {
        apiKey: consumer.apiKey,
        body: { task: 'Weather in Lisbon', llm_model: 'gpt-4o-mini', market_mcps: [market] },
      });
    assertInvalidParams(await run(selection(bare, SMUGGLED)), 'body/market_mcps/0/params/X-Service-Charge-Token');
    assertInvalidParams(await run(selection(bare, BENT)), 'body/market_mcps/0/params/region');
    assertInvalidParams(
      await run(selection(regional, { region: 'eu', ...SMUGGLED })),
      'body/market_mcps/0/params/X-Service-Charge-Token',
    );
    assertInvalidParams(await run(selection(regional, BENT)), 'body/market_mcps/0/params/region');
    assertInvalidParams(await run(selection(regional, {})), 'body/market_mcps/0/params/region');
    assert.equal(await jobsOf(consumer.userId), before, 'no run was queued');
  });

  it('POST /agents and PATCH /agents/{id}: the stored agent keeps only declared params', async function () {
    const user = await h.createUser({ creditUsd: 5 });
    const stored = (market: unknown) => ({
      name: `Weather ${randomBytes(3).toString('hex')}`,
      cron: '0 0 1 1 *',
      task: 'Weather in Lisbon',
      llm_model: 'gpt-4o-mini',
      market_mcps: [market],
    });
    assertInvalidParams(
      await h.http('POST', '/api/v1/agents', { apiKey: user.apiKey, body: stored(selection(bare, SMUGGLED)) }),
      'body/market_mcps/0/params/X-Service-Charge-Token',
    );
    assertInvalidParams(
      await h.http('POST', '/api/v1/agents', {
        apiKey: user.apiKey,
        body: stored(selection(regional, { ...BENT, extra: 1 })),
      }),
      'body/market_mcps/0/params/extra',
    );
    assert.equal(
      (await h.db.selectFrom('automations').select('id').where('user_id', '=', user.userId).execute()).length,
      0,
      'nothing stored',
    );

    // A stored agent (its first run answered at once), then a PATCH that would add a smuggled header.
    h.llm.enqueue(act('done', { success: true, answer: 'sunny' }));
    const created = await h.http('POST', '/api/v1/agents', {
      apiKey: user.apiKey,
      body: { ...stored(selection(regional, { region: 'eu' })) },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.agent.id;
    await h.waitForJob(user.apiKey, `/api/v1/agents/runs/${await firstRunOf(id)}`);
    const patched = await h.http('PATCH', `/api/v1/agents/${id}`, {
      apiKey: user.apiKey,
      body: { market_mcps: [selection(regional, { region: 'eu', ...SMUGGLED })] },
    });
    assertInvalidParams(patched, 'body/market_mcps/0/params/X-Service-Charge-Token');
    assertInvalidParams(
      await h.http('PATCH', `/api/v1/agents/${id}`, {
        apiKey: user.apiKey,
        body: { market_mcps: [selection(bare, { region: 'eu' })] },
      }),
      'body/market_mcps/0/params/region',
    );
    const renamed = await h.http('PATCH', `/api/v1/agents/${id}`, { apiKey: user.apiKey, body: { name: 'Renamed' } });
    assert.equal(renamed.status, 200, 'the stored, declared params still pass');
    assert.deepEqual(renamed.body.agent.payload.market_mcps[0].params, { region: '[redacted]' });
  });

  async function firstRunOf(automationId: string): Promise<string> {
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
      const job = await h.db
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', 'custom-agent')
        .where(({ eb, ref }) => eb(ref('request', '->>').key('automationId' as never), '=', automationId))
        .executeTakeFirst();
      if (job) return job.id;
    }
    throw new Error('the first run was not queued');
  }

  it('POST /automations: market_mcps name approved entries, their tools and only their declared params', async function () {
    const user = await h.createUser({ creditUsd: 5 });
    const n = randomBytes(3).toString('hex');
    const credentials = {
      forumClientId: `trust-client-${n}`,
      forumClientSecret: `trust-secret-${n}-zzz`,
      forumUsername: `trust_poster_${n}`,
      forumPassword: `trust-pass-${n}-yyy`,
    };
    h.forum.addApp({ clientId: credentials.forumClientId, clientSecret: credentials.forumClientSecret });
    h.forum.addUser({ username: credentials.forumUsername, password: credentials.forumPassword });
    const automation = (market: unknown) => ({
      name: 'Weather post',
      cron: '0 9 * * 1',
      task: 'Post the weather',
      automation_type: 'forum-agent',
      forum: { mode: 'inline', credentials },
      market_mcps: [market],
    });
    const post = (market: unknown) =>
      h.http('POST', '/api/v1/automations', { apiKey: user.apiKey, body: automation(market) });
    assertInvalidParams(await post(selection(bare, SMUGGLED)), 'body/market_mcps/0/params/X-Service-Charge-Token');
    assertInvalidParams(await post(selection(regional, BENT)), 'body/market_mcps/0/params/region');
    const unknown = await post(selection('00000000-0000-4000-8000-000000000000', {}));
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.code, 'market_entry_not_found');
    const tool = await post({ ...selection(bare, {}), tool_names: ['launch_rockets'] });
    assert.equal(tool.body.error.code, 'market_tool_not_found');
    assert.equal(
      (await h.db.selectFrom('automations').select('id').where('user_id', '=', user.userId).execute()).length,
      0,
      'nothing stored',
    );
  });

  it("agent-market mcpSelections: a listing's selection sets only the parameters the tool entry declares", async function () {
    const submit = (params: Record<string, unknown>, mcpId = regional) =>
      h.http('POST', '/api/v1/agent-market/submissions', {
        apiKey: provider.apiKey,
        body: {
          name: `Weather agent ${randomBytes(3).toString('hex')}`,
          suggestedLlmProvider: 'service',
          suggestedLlmModel: 'gpt-4o-mini',
          runMode: 'task',
          systemPrompt: 'Report the weather.',
          mcpSelections: [selection(mcpId, params)],
        },
      });
    assertInvalidParams(await submit(SMUGGLED, bare), 'body/mcpSelections/0/params/X-Service-Charge-Token');
    assertInvalidParams(
      await submit({ region: 'eu', ...SMUGGLED }),
      'body/mcpSelections/0/params/X-Service-Charge-Token',
    );
    assertInvalidParams(await submit(BENT), 'body/mcpSelections/0/params/region');
    const good = await submit({ region: 'us' });
    assert.equal(good.status, 201, JSON.stringify(good.body));
  });

  describe('a selection stored before the rule', function () {
    let service: MarketProviderService;
    before(async () => (service = await startMarketProvider()));
    after(async () => service?.close());

    it('is refused when it is called (invalid_params naming the key): nothing reaches the provider, nothing is charged', async function () {
      const entry = await approvedServiceEntry(h, provider, service.url, {
        monetizationStrategy: 'tool_call_fixed',
        tools: [{ toolName: 'lookup_city', displayName: 'Look up a city', clientPriceUsd: 0.001 }],
        requiredUserParamsSchema: { type: 'object', properties: { region: { type: 'string' } }, required: ['region'] },
      });
      // As a run stored its selection before undeclared names were refused on entry.
      const admitted = await admitJob(h.db, {
        userId: consumer.userId,
        kind: 'agentic',
        request: {
          task: 'find city facts',
          market_mcps: [{ mcp_id: entry.entryId, tool_names: ['lookup_city'], params: { region: '[redacted]' } }],
        },
        webhookUrl: null,
        idempotencyKey: null,
        holdMaxMicros: 1,
        sealSecrets: (jobId) =>
          sealRequestSecrets(h.config.masterKey, jobId, {
            market_mcps_params: [{ region: 'us', 'x-smuggled': 'yes', ...SMUGGLED }],
          } as RequestSecrets),
      });
      assert.equal(admitted.outcome, 'created');
      const jobId = (admitted as { job: { id: string } }).job.id;
      const calls = service.toolCallHeaders().length;
      const call = createMarketSelectionCaller({
        db: h.db,
        config: h.config,
        callPath: marketCallPath(h.db, h.config.market, parseNetworkAllowlist('127.0.0.1,localhost')),
      });
      const outcome = await call({ jobId, index: 0, tool: 'lookup_city', args: { city: 'Lisbon' } });
      assert.equal(outcome.status, 'refused', JSON.stringify(outcome));
      assert.equal(outcome.status === 'refused' && outcome.code, 'invalid_params');
      assert.match(outcome.status === 'refused' ? outcome.message : '', /"x-smuggled"/);
      assert.equal(service.toolCallHeaders().length, calls, 'nothing reached the provider');
    });
  });
});
