import path from 'node:path';
import { mkdirSync } from 'node:fs';
import { Kysely, Migrator, PostgresDialect, type Dialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema';
import { migrationProvider } from './migrations';
import { PGliteDialect } from './pglite-dialect';

// Money is BIGINT micro-USD; every amount the service handles fits a double exactly (< 2^53).
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Db = Kysely<Database>;

export interface DatabaseTarget {
  /** A postgres:// URL, or null for embedded PGlite under dataDir. */
  databaseUrl: string | null;
  dataDir: string;
  poolSize?: number;
}

export async function openDatabase(target: DatabaseTarget): Promise<Db> {
  let dialect: Dialect;
  if (target.databaseUrl) {
    dialect = new PostgresDialect({ pool: new pg.Pool({ connectionString: target.databaseUrl, max: target.poolSize ?? 10 }) });
  } else {
    const { PGlite, types } = await import('@electric-sql/pglite');
    // pg_trgm backs the skills directory's typo-tolerant name search (migration 0004). The subpath
    // export resolves at run time; moduleResolution "node" cannot type it, hence the annotation.
    const { pg_trgm } = (await import('@electric-sql/pglite/contrib/pg_trgm' as string)) as { pg_trgm: import('@electric-sql/pglite').Extension };
    const dir = path.join(target.dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
    const pglite = await PGlite.create(dir, { parsers: { [types.INT8]: (value: string) => Number(value) }, extensions: { pg_trgm } });
    dialect = new PGliteDialect(pglite);
  }
  return new Kysely<Database>({ dialect });
}

export async function migrateToLatest(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`Migration ${failed?.migrationName ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
