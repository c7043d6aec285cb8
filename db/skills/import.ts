import type { Db } from '../connect';
import { upsertItems } from './catalogue';
import type { Embedder } from '../../lib/skills/embeddings';
import { checkSkillItem, type CatalogueItem } from '../../lib/skills/item';

export interface ImportLineError {
  line: number;
  message: string;
}

export interface ImportCounts {
  inserted: number;
  updated: number;
  unchanged: number;
  /** Lines refused (each has an entry in `errors`); blank lines are ignored, not skipped. */
  skipped: number;
  errors: ImportLineError[];
  /** Embeddings computed during the import. */
  embedded: number;
  /** Set when the embeddings endpoint failed; the items were stored without embeddings. */
  embeddingError?: string;
}

export const MAX_REPORTED_LINE_ERRORS = 1_000;

export function emptyCounts(): ImportCounts {
  return { inserted: 0, updated: 0, unchanged: 0, skipped: 0, errors: [], embedded: 0 };
}

export function addCounts(total: ImportCounts, part: ImportCounts): ImportCounts {
  const errors = [...total.errors, ...part.errors].slice(0, MAX_REPORTED_LINE_ERRORS);
  return {
    inserted: total.inserted + part.inserted,
    updated: total.updated + part.updated,
    unchanged: total.unchanged + part.unchanged,
    skipped: total.skipped + part.skipped,
    errors,
    embedded: total.embedded + part.embedded,
    ...((total.embeddingError ?? part.embeddingError)
      ? { embeddingError: total.embeddingError ?? part.embeddingError }
      : {}),
  };
}

/**
 * Imports JSON Lines text (one SkillsDirectoryItem per line, `firstLine` numbering the first one).
 * Every line is validated on its own: a bad one is reported with its number and skipped; good ones
 * are upserted each in its own transaction, so nothing is half-written. A key repeated within the
 * text keeps its last occurrence; the earlier lines count as skipped with an error.
 */
export async function importJsonLines(
  db: Db,
  text: string,
  options: { firstLine?: number; embedder: Embedder | null },
): Promise<ImportCounts> {
  const counts = emptyCounts();
  const firstLine = options.firstLine ?? 1;
  const accepted = new Map<string, { line: number; item: CatalogueItem }>();
  const lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const refuse = (line: number, message: string) => {
    counts.skipped++;
    if (counts.errors.length < MAX_REPORTED_LINE_ERRORS) counts.errors.push({ line, message });
  };
  for (const [index, raw] of lines.entries()) {
    const line = firstLine + index;
    const source = raw.replace(/\r$/, '');
    if (source.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch (err) {
      refuse(line, `not valid JSON: ${(err as Error).message}`);
      continue;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      refuse(line, 'must be a JSON object');
      continue;
    }
    const checked = checkSkillItem(value);
    if (!checked.ok) {
      refuse(line, checked.message);
      continue;
    }
    const key = `${checked.item.provider}\u0000${checked.item.externalId}`;
    const earlier = accepted.get(key);
    if (earlier) refuse(earlier.line, `superseded by line ${line} with the same provider and externalId`);
    accepted.delete(key);
    accepted.set(key, { line, item: checked.item });
  }
  counts.errors.sort((a, b) => a.line - b.line);

  const entries = [...accepted.values()].sort((a, b) => a.line - b.line);
  const result = await upsertItems(
    db,
    entries.map((e) => e.item),
    options.embedder,
  );
  for (const [index, outcome] of result.outcomes.entries()) {
    if (typeof outcome === 'string') counts[outcome]++;
    else refuse(entries[index].line, `could not be stored: ${outcome.error}`);
  }
  counts.errors.sort((a, b) => a.line - b.line);
  counts.embedded = result.embedded;
  if (result.embeddingError) counts.embeddingError = result.embeddingError;
  return counts;
}
