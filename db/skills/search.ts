import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../connect';
import { embeddingStorage, vectorValue } from './catalogue';
import type { SkillsDirectoryItem } from '../../lib/skills/item';
import { SKILL_ROW_COLUMNS, toDirectoryItem, type SkillRow } from './rows';

/**
 * Plain search over the catalogue. Matching: a row matches when its search document contains any
 * query term (the last term as a prefix, `term:*`), or when a query term of 3+ characters is
 * trigram-similar to a word run of its name (pg_trgm `<%`, word similarity >= 0.5), which is what
 * finds names with small typos. Ranking, highest score first:
 *
 *   score = field coverage   sum over terms of 1.0 (in name) + 0.5 (in tags) + 0.25 (in description)
 *                            + 0.1 (in SKILL.md), divided by the number of terms
 *         + 0.5  when the document has every term
 *         + 0.5 * ts_rank_cd({D 0.1, C 0.2, B 0.4, A 1.0}, document, any term, normalisation 32)
 *         + 0.6 * the best word similarity of a term to the name, when >= 0.5
 *         + 0.5  when the name, punctuation ignored, equals the query
 *
 * Ties are broken by lower(name), provider, externalId, so pages are stable.
 */

// PostgreSQL's English stop words (snowball english.stop): they are never lexemes.
const STOP_WORDS = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it its itself ' +
    'they them their theirs themselves what which who whom this that these those am is are was were be been being have has had ' +
    'having do does did doing a an the and but if or because as until while of at by for with about against between into through ' +
    'during before after above below to from up down in out on off over under again further then once here there when where why how ' +
    'all any both each few more most other some such no nor not only own same so than too very s t can will just don should now'
  ).split(' '),
);

export const MAX_QUERY_TERMS = 12;
export const WORD_SIMILARITY_THRESHOLD = 0.5;
const TRIGRAM_MIN_TERM_LENGTH = 3;
const TS_WEIGHTS = '{0.1, 0.2, 0.4, 1.0}';

