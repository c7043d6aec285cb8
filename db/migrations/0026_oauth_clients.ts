import { type Kysely, sql } from 'kysely';

/**
 * Operator-managed OAuth clients (issue 25, the MCP authorization spec's first registration option):
 * registered through the admin API (`/admin/oauth/clients`, `npm run admin -- register-oauth-client`)
 * and found by the authorization server before any client registered dynamically or identified by a
 * metadata document. `redirect_uris` are matched exactly; `client_secret` is sealed (MASTER_KEY) for a
 * confidential client and null for a public one (PKCE only).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table oauth_clients (
      client_id text primary key,
      client_name text not null,
      redirect_uris jsonb not null,
      token_endpoint_auth_method text not null,
      client_secret text,
      created_at timestamptz not null default now()
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists oauth_clients`.execute(db);
}
