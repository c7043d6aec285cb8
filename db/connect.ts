import path from 'node:path';
import { mkdirSync } from 'node:fs';
import {
  Kysely,
  Migrator,
  PostgresDialect,
  sql,
  type Dialect,
  type PostgresPool,
  type PostgresPoolClient,
} from 'kysely';
import pg from 'pg';
import type { Database } from './schema';
import { migrationProvider } from './migrations';
import { applyFunctionFiles } from './function-files';
import { PGliteDialect } from './pglite-dialect';
import { log } from '../lib/log';

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
    const pool = new pg.Pool({ connectionString: target.databaseUrl, max: target.poolSize ?? 10 });
    // A connection that breaks (server restart, network cut) emits 'error' besides failing its
    // query; with no listener that event would crash the process. The pool listens on idle
    // connections only, so every connection gets its own listener. A broken connection is dropped
    // and replaced on next use; the failed query surfaces to its caller (503, activity retry).
    pool.on('error', () => undefined); // an idle connection's failure: logged by its own listener below
    pool.on('connect', (client) =>
      client.on('error', (err) => log().warn({ err }, 'a database connection failed; it will be replaced')),
    );
    dialect = new PostgresDialect({ pool: markingConnectionFailures(pool) });
  } else {
    const { PGlite, types } = await import('@electric-sql/pglite');
    // pg_trgm backs the skills directory's typo-tolerant name search (migration 0004). The subpath
    // export resolves at run time; moduleResolution "node" cannot type it, hence the annotation.
    const { pg_trgm } = (await import('@electric-sql/pglite/contrib/pg_trgm' as string)) as {
      pg_trgm: import('@electric-sql/pglite').Extension;
    };
    const dir = path.join(target.dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
    const pglite = await PGlite.create(dir, {
      parsers: { [types.INT8]: (value: string) => Number(value) },
      extensions: { pg_trgm },
    });
    dialect = new PGliteDialect(pglite);
  }
  return new Kysely<Database>({ dialect });
}

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const CONNECTION_ERROR_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended/i;
const unreachable = new WeakSet<object>();

/** Marks errors that mean "Postgres could not be reached or dropped the connection", as they leave the pool. */
function markingConnectionFailures(pool: pg.Pool): PostgresPool {
  const mark = (err: unknown) => {
    if (err && typeof err === 'object') {
      const { code, message } = err as { code?: unknown; message?: unknown };
      const severity = (err as { severity?: unknown }).severity;
      const connectionLevel =
        severity === undefined &&
        ((typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) ||
          (typeof message === 'string' && CONNECTION_ERROR_MESSAGES.test(message)));
      if (connectionLevel) unreachable.add(err);
    }
    return err;
  };
  return {
    async connect() {
      const client = await pool.connect().catch((err) => {
        // Whatever stops a new connection (refused, timed out, authentication) is the database being unreachable.
        if (err && typeof err === 'object' && (err as { severity?: unknown }).severity === undefined)
          unreachable.add(err);
        throw err;
      });
      return {
        query: ((...args: [never, never]) => {
          const result = (client.query as (...a: unknown[]) => unknown)(...args);
          return result instanceof Promise ? result.catch((err) => Promise.reject(mark(err))) : result;
        }) as PostgresPoolClient['query'],
        release: () => client.release(),
      };
    },
    end: () => pool.end(),
  };
}

/**
 * True when a query failed because Postgres could not be reached or dropped the connection (not
 * because of the query): worth a retry later, and a 503 rather than a 500 for a client. Network
 * errors of other services (a page, a webhook, the LLM) do not count.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  if (unreachable.has(err)) return true;
  // What the server itself says while it shuts down or restarts.
  const { code, severity } = err as { code?: unknown; severity?: unknown };
  return (
    severity !== undefined &&
    typeof code === 'string' &&
    (code.startsWith('08') || ['57P01', '57P02', '57P03'].includes(code))
  );
}

/** A round trip to the database (the readiness probe's); rejects when it does not answer. */
export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}

/**
 * The versioned migrations (db/migrations), then the functions' files (db/functions, repeatable): every file when
 * a migration ran, else each file whose text changed since it was applied (db/function-files.ts).
 */
export async function migrateToLatest(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(
      `Migration ${failed?.migrationName ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const applied = await applyFunctionFiles(db, { all: (results?.length ?? 0) > 0 });
  if (applied.length > 0) log().info({ functions: applied }, 'database functions applied from db/functions');
}
