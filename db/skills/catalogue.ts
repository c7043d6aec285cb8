import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../connect';
import type { Embedder } from '../../lib/skills/embeddings';
import { contentHash, embeddingHash, embeddingText, type CatalogueItem } from '../../lib/skills/item';

/** How embeddings are stored, fixed by migration 0004: pgvector's `vector`, or the `real[]` fallback. */
export type EmbeddingStorage = 'pgvector' | 'real[]';

const storageByDb = new WeakMap<object, Promise<EmbeddingStorage>>();

export function embeddingStorage(db: Db): Promise<EmbeddingStorage> {
  let storage = storageByDb.get(db);
  if (!storage) {
    storage = sql<{ type: string }>`
      select format_type(atttypid, atttypmod) as type from pg_attribute
      where attrelid = 'skills_directory'::regclass and attname = 'embedding' and not attisdropped`
      .execute(db)
      .then(({ rows }) => (rows[0]?.type.startsWith('vector') ? 'pgvector' : 'real[]'));
    storage.catch(() => storageByDb.delete(db));
    storageByDb.set(db, storage);
  }
  return storage;
}

/** A vector as an SQL value of the column's type. */
export function vectorValue(storage: EmbeddingStorage, vector: readonly number[]): RawBuilder<unknown> {
  const numbers = vector.map((v) => (Number.isFinite(v) ? String(Math.fround(v)) : '0'));
  return storage === 'pgvector' ? sql`${`[${numbers.join(',')}]`}::vector` : sql`${`{${numbers.join(',')}}`}::real[]`;
}

export type UpsertOutcome = 'inserted' | 'updated' | 'unchanged';

export interface UpsertResult {
  /** One per item, in order; a write that failed is reported, not thrown, so the other items still land. */
  outcomes: (UpsertOutcome | { error: string })[];
  /** Embeddings computed and stored by this call. */
  embedded: number;
  /** Set when the embeddings endpoint failed: the items were stored without (fresh) embeddings. */
  embeddingError: string | null;
}

interface Existing {
  content_hash: string;
  embedding_hash: string | null;
}

const keyOf = (provider: string, externalId: string) => `${provider}\u0000${externalId}`;

async function existingRows(db: Db, items: readonly CatalogueItem[]): Promise<Map<string, Existing>> {
  const found = new Map<string, Existing>();
  for (let start = 0; start < items.length; start += 200) {
    const slice = items.slice(start, start + 200);
    const rows = await db
      .selectFrom('skills_directory')
      .select(['provider', 'external_id', 'content_hash', 'embedding_hash'])
      .where((eb) =>
        eb.or(slice.map((i) => eb.and([eb('provider', '=', i.provider), eb('external_id', '=', i.externalId)]))),
      )
      .execute();
    for (const row of rows) found.set(keyOf(row.provider, row.external_id), row);
  }
  return found;
}

/**
 * Upserts items by (provider, externalId), each in its own statement (so its own transaction): a
 * row is either fully written or untouched. Rows whose content hash is unchanged are not written.
 * Embeddings are computed in batches beforehand, only for items whose embedding text (or the model)
 * changed or that have none yet; a failing embeddings endpoint does not stop the import.
 */
