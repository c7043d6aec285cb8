import { type Kysely, sql } from 'kysely';

/**
 * Console sign-in sessions (web/): one row per signed-in browser.
 *
 * - `token_hash` is the SHA-256 (hex) of the cookie's random token; the token itself is never stored.
 * - `api_key_id` is the key the person signed in with: rotating it ends the session (the lookup joins
 *   the key and requires it live).
 * - `csrf_token` goes into the session's forms; a POST must bring it back.
 * - A session ends at `expires_at` (absolute), after WEB_SESSION_IDLE_MINUTES without a request
 *   (`last_seen_at`), or when revoked (sign-out, sign-out everywhere): `revoked_at`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table sessions (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      api_key_id uuid not null references api_keys (id) on delete cascade,
      token_hash text not null unique,
      csrf_token text not null,
      created_at timestamptz not null default now(),
      last_seen_at timestamptz not null default now(),
      expires_at timestamptz not null,
      revoked_at timestamptz
    )`.execute(db);
  await sql`create index sessions_user_idx on sessions (user_id) where revoked_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists sessions`.execute(db);
}
