import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { useHarness, type Harness } from '../support/stack/harness';
import { admin } from '../support/market';
import { loadConfig } from '../../lib/config';

const API = '/api/v1/agent-market/submissions';

/** Agent-market slugs held by drafts are released: when the draft is deleted, or when it was left untouched for MARKET_DRAFT_SLUG_DAYS. */
describe('agent market: draft slugs are not reserved forever', function () {
  let h: Harness;
  let squatter: { userId: string; apiKey: string };
  let builder: { userId: string; apiKey: string };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    squatter = await h.createUser();
    builder = await h.createUser();
  });

  const agent = (slug: string, overrides: Record<string, unknown> = {}) => ({
    name: `Agent ${slug}`,
    slug,
    priceUsd: 0,
    suggestedLlmProvider: 'service',
    suggestedLlmModel: 'gpt-4o-mini',
    runMode: 'task',
    systemPrompt: 'Be brief.',
    ...overrides,
  });
  const create = (apiKey: string, slug: string) => h.http('POST', API, { apiKey, body: agent(slug) });
  const code = (response: { status: number; body: any }) =>
    `${response.status} ${response.body?.error?.code ?? ''}`.trim();
  const freshSlug = () => `agent-${randomBytes(4).toString('hex')}`;

  /** What MARKET_DRAFT_SLUG_DAYS measures: how long ago the listing last changed (moved back in time, as waiting would). */
  async function age(listingId: string, days: number) {
    await sql`update market_submissions set updated_at = now() - make_interval(days => ${days}) where listing_id = ${listingId}::uuid`.execute(
      h.db,
    );
  }

  it('releases the slug when the owner deletes the draft (DELETE /agent-market/submissions/{id}); only drafts and rejected submissions can be deleted', async function () {
    const slug = freshSlug();
    const draft = await create(squatter.apiKey, slug);
    assert.equal(draft.status, 201, JSON.stringify(draft.body));
    assert.equal(code(await create(builder.apiKey, slug)), '409 slug_taken');
    assert.equal(
      (await h.http('DELETE', `${API}/${draft.body.id}`, { apiKey: builder.apiKey })).status,
      404,
      "another account's draft",
    );

    const deleted = await h.http('DELETE', `${API}/${draft.body.id}`, { apiKey: squatter.apiKey });
    assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
    assert.equal((await h.http('GET', `${API}/${draft.body.id}`, { apiKey: squatter.apiKey })).status, 404);
    assert.equal((await h.http('DELETE', `${API}/${draft.body.id}`, { apiKey: squatter.apiKey })).status, 404, 'gone');
    const taken = await create(builder.apiKey, slug);
    assert.equal(taken.status, 201, JSON.stringify(taken.body));
    assert.equal(taken.body.slug, slug);

    // Under review or approved, a submission stays; a revision draft goes without taking the listing's slug along.
    assert.equal((await h.http('POST', `${API}/${taken.body.id}/submit`, { apiKey: builder.apiKey })).status, 200);
    assert.equal(
      code(await h.http('DELETE', `${API}/${taken.body.id}`, { apiKey: builder.apiKey })),
      '409 invalid_state',
    );
    await admin(h, ['review', '--market', 'agent', '--submission', taken.body.id, '--approve']);
    assert.equal(
      code(await h.http('DELETE', `${API}/${taken.body.id}`, { apiKey: builder.apiKey })),
      '409 invalid_state',
    );
    const revision = await h.http('POST', `${API}/${taken.body.id}/revisions`, { apiKey: builder.apiKey });
    assert.equal((await h.http('DELETE', `${API}/${revision.body.id}`, { apiKey: builder.apiKey })).status, 204);
    assert.equal(
      (await h.http('GET', `/api/v1/agent-market/agents/${taken.body.publicId}`, { apiKey: squatter.apiKey })).status,
      200,
      'the live agent stays',
    );
    assert.equal(code(await create(squatter.apiKey, slug)), '409 slug_taken', 'and keeps its slug');
  });

  it('releases the slug of a listing that never reached review after MARKET_DRAFT_SLUG_DAYS without a change; the stale draft then cannot use it', async function () {
    const days = h.config.market.draftSlugTtlMs / 86_400_000;
    const slug = freshSlug();
    const stale = await create(squatter.apiKey, slug);
    assert.equal(stale.status, 201);
    await age(stale.body.publicId, days - 1);
    assert.equal(code(await create(builder.apiKey, slug)), '409 slug_taken', 'still held a day before the limit');
    await age(stale.body.publicId, days + 1);
    const taken = await create(builder.apiKey, slug);
    assert.equal(taken.status, 201, JSON.stringify(taken.body));

    assert.equal(
      code(
        await h.http('PUT', `${API}/${stale.body.id}`, {
          apiKey: squatter.apiKey,
          body: agent(slug, { description: 'back' }),
        }),
      ),
      '409 slug_taken',
    );
    assert.equal(
      code(await h.http('POST', `${API}/${stale.body.id}/submit`, { apiKey: squatter.apiKey })),
      '409 slug_taken',
      'its old draft cannot go to review under the slug',
    );
    const renamed = await h.http('PUT', `${API}/${stale.body.id}`, {
      apiKey: squatter.apiKey,
      body: agent(freshSlug()),
    });
    assert.equal(renamed.status, 200, 'it can carry on under another slug');
    assert.equal((await h.http('POST', `${API}/${stale.body.id}/submit`, { apiKey: squatter.apiKey })).status, 200);
  });

  it('keeps the slugs of listings under review, approved or disabled, however old, and releases a long-rejected one', async function () {
    const days = h.config.market.draftSlugTtlMs / 86_400_000 + 1;
    const pending = await create(squatter.apiKey, freshSlug());
    await h.http('POST', `${API}/${pending.body.id}/submit`, { apiKey: squatter.apiKey });
    const approved = await create(squatter.apiKey, freshSlug());
    await h.http('POST', `${API}/${approved.body.id}/submit`, { apiKey: squatter.apiKey });
    await admin(h, ['review', '--market', 'agent', '--submission', approved.body.id, '--approve']);
    const disabled = await create(squatter.apiKey, freshSlug());
    await h.http('POST', `${API}/${disabled.body.id}/submit`, { apiKey: squatter.apiKey });
    await admin(h, ['review', '--market', 'agent', '--submission', disabled.body.id, '--approve']);
    await admin(h, ['review', '--market', 'agent', '--submission', disabled.body.id, '--disable']);
    const rejected = await create(squatter.apiKey, freshSlug());
    await h.http('POST', `${API}/${rejected.body.id}/submit`, { apiKey: squatter.apiKey });
    await admin(h, [
      'review',
      '--market',
      'agent',
      '--submission',
      rejected.body.id,
      '--reject',
      '--reason',
      'Too vague',
    ]);
    for (const sub of [pending, approved, disabled, rejected]) await age(sub.body.publicId, days);

    assert.equal(code(await create(builder.apiKey, pending.body.slug)), '409 slug_taken');
    assert.equal(code(await create(builder.apiKey, approved.body.slug)), '409 slug_taken');
    assert.equal(code(await create(builder.apiKey, disabled.body.slug)), '409 slug_taken');
    assert.equal((await create(builder.apiKey, rejected.body.slug)).status, 201);
  });

  it('reads MARKET_DRAFT_SLUG_DAYS (default 30)', function () {
    const base = { ADMIN_TOKEN: 'a'.repeat(32), MASTER_KEY: 'b'.repeat(64), MARKET_CHARGE_TOKEN_KEY: 'c'.repeat(64) };
    assert.equal(loadConfig(base).market.draftSlugTtlMs, 30 * 86_400_000);
    assert.equal(loadConfig({ ...base, MARKET_DRAFT_SLUG_DAYS: '7' }).market.draftSlugTtlMs, 7 * 86_400_000);
    assert.throws(() => loadConfig({ ...base, MARKET_DRAFT_SLUG_DAYS: '0' }), /MARKET_DRAFT_SLUG_DAYS/);
  });
});