export async function upsertItems(
  db: Db,
  items: readonly CatalogueItem[],
  embedder: Embedder | null,
): Promise<UpsertResult> {
  const storage = await embeddingStorage(db);
  const existing = await existingRows(db, items);
  const hashes = items.map(contentHash);
  const texts = embedder ? items.map(embeddingText) : [];
  const embeddingHashes = embedder ? texts.map((text) => embeddingHash(embedder.model, text)) : [];

  const vectors = new Map<number, number[]>();
  let embeddingError: string | null = null;
  if (embedder) {
    const wanted = items
      .map((_, i) => i)
      .filter(
        (i) => existing.get(keyOf(items[i].provider, items[i].externalId))?.embedding_hash !== embeddingHashes[i],
      );
    if (wanted.length > 0) {
      try {
        const { vectors: computed } = await embedder.embed(wanted.map((i) => texts[i]));
        wanted.forEach((index, n) => vectors.set(index, computed[n]));
      } catch (err) {
        embeddingError = err instanceof Error ? err.message : String(err);
      }
    }
  }

  const outcomes: UpsertResult['outcomes'] = [];
  let embedded = 0;
  for (const [index, item] of items.entries()) {
    try {
      const { outcome, wroteEmbedding } = await writeItem(index, item);
      outcomes.push(outcome);
      if (wroteEmbedding) embedded++;
    } catch (err) {
      outcomes.push({ error: err instanceof Error ? err.message : String(err) });
    }
  }
  return { outcomes, embedded, embeddingError };

  async function writeItem(
    index: number,
    item: CatalogueItem,
  ): Promise<{ outcome: UpsertOutcome; wroteEmbedding: boolean }> {
    const before = existing.get(keyOf(item.provider, item.externalId));
    const vector = vectors.get(index);
    const keepsEmbedding = !!before && !!embedder && before.embedding_hash === embeddingHashes[index];
    const embeddingColumns = vector
      ? {
          embedding: vectorValue(storage, vector),
          embedding_model: embedder!.model,
          embedding_hash: embeddingHashes[index],
        }
      : before && !keepsEmbedding
        ? // The content changed and no fresh vector was computed: a stale one would mislead.
          { embedding: null, embedding_model: null, embedding_hash: null }
        : {};
    if (before && before.content_hash === hashes[index]) {
      if (vector) {
        await db
          .updateTable('skills_directory')
          .set(embeddingColumns)
          .where('provider', '=', item.provider)
          .where('external_id', '=', item.externalId)
          .execute();
      }
      return { outcome: 'unchanged', wroteEmbedding: !!vector };
    }
    const columns = {
      name: item.name,
      description: item.description,
      repository_url: item.repositoryUrl,
      github_owner: item.githubOwner,
      github_repo: item.githubRepo,
      source_url: item.sourceUrl,
      version: item.version,
      skill_md_content: item.skillMdContent,
      tags: item.tags,
      stars: item.stars,
      license: item.license,
      content_hash: hashes[index],
    };
    const written = await db
      .insertInto('skills_directory')
      .values({ provider: item.provider, external_id: item.externalId, ...columns, ...embeddingColumns })
      .onConflict((oc) =>
        oc
          .columns(['provider', 'external_id'])
          .doUpdateSet({ ...columns, ...embeddingColumns, updated_at: new Date() })
          .where('skills_directory.content_hash', '<>', hashes[index]),
      )
      .returning(sql<boolean>`(xmax = 0)`.as('inserted'))
      .executeTakeFirst();
    return {
      outcome: !written ? 'unchanged' : written.inserted ? 'inserted' : 'updated',
      wroteEmbedding: !!vector && !!written,
    };
  }
}

/** Items that lack an embedding for the current model (imported while embeddings were unavailable, or a model change). */
export async function backfillEmbeddings(db: Db, embedder: Embedder, limit = 500): Promise<number> {
  const rows = await db
    .selectFrom('skills_directory')
    .selectAll()
    .where((eb) => eb.or([eb('embedding_model', 'is', null), eb('embedding_model', '<>', embedder.model)]))
    .orderBy('provider')
    .orderBy('external_id')
    .limit(limit)
    .execute();
  if (rows.length === 0) return 0;
  const storage = await embeddingStorage(db);
  const items: CatalogueItem[] = rows.map((r) => ({
    provider: r.provider,
    externalId: r.external_id,
    name: r.name,
    description: r.description,
    repositoryUrl: r.repository_url,
    githubOwner: r.github_owner,
    githubRepo: r.github_repo,
    sourceUrl: r.source_url,
    version: r.version,
    skillMdContent: r.skill_md_content,
    tags: r.tags,
    stars: r.stars,
    license: r.license,
  }));
  const texts = items.map(embeddingText);
  const { vectors } = await embedder.embed(texts);
  for (const [i, item] of items.entries()) {
    await db
      .updateTable('skills_directory')
      .set({
        embedding: vectorValue(storage, vectors[i]),
        embedding_model: embedder.model,
        embedding_hash: embeddingHash(embedder.model, texts[i]),
      })
      .where('provider', '=', item.provider)
      .where('external_id', '=', item.externalId)
      .where('content_hash', '=', rows[i].content_hash)
      .execute();
  }
  return rows.length;
}

/** Removes a repository's GitHub items that its latest complete listing no longer has. */
export async function deleteMissingFromRepository(
  db: Db,
  owner: string,
  repo: string,
  keepExternalIds: readonly string[],
): Promise<number> {
  let query = db
    .deleteFrom('skills_directory')
    .where('provider', '=', 'github')
    .where('github_owner', '=', owner)
    .where('github_repo', '=', repo);
  if (keepExternalIds.length > 0) query = query.where('external_id', 'not in', [...keepExternalIds]);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows ?? 0);
}

/** The SKILL.md text of a directory skill, or null when the directory has no such skill (or no text for it). */
export async function findSkillMdContent(
  db: Db,
  key: { provider: string; externalId: string },
): Promise<string | null> {
  const copy = await db
    .selectFrom('skills_directory')
    .select('skill_md_content')
    .where('provider', '=', key.provider)
    .where('external_id', '=', key.externalId)
    .executeTakeFirst();
  return copy?.skill_md_content ?? null;
}
