import { type Kysely, sql } from 'kysely';

/**
 * OAuth on the hosted MCP endpoints (issue 25): the authorization server's storage (oidc-provider's
 * adapter, db/repos/oauth.ts) and the market grants a person approved on the consent page.
 *
 * - `oauth_records`: one row per oidc-provider model instance (clients registered dynamically,
 *   interactions, sessions, grants, authorization codes, access and refresh tokens, ...), keyed by
 *   (model, id), its payload as JSON; `grant_id` lets a grant's revocation remove every token of it,
 *   `uid` finds a session by its uid; `expires_at` null means no expiry; `consumed_at` marks a
 *   code or refresh token used.
 * - `oauth_market_grants`: what an approved grant allows on `/mcp/{entryId}`: the account, the entry,
 *   the client and a sealed market credential (the same `mcpc1.` token a credential is today, holding
 *   the consumer parameters and the spending cap). Revoked grants keep their row with `revoked_at`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table oauth_records (
      model text not null,
      id text not null,
      payload jsonb not null,
      grant_id text,
      uid text,
      expires_at timestamptz,
      consumed_at timestamptz,
      primary key (model, id)
    )`.execute(db);
  await sql`create index oauth_records_grant_idx on oauth_records (grant_id) where grant_id is not null`.execute(db);
  await sql`create index oauth_records_uid_idx on oauth_records (uid) where uid is not null`.execute(db);
  await sql`create index oauth_records_expiry_idx on oauth_records (expires_at) where expires_at is not null`.execute(
    db,
  );
  await sql`
    create table oauth_market_grants (
      grant_id text primary key,
      user_id uuid not null references users (id) on delete cascade,
      entry_id uuid not null,
      client_id text not null,
      client_name text,
      credential text not null,
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    )`.execute(db);
  await sql`create index oauth_market_grants_user_idx on oauth_market_grants (user_id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists oauth_market_grants`.execute(db);
  await sql`drop table if exists oauth_records`.execute(db);
}
