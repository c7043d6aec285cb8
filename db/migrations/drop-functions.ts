import { type Kysely, sql } from 'kysely';

/**
 * Drops every function of these names in the current schema, whatever its arguments (their current text is in
 * db/functions and may have other arguments than the migration that introduced them knew). For the down of the
 * migration that introduced a function: migrating to before it leaves no function from after it.
 */
export async function dropFunctionsNamed(db: Kysely<any>, ...names: string[]): Promise<void> {
  const found = await sql<{ schema: string; name: string; args: string }>`
    select n.nspname as schema, p.proname as name, pg_get_function_identity_arguments(p.oid) as args
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where p.proname = any(${names}::text[]) and p.pronamespace = current_schema()::regnamespace`.execute(db);
  for (const fn of found.rows) await sql`drop function ${sql.id(fn.schema, fn.name)}(${sql.raw(fn.args)})`.execute(db);
}
