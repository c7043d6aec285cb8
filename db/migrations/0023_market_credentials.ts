import { type Kysely, sql } from 'kysely';

/**
 * Market credentials listed and revoked one by one (issue 24). One row per MCP client credential
 * (`mcpc1.` token, lib/market/credential.ts) the service issued: its id (the token carries it), the
 * account, the entry, the API key it is bound to, how it was issued (`direct`: the REST route, the
 * console's credentials or try page; `oauth`: an approved OAuth grant, listed under connected apps),
 * an optional label, the cap, when it was last used (minute precision) and when it was revoked.
 * Never the token or the consumer's parameters: those stay sealed inside the token only.
 *
 * Credentials issued before this table existed have no row: the hosted endpoint records one the first
 * time such a credential is used (created_at = its issue time), after which it is listed and revocable.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table market_credentials (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      entry_id uuid not null,
      api_key_id uuid not null,
      source text not null check (source in ('direct', 'oauth')),
      label text,
      cap_micros bigint,
      created_at timestamptz not null default now(),
      last_used_at timestamptz,
      revoked_at timestamptz
    )`.execute(db);
  await sql`create index market_credentials_user_idx on market_credentials (user_id, created_at desc)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists market_credentials`.execute(db);
}
