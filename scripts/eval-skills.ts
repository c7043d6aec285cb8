/**
 * `npm run eval:skills [FILE]` — relevance of plain skills search over a real catalogue (an
 * evaluation, not a test). Imports FILE (default ../shared/data/skills/skills.jsonl beside the clone,
 * read in place, never copied) into a throwaway embedded PGlite database, runs the keyword, prefix
 * and typo query sets of scripts/skills-sample-queries.ts through plain search, and prints recall@5
 * per set (found expected skills / expected skills) with the queries that missed, then one JSON line.
 * Needs no Postgres, Temporal or network. Exit code 0 when it ran, 1 when FILE is missing or unreadable.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrateToLatest, openDatabase, type Db } from '../db/connect';
import { importJsonLines } from '../db/skills/import';
import { plainSearch } from '../db/skills/search';
import {
  PREFIX_QUERIES,
  SKILLS_QUERIES,
  SKILLS_SAMPLE_PATH,
  TYPO_QUERIES,
  type SkillsQuery,
} from './skills-sample-queries';

export interface RecallFigures {
  queries: number;
  expected: number;
  found: number;
  recallAt5: number;
  misses: { q: string; missing: string[]; top5: string[] }[];
}

export async function recallAt5(db: Db, queries: readonly SkillsQuery[]): Promise<RecallFigures> {
  let expected = 0;
  let found = 0;
  const misses: RecallFigures['misses'] = [];
  for (const { q, mustInTop5 } of queries) {
    const top5 = (await plainSearch(db, q, { page: 1, pageSize: 5 })).items.map((i) => i.externalId);
    const missing = mustInTop5.filter((id) => !top5.includes(id));
    expected += mustInTop5.length;
    found += mustInTop5.length - missing.length;
    if (missing.length) misses.push({ q, missing, top5 });
  }
  return {
    queries: queries.length,
    expected,
    found,
    recallAt5: expected ? Math.round((found / expected) * 1000) / 1000 : 0,
    misses,
  };
}

async function main(): Promise<number> {
  const file = process.argv[2] ? path.resolve(process.argv[2]) : SKILLS_SAMPLE_PATH;
  if (!existsSync(file)) {
    console.error(
      `eval:skills: ${file} does not exist. Pass a JSON Lines catalogue: npm run eval:skills -- path/to/skills.jsonl`,
    );
    console.error('(the default is the 385-skill sample at ../shared/data/skills/skills.jsonl beside the clone)');
    return 1;
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    console.error(`eval:skills: cannot read ${file}: ${(err as Error).message}`);
    return 1;
  }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'eval-skills-'));
  const db = await openDatabase({ databaseUrl: null, dataDir });
  try {
    await migrateToLatest(db);
    const imported = await importJsonLines(db, text, { embedder: null });
    console.log(`catalogue: ${file}`);
    console.log(`imported ${imported.inserted} skills (${imported.skipped} lines skipped)`);
    const sets = { keywords: SKILLS_QUERIES, prefix: PREFIX_QUERIES, typos: TYPO_QUERIES };
    const results: Record<string, RecallFigures> = {};
    for (const [name, queries] of Object.entries(sets)) {
      const r = (results[name] = await recallAt5(db, queries));
      console.log(
        `recall@5 ${name.padEnd(8)} ${r.recallAt5.toFixed(3)}  (${r.found}/${r.expected} expected skills over ${r.queries} queries)`,
      );
      for (const miss of r.misses)
        console.log(`  miss "${miss.q}": ${miss.missing.join(', ')} not in top 5 [${miss.top5.join(', ')}]`);
    }
    const all = Object.values(results).reduce(
      (sum, r) => ({ found: sum.found + r.found, expected: sum.expected + r.expected }),
      { found: 0, expected: 0 },
    );
    const overall = all.expected ? Math.round((all.found / all.expected) * 1000) / 1000 : 0;
    console.log(`recall@5 overall  ${overall.toFixed(3)}  (${all.found}/${all.expected})`);
    console.log(
      JSON.stringify({
        file,
        imported: imported.inserted,
        recall_at_5: Object.fromEntries(
          Object.entries(results).map(([k, r]) => [
            k,
            { recall: r.recallAt5, found: r.found, expected: r.expected, queries: r.queries },
          ]),
        ),
        overall,
      }),
    );
    return 0;
  } finally {
    await db.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(`eval:skills failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
