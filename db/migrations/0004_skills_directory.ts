import { type Kysely, sql } from 'kysely';

/**
 * The skills directory catalogue. Text search is a stored, generated `tsvector` weighted
 * name (A) > tags (B) > description (C) > SKILL.md content (D) with a GIN index; typo tolerance is
 * pg_trgm on lower(name) with a trigram GIN index.
 *
 * Embeddings: when the pgvector extension can be created, `embedding` is a `vector` column and
 * similarity uses its `<=>` cosine distance. Otherwise (plain Postgres without pgvector, PGlite)
 * it is `real[]` holding unit-length vectors, and similarity is the dot product computed by
 * `skills_dot(real[], real[])`. The choice is made here, once; the code reads the column type.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create extension if not exists pg_trgm`.execute(db);
  const vector = await createVectorExtensionIfAvailable(db);

  // array_to_string is only STABLE, and a generated column needs IMMUTABLE expressions.
  await sql`
    create or replace function skills_tags_text(tags text[]) returns text
    language sql immutable parallel safe
    as $$ select coalesce(array_to_string(tags, ' '), '') $$`.execute(db);
  // Both arrays are unit vectors, so their dot product is the cosine similarity. unnest() in the
  // select list (not FROM) streams the pairs instead of materialising them: about twice as fast.
  await sql`
    create or replace function skills_dot(a real[], b real[]) returns double precision
    language sql immutable strict parallel safe
    as $$ select sum(x::double precision * y) from (select unnest(a) as x, unnest(b) as y) as pairs $$`.execute(db);

  await db.schema
    .createTable('skills_directory')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('repository_url', 'text')
    .addColumn('github_owner', 'text')
    .addColumn('github_repo', 'text')
    .addColumn('source_url', 'text')
    .addColumn('version', 'text')
    .addColumn('skill_md_content', 'text')
    .addColumn('tags', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('stars', 'integer')
    .addColumn('license', 'text')
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('embedding', vector ? sql`vector` : sql`real[]`)
    .addColumn('embedding_model', 'text')
    /** Hash of the text the embedding was computed from: it is recomputed only when that text changes. */
    .addColumn('embedding_hash', 'text')
    .addColumn('search_document', sql`tsvector`, (c) =>
      c
        .generatedAlwaysAs(
          sql`setweight(to_tsvector('english', coalesce(name, '')), 'A')
            || setweight(to_tsvector('english', skills_tags_text(tags)), 'B')
            || setweight(to_tsvector('english', coalesce(description, '')), 'C')
            || setweight(to_tsvector('english', coalesce(skill_md_content, '')), 'D')`,
        )
        .stored(),
    )
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('skills_directory_pkey', ['provider', 'external_id'])
    .execute();
  await sql`create index skills_directory_search_idx on skills_directory using gin (search_document)`.execute(db);
  await sql`create index skills_directory_name_trgm_idx on skills_directory using gin (lower(name) gin_trgm_ops)`.execute(
    db,
  );
  await db.schema
    .createIndex('skills_directory_repo_idx')
    .on('skills_directory')
    .columns(['github_owner', 'github_repo'])
    .execute();
}

/** Creates pgvector when the server offers it; a failure (no permission, broken install) leaves the real[] fallback. */
async function createVectorExtensionIfAvailable(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql<{
    available: boolean;
  }>`select exists (select 1 from pg_available_extensions where name = 'vector') as available`.execute(db);
  if (!rows[0]?.available) return false;
  // Migrations run in one transaction: a failed CREATE EXTENSION must only undo itself.
  await sql`savepoint skills_vector`.execute(db);
  try {
    await sql`create extension if not exists vector`.execute(db);
    await sql`release savepoint skills_vector`.execute(db);
    return true;
  } catch {
    await sql`rollback to savepoint skills_vector`.execute(db);
    return false;
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('skills_directory').ifExists().execute();
  await sql`drop function if exists skills_dot(real[], real[])`.execute(db);
  await sql`drop function if exists skills_tags_text(text[])`.execute(db);
}
