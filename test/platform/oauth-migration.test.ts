import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Migrator, sql } from 'kysely';
import { openDatabase, type Db } from '../../db/connect';
import { migrationProvider } from '../../db/migrations';
import { useHarness } from '../support/stack/harness';

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');

/**
 * The migrations' own table in `schema` too: Kysely looks for it in every schema, and finding the harness's in
 * public it would take public's history for this schema's (and migrate public down and up again).
 */
async function migrateTo(db: Db, schema: string, target: string) {
  const migrator = new Migrator({ db, provider: migrationProvider, migrationTableSchema: schema });
  const { error, results } = await migrator.migrateTo(target);
  assert.ok(!error && !results?.some((r) => r.status === 'Error'), `migrating to ${target}: ${String(error)}`);
}

/**
 * Migration 0029 on rows an installation already has (issue 34, "2. OAuth grants"): tokens rewritten under
 * the hash of their value, a self-registered client's secret kept as a hash, a grant linked to its
 * credential, a revoked grant's credential revoked and its sealed copy removed, registrations given an expiry.
 * Run in a schema of its own in the harness's database.
 */
describe('migration 0029 on existing OAuth rows', function () {
  this.timeout(120_000);

  it('hashes stored tokens, links and ends credentials of revoked grants, expires old registrations', async function () {
    const h = await useHarness();
    const schema = `mig_${randomBytes(4).toString('hex')}`;
    await sql`create schema ${sql.id(schema)}`.execute(h.db);
    const url = new URL(h.databaseUrl);
    url.searchParams.set('options', `-c search_path=${schema},public`);
    const db = await openDatabase({ databaseUrl: url.toString(), dataDir: '' });
    try {
      await migrateTo(db, schema, '0027_two_statement_call');
      const userId = randomUUID();
      await sql`insert into users (id, email, webhook_secret_sealed) values (${userId}, ${`${schema}@example.com`}, ${'x'})`.execute(
        db,
      );
      const accessToken = randomBytes(32).toString('base64url');
      const clientSecret = randomBytes(48).toString('base64url');
      await sql`insert into oauth_records (model, id, payload, grant_id, expires_at) values
        ('AccessToken', ${accessToken}, ${JSON.stringify({ jti: accessToken, grantId: 'g-live', kind: 'AccessToken' })}::jsonb, 'g-live', now() + interval '10 minutes'),
        ('Client', 'dcr-used', ${JSON.stringify({ client_id: 'dcr-used', client_secret: clientSecret })}::jsonb, null, null),
        ('Client', 'dcr-unused', ${JSON.stringify({ client_id: 'dcr-unused' })}::jsonb, null, null)`.execute(db);
      const entryId = randomUUID();
      const live = randomUUID();
      const revoked = randomUUID();
      const apiKeyId = randomUUID();
      await sql`insert into market_credentials (id, user_id, entry_id, api_key_id, source, label, created_at) values
        (${live}, ${userId}, ${entryId}, ${apiKeyId}, 'oauth', 'App', now() - interval '2 days'),
        (${revoked}, ${userId}, ${entryId}, ${apiKeyId}, 'oauth', 'App', now() - interval '5 days')`.execute(db);
      await sql`insert into oauth_market_grants (grant_id, user_id, entry_id, client_id, client_name, credential, created_at, revoked_at) values
        ('g-live', ${userId}, ${entryId}, 'dcr-used', 'App', 'mcpc1.live', now() - interval '2 days' + interval '1 second', null),
        ('g-revoked', ${userId}, ${entryId}, 'dcr-used', 'App', 'mcpc1.revoked', now() - interval '5 days' + interval '1 second', now() - interval '1 day')`.execute(
        db,
      );

      await migrateTo(db, schema, '0029_oauth_hardening');
      const own = await sql<{
        name: string;
      }>`select name from ${sql.id(schema, 'kysely_migration')} order by name desc limit 1`.execute(h.db);
      assert.equal(own.rows[0]?.name, '0029_oauth_hardening', 'the schema keeps its own migration history');
      const harness = await sql<{ n: string }>`select count(*)::text as n from public.kysely_migration`.execute(h.db);
      assert.equal(
        Number(harness.rows[0].n),
        Object.keys(await migrationProvider.getMigrations()).length,
        "the harness's database stays migrated",
      );

      const records = await sql<{
        model: string;
        id: string;
        payload: Record<string, unknown>;
        expires_at: Date | null;
      }>`select model, id, payload, expires_at from oauth_records order by model, id`.execute(db);
      const token = records.rows.find((r) => r.model === 'AccessToken')!;
      assert.equal(token.id, sha256(accessToken), 'kept under the hash of its value');
      assert.equal(token.payload.jti, undefined, 'without the value');
      const used = records.rows.find((r) => r.id === 'dcr-used')!;
      assert.equal(used.payload.client_secret, undefined);
      assert.equal(used.payload.client_secret_sha256, sha256(clientSecret));
      const dump = JSON.stringify(records.rows);
      assert.ok(!dump.includes(accessToken) && !dump.includes(clientSecret), 'no value a client holds');
      const unused = records.rows.find((r) => r.id === 'dcr-unused')!;
      const day = 86_400_000;
      assert.ok(unused.expires_at && Math.abs(new Date(unused.expires_at).getTime() - (Date.now() + day)) < 60_000);
      assert.ok(used.expires_at && new Date(used.expires_at).getTime() > Date.now() + 25 * day, 'a used one lives on');

      const grants = await sql<{ grant_id: string; credential_id: string | null; credential: string | null }>`
        select grant_id, credential_id, credential from oauth_market_grants order by grant_id`.execute(db);
      assert.deepEqual(grants.rows, [
        { grant_id: 'g-live', credential_id: live, credential: 'mcpc1.live' },
        { grant_id: 'g-revoked', credential_id: revoked, credential: null },
      ]);
      const credentials = await sql<{ id: string; revoked: boolean }>`
        select id, revoked_at is not null as revoked from market_credentials`.execute(db);
      assert.deepEqual(
        Object.fromEntries(credentials.rows.map((r) => [r.id, r.revoked])),
        { [live]: false, [revoked]: true },
        "the revoked grant's credential is revoked",
      );
    } finally {
      await db.destroy();
      await sql`drop schema ${sql.id(schema)} cascade`.execute(h.db);
    }
  });
});
