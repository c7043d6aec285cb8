import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';

/**
 * The database's functions (the money and admission rules that run as one call under the wallet lock, and the
 * skills directory's two helpers), one current file each in db/functions/<name>.sql, applied as repeatable
 * migrations: after the versioned migrations, and again whenever a file's text changes (db/functions/README.md).
 */
export const FUNCTIONS_DIR = path.join(__dirname, 'functions');

/** Serialises appliers (API and workers starting together); any constant other code does not lock. */
const APPLY_LOCK = 35_031_2026;

export interface FunctionFile {
  /** The function's name, which is the file's name without .sql. */
  name: string;
  /** The file's path relative to db/, as documentation names it. */
  file: string;
  text: string;
  sha256: string;
  /** The header's first line: what the function does. */
  summary: string;
  /** The header's `Called by:` line. */
  calledBy: string;
}

export function readFunctionFiles(dir = FUNCTIONS_DIR): FunctionFile[] {
  return readdirSync(dir)
    .filter((entry) => entry.endsWith('.sql'))
    .sort()
    .map((entry) => {
      const name = entry.slice(0, -'.sql'.length);
      const text = readFileSync(path.join(dir, entry), 'utf8');
      const summary = new RegExp(`^-- ${name}: (.+)$`, 'm').exec(text.split('\n', 1)[0])?.[1];
      const calledBy = /^-- Called by: (.+)$/m.exec(text)?.[1];
      if (!summary || !calledBy)
        throw new Error(
          `db/functions/${entry} must start with "-- ${name}: <what it does>" and have "-- Called by: <callers>"`,
        );
      if (!new RegExp(`^create or replace function ${name}\\(`, 'm').test(text))
        throw new Error(
          `db/functions/${entry} must define function ${name} with "create or replace function ${name}("`,
        );
      const sha256 = createHash('sha256').update(text, 'utf8').digest('hex');
      return { name, file: `functions/${entry}`, text, sha256, summary, calledBy };
    });
}

/**
 * Applies the function files that changed since they were last applied (their sha256 differs from the one
 * recorded in function_files) or whose function is missing, or every file with `all` (after versioned
 * migrations ran: a migration's down drops the functions it introduced). One transaction: each CREATE OR REPLACE with its recorded hash. A
 * file whose arguments changed replaces the function: other functions of the same name in the schema (the
 * old signature) are dropped. Returns the names applied.
 */