/** Lower-cased words of a query (letters and digits only, so they are safe inside to_tsquery). */
export function queryWords(q: string): string[] {
  return (
    q
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** The distinct non-stop-word terms of a query, at most `max` (MAX_QUERY_TERMS), in order. */
export function searchTerms(q: string, max = MAX_QUERY_TERMS): string[] {
  const terms: string[] = [];
  for (const word of queryWords(q)) {
    if (!STOP_WORDS.has(word) && !terms.includes(word)) terms.push(word);
  }
  return terms.slice(0, max);
}

export interface RankedQuery {
  /** Terms matched as words; with `prefixLast`, the last one matches as a prefix too. */
  terms: string[];
  prefixLast: boolean;
  /** The whole query, lower-cased words joined by spaces: an exact name match ranks first. */
  phrase: string;
}

interface RankingSql {
  where: RawBuilder<boolean>;
  score: RawBuilder<number>;
}

function rankingSql(query: RankedQuery): RankingSql {
  const { terms } = query;
  const lexeme = (term: string, index: number) =>
    query.prefixLast && index === terms.length - 1 ? `${term}:*` : `${term}:`;
  const anyText = terms.map((t, i) => (query.prefixLast && i === terms.length - 1 ? `${t}:*` : t)).join(' | ');
  const allText = terms.map((t, i) => (query.prefixLast && i === terms.length - 1 ? `${t}:*` : t)).join(' & ');
  // Scoring reads the document many times per row; `d.doc` is a detoasted copy made once per matching row.
  const doc = sql.ref('d.doc');
  const indexedDoc = sql.ref('s.search_document');
  const name = sql`lower(s.name)`;
  const trigramTerms = terms.filter((t) => t.length >= TRIGRAM_MIN_TERM_LENGTH);

  const fieldHits = terms.map(
    (term, i) => sql`(case when ${doc} @@ to_tsquery('english', ${lexeme(term, i) + 'A'}::text) then 1.0 else 0 end
      + case when ${doc} @@ to_tsquery('english', ${lexeme(term, i) + 'B'}::text) then 0.5 else 0 end
      + case when ${doc} @@ to_tsquery('english', ${lexeme(term, i) + 'C'}::text) then 0.25 else 0 end
      + case when ${doc} @@ to_tsquery('english', ${lexeme(term, i) + 'D'}::text) then 0.1 else 0 end)`,
  );
  const coverage = terms.length ? sql`(${sql.join(fieldHits, sql` + `)}) / ${terms.length}::numeric` : sql`0::numeric`;
  const anyQuery = sql`to_tsquery('english', ${anyText}::text)`;
  const fts = terms.length
    ? sql`${coverage}
        + case when ${terms.length > 1 ? sql`${doc} @@ to_tsquery('english', ${allText}::text)` : sql`false`} then 0.5 else 0 end
        + 0.5 * ts_rank_cd(${TS_WEIGHTS}::real[], ${doc}, ${anyQuery}, 32)`
    : sql`0::numeric`;
  // Every parameter is typed: with no term long enough for trigrams, an untyped threshold next to
  // the literal 0 would be read as an integer ("invalid input syntax for type integer: "0.5"").
  const trigram = trigramTerms.length
    ? sql`greatest(${sql.join(trigramTerms.map((t) => sql`word_similarity(${t}::text, ${name})`))})`
    : sql`0::real`;
  const score = sql<number>`(${fts}
    + case when ${trigram} >= ${WORD_SIMILARITY_THRESHOLD}::real then 0.6 * ${trigram} else 0 end
    + case when regexp_replace(${name}, '[^[:alnum:]]+', ' ', 'g') = ${query.phrase}::text then 0.5 else 0 end)::double precision`;

  const matches: RawBuilder<boolean>[] = [];
  if (terms.length) matches.push(sql<boolean>`${indexedDoc} @@ ${anyQuery}`);
  // `<%` (word similarity above pg_trgm.word_similarity_threshold) can use the trigram index on lower(name).
  for (const t of trigramTerms) matches.push(sql<boolean>`${t}::text <% ${name}`);
  return { where: matches.length ? sql<boolean>`(${sql.join(matches, sql` or `)})` : sql<boolean>`false`, score };
}

export interface RankedRow extends SkillRow {
  score: number;
  total: number;
}

/**
 * One ranked page. It runs in a transaction with two local settings: the trigram
 * threshold, so `<%` uses WORD_SIMILARITY_THRESHOLD whatever the session default, and
 * enable_seqscan off, so matching goes through the GIN indexes (a sequential scan would detoast and
 * test every document; the planner picks it for small tables).
 */
export async function rankedPage(
  db: Db,
  query: RankedQuery,
  limit: number,
  offset: number,
): Promise<{ rows: RankedRow[]; total: number }> {
  if (query.terms.length === 0) return { rows: [], total: 0 };
  const { where, score } = rankingSql(query);
  const columns = sql.join(SKILL_ROW_COLUMNS.map((c) => sql.ref(`s.${c}`)));
  return db.transaction().execute(async (trx) => {
    await sql`select set_config('pg_trgm.word_similarity_threshold', ${String(WORD_SIMILARITY_THRESHOLD)}::text, true), set_config('enable_seqscan', 'off', true)`.execute(
      trx,
    );
    const { rows } = await sql<RankedRow>`
      select ${columns}, ranked.score, count(*) over () as total
      from skills_directory s
      cross join lateral (select s.search_document || ''::tsvector as doc offset 0) d
      cross join lateral (select ${score} as score) ranked
      where ${where}
      order by ranked.score desc, lower(s.name), s.provider, s.external_id
      limit ${limit}::int offset ${offset}::int`.execute(trx);
    let total = rows.length ? Number(rows[0].total) : 0;
    if (rows.length === 0 && offset > 0) {
      const counted = await sql<{
        n: number;
      }>`select count(*)::int as n from skills_directory s where ${where}`.execute(trx);
      total = counted.rows[0]?.n ?? 0;
    }
    return { rows, total };
  });
}

export interface SearchPage {
  items: SkillsDirectoryItem[];
  total: number;
}

export async function plainSearch(db: Db, q: string, page: { page: number; pageSize: number }): Promise<SearchPage> {
  const terms = searchTerms(q);
  const { rows, total } = await rankedPage(
    db,
    { terms, prefixLast: true, phrase: queryWords(q).join(' ') },
    page.pageSize,
    (page.page - 1) * page.pageSize,
  );
  return { items: rows.map(toDirectoryItem), total };
}

export interface CandidateKey {
  provider: string;
  externalId: string;
}

export const candidateKey = (c: CandidateKey) => `${c.provider}\u0000${c.externalId}`;

/** The best `limit` full-text matches of a term list (AI search's keyword retriever; no prefix). */
export async function ftsCandidates(db: Db, terms: string[], limit: number): Promise<CandidateKey[]> {
  const { rows } = await rankedPage(db, { terms, prefixLast: false, phrase: terms.join(' ') }, limit, 0);
  return rows.map((r) => ({ provider: r.provider, externalId: r.external_id }));
}

/** The `limit` nearest items by cosine similarity to a unit query vector, among items embedded with `model`. */
export async function embeddingCandidates(
  db: Db,
  vector: number[],
  model: string,
  limit: number,
): Promise<CandidateKey[]> {
  const storage = await embeddingStorage(db);
  const value = vectorValue(storage, vector);
  const { rows } =
    storage === 'pgvector'
      ? await sql<{ provider: string; external_id: string }>`
          select provider, external_id from skills_directory
          where embedding_model = ${model}::text and vector_dims(embedding) = ${vector.length}::int
          order by embedding <=> ${value}, provider, external_id
          limit ${limit}::int`.execute(db)
      : await sql<{ provider: string; external_id: string }>`
          select provider, external_id from skills_directory
          where embedding_model = ${model}::text and cardinality(embedding) = ${vector.length}::int
          order by skills_dot(embedding, ${value}) desc, provider, external_id
          limit ${limit}::int`.execute(db);
  return rows.map((r) => ({ provider: r.provider, externalId: r.external_id }));
}

/** The items of `keys`, in that order (keys no longer in the catalogue are dropped); `withContent: false` leaves skillMdContent null. */
export async function itemsByKeys(
  db: Db,
  keys: readonly CandidateKey[],
  options: { withContent?: boolean } = {},
): Promise<SkillsDirectoryItem[]> {
  if (keys.length === 0) return [];
  const columns =
    options.withContent === false ? SKILL_ROW_COLUMNS.filter((c) => c !== 'skill_md_content') : SKILL_ROW_COLUMNS;
  const rows = await db
    .selectFrom('skills_directory')
    .select([...columns])
    .where((eb) =>
      eb.or(keys.map((k) => eb.and([eb('provider', '=', k.provider), eb('external_id', '=', k.externalId)]))),
    )
    .execute();
  const byKey = new Map(
    rows.map((r) => [
      candidateKey({ provider: r.provider, externalId: r.external_id }),
      toDirectoryItem({ ...r, skill_md_content: options.withContent === false ? null : r.skill_md_content }),
    ]),
  );
  return keys.map((k) => byKey.get(candidateKey(k))).filter((item): item is SkillsDirectoryItem => item !== undefined);
}
