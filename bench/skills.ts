/**
 * Skills directory benchmark (`npm run bench:skills`): one harness (real Postgres database, Temporal
 * dev server, API, fake OpenAI-compatible LLM and embeddings), loopback only, bounded in time.
 *
 *   1. Imports the real sample (../shared/data/skills/skills.jsonl, 385 skills) with embeddings.
 *   2. recall@5 of plain search for the sample's keyword query set (scripts/skills-sample-queries.ts),
 *      and for the prefix and typo sets.
 *   3. Latency p50/p99 at 16 concurrent clients of GET /skills/directory/search, of
 *      GET /skills/directory/ai-search (every request a new query, so the plan and rerank calls go to
 *      the fake LLM each time; it answers at once, so this is the platform's own overhead), and of the
 *      bare SQL query of plain search run in-process on the same pool; endpoint/bare ratios.
 *
 * Prints a table and, last, one JSON line with every figure.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import type { Harness } from '../test/support/stack/harness';
import {
  PREFIX_QUERIES,
  SKILLS_QUERIES,
  SKILLS_SAMPLE_PATH,
  TYPO_QUERIES,
  type SkillsQuery,
} from '../scripts/skills-sample-queries';
import { importJsonLines } from '../db/skills/import';
import { embedderFromConfig } from '../lib/skills/embeddings';
import { embeddingStorage } from '../db/skills/catalogue';
import { plainSearch } from '../db/skills/search';
import { percentile, round, runClosedLoop, type LoadResult, log, runHarnessBenchmark } from './load';

const CLIENTS = 16;
const REQUESTS = 1_600;
const AI_REQUESTS = 800;
const WARMUP = 64;
const PHASE_TIME_LIMIT_MS = 60_000;
const WATCHDOG_MS = 300_000;
const PAGE_SIZE = 20;

interface RecallFigures {
  queries: number;
  expected: number;
  found: number;
  recallAt5: number;
  queriesFullyPassed: number;
  misses: string[];
}

async function recallAt5(h: Harness, apiKey: string, queries: SkillsQuery[]): Promise<RecallFigures> {
  let expected = 0;
  let found = 0;
  let passed = 0;
  const misses: string[] = [];
  for (const { q, mustInTop5 } of queries) {
    const response = await h.http('GET', `/api/v1/skills/directory/search?q=${encodeURIComponent(q)}&pageSize=5`, {
      apiKey,
    });
    if (response.status !== 200) throw new Error(`search "${q}" answered ${response.status}`);
    const ids: string[] = response.body.items.map((i: { externalId: string }) => i.externalId);
    const hits = mustInTop5.filter((id) => ids.includes(id));
    expected += mustInTop5.length;
    found += hits.length;
    if (hits.length === mustInTop5.length) passed++;
    else misses.push(q);
  }
  return {
    queries: queries.length,
    expected,
    found,
    recallAt5: round(found / expected, 3),
    queriesFullyPassed: passed,
    misses,
  };
}

const ALL_QUERIES = [...SKILLS_QUERIES, ...PREFIX_QUERIES, ...TYPO_QUERIES].map((s) => s.q);

async function getOk(url: string, apiKey: string, check?: (body: any) => void): Promise<boolean> {
  const response = await fetch(url, { headers: { 'x-api-key': apiKey }, signal: AbortSignal.timeout(30_000) });
  const body = await response.json();
  if (response.status !== 200)
    throw new Error(`${url} answered ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
  check?.(body);
  return true;
}

interface LatencyFigures {
  search: LoadResult;
  aiSearch: LoadResult;
  bare: LoadResult;
}

async function measureLatency(h: Harness, apiKey: string): Promise<LatencyFigures> {
  const searchUrl = (i: number) =>
    `${h.baseUrl}/api/v1/skills/directory/search?q=${encodeURIComponent(ALL_QUERIES[i % ALL_QUERIES.length])}&pageSize=${PAGE_SIZE}`;
  // A fresh query per request (an extra nonce word that matches nothing), so no cached plan is reused.
  const aiUrl = (i: number) =>
    `${h.baseUrl}/api/v1/skills/directory/ai-search?q=${encodeURIComponent(`${ALL_QUERIES[i % ALL_QUERIES.length]} q${i}x${Date.now()}`)}&pageSize=${PAGE_SIZE}`;
  const bare = async (i: number) => {
    await plainSearch(h.db, ALL_QUERIES[i % ALL_QUERIES.length], { page: 1, pageSize: PAGE_SIZE });
    return true;
  };
  const expectAi = (body: { meta: { mode: string; fallbackReason?: string } }) => {
    if (body.meta.mode !== 'ai') throw new Error(`ai-search fell back to plain search: ${body.meta.fallbackReason}`);
  };

  log('warming up');
  await runClosedLoop(WARMUP, CLIENTS, PHASE_TIME_LIMIT_MS, bare);
  await runClosedLoop(WARMUP, CLIENTS, PHASE_TIME_LIMIT_MS, (i) => getOk(searchUrl(i), apiKey));
  await runClosedLoop(WARMUP, CLIENTS, PHASE_TIME_LIMIT_MS, (i) => getOk(aiUrl(REQUESTS + i), apiKey, expectAi));

  log(`bare SQL: ${REQUESTS} plain-search queries at ${CLIENTS} clients`);
  const bareResult = await runClosedLoop(REQUESTS, CLIENTS, PHASE_TIME_LIMIT_MS, bare);
  log(`GET /skills/directory/search: ${REQUESTS} requests at ${CLIENTS} clients`);
  const searchResult = await runClosedLoop(REQUESTS, CLIENTS, PHASE_TIME_LIMIT_MS, (i) => getOk(searchUrl(i), apiKey));
  log(`GET /skills/directory/ai-search: ${AI_REQUESTS} requests at ${CLIENTS} clients`);
  const aiResult = await runClosedLoop(AI_REQUESTS, CLIENTS, PHASE_TIME_LIMIT_MS, (i) =>
    getOk(aiUrl(i), apiKey, expectAi),
  );
  return { search: searchResult, aiSearch: aiResult, bare: bareResult };
}

function printReport(
  recall: Record<string, RecallFigures>,
  latency: LatencyFigures,
  storage: string,
  loadAverages: number[],
): void {
  const p = (r: LoadResult, q: number) => round(percentile(r.latenciesMs, q), 2);
  const ratio = (a: LoadResult, b: LoadResult, q: number) =>
    round(percentile(a.latenciesMs, q) / percentile(b.latenciesMs, q), 2);
  console.log('');
  for (const [name, r] of Object.entries(recall)) {
    console.log(
      `recall@5 ${name.padEnd(8)} ${r.recallAt5} (${r.found}/${r.expected} expected skills; ${r.queriesFullyPassed}/${r.queries} queries fully passed)${r.misses.length ? `; misses: ${r.misses.join(' | ')}` : ''}`,
    );
  }
  console.log('');
  const rows = [
    ['at 16 clients', 'ok', 'p50 ms', 'p99 ms', 'p50 / bare', 'p99 / bare'],
    [
      'bare SQL (plainSearch in-process)',
      `${latency.bare.succeeded}/${latency.bare.attempted}`,
      String(p(latency.bare, 50)),
      String(p(latency.bare, 99)),
      '1',
      '1',
    ],
    [
      'GET /skills/directory/search',
      `${latency.search.succeeded}/${latency.search.attempted}`,
      String(p(latency.search, 50)),
      String(p(latency.search, 99)),
      String(ratio(latency.search, latency.bare, 50)),
      String(ratio(latency.search, latency.bare, 99)),
    ],
    [
      'GET /skills/directory/ai-search',
      `${latency.aiSearch.succeeded}/${latency.aiSearch.attempted}`,
      String(p(latency.aiSearch, 50)),
      String(p(latency.aiSearch, 99)),
      String(ratio(latency.aiSearch, latency.bare, 50)),
      String(ratio(latency.aiSearch, latency.bare, 99)),
    ],
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row: string[]) => row.map((cell, c) => cell.padEnd(widths[c])).join(' | ');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows.slice(1)) console.log(line(row));
  for (const [name, r] of Object.entries(latency))
    if (r.firstError) console.log(`${name}: first error: ${r.firstError}`);
  console.log('');
  console.log(
    `embeddings stored as ${storage}; fake LLM and embeddings answer at once (ai-search = 2 chat calls + 1 embedding call + SQL + charge)`,
  );
  console.log(
    `machine: ${os.cpus().length} CPUs, 1-min load average at start/end ${loadAverages.map((l) => round(l, 1)).join(' / ')}`,
  );
  console.log('');
  const figures = (r: LoadResult) => ({ ok: r.succeeded, attempted: r.attempted, p50_ms: p(r, 50), p99_ms: p(r, 99) });
  console.log(
    JSON.stringify({
      recall_at_5: Object.fromEntries(
        Object.entries(recall).map(([k, r]) => [
          k,
          {
            recall: r.recallAt5,
            found: r.found,
            expected: r.expected,
            queries: r.queries,
            passed: r.queriesFullyPassed,
          },
        ]),
      ),
      clients: CLIENTS,
      bare_sql: figures(latency.bare),
      search: {
        ...figures(latency.search),
        p50_ratio_over_bare: ratio(latency.search, latency.bare, 50),
        p99_ratio_over_bare: ratio(latency.search, latency.bare, 99),
      },
      ai_search: {
        ...figures(latency.aiSearch),
        p50_ratio_over_bare: ratio(latency.aiSearch, latency.bare, 50),
        p99_ratio_over_bare: ratio(latency.aiSearch, latency.bare, 99),
      },
      embedding_storage: storage,
      cpus: os.cpus().length,
      load_average_1m: loadAverages.map((l) => round(l, 2)),
    }),
  );
}

if (!existsSync(SKILLS_SAMPLE_PATH)) {
  console.error(
    `bench:skills needs the real skills sample at ${SKILLS_SAMPLE_PATH} (../shared/data/skills/skills.jsonl beside the clone); it is not there.`,
  );
  process.exit(1);
}

void runHarnessBenchmark(WATCHDOG_MS, async (h) => {
  const { apiKey } = await h.createUser({ creditUsd: 1000 });
  log(`importing ${SKILLS_SAMPLE_PATH}`);
  const imported = await importJsonLines(h.db, readFileSync(SKILLS_SAMPLE_PATH, 'utf8'), {
    embedder: embedderFromConfig(h.config),
  });
  log(`imported: ${JSON.stringify({ ...imported, errors: imported.errors.length })}`);
  const loadAtStart = os.loadavg()[0];
  const recall = {
    keywords: await recallAt5(h, apiKey, SKILLS_QUERIES),
    prefix: await recallAt5(h, apiKey, PREFIX_QUERIES),
    typos: await recallAt5(h, apiKey, TYPO_QUERIES),
  };
  const latency = await measureLatency(h, apiKey);
  printReport(recall, latency, await embeddingStorage(h.db), [loadAtStart, os.loadavg()[0]]);
});
