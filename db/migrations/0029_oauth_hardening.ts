import { type Kysely, sql } from 'kysely';

/** db/repos/oauth.ts's HASHED_OAUTH_MODELS when this migration was written. */
const HASHED_OAUTH_MODELS = [
  'AccessToken',
  'RefreshToken',
  'AuthorizationCode',
  'ClientCredentials',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'RegistrationAccessToken',
  'InitialAccessToken',
  'PushedAuthorizationRequest',
];

/**
 * OAuth grants that end when revoked (issue 34, "2. OAuth grants").
 *
 * - `oauth_market_grants.credential_id`: the id of the market credential (`market_credentials`) the grant
 *   holds, so that revoking the grant (the console, the client's revocation, reuse of a rotated refresh
 *   token, an operator deleting the client) revokes that credential in the same transaction. Grants made
 *   before this migration are linked to the OAuth credential recorded with them (same account, entry and
 *   client name, issued within a minute of the grant, the nearest); one left unlinked is linked when it is
 *   revoked (db/repos/oauth.ts opens its sealed credential). The credential of a revoked grant is
 *   revoked now and its sealed copy removed from the grant (`credential` becomes null once revoked).
 * - Every device its own sign-in: a new authorization of the same client for the same listing no longer
 *   replaces the earlier grant. `device_name` (what the person named the device on the consent page, or null)
 *   and `user_agent` (the consenting browser's, at most 512 characters) tell the grants apart in Connected apps.
 * - `oauth_records` of tokens and codes (HASHED_OAUTH_MODELS: access and refresh tokens, codes, registration
 *   access tokens, ...) are kept under the SHA-256 (hex) of their value, without the value (`jti`) in the
 *   payload: the rows already there are rewritten so. A dynamically registered client's secret is kept as its
 *   SHA-256 (`client_secret_sha256`); such a client registered before (a confidential one: public clients have
 *   no secret) must register again, as its secret was a random one that cannot be derived again.
 * - `operator_sessions`: the review queue's operator sign-ins, kept on the server (the SHA-256 of the cookie's
 *   token) so that signing out ends the session for every copy of the cookie (it was a signed cookie alone).
 * - Dynamically registered clients expire when unused (OAUTH_UNUSED_REGISTRATION_HOURS): the ones registered
 *   before get an expiry here.
 * - `rate_limit_windows`: request limits shared by every API process (the authorization server's per address
 *   and per client limits, the cap on client metadata document fetches): a count per key and minute.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table oauth_market_grants add column credential_id uuid`.execute(db);
  await sql`alter table oauth_market_grants add column device_name text`.execute(db);
  await sql`alter table oauth_market_grants add column user_agent text`.execute(db);
  await sql`alter table oauth_market_grants alter column credential drop not null`.execute(db);
  await sql`
    update oauth_market_grants g set credential_id = (
      select c.id from market_credentials c
       where c.source = 'oauth' and c.user_id = g.user_id and c.entry_id = g.entry_id
         and c.label is not distinct from g.client_name
         and c.created_at between g.created_at - interval '1 minute' and g.created_at + interval '1 minute'
       order by abs(extract(epoch from (c.created_at - g.created_at)))
       limit 1)
     where g.credential_id is null`.execute(db);
  await sql`
    update market_credentials c set revoked_at = g.revoked_at
      from oauth_market_grants g
     where g.credential_id = c.id and g.revoked_at is not null and c.revoked_at is null`.execute(db);
  await sql`update oauth_market_grants set credential = null where revoked_at is not null and credential_id is not null`.execute(
    db,
  );
  const hashed = sql.join(HASHED_OAUTH_MODELS.map((m) => sql.lit(m)));
  await sql`
    update oauth_records
       set id = encode(sha256(convert_to(id, 'UTF8')), 'hex'), payload = payload - 'jti'
     where model in (${hashed}) and payload ? 'jti'`.execute(db);
  await sql`
    update oauth_records
       set payload = (payload - 'client_secret')
                     || jsonb_build_object('client_secret_sha256',
                          encode(sha256(convert_to(payload ->> 'client_secret', 'UTF8')), 'hex'))
     where model = 'Client' and payload ? 'client_secret'`.execute(db);
  await sql`
    create table operator_sessions (
      token_hash text primary key,
      admin_key text not null,
      csrf_token text not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    )`.execute(db);
  await sql`
    create table rate_limit_windows (
      key text not null,
      window_start timestamptz not null,
      count integer not null,
      primary key (key, window_start)
    )`.execute(db);
  // Registrations kept so far never expired: those no live grant uses expire in a day (OAUTH_UNUSED_REGISTRATION_HOURS'
  // default), the others a day after their newest grant can end (OAUTH_REFRESH_TOKEN_DAYS' default, 30 days).
  await sql`
    update oauth_records r
       set expires_at = coalesce(
             (select max(g.created_at) from oauth_market_grants g where g.client_id = r.id and g.revoked_at is null)
               + interval '31 days',
             now() + interval '1 day')
     where r.model = 'Client' and r.expires_at is null`.execute(db);
  await sql`create index oauth_market_grants_credential_idx on oauth_market_grants (credential_id) where credential_id is not null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists operator_sessions`.execute(db);
  await sql`drop table if exists rate_limit_windows`.execute(db);
  await sql`drop index if exists oauth_market_grants_credential_idx`.execute(db);
  await sql`alter table oauth_market_grants drop column if exists device_name`.execute(db);
  await sql`alter table oauth_market_grants drop column if exists user_agent`.execute(db);
  await sql`alter table oauth_market_grants drop column if exists credential_id`.execute(db);
}
