import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { oneJsonLine, runAdmin } from '../support/stack/admin-cli';
import { startFakeGithub, type FakeGithub } from '../support/fakes/fake-github';
import type { RecordedRequest } from '../support/fakes/fake-openai';
import {
  CATALOGUE_IDS,
  CATALOGUE_PREFIX_QUERIES,
  CATALOGUE_QUERIES,
  CATALOGUE_TYPO_QUERIES,
  SKILLS_CATALOGUE_COUNT,
  SKILLS_CATALOGUE_PATH,
  SKILLS_CATALOGUE_WITH_SKILL_MD,
  type SkillsQuery,
} from '../support/skills-queries';
import { applyRanking, reciprocalRankFusion } from '../../api/services/skills/ai-search';
import { createEmbedder } from '../../lib/skills/embeddings';
import { createLlmClient } from '../../lib/llm/client';
import { parseFrontmatter, frontmatterString } from '../../lib/skills/frontmatter';
import { embeddingCandidates, ftsCandidates, searchTerms } from '../../db/skills/search';
import { ensureSkillsRefreshSchedule, SKILLS_REFRESH_SCHEDULE_ID } from '../../workers/schedules';
import { ConfigError, loadConfig } from '../../lib/config';

const ITEM_FIELDS = [
  'provider',
  'externalId',
  'name',
  'description',
  'repositoryUrl',
  'githubOwner',
  'githubRepo',
  'sourceUrl',
  'version',
  'skillMdContent',
  'tags',
  'stars',
];

function runHarnessAdmin(h: Harness, args: string[]) {
  return runAdmin(args, { ...process.env, ...h.env, ADMIN_URL: h.baseUrl });
}