export async function applyFunctionFiles(db: Kysely<any>, options: { all: boolean; dir?: string }): Promise<string[]> {
  const files = readFunctionFiles(options.dir);
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${APPLY_LOCK})`.execute(trx);
    await sql`create table if not exists function_files (
                name text primary key,
                sha256 text not null,
                applied_at timestamptz not null default now())`.execute(trx);
    const recorded = await sql<{ name: string; sha256: string }>`select name, sha256 from function_files`.execute(trx);
    const applied = new Map(recorded.rows.map((row) => [row.name, row.sha256]));
    const existing = await sql<{ name: string }>`
      select distinct proname as name from pg_proc where pronamespace = current_schema()::regnamespace`.execute(trx);
    const present = new Set(existing.rows.map((row) => row.name));
    const due = files.filter(
      (file) => options.all || applied.get(file.name) !== file.sha256 || !present.has(file.name),
    );
    for (const file of due) {
      await sql.raw(file.text).execute(trx);
      await dropOtherSignatures(trx, file.name);
      await sql`insert into function_files (name, sha256) values (${file.name}, ${file.sha256})
                on conflict (name) do update set sha256 = excluded.sha256, applied_at = now()`.execute(trx);
    }
    return due.map((file) => file.name);
  });
}

/** Drops the functions called `name` in the current schema that this transaction did not just create or replace. */
async function dropOtherSignatures(trx: Kysely<any>, name: string): Promise<void> {
  const stale = await sql<{ signature: string }>`
    select p.oid::regprocedure::text as signature from pg_proc p
    where p.proname = ${name} and p.pronamespace = current_schema()::regnamespace
      and p.xmin::text::bigint <> txid_current() % 4294967296`.execute(trx);
  for (const { signature } of stale.rows) await sql.raw(`drop function ${signature}`).execute(trx);
}

/** The functions of the current schema (not an extension's), by name: their definition as the database prints it. */
async function definitionsInSchema(db: Kysely<any>, schema: string): Promise<Map<string, string[]>> {
  const rows = await sql<{ name: string; definition: string }>`
    select p.proname as name, pg_get_functiondef(p.oid) as definition from pg_proc p
    where p.pronamespace = ${schema}::regnamespace and p.prokind = 'f'
      and not exists (select 1 from pg_depend d
                      where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
    order by p.oid::regprocedure::text`.execute(db);
  const byName = new Map<string, string[]>();
  for (const { name, definition } of rows.rows) {
    // pg_get_functiondef qualifies the name with its schema; the rest is the same wherever the file was applied.
    const unqualified = definition.replace(/^(CREATE OR REPLACE FUNCTION )[^(]*?\./, '$1');
    byName.set(name, [...(byName.get(name) ?? []), unqualified]);
  }
  return byName;
}

class ScratchRollback extends Error {}

/**
 * What differs between the database's functions (current schema) and db/functions: a function without a file, a
 * file not applied (no function, or another hash recorded), a function whose definition is not what its file
 * creates (the file applied in a scratch schema that is rolled back, both printed by pg_get_functiondef and
 * compared exactly). Empty when they agree.
 */
export async function functionDrift(db: Kysely<any>, dir = FUNCTIONS_DIR): Promise<string[]> {
  const files = readFunctionFiles(dir);
  const problems: string[] = [];
  try {
    await db.transaction().execute(async (trx) => {
      const { schema, searchPath } = (
        await sql<{ schema: string; searchPath: string }>`
          select current_schema() as schema, current_setting('search_path') as "searchPath"`.execute(trx)
      ).rows[0];
      const live = await definitionsInSchema(trx, schema);
      const table = await sql<{
        present: boolean;
      }>`select to_regclass('function_files') is not null as present`.execute(trx);
      const recorded = table.rows[0].present
        ? (await sql<{ name: string; sha256: string }>`select name, sha256 from function_files`.execute(trx)).rows
        : [];
      const applied = new Map(recorded.map((row) => [row.name, row.sha256]));

      const scratch = `function_files_check_${randomBytes(4).toString('hex')}`;
      await sql`create schema ${sql.id(scratch)}`.execute(trx);
      await sql.raw(`set local search_path = ${scratch}, ${searchPath}`).execute(trx);
      for (const file of files) await sql.raw(file.text).execute(trx);
      const expected = await definitionsInSchema(trx, scratch);

      for (const name of live.keys())
        if (!files.some((file) => file.name === name)) problems.push(`${name}: in the database, without a file`);
      for (const file of files) {
        if (applied.get(file.name) !== file.sha256) problems.push(`${file.name}: ${file.file} is not applied`);
        const want = expected.get(file.name) ?? [];
        const have = live.get(file.name) ?? [];
        if (have.length !== 1 || have[0] !== want[0])
          problems.push(`${file.name}: the database's definition is not ${file.file}'s`);
      }
      throw new ScratchRollback();
    });
  } catch (err) {
    if (!(err instanceof ScratchRollback)) throw err;
  }
  return problems;
}

/** db/README.md's table of functions, from the files' headers (`npm run db:functions-table` writes it there). */
export function functionsTable(files = readFunctionFiles()): string {
  const rows = files.map((file) => `| [\`${file.name}\`](${file.file}) | ${file.summary} | ${file.calledBy} |`);
  return ['| Function | What it does | Called by |', '| --- | --- | --- |', ...rows].join('\n');
}
