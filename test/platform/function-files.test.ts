import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Migrator, sql } from 'kysely';
import { migrateToLatest, openDatabase, type Db } from '../../db/connect';
import {
  applyFunctionFiles,
  FUNCTIONS_DIR,
  functionDrift,
  functionsTable,
  readFunctionFiles,
} from '../../db/function-files';
import { migrationProvider } from '../../db/migrations';
import { useHarness } from '../support/stack/harness';

/**
 * Migrations in a schema of its own (its own migration table: see test/platform/oauth-migration.test.ts); to
 * 'latest' the function files after them, as migrateToLatest does, unless `files` is false.
 */
async function migrateSchemaTo(db: Db, schema: string, target: string, files = true) {
  const migrator = new Migrator({ db, provider: migrationProvider, migrationTableSchema: schema });
  const { error, results } = await (target === 'latest' ? migrator.migrateToLatest() : migrator.migrateTo(target));
  assert.ok(!error && !results?.some((r) => r.status === 'Error'), `migrating to ${String(target)}: ${String(error)}`);
  if (target === 'latest' && files) await applyFunctionFiles(db, { all: (results?.length ?? 0) > 0 });
}

/**
 * The database's functions (the money rules) are the files of db/functions, applied as repeatable migrations
 * (issue 35, "3. Money rules in the database"): after migrate every function is its file's, every file is
 * applied, and a file changed without being applied, or a function without a file, is named.
 */
describe('database functions, one current file each', function () {
  this.timeout(180_000);

  it("after migrate, every function in the database is its file's and every file is applied", async function () {
    const h = await useHarness();
    const names = readFunctionFiles().map((file) => file.name);
    assert.ok(names.includes('acquire_market_run') && names.includes('charge_market_run_event'));
    assert.deepEqual(await functionDrift(h.db), []);
  });

  it('names a file changed but not applied, a function without a file, and applies a changed file', async function () {
    const h = await useHarness();
    const schema = `fn_${randomBytes(4).toString('hex')}`;
    await sql`create schema ${sql.id(schema)}`.execute(h.db);
    const url = new URL(h.databaseUrl);
    url.searchParams.set('options', `-c search_path=${schema},public`);
    const db = await openDatabase({ databaseUrl: url.toString(), dataDir: '' });
    const changed = mkdtempSync(path.join(os.tmpdir(), 'db-functions-'));
    try {
      // The versioned migrations alone: only migration 0004's helpers, which its generated column needs then (the
      // same text as their files). A migration that created a function with a file would be undone by the files.
      await migrateSchemaTo(db, schema, 'latest', false);
      const created = await sql<{ name: string }>`
        select proname as name from pg_proc where pronamespace = ${schema}::regnamespace order by 1`.execute(db);
      assert.deepEqual(
        created.rows.map((row) => row.name),
        ['skills_dot', 'skills_tags_text'],
        'a function with a file in db/functions is not created by a versioned migration: put its text in the file',
      );
      await applyFunctionFiles(db, { all: true });
      assert.deepEqual(await functionDrift(db), [], 'a fresh schema migrated to the latest');

      // A file changed (here a copy of the folder) and not applied yet.
      cpSync(FUNCTIONS_DIR, changed, { recursive: true });
      const file = path.join(changed, 'market_run_active.sql');
      writeFileSync(file, readFileSync(file, 'utf8').replace("p_status = 'open'", "p_status in ('open')"));
      assert.deepEqual(await functionDrift(db, changed), [
        'market_run_active: functions/market_run_active.sql is not applied',
        "market_run_active: the database's definition is not functions/market_run_active.sql's",
      ]);
      assert.deepEqual(await applyFunctionFiles(db, { all: false, dir: changed }), ['market_run_active'], 'only it');
      assert.deepEqual(await functionDrift(db, changed), []);
      assert.equal(await applyFunctionFiles(db, { all: false, dir: changed }).then((applied) => applied.length), 0);
      assert.deepEqual(await applyFunctionFiles(db, { all: false }), ['market_run_active'], 'back to the repository');

      // A function changed in the database behind the files' back, another signature, a function without a file.
      await sql`create or replace function end_market_call(p_run uuid, p_release bigint, p_close boolean, p_grace interval)
                returns void language sql volatile as $$ select $$`.execute(db);
      await sql`create function settle_market_call(p_run uuid) returns text language sql as $$ select 'charged' $$`.execute(
        db,
      );
      await sql`create function refund_everything() returns void language sql as $$ select $$`.execute(db);
      assert.deepEqual(await functionDrift(db), [
        'refund_everything: in the database, without a file',
        "end_market_call: the database's definition is not functions/end_market_call.sql's",
        "settle_market_call: the database's definition is not functions/settle_market_call.sql's",
      ]);
      // Applying every file restores the definitions and drops the other signature; the stray function stays.
      await applyFunctionFiles(db, { all: true });
      assert.deepEqual(await functionDrift(db), ['refund_everything: in the database, without a file']);
      await sql`drop function refund_everything()`.execute(db);
      // A function dropped (a migration's down, or by hand) is applied again though its file did not change.
      await sql`drop function market_run_active(text, timestamptz, integer, timestamptz, timestamptz)`.execute(db);
      assert.deepEqual(await applyFunctionFiles(db, { all: false }), ['market_run_active']);
      assert.deepEqual(await functionDrift(db), []);

      // Down and up again: downs may create older versions; migrating to the latest applies every file again.
      await migrateSchemaTo(db, schema, '0024_market_run_window');
      await migrateSchemaTo(db, schema, 'latest');
      assert.deepEqual(await functionDrift(db), []);
      await migrateSchemaTo(db, schema, '0011_agent_market');
      await migrateSchemaTo(db, schema, 'latest');
      assert.deepEqual(await functionDrift(db), [], 'down to before the first money function and up again');
    } finally {
      rmSync(changed, { recursive: true, force: true });
      await db.destroy();
      await sql`drop schema ${sql.id(schema)} cascade`.execute(h.db);
    }
  });

  it('applies the files on PGlite (npm start without DATABASE_URL)', async function () {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'functions-pglite-'));
    const db = await openDatabase({ databaseUrl: null, dataDir: dir });
    try {
      await migrateToLatest(db);
      assert.deepEqual(await functionDrift(db), []);
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("db/README.md's table of functions is the one the files' headers make (npm run db:functions-table)", function () {
    const readme = readFileSync(path.join(FUNCTIONS_DIR, '..', 'README.md'), 'utf8');
    assert.ok(readme.includes(`${functionsTable()}\n`), 'run npm run db:functions-table');
  });
});