const catalogueLines = () =>
  readFileSync(SKILLS_CATALOGUE_PATH, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe('skills directory: catalogue, plain and AI search, GitHub source', function () {
  const stacks = stoppedAfter();
  let h: Harness;
  let apiKey: string;
  const embeddingRequests = () => h.llm.requests.filter((r) => r.kind === 'embeddings').length;
  const search = (q: string, extra = '', key = apiKey, endpoint = 'search') =>
    h.http('GET', `/api/v1/skills/directory/${endpoint}?q=${encodeURIComponent(q)}${extra}`, { apiKey: key });
  const admin = () => ({ authorization: `Bearer ${h.config.adminToken}` });

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey } = await h.createUser({ creditUsd: 10 }));
  });

  it('imports the catalogue with `admin import-skills`, embedding each item once; a second import changes nothing', async function () {
    this.timeout(90_000);
    const embeddingsBefore = embeddingRequests();
    const first = oneJsonLine(await runHarnessAdmin(h, ['import-skills', SKILLS_CATALOGUE_PATH]));
    assert.deepEqual(first.errors, []);
    assert.equal(first.lines, SKILLS_CATALOGUE_COUNT);
    assert.equal(first.inserted, SKILLS_CATALOGUE_COUNT);
    assert.equal(first.embedded, SKILLS_CATALOGUE_COUNT);
    assert.equal(first.skipped, 0);
    const rows = await h.db
      .selectFrom('skills_directory')
      .select(['external_id', 'embedding_model'])
      .where('provider', '=', 'github')
      .where('github_owner', 'not like', 'fake%')
      .execute();
    assert.equal(rows.length, SKILLS_CATALOGUE_COUNT);
    assert.ok(
      rows.every((r) => r.embedding_model === 'text-embedding-3-small'),
      'every item has an embedding of the configured model',
    );
    assert.ok(embeddingRequests() >= embeddingsBefore + Math.ceil(SKILLS_CATALOGUE_COUNT / 64), 'embedded in batches');

    const embeddingsAfterFirst = embeddingRequests();
    const second = oneJsonLine(await runHarnessAdmin(h, ['import-skills', SKILLS_CATALOGUE_PATH]));
    assert.deepEqual(
      {
        inserted: second.inserted,
        updated: second.updated,
        unchanged: second.unchanged,
        skipped: second.skipped,
        embedded: second.embedded,
        errors: second.errors,
      },
      { inserted: 0, updated: 0, unchanged: SKILLS_CATALOGUE_COUNT, skipped: 0, embedded: 0, errors: [] },
    );
    assert.equal(embeddingRequests(), embeddingsAfterFirst, 'unchanged items are not embedded again');
  });

  it('reports bad lines with their numbers and skips them whole; good lines land', async function () {
    this.timeout(60_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'skills-import-'));
    try {
      const good = (id: string, extra: object = {}) =>
        JSON.stringify({
          provider: 'test',
          externalId: `bad-lines/${id}`,
          name: `Bad lines ${id}`,
          tags: ['Import', 'import'],
          ...extra,
        });
      const file = path.join(dir, 'mixed.jsonl');
      writeFileSync(
        file,
        [
          good('one'), // 1
          '{"provider": "test", "externalId": "bad-lines/broken"', // 2: not JSON
          JSON.stringify({ provider: 'test', externalId: 'bad-lines/no-name' }), // 3: name missing
          good('negative', { stars: -1 }), // 4
          '', // 5: blank, ignored
          good('extra', { homepage: 'https://example.com' }), // 6: unknown field
          good('url', { sourceUrl: 'ftp://example.com/SKILL.md' }), // 7: not http(s)
          '[1, 2]', // 8: not an object
          good('two', { description: 'Second good line', stars: 3 }), // 9
        ].join('\n') + '\n',
      );
      const result = oneJsonLine(await runHarnessAdmin(h, ['import-skills', file]));
      assert.equal(result.inserted, 2);
      assert.equal(result.skipped, 6);
      assert.deepEqual(
        result.errors.map((e: { line: number }) => e.line),
        [2, 3, 4, 6, 7, 8],
      );
      assert.match(result.errors[0].message, /not valid JSON/);
      assert.match(result.errors[1].message, /name is required/);
      assert.match(result.errors[3].message, /homepage is not a known field/);
      const stored = await h.db
        .selectFrom('skills_directory')
        .select(['external_id', 'tags', 'stars'])
        .where('provider', '=', 'test')
        .orderBy('external_id')
        .execute();
      assert.deepEqual(stored, [
        { external_id: 'bad-lines/one', tags: ['import'], stars: null },
        { external_id: 'bad-lines/two', tags: ['import'], stars: 3 },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The admin API numbers lines from `firstLine` (the CLI sends files in chunks).
    const response = await h.http('POST', '/admin/skills/import', {
      headers: admin(),
      body: { jsonl: '{}\n\nnot json\n', firstLine: 101 },
    });
    assert.equal(response.status, 200);
    assert.deepEqual(
      response.body.errors.map((e: { line: number }) => e.line),
      [101, 103],
    );
    const unauthorized = await h.http('POST', '/admin/skills/import', { body: { jsonl: '' } });
    assert.equal(unauthorized.status, 401);
  });

  it('authenticates and validates q, page and pageSize on both endpoints', async function () {
    for (const endpoint of ['search', 'ai-search']) {
      const base = `/api/v1/skills/directory/${endpoint}`;
      assert.equal((await h.http('GET', `${base}?q=pdf`)).status, 401);
      assert.equal(
        (await h.http('GET', `${base}?q=pdf`, { apiKey: 'sk_live_not-a-real-key-000000000000000' })).status,
        401,
      );
      for (const query of [
        '',
        '?q=',
        '?q=%20%20%20',
        '?q=pdf&page=0',
        '?q=pdf&page=x',
        '?q=pdf&pageSize=0',
        '?q=pdf&pageSize=101',
        '?q=pdf&q=docx',
        '?q=pdf&sort=name',
      ]) {
        const response = await h.http('GET', `${base}${query}`, { apiKey });
        assert.equal(response.status, 400, `${endpoint}${query} answered ${response.status}`);
        assert.equal(response.body.error.code, 'validation_failed');
        assert.ok(response.body.error.details.length > 0 && response.body.error.requestId);
      }
    }
    const missing = await h.http('GET', '/api/v1/skills/directory/search', { apiKey });
    assert.deepEqual(missing.body.error.details, [{ path: 'query.q', message: 'is required' }]);
  });

  it('answers {items, meta: {page, pageSize, total}} whose items are exactly the contract fields, usable as AgentSkillSelection', async function () {
    const response = await search('pdf', '&pageSize=5');
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys(response.body).sort(), ['items', 'meta']);
    // total counts every match, not the page: it is the number of items one page of 100 holds.
    const everyMatch = await search('pdf', '&pageSize=100');
    assert.ok(
      everyMatch.body.items.length >= 4 && everyMatch.body.items.length < 100,
      `${everyMatch.body.items.length} matches`,
    );
    assert.deepEqual(response.body.meta, { page: 1, pageSize: 5, total: everyMatch.body.items.length });
    assert.equal(response.body.items.length, 5);
    for (const item of response.body.items) {
      assert.deepEqual(Object.keys(item).sort(), [...ITEM_FIELDS].sort());
      assert.ok(Array.isArray(item.tags) && (item.stars === null || typeof item.stars === 'number'));
    }
    const pdf = response.body.items.find((i: { externalId: string }) => i.externalId === CATALOGUE_IDS.pdfToolkit);
    const { license: _license, ...expected } = catalogueLines().find((l) => l.externalId === CATALOGUE_IDS.pdfToolkit);
    assert.deepEqual(pdf, expected, 'an item is the imported record (minus its license), field for field');

    const defaults = await search('pdf');
    assert.equal(defaults.body.meta.pageSize, 20);
    assert.equal(defaults.body.meta.page, 1);
  });

  it('pages through a ranked result without gaps or repeats', async function () {
    const all = await search('tests', '&pageSize=100');
    const total = all.body.meta.total;
    assert.ok(total >= 7 && total === all.body.items.length, `${total} matches`);
    const seen: string[] = [];
    for (let page = 1; page <= Math.ceil(total / 3); page++) {
      const response = await search('tests', `&page=${page}&pageSize=3`);
      assert.equal(response.body.meta.total, total);
      seen.push(...response.body.items.map((i: { externalId: string }) => i.externalId));
    }
    assert.deepEqual(
      seen,
      all.body.items.map((i: { externalId: string }) => i.externalId),
    );
    const beyond = await search('tests', `&page=${Math.ceil(total / 3) + 1}&pageSize=3`);
    assert.deepEqual(beyond.body, { items: [], meta: { page: Math.ceil(total / 3) + 1, pageSize: 3, total } });
    const nothing = await search('zzqxv');
    assert.deepEqual(nothing.body, { items: [], meta: { page: 1, pageSize: 20, total: 0 } });
  });

  async function top5(q: string): Promise<string[]> {
    const response = await search(q, '&pageSize=5');
    assert.equal(response.status, 200);
    return response.body.items.map((i: { externalId: string }) => i.externalId);
  }

  async function assertAllInTop5(queries: SkillsQuery[]) {
    const failures: string[] = [];
    for (const { q, mustInTop5 } of queries) {
      const ids = await top5(q);
      const missing = mustInTop5.filter((id) => !ids.includes(id));
      if (missing.length) failures.push(`"${q}": missing ${missing.join(', ')}; top 5: ${ids.join(', ')}`);
    }
    assert.deepEqual(failures, []);
  }

  it(`finds the expected skills in the top 5 for ${CATALOGUE_QUERIES.length} keyword queries over the catalogue`, async function () {
    assert.ok(CATALOGUE_QUERIES.length >= 15);
    await assertAllInTop5(CATALOGUE_QUERIES);
  });

  it('matches the last term as a prefix and finds names with small typos', async function () {
    await assertAllInTop5(CATALOGUE_PREFIX_QUERIES);
    await assertAllInTop5(CATALOGUE_TYPO_QUERIES);
    assert.equal((await top5('matplotlb'))[0], CATALOGUE_IDS.matplotlib);
  });

  it('answers queries of only short words (no trigram terms) with 200, not a type error', async function () {
    for (const q of ['ui', 'qa ci', 'go']) {
      const response = await search(q, '&pageSize=5');
      assert.equal(response.status, 200, `${q}: ${JSON.stringify(response.body)}`);
      assert.equal(typeof response.body.meta.total, 'number');
    }
    assert.ok(
      (await search('go')).body.items.some(
        (i: { externalId: string }) => i.externalId === CATALOGUE_IDS.providerAcceptanceTests,
      ),
      'the "go" tag matches',
    );
  });

  it('parses the frontmatter of every SKILL.md in the catalogue like its name, description and version fields', function () {
    let checked = 0;
    for (const item of catalogueLines()) {
      if (!item.skillMdContent) continue;
      const { data } = parseFrontmatter(item.skillMdContent);
      const metadata = (data.metadata ?? {}) as Record<string, string>;
      assert.equal(frontmatterString(data.name) ?? item.externalId.split('/').pop(), item.name, item.externalId);
      assert.equal(frontmatterString(data.description), item.description, item.externalId);
      assert.equal(
        frontmatterString(data.version) ?? frontmatterString(metadata.version),
        item.version,
        item.externalId,
      );
      checked++;
    }
    assert.equal(checked, SKILLS_CATALOGUE_WITH_SKILL_MD);
  });

  it('reads the skills settings from the environment and refuses malformed ones', function () {
    const skills = loadConfig({
      ...h.env,
      SKILLS_GITHUB_REPOS: ' acme/skills, acme/skills ,other/x ',
      EMBEDDINGS_MODEL: 'none',
      SKILLS_AI_RERANK: 'false',
    }).skills;
    assert.deepEqual(
      {
        repos: skills.githubRepos,
        base: skills.githubApiBase,
        embeddings: skills.embeddingsModel,
        rerank: skills.rerank,
        every: skills.refreshIntervalMinutes,
      },
      {
        repos: ['acme/skills', 'other/x'],
        base: 'https://api.github.com',
        embeddings: null,
        rerank: false,
        every: 360,
      },
    );
    assert.equal(h.config.skills.embeddingsModel, 'text-embedding-3-small');
    assert.throws(() => loadConfig({ ...h.env, SKILLS_GITHUB_REPOS: 'just-a-name' }), ConfigError);
    assert.throws(() => loadConfig({ ...h.env, GITHUB_API_BASE: 'not a url' }), ConfigError);
  });

  it('fuses ranked lists by reciprocal rank (k = 60) and applies an LLM ranking to the head', function () {
    const key = (id: string) => ({ provider: 'p', externalId: id });
    const fused = reciprocalRankFusion([
      [key('a'), key('b'), key('c')],
      [key('c'), key('d')],
    ]);
    assert.deepEqual(
      fused.map((k) => k.externalId),
      ['c', 'a', 'b', 'd'],
    );
    assert.deepEqual(
      applyRanking([key('a'), key('b'), key('c')], [3, 3, 9, 1]).map((k) => k.externalId),
      ['c', 'a', 'b'],
    );
  });

  describe('ai-search', function () {
    const plan = {
      keywords: ['terraform', 'acceptance tests', 'provider testing'],
      tags: ['testing'],
      intent: 'Run the acceptance tests of a Terraform provider',
    };
    const target = CATALOGUE_IDS.providerAcceptanceTests;
    const candidateLines = (request: RecordedRequest) =>
      String(request.body.messages?.find((m) => m.role === 'user')?.content ?? '')
        .split('\n')
        .filter((l) => /^\[\d+\] /.test(l));

    it('plans with the LLM, fuses full-text and embedding candidates, reranks the top 30, and charges the usage', async function () {
      const q = 'I need to run the acceptance test suite of my terraform provider';
      const chatBefore = h.llm.requests.filter((r) => r.kind === 'chat').length;
      let rerankRequest: RecordedRequest | null = null;
      h.llm.enqueue({ json: plan }, (request) => {
        rerankRequest = request;
        const line = candidateLines(request).find((l) => l.includes('] provider-acceptance-tests'));
        return { json: { ranking: line ? [Number(/^\[(\d+)\]/.exec(line)![1])] : [] } };
      });
      const response = await search(q, '&pageSize=10', apiKey, 'ai-search');
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.equal(response.body.meta.mode, 'ai');
      assert.deepEqual(response.body.meta.plan, plan);
      assert.equal(response.body.meta.reranked, true);
      assert.equal(response.body.items[0].externalId, target);
      assert.deepEqual(Object.keys(response.body.items[0]).sort(), [...ITEM_FIELDS].sort());
      assert.ok(response.body.meta.total >= 10 && response.body.meta.total <= 100);

      const chats = h.llm.requests.filter((r) => r.kind === 'chat').slice(chatBefore);
      assert.equal(chats.length, 2, 'one planning call and one rerank call');
      assert.equal(chats[0].body.response_format?.type, 'json_schema');
      assert.equal(chats[0].body.response_format?.json_schema?.name, 'skill_search_plan');
      assert.ok(rerankRequest);
      const candidates = candidateLines(rerankRequest!);
      assert.equal(candidates.length, 30, 'the fused top 30 go to the reranker');
      assert.ok(
        candidates.some((l) => l.includes('] terraform-test-runner')),
        'full-text candidates of the plan are among them',
      );

      const transactions = await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey });
      const charged = transactions.body.transactions.filter(
        (t: { agentName: string }) => t.agentName === 'skills-ai-search',
      );
      assert.equal(charged.length, 1);
      assert.ok(charged[0].cost > 0);
      assert.equal(charged[0].payload.llm[0].calls, 2);
      assert.equal(charged[0].payload.embeddings.model, 'text-embedding-3-small');

      // The next page reuses the plan and ranking: same order, nothing asked or charged again.
      const page2 = await search(q, '&pageSize=10&page=2', apiKey, 'ai-search');
      assert.equal(page2.body.meta.cached, true);
      assert.equal(h.llm.requests.filter((r) => r.kind === 'chat').length, chatBefore + 2);
      const again = await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey });
      assert.equal(
        again.body.transactions.filter((t: { agentName: string }) => t.agentName === 'skills-ai-search').length,
        1,
      );
      const page1Ids = response.body.items.map((i: { externalId: string }) => i.externalId);
      assert.ok(page2.body.items.length > 0, 'the second page has items');
      assert.ok(page2.body.items.every((i: { externalId: string }) => !page1Ids.includes(i.externalId)));
    });

    it("caches plans per user: another account's identical search is planned and charged to it, never served from the first one's", async function () {
      const q = 'draw charts of my experiment results';
      const ownPlan = { keywords: ['matplotlib', 'charts', 'plots'], tags: ['visualization'], intent: 'Plot results' };
      const chats = () => h.llm.requests.filter((r) => r.kind === 'chat').length;
      const charged = async (key: string) =>
        (await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey: key })).body.transactions.filter(
          (t: { agentName: string }) => t.agentName === 'skills-ai-search',
        );
      h.llm.enqueue({ json: ownPlan }, { json: { ranking: [1] } });
      const first = await search(q, '&pageSize=5', apiKey, 'ai-search');
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.meta.cached, undefined);

      const other = await h.createUser({ creditUsd: 5 });
      const chatsBefore = chats();
      h.llm.enqueue({ json: ownPlan }, { json: { ranking: [1] } });
      const second = await search(q, '&pageSize=5', other.apiKey, 'ai-search');
      assert.equal(second.status, 200, JSON.stringify(second.body));
      assert.equal(second.body.meta.mode, 'ai');
      assert.equal(second.body.meta.cached, undefined, "not served from the first account's cache");
      assert.equal(chats(), chatsBefore + 2, 'planned and reranked again for the second account');
      const otherCharges = await charged(other.apiKey);
      assert.equal(otherCharges.length, 1);
      assert.ok(otherCharges[0].cost > 0);

      // The same account paging on: cached, nothing asked or charged.
      const again = await search(q, '&pageSize=5&page=2', other.apiKey, 'ai-search');
      assert.equal(again.body.meta.cached, true);
      assert.equal(chats(), chatsBefore + 2);
      assert.equal((await charged(other.apiKey)).length, 1);
    });

    it('answers a plan of only short keywords (no trigram terms) and a ranking with fractions: 200, not a type error', async function () {
      h.llm.enqueue(
        { json: { keywords: ['ui', 'qa'], tags: ['go'], intent: 'x' } },
        { json: { ranking: [0.5, 2, -1, 1e9] } },
      );
      const response = await search('ui qa for go services', '&pageSize=5', apiKey, 'ai-search');
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.equal(response.body.meta.mode, 'ai');
      assert.deepEqual(response.body.meta.plan.keywords, ['ui', 'qa']);
    });

    it('without a ranking from the LLM, keeps the reciprocal-rank fusion of both retrievers', async function () {
      const q = 'write property based tests for my parser';
      const ownPlan = {
        keywords: ['property-based testing', 'fuzzing', 'hypothesis'],
        tags: ['testing'],
        intent: 'Write property-based tests',
      };
      h.llm.enqueue({ json: ownPlan }, { json: { ranking: [] } });
      const response = await search(q, '&pageSize=20', apiKey, 'ai-search');
      assert.equal(response.status, 200);
      assert.equal(response.body.meta.mode, 'ai');

      const fts = await ftsCandidates(h.db, searchTerms([...ownPlan.keywords, ...ownPlan.tags].join(' '), 24), 50);
      const embedder = createEmbedder(
        createLlmClient({ baseURL: h.llm.baseURL, apiKey: 'k', timeoutMs: 10_000 }),
        'text-embedding-3-small',
      );
      const { vectors } = await embedder.embed([q]);
      const semantic = await embeddingCandidates(h.db, vectors[0], 'text-embedding-3-small', 50);
      const embedded = await h.db
        .selectFrom('skills_directory')
        .select('external_id')
        .where('embedding_model', '=', 'text-embedding-3-small')
        .execute();
      assert.equal(semantic.length, Math.min(50, embedded.length));
      const expected = reciprocalRankFusion([fts, semantic]);
      assert.deepEqual(
        response.body.items.map((i: { externalId: string }) => i.externalId),
        expected.slice(0, 20).map((k) => k.externalId),
      );
      assert.equal(response.body.meta.total, expected.length);
      assert.ok(fts.some((k) => k.externalId === CATALOGUE_IDS.propertyBasedTesting));
    });

    it('answers with plain search, and says why, when no LLM or embedding model is configured or the wallet is empty', async function () {
      const plain = await search('code review', '&pageSize=10');
      const noLlm = stacks.add(
        await h.startIsolatedStack({
          taskQueues: { platform: 'skills-nollm-platform', browser: 'skills-nollm-browser' },
          overrides: { openai: { baseURL: null, apiKey: null } },
          queues: [],
        }),
      );
      const noEmbeddings = stacks.add(
        await h.startIsolatedStack({
          taskQueues: { platform: 'skills-noemb-platform', browser: 'skills-noemb-browser' },
          overrides: { skills: { ...h.config.skills, embeddingsModel: null } },
          queues: [],
        }),
      );
      const chatBefore = h.llm.requests.length;
      for (const [stack, reason] of [
        [noLlm, /^llm_not_configured/],
        [noEmbeddings, /^embeddings_not_configured/],
      ] as const) {
        const response = await h.http(
          'GET',
          `${stack.baseUrl}/api/v1/skills/directory/ai-search?q=code%20review&pageSize=10`,
          { apiKey },
        );
        assert.equal(response.status, 200);
        assert.equal(response.body.meta.mode, 'plain');
        assert.match(response.body.meta.fallbackReason, reason);
        assert.deepEqual(response.body.items, plain.body.items);
        assert.equal(response.body.meta.total, plain.body.meta.total);
      }
      assert.equal(h.llm.requests.length, chatBefore, 'no LLM or embeddings call was made');
      // A failing planning call also falls back; the embedding already computed is still charged.
      h.llm.enqueue({ status: 500, error: 'upstream exploded' });
      const failed = await search('code review tools', '&pageSize=10', apiKey, 'ai-search');
      assert.equal(failed.status, 200);
      assert.equal(failed.body.meta.mode, 'plain');
      assert.match(failed.body.meta.fallbackReason, /^llm_error/);
      const transactions = await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey });
      assert.ok(
        transactions.body.transactions.some(
          (t: { agentName: string; result: string }) => t.agentName === 'skills-ai-search' && t.result === 'failed',
        ),
      );

      const requestsBefore = h.llm.requests.length;
      const broke = await h.createUser({ creditUsd: 0 });
      const response = await search('code review', '&pageSize=10', broke.apiKey, 'ai-search');
      assert.equal(response.body.meta.mode, 'plain');
      assert.match(response.body.meta.fallbackReason, /^insufficient_funds/);
      assert.equal(h.llm.requests.length, requestsBefore, 'no LLM or embeddings call was made');
    });
  });

  describe('GitHub source', function () {
    let github: FakeGithub;
    const skillMd = (front: string, body = 'Instructions.') => `---\n${front}\n---\n\n${body}\n`;

    before(async function () {
      github = await startFakeGithub({ requireToken: 'ghp_test_token' });
      github.setRepo('fakeorg/skills-a', {
        stars: 42,
        license: 'MIT',
        files: {
          'README.md': '# Skills',
          'skills/zebra-linter/SKILL.md': skillMd(
            'name: zebra-linter\ndescription: Lint zebra stripe configuration files.\nmetadata:\n  version: "2.1.0"',
          ),
          'skills/quokka/SKILL.md': skillMd('description: |\n  Summarise quokka census\n  spreadsheets.\nversion: 0.3'),
          'plugins/deep/skills/gecko-docs/SKILL.md': skillMd(
            "name: 'gecko-docs'\ndescription: Write gecko documentation pages.",
          ),
        },
      });
      github.setRepo('fakeorg/skills-b', {
        defaultBranch: 'trunk',
        stars: 7,
        license: 'CC-BY-SA-4.0',
        files: { 'ibex-planner/SKILL.md': skillMd('name: ibex-planner\ndescription: Plan ibex migrations.') },
      });
    });

    after(async function () {
      await h.client.schedule
        .getHandle(SKILLS_REFRESH_SCHEDULE_ID)
        .delete()
        .catch(() => undefined);
      await github?.close();
    });

    it('creates the refresh Schedule at worker start and refreshes repositories from the GitHub API on demand', async function () {
      this.timeout(90_000);
      const stack = stacks.add(
        await h.startIsolatedStack({
          taskQueues: { platform: 'skills-github-platform', browser: 'skills-github-browser' },
          overrides: {
            skills: {
              ...h.config.skills,
              githubApiBase: github.apiBase,
              githubRepos: ['fakeorg/skills-a', 'fakeorg/skills-b'],
              githubToken: 'ghp_test_token',
            },
          },
          queues: ['platform'],
        }),
      );
      const schedule = await h.client.schedule.getHandle(SKILLS_REFRESH_SCHEDULE_ID).describe();
      assert.equal(schedule.action.type, 'startWorkflow');
      assert.equal(schedule.action.workflowType, 'skillsRefreshWorkflow');
      assert.equal(schedule.action.taskQueue, 'skills-github-platform');
      assert.equal(schedule.spec.intervals?.[0]?.every, 6 * 3600_000);

      // Worker starts after the first leave one schedule, brought up to date.
      const every2h = { ...stack.config, skills: { ...stack.config.skills, refreshIntervalMinutes: 120 } };
      assert.equal(
        await ensureSkillsRefreshSchedule(h.client.connection, h.config.temporalNamespace, every2h),
        'updated',
      );
      assert.equal(
        (await h.client.schedule.getHandle(SKILLS_REFRESH_SCHEDULE_ID).describe()).spec.intervals?.[0]?.every,
        2 * 3600_000,
      );
      assert.equal(
        await ensureSkillsRefreshSchedule(h.client.connection, h.config.temporalNamespace, h.config),
        'skipped',
        'no repositories, no schedule',
      );

      const refresh = () =>
        h.http('POST', `${stack.baseUrl}/admin/skills/refresh`, { headers: admin(), body: { wait: true } });
      const first = await refresh();
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const [a, b] = first.body.result.repos;
      assert.equal(a.ok, true, JSON.stringify(a));
      assert.deepEqual(
        {
          found: a.summary.found,
          inserted: a.summary.inserted,
          deleted: a.summary.deleted,
          failed: a.summary.failed,
          embedded: a.summary.embedded,
        },
        { found: 3, inserted: 3, deleted: 0, failed: [], embedded: 3 },
      );
      assert.equal(b.summary.inserted, 1);
      assert.ok(
        github.requests.length > 0 && github.requests.every((r) => r.authorization === 'Bearer ghp_test_token'),
      );
      assert.ok(github.requests.some((r) => r.path === '/api/v3/repos/fakeorg/skills-b/git/trees/trunk?recursive=1'));

      const zebra = (await search('zebra lint')).body.items[0];
      assert.deepEqual(zebra, {
        provider: 'github',
        externalId: 'fakeorg/skills-a/skills/zebra-linter',
        name: 'zebra-linter',
        description: 'Lint zebra stripe configuration files.',
        repositoryUrl: 'https://github.com/fakeorg/skills-a',
        githubOwner: 'fakeorg',
        githubRepo: 'skills-a',
        sourceUrl: 'https://github.com/fakeorg/skills-a/blob/main/skills/zebra-linter/SKILL.md',
        version: '2.1.0',
        skillMdContent: skillMd(
          'name: zebra-linter\ndescription: Lint zebra stripe configuration files.\nmetadata:\n  version: "2.1.0"',
        ),
        tags: zebra.tags,
        stars: 42,
      });
      const quokka = (await search('quokka')).body.items[0];
      assert.equal(quokka.name, 'quokka');
      assert.equal(quokka.description, 'Summarise quokka census spreadsheets.');
      assert.equal(quokka.version, '0.3');
      const ibex = (await search('ibex')).body.items[0];
      assert.equal(ibex.sourceUrl, 'https://github.com/fakeorg/skills-b/blob/trunk/ibex-planner/SKILL.md');
      assert.equal(ibex.skillMdContent, null, 'SKILL.md text is kept only under permissive licenses');

      // Upstream changes: a description edit, a removed skill, new star count.
      github.setRepo('fakeorg/skills-a', {
        stars: 43,
        license: 'MIT',
        files: {
          'skills/zebra-linter/SKILL.md': skillMd(
            'name: zebra-linter\ndescription: Lint and fix zebra stripe configuration files.\nmetadata:\n  version: "2.2.0"',
          ),
          'skills/quokka/SKILL.md': skillMd('description: |\n  Summarise quokka census\n  spreadsheets.\nversion: 0.3'),
        },
      });
      const second = await refresh();
      const summary = second.body.result.repos[0].summary;
      assert.deepEqual(
        { updated: summary.updated, deleted: summary.deleted, embedded: summary.embedded },
        { updated: 2, deleted: 1, embedded: 1 },
      );
      assert.equal(second.body.result.repos[1].summary.unchanged, 1);
      assert.equal((await search('gecko')).body.meta.total, 0);
      const updated = (await search('zebra')).body.items[0];
      assert.equal(updated.version, '2.2.0');
      assert.equal(updated.stars, 43);

      const missing = await h.http('POST', `${stack.baseUrl}/admin/skills/refresh`, {
        headers: admin(),
        body: { wait: true, repos: ['fakeorg/nope'] },
      });
      assert.equal(missing.body.result.repos[0].ok, false);
      assert.match(missing.body.result.repos[0].error, /404/);
    });
  });
});
