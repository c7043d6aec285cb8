import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { useHarness, type Harness } from '../support/stack/harness';
import {
  admin,
  adminRaw,
  approvedEntry,
  completeVerification,
  createSubmission,
  storeValidation,
  submissionBody,
} from '../support/market';

/** What an operator sees and decides in the review of both markets (issue 20, section 7). */
describe('market review: the operator sees prices and parameters, and a disabled listing stays disabled', function () {
  let h: Harness;
  let provider: { userId: string; apiKey: string };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    provider = await h.createUser({ creditUsd: 5 });
  });

  async function submit(body: Record<string, unknown>) {
    const created = await createSubmission(h, provider.apiKey, body);
    const sent = await h.http('POST', `/api/v1/mcp-market/submissions/${created.id}/submit`, {
      apiKey: provider.apiKey,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    return created;
  }

  it("shows each tool's prices, the pricing events and the consumer-parameter schema (never staticConfig)", async function () {
    const secret = `static-${randomBytes(6).toString('hex')}`;
    const paramsSchema = {
      type: 'object',
      properties: {
        units: { type: 'string', enum: ['metric', 'imperial'] },
        apiKey: { type: 'string', writeOnly: true },
      },
      required: ['apiKey'],
    };
    const fixed = await submit(
      submissionBody(await storeValidation(h, provider.userId), {
        monetizationStrategy: 'tool_call_fixed',
        tools: [
          {
            toolName: 'get_weather',
            displayName: 'Weather now',
            description: 'Current conditions for any city, in your units.',
            clientPriceUsd: 0.02,
            providerRevenueUsd: 0.015,
          },
          { toolName: 'get_forecast', displayName: 'Forecast', clientPriceUsd: 0.05 },
        ],
        requiredUserParamsSchema: paramsSchema,
        staticConfig: { token: secret },
      }),
    );
    const pending = await admin(h, ['submissions', '--market', 'mcp', '--status', 'pending_review']);
    const listed = pending.submissions.find((s: { id: string }) => s.id === fixed.id);
    assert.ok(listed, 'listed for review');
    const reviewed = await admin(h, ['review', '--market', 'mcp', '--submission', fixed.id, '--approve']);
    for (const view of [listed, reviewed]) {
      assert.equal(view.monetizationStrategy, 'tool_call_fixed');
      const prices = view.tools.map((t: Record<string, unknown>) => [
        t.toolName,
        t.clientPriceUsd,
        t.providerRevenueUsd ?? null,
        t.isEnabled,
      ]);
      assert.deepEqual(prices, [
        ['get_weather', 0.02, 0.015, true],
        ['get_forecast', 0.05, null, true],
      ]);
      assert.deepEqual(view.requiredUserParamsSchema, paramsSchema);
      // What buyers (and models) will read, beside the upstream's own text that the rug-pull gate watches.
      const weather = view.tools.find((t: { toolName: string }) => t.toolName === 'get_weather');
      assert.equal(weather.description, 'Current conditions for any city, in your units.');
      assert.equal(
        weather.upstreamDescription,
        'Returns the current weather (temperature, wind, conditions) for a city by name.',
      );
      assert.ok(!JSON.stringify(view).includes(secret), 'no staticConfig in the review view');
    }

    const validation = await storeValidation(h, provider.userId);
    const events = [
      { eventName: 'page.scraped', title: 'Page scraped', unitPriceUsd: 0.003, providerRevenueUsd: 0.002 },
    ];
    const eventVerificationId = await completeVerification(h, provider.apiKey, validation.sourceFingerprint, [
      'page.scraped',
    ]);
    const metered = await submit(
      submissionBody(validation, {
        monetizationStrategy: 'provider_event',
        pricingEvents: events,
        eventVerificationId,
      }),
    );
    const meteredView = await admin(h, ['review', '--market', 'mcp', '--submission', metered.id, '--approve']);
    assert.deepEqual(
      meteredView.pricingEvents.map((e: Record<string, unknown>) => [
        e.eventName,
        e.unitPriceUsd,
        e.providerRevenueUsd,
      ]),
      [['page.scraped', 0.003, 0.002]],
    );
    assert.deepEqual(meteredView.requiredUserParamsSchema, {}, 'no consumer parameters');
  });

  it("shows an agent's market tools with their prices and the agent's cap per run", async function () {
    const entry = await approvedEntry(h, provider, {
      monetizationStrategy: 'tool_call_fixed',
      tools: [
        { toolName: 'get_weather', displayName: 'Weather now', clientPriceUsd: 0.02 },
        { toolName: 'get_forecast', displayName: 'Forecast', clientPriceUsd: 0.05 },
      ],
    });
    const body = {
      name: `Priced agent ${randomBytes(3).toString('hex')}`,
      priceUsd: 0,
      suggestedLlmProvider: 'service',
      suggestedLlmModel: 'gpt-4o-mini',
      runMode: 'task',
      systemPrompt: 'Be brief.',
      mcpSelections: [{ mcp_id: entry.entryId, tool_names: ['get_forecast'], max_total_usd: 0.25 }],
    };
    const created = await h.http('POST', '/api/v1/agent-market/submissions', { apiKey: provider.apiKey, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(
      (await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, { apiKey: provider.apiKey }))
        .status,
      200,
    );
    const pending = await admin(h, ['submissions', '--market', 'agent', '--status', 'pending_review']);
    const view = pending.submissions.find((s: { id: string }) => s.id === created.body.id);
    assert.ok(view, 'listed for review');
    assert.deepEqual(
      view.marketTools.map(
        (m: { mcpId: string; tools: { toolName: string; clientPriceUsd: number }[]; maxTotalUsd: number }) => [
          m.mcpId,
          m.tools.map((t) => [t.toolName, t.clientPriceUsd]),
          m.maxTotalUsd,
        ],
      ),
      [[entry.entryId, [['get_forecast', 0.05]], 0.25]],
    );
  });

  it('refuses to approve a tool-market revision made before its listing was disabled (409 listing_disabled); the listing stays off', async function () {
    const entry = await approvedEntry(h, provider);
    const revision = await h.http('POST', `/api/v1/mcp-market/submissions/${entry.submissionId}/revisions`, {
      apiKey: provider.apiKey,
    });
    assert.equal(revision.status, 201, JSON.stringify(revision.body));
    assert.equal(
      (await h.http('POST', `/api/v1/mcp-market/submissions/${revision.body.id}/submit`, { apiKey: provider.apiKey }))
        .status,
      200,
    );
    assert.equal(
      (await admin(h, ['review', '--market', 'mcp', '--submission', entry.submissionId, '--disable'])).status,
      'disabled',
    );

    const approval = await adminRaw(h, ['review', '--market', 'mcp', '--submission', revision.body.id, '--approve']);
    assert.notEqual(approval.code, 0, 'the approval is refused');
    assert.match(approval.stderr, /409: An operator disabled this listing/);
    assert.equal(
      (await h.http('GET', `/api/v1/mcp-market/mcps/${entry.entryId}`, { apiKey: provider.apiKey })).status,
      404,
      'still off the market',
    );
    const own = await h.http('GET', `/api/v1/mcp-market/submissions/${revision.body.id}`, { apiKey: provider.apiKey });
    assert.equal(own.body.status, 'pending_review', 'the revision is left as it was');
    assert.equal(
      (
        await admin(h, [
          'review',
          '--market',
          'mcp',
          '--submission',
          revision.body.id,
          '--reject',
          '--reason',
          'The listing is disabled',
        ])
      ).status,
      'rejected',
      'the operator can still reject it',
    );
  });

  it('refuses the same for an agent-market revision', async function () {
    const body = {
      name: `Disabled agent ${randomBytes(3).toString('hex')}`,
      priceUsd: 0,
      suggestedLlmProvider: 'service',
      suggestedLlmModel: 'gpt-4o-mini',
      runMode: 'task',
      systemPrompt: 'Be brief.',
    };
    const created = await h.http('POST', '/api/v1/agent-market/submissions', { apiKey: provider.apiKey, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(
      (await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, { apiKey: provider.apiKey }))
        .status,
      200,
    );
    assert.equal(
      (await admin(h, ['review', '--market', 'agent', '--submission', created.body.id, '--approve'])).status,
      'approved',
    );
    const revision = await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/revisions`, {
      apiKey: provider.apiKey,
    });
    assert.equal(revision.status, 201);
    assert.equal(
      (await h.http('POST', `/api/v1/agent-market/submissions/${revision.body.id}/submit`, { apiKey: provider.apiKey }))
        .status,
      200,
    );
    assert.equal(
      (await admin(h, ['review', '--market', 'agent', '--submission', created.body.id, '--disable'])).status,
      'disabled',
    );

    const approval = await h.http('POST', `/admin/market/agent/submissions/${revision.body.id}/review`, {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { action: 'approve' },
    });
    assert.equal(approval.status, 409, JSON.stringify(approval.body));
    assert.equal(approval.body.error.code, 'listing_disabled');
    assert.equal(
      (await h.http('GET', `/api/v1/agent-market/agents/${created.body.publicId}`, { apiKey: provider.apiKey })).status,
      404,
    );
  });
});
