import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useHarness, type Harness } from '../support/stack/harness';
import { admin, adminRaw, createSubmission, storeValidation, submissionBody, weatherTools } from '../support/market';

const SUBMISSIONS = '/api/v1/mcp-market/submissions';
const CATALOGUE = '/api/v1/mcp-market/mcps';

describe('tool market review, revisions and the public listing', function () {
  let h: Harness;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  /** The admin API the CLI talks to (the CLI itself is exercised in the tests above it). */
  async function review(id: string, action: 'approve' | 'reject' | 'disable', reason?: string) {
    const response = await h.http('POST', `/admin/market/mcp/submissions/${id}/review`, {
      headers: { authorization: `Bearer ${h.config.adminToken}` },
      body: { action, reason },
    });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body;
  }

  async function submitted(apiKey: string, userId: string, overrides: Record<string, unknown> = {}) {
    const validation = await storeValidation(h, userId);
    const created = await createSubmission(h, apiKey, submissionBody(validation, overrides));
    const response = await h.http('POST', `${SUBMISSIONS}/${created.id}/submit`, { apiKey });
    assert.equal(response.status, 200);
    return { ...created, validation };
  }

  it('walks draft → pending_review → rejected → draft → pending_review → approved → disabled with the admin CLI', async function () {
    this.timeout(120_000);
    const provider = await h.createUser();
    const secret = `upstream-${randomUUID()}`;
    const entry = await submitted(provider.apiKey, provider.userId, { staticConfig: { token: secret } });

    // The queue of the whole run can hold more than a page: search it for this test's own submission.
    const pending = await admin(h, [
      'submissions',
      '--market',
      'mcp',
      '--status',
      'pending_review',
      '--search',
      entry.id,
    ]);
    const listed = pending.submissions.find((s: any) => s.id === entry.id);
    assert.ok(listed, 'the pending submission is listed');
    assert.equal(listed.ownerId, provider.userId);
    assert.deepEqual(listed.toolNames, ['get_weather', 'get_forecast', 'air_quality']);
    assert.ok(!JSON.stringify(pending).includes(secret), 'the review list never shows staticConfig');

    const rejected = await admin(h, [
      'review',
      '--market',
      'mcp',
      '--submission',
      entry.id,
      '--reject',
      '--reason',
      'Describe the units of the forecast',
    ]);
    assert.equal(rejected.status, 'rejected');
    const seen = await h.http('GET', `${SUBMISSIONS}/${entry.id}`, { apiKey: provider.apiKey });
    assert.equal(seen.body.status, 'rejected');
    assert.equal(seen.body.reviewReason, 'Describe the units of the forecast');
    assert.equal((await h.http('GET', `${CATALOGUE}/${entry.id}`, { apiKey: provider.apiKey })).status, 404);

    const updated = await h.http('PUT', `${SUBMISSIONS}/${entry.id}`, {
      apiKey: provider.apiKey,
      body: submissionBody(entry.validation, {
        slug: entry.slug,
        description: 'Forecasts in °C and km/h',
        staticConfig: { token: secret },
      }),
    });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.status, 'draft');
    assert.equal(
      (await h.http('POST', `${SUBMISSIONS}/${entry.id}/submit`, { apiKey: provider.apiKey })).body.status,
      'pending_review',
    );

    const approved = await admin(h, ['review', '--market', 'mcp', '--submission', entry.id, '--approve']);
    assert.equal(approved.status, 'approved');
    assert.equal(approved.live, true);
    assert.match(approved.approvedToolsHash, /^[0-9a-f]{64}$/);

    const owner = await h.http('GET', `${SUBMISSIONS}/${entry.id}`, { apiKey: provider.apiKey });
    assert.equal(owner.body.approvedToolsHash, approved.approvedToolsHash);
    const update = await h.http('PUT', `${SUBMISSIONS}/${entry.id}`, {
      apiKey: provider.apiKey,
      body: submissionBody(entry.validation, { slug: entry.slug }),
    });
    assert.equal(update.status, 409, 'an approved entry changes only through a revision');

    const consumer = await h.createUser();
    const listing = await h.http('GET', `${CATALOGUE}/${entry.id}`, { apiKey: consumer.apiKey });
    assert.equal(listing.status, 200);
    assert.deepEqual(Object.keys(listing.body).sort(), [
      'description',
      'iconUrl',
      'id',
      'monetizationStrategy',
      'name',
      'pricingEvents',
      'requiredUserParamsSchema',
      'slug',
      'tools',
      'type',
    ]);
    const text = JSON.stringify(listing.body);
    for (const hidden of [secret, entry.validation.url, provider.userId, entry.validation.sourceFingerprint])
      assert.ok(!text.includes(hidden), `public entry leaks ${hidden}`);
    assert.equal(listing.body.description, 'Forecasts in °C and km/h');

    const disabled = await admin(h, [
      'review',
      '--market',
      'mcp',
      '--submission',
      entry.id,
      '--disable',
      '--reason',
      'Upstream is down',
    ]);
    assert.equal(disabled.status, 'disabled');
    assert.equal((await h.http('GET', `${CATALOGUE}/${entry.id}`, { apiKey: consumer.apiKey })).status, 404);
    assert.equal(
      (await h.http('GET', `${SUBMISSIONS}/${entry.id}`, { apiKey: provider.apiKey })).body.reviewReason,
      'Upstream is down',
    );
  });

  it('refuses transitions the state forbids, and bad CLI usage, with clear errors', async function () {
    this.timeout(120_000);
    const provider = await h.createUser();
    const validation = await storeValidation(h, provider.userId);
    const draft = await createSubmission(h, provider.apiKey, submissionBody(validation));
    const early = await adminRaw(h, ['review', '--market', 'mcp', '--submission', draft.id, '--approve']);
    assert.equal(early.code, 1);
    assert.match(early.stderr, /409: The submission is draft: only a submission pending review can be approved/);
    const noReason = await adminRaw(h, ['review', '--market', 'mcp', '--submission', draft.id, '--reject']);
    assert.equal(noReason.code, 2);
    assert.match(noReason.stderr, /--reject needs --reason/);
    const two = await adminRaw(h, ['review', '--market', 'mcp', '--submission', draft.id, '--approve', '--disable']);
    assert.equal(two.code, 2);
    const badMarket = await adminRaw(h, ['submissions', '--market', 'tools']);
    assert.equal(badMarket.code, 2);
    const auth = { authorization: `Bearer ${h.config.adminToken}` };
    const wrongMarket = await h.http('POST', `/admin/market/agent/submissions/${draft.id}/review`, {
      headers: auth,
      body: { action: 'approve' },
    });
    assert.equal(wrongMarket.status, 404, 'a tool-market id is unknown to the agent market');
    const unknown = await h.http('POST', `/admin/market/mcp/submissions/${randomUUID()}/review`, {
      headers: auth,
      body: { action: 'approve' },
    });
    assert.equal(unknown.status, 404);
    const noMarket = await h.http('GET', '/admin/market/tools/submissions', { headers: auth });
    assert.equal(noMarket.status, 400);
    const disableDraft = await h.http('POST', `/admin/market/mcp/submissions/${draft.id}/review`, {
      headers: auth,
      body: { action: 'disable' },
    });
    assert.equal(disableDraft.status, 409);
    assert.equal(disableDraft.body.error.code, 'invalid_state');
    const noToken = await h.http('GET', '/admin/market/mcp/submissions');
    assert.equal(noToken.status, 401);
    const agent = await admin(h, ['submissions', '--market', 'agent', '--search', draft.id]);
    assert.equal(agent.market, 'agent');
    assert.ok(
      !agent.submissions.some((s: { id: string }) => s.id === draft.id),
      "tool-market submissions are not in the agent market's queue",
    );
  });

  it('searches the review queue with q (name or slug contains, or the id or listing id), whatever else is queued', async function () {
    this.timeout(120_000);
    const auth = { authorization: `Bearer ${h.config.adminToken}` };
    const provider = await h.createUser();
    const tag = randomUUID().slice(0, 8);
    const mine = await submitted(provider.apiKey, provider.userId, { name: `Queue Search ${tag} One` });
    const other = await submitted(provider.apiKey, provider.userId, { name: `Queue Search ${tag} Two` });
    const queue = (query: string) => h.http('GET', `/admin/market/mcp/submissions?${query}`, { headers: auth });
    const ids = (response: { body: { submissions: { id: string }[] } }) =>
      response.body.submissions.map((s) => s.id).sort();

    const byName = await queue(`status=pending_review&q=${encodeURIComponent(`queue search ${tag}`)}`);
    assert.equal(byName.status, 200, JSON.stringify(byName.body));
    assert.deepEqual(ids(byName), [mine.id, other.id].sort(), 'the name matches case-insensitively');
    assert.equal(byName.body.meta.total, 2, 'the total counts the matches only');
    const one = await queue(`q=${encodeURIComponent(`${tag} One`)}`);
    assert.deepEqual(ids(one), [mine.id]);
    const bySlug = await queue(`q=${encodeURIComponent(mine.slug)}`);
    assert.deepEqual(ids(bySlug), [mine.id]);
    const byId = await queue(`q=${mine.id.toUpperCase()}`);
    assert.deepEqual(ids(byId), [mine.id], 'a submission id finds that submission');
    const byListing = await queue(`q=${other.publicId}`);
    assert.deepEqual(ids(byListing), [other.id], "a listing's public id finds its submissions");
    const wildcard = await queue(`q=${encodeURIComponent(`${tag}%`)}`);
    assert.deepEqual(ids(wildcard), [], 'LIKE wildcards are matched as text');
    const nothing = await queue(`q=${randomUUID()}`);
    assert.deepEqual(ids(nothing), []);
    assert.equal(nothing.body.meta.total, 0);
    const agentMarket = await h.http('GET', `/admin/market/agent/submissions?q=${mine.id}`, { headers: auth });
    assert.deepEqual(ids(agentMarket), [], 'the other market has no such submission');
    for (const bad of ['q=', `q=${'a'.repeat(101)}`]) {
      const refused = await queue(bad);
      assert.equal(refused.status, 400, bad);
      assert.equal(refused.body.error.code, 'validation_failed');
    }

    const cli = await admin(h, ['submissions', '--market', 'mcp', '--search', `queue search ${tag} two`]);
    assert.deepEqual(
      cli.submissions.map((s: { id: string }) => s.id),
      [other.id],
      'the admin CLI searches with --search',
    );
  });

  it('approves a revision in place of the live listing under the same public id, keeping the history', async function () {
    this.timeout(120_000);
    const provider = await h.createUser();
    const consumer = await h.createUser();
    const first = await submitted(provider.apiKey, provider.userId, {
      staticConfig: { region: 'eu' },
      tools: [{ toolName: 'get_weather', displayName: 'Weather' }],
    });
    await admin(h, ['review', '--market', 'mcp', '--submission', first.id, '--approve']);

    const revision = await h.http('POST', `${SUBMISSIONS}/${first.id}/revisions`, { apiKey: provider.apiKey });
    assert.equal(revision.status, 201);
    const revisionId = revision.body.id;
    const draft = (await h.http('GET', `${SUBMISSIONS}/${revisionId}`, { apiKey: provider.apiKey })).body;
    assert.equal(draft.status, 'draft');
    assert.equal(draft.parentEntryId, first.id);
    assert.equal(draft.publicId, first.id);
    assert.equal(draft.slug, first.slug);
    assert.deepEqual(draft.staticConfig, { region: '********' }, 'the revision copies the sealed staticConfig');
    assert.equal(draft.approvedToolsHash, null);

    // The owner edits the revision (a new validation of a changed source), keeping the slug.
    const tools = [
      ...weatherTools(),
      {
        name: 'uv_index',
        description: 'Returns the ultraviolet index forecast for a city for today and tomorrow.',
        inputSchema: { type: 'object', properties: { city: { type: 'string', description: 'City name' } } },
      },
    ];
    const newValidation = await storeValidation(h, provider.userId, { url: first.validation.url, tools });
    const edited = await h.http('PUT', `${SUBMISSIONS}/${revisionId}`, {
      apiKey: provider.apiKey,
      body: submissionBody(newValidation, {
        slug: first.slug,
        name: 'Weather Plus',
        tools: [
          { toolName: 'get_weather', displayName: 'Weather' },
          { toolName: 'uv_index', displayName: 'UV' },
        ],
      }),
    });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    assert.equal(
      (await h.http('GET', `${CATALOGUE}/${first.id}`, { apiKey: consumer.apiKey })).body.tools.length,
      1,
      'the live listing is untouched until approval',
    );
    await h.http('POST', `${SUBMISSIONS}/${revisionId}/submit`, { apiKey: provider.apiKey });
    const approved = await admin(h, ['review', '--market', 'mcp', '--submission', revisionId, '--approve']);
    assert.equal(approved.publicId, first.id);

    const live = await h.http('GET', `${CATALOGUE}/${first.id}`, { apiKey: consumer.apiKey });
    assert.equal(live.body.id, first.id, 'same public id');
    assert.equal(live.body.name, 'Weather Plus');
    assert.deepEqual(
      live.body.tools.map((t: any) => t.toolName),
      ['get_weather', 'uv_index'],
    );
    const search = await h.http('GET', `${CATALOGUE}?q=${encodeURIComponent(first.slug.split('-').pop()!)}`, {
      apiKey: consumer.apiKey,
    });
    assert.equal(search.body.meta.total, 0, 'the old name is gone from the catalogue');
    const byName = await h.http('GET', `${CATALOGUE}?q=uv_index&pageSize=100`, { apiKey: consumer.apiKey });
    assert.equal(
      byName.body.mcps.filter((m: any) => m.id === first.id).length,
      1,
      'the catalogue shows the listing once',
    );

    const history = await h.http('GET', SUBMISSIONS, { apiKey: provider.apiKey });
    const mine = history.body.submissions.filter((s: any) => s.publicId === first.id);
    assert.deepEqual(
      mine.map((s: any) => [s.id, s.status, s.live]).sort(),
      [
        [first.id, 'approved', false],
        [revisionId, 'approved', true],
      ].sort(),
    );
    const old = await h.http('POST', `${SUBMISSIONS}/${first.id}/revisions`, { apiKey: provider.apiKey });
    assert.equal(old.status, 409, 'only the live entry can be revised');
  });

  it('refuses to approve a revision whose parent is no longer live', async function () {
    this.timeout(120_000);
    const provider = await h.createUser();
    const first = await submitted(provider.apiKey, provider.userId);
    await review(first.id, 'approve');
    const [r1, r2] = [
      (await h.http('POST', `${SUBMISSIONS}/${first.id}/revisions`, { apiKey: provider.apiKey })).body.id,
      (await h.http('POST', `${SUBMISSIONS}/${first.id}/revisions`, { apiKey: provider.apiKey })).body.id,
    ];
    for (const id of [r1, r2]) await h.http('POST', `${SUBMISSIONS}/${id}/submit`, { apiKey: provider.apiKey });
    await review(r1, 'approve');
    const stale = await adminRaw(h, ['review', '--market', 'mcp', '--submission', r2, '--approve']);
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /409: The entry this revision was made from is no longer the live listing/);
    const rows = await h.db
      .selectFrom('market_submissions')
      .select(['id', 'live'])
      .where('listing_id', '=', first.id)
      .where('live', '=', true)
      .execute();
    assert.deepEqual(
      rows.map((r) => r.id),
      [r1],
    );
  });

  it('lists approved entries only, with full-text search, a monetization filter and pages', async function () {
    this.timeout(120_000);
    const provider = await h.createUser();
    const consumer = await h.createUser();
    const tag = randomUUID().replace(/-/g, '').replace(/[0-9]/g, '').slice(0, 8);
    const names = [`Tidal ${tag} charts`, `Quasar ${tag} radio`, `Tidal ${tag} gauges`];
    const ids: string[] = [];
    for (const name of names) {
      const entry = await submitted(provider.apiKey, provider.userId, {
        name,
        slug: null,
        description: `Data about ${name.split(' ')[2]}`,
      });
      await admin(h, ['review', '--market', 'mcp', '--submission', entry.id, '--approve']);
      ids.push(entry.id);
    }
    const fixedValidation = await storeValidation(h, provider.userId);
    const fixed = await createSubmission(
      h,
      provider.apiKey,
      submissionBody(fixedValidation, {
        name: `Paid ${tag} weather`,
        description: 'Paid lookups',
        monetizationStrategy: 'tool_call_fixed',
        tools: [{ toolName: 'get_weather', displayName: 'Weather', clientPriceUsd: 0.001 }],
      }),
    );
    await h.http('POST', `${SUBMISSIONS}/${fixed.id}/submit`, { apiKey: provider.apiKey });
    await review(fixed.id, 'approve');
    const hidden = await submitted(provider.apiKey, provider.userId, { name: `Tidal ${tag} pending` });

    const search = async (query: string) =>
      (await h.http('GET', `${CATALOGUE}?${query}`, { apiKey: consumer.apiKey })).body;
    const all = await search(`q=${tag}`);
    assert.equal(all.meta.total, 4);
    assert.ok(!all.mcps.some((m: any) => m.id === hidden.id), 'pending entries are not listed');
    assert.deepEqual((await search(`q=tidal ${tag}`)).mcps.map((m: any) => m.id).sort(), [ids[0], ids[2]].sort());
    assert.deepEqual(
      (await search(`q=${tag} gau`)).mcps.map((m: any) => m.id),
      [ids[2]],
      'the last word matches as a prefix',
    );
    assert.deepEqual(
      (await search(`q=${tag} radio`)).mcps.map((m: any) => m.id),
      [ids[1]],
    );
    assert.equal((await search(`q=${tag} air_quality`)).meta.total, 3, 'tool names are searchable');
    const paid = await search(`q=${tag}&monetizationStrategy=tool_call_fixed`);
    assert.deepEqual(
      paid.mcps.map((m: any) => [m.id, m.tools[0].clientPriceUsd]),
      [[fixed.id, 0.001]],
    );
    const page1 = await search(`q=${tag}&pageSize=3&page=1`);
    const page2 = await search(`q=${tag}&pageSize=3&page=2`);
    assert.deepEqual(page1.meta, { page: 1, pageSize: 3, total: 4, totalPages: 2 });
    assert.equal(page2.mcps.length, 1);
    assert.equal(new Set([...page1.mcps, ...page2.mcps].map((m: any) => m.id)).size, 4);
    const newest = await search('pageSize=100');
    assert.ok(
      newest.mcps.findIndex((m: any) => m.id === fixed.id) < newest.mcps.findIndex((m: any) => m.id === ids[0]),
      'without q, newest approval first',
    );
    assert.equal(
      (await h.http('GET', `${CATALOGUE}?monetizationStrategy=gratis`, { apiKey: consumer.apiKey })).status,
      400,
    );
    assert.equal((await h.http('GET', `${CATALOGUE}/${hidden.id}`, { apiKey: consumer.apiKey })).status, 404);
  });
});
