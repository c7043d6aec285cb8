import assert from 'node:assert/strict';
import { useHarness, type Harness } from '../support/stack/harness';
import { capturedOutput } from '../support/stack/output-capture';

const TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';

describe('social accounts', function () {
  let h: Harness;
  let apiKey: string;
  let userId: string;
  let n = 0;
  const forumApp = () => {
    n += 1;
    const app = {
      forumClientId: `client-${n}`,
      forumClientSecret: `forum-secret-${n}-xyz`,
      forumUsername: `poster${n}`,
      forumPassword: `forum-pass-${n}-abc`,
    };
    h.forum.addApp({ clientId: app.forumClientId, clientSecret: app.forumClientSecret });
    h.forum.addUser({ username: app.forumUsername, password: app.forumPassword });
    return app;
  };
  const microblogAccount = (withTotp = true) => {
    n += 1;
    const account = {
      username: `bird${n}`,
      email: `bird${n}@example.com`,
      password: `mb-pass-${n}-qwe`,
      ...(withTotp && { totp_secret: TOTP_SECRET }),
    };
    h.microblog.addAccount({
      username: account.username,
      email: account.email,
      password: account.password,
      totpSecret: withTotp ? TOTP_SECRET : undefined,
    });
    return account;
  };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey, userId } = await h.createUser());
  });

  it('creates a forum account after validating it upstream, and never returns or stores the credentials in clear', async function () {
    const credentials = forumApp();
    const response = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: { platform: 'forum', name: 'Main forum', credentials },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const { account } = response.body;
    assert.deepEqual(Object.keys(account).sort(), [
      'createdAt',
      'id',
      'isActive',
      'lastValidatedAt',
      'meta',
      'name',
      'platform',
      'updatedAt',
      'userId',
      'validationMessage',
      'validationStatus',
    ]);
    assert.equal(account.validationStatus, 'valid');
    assert.equal(account.isActive, true);
    assert.equal(account.meta.username, credentials.forumUsername);
    assert.ok(account.lastValidatedAt);
    const row = await h.db
      .selectFrom('social_accounts')
      .selectAll()
      .where('id', '=', account.id)
      .executeTakeFirstOrThrow();
    const raw = JSON.stringify(row);
    for (const secret of [credentials.forumClientSecret, credentials.forumPassword]) {
      assert.ok(!raw.includes(secret), 'a credential is stored in clear');
      assert.ok(!capturedOutput().includes(secret), 'a credential reached the logs');
    }
    assert.match(row.credentials_sealed, /^v1\./);
    const listed = await h.http('GET', '/api/v1/social-accounts', { apiKey });
    assert.ok(!JSON.stringify(listed.body).includes(credentials.forumClientSecret));
  });

  it('refuses credentials the forum rejects with 400 and stores nothing', async function () {
    const credentials = { ...forumApp(), forumPassword: 'wrong-password' };
    const before = await h.db.selectFrom('social_accounts').select('id').where('user_id', '=', userId).execute();
    const response = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: { platform: 'forum', name: 'Bad', credentials },
    });
    assert.equal(response.status, 400);
    assert.equal(response.body.error.code, 'credentials_invalid');
    assert.ok(!JSON.stringify(response.body).includes('wrong-password'));
    const after = await h.db.selectFrom('social_accounts').select('id').where('user_id', '=', userId).execute();
    assert.equal(after.length, before.length);
  });

  it('creates a microblog account through the web login with a TOTP code computed from the secret', async function () {
    const credentials = microblogAccount();
    const response = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: { platform: 'microblog', name: 'Bird', credentials },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    assert.equal(response.body.account.meta.username, credentials.username);
    const row = await h.db
      .selectFrom('social_accounts')
      .selectAll()
      .where('id', '=', response.body.account.id)
      .executeTakeFirstOrThrow();
    assert.ok(row.session_sealed, 'the login session is kept (sealed) for the agent');
    assert.ok(!JSON.stringify(row).includes(credentials.password));
    assert.ok(!JSON.stringify(row).includes(TOTP_SECRET));
  });

  it('rejects a six-digit code in place of the TOTP secret, and wrong TOTP secrets upstream', async function () {
    const credentials = microblogAccount();
    const code = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: { platform: 'microblog', name: 'x', credentials: { ...credentials, totp_secret: '123456' } },
    });
    assert.equal(code.status, 400);
    assert.equal(code.body.error.details[0].path, 'body/credentials/totp_secret');
    const wrong = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: {
        platform: 'microblog',
        name: 'x',
        credentials: { ...credentials, totp_secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ' },
      },
    });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error.code, 'credentials_invalid');
  });

  it('validates the credentials shape per platform', async function () {
    for (const body of [
      { platform: 'forum', name: 'x', credentials: { forumClientId: 'a' } },
      { platform: 'microblog', name: 'x', credentials: { username: 'a', password: 'b' } },
      { platform: 'forum', name: 'x', credentials: { username: 'a', email: 'a@example.com', password: 'b' } },
      { platform: 'mastodon', name: 'x', credentials: {} },
      { platform: 'forum', credentials: { forumClientId: 'a', forumClientSecret: 'b' } },
    ]) {
      const response = await h.http('POST', '/api/v1/social-accounts', { apiKey, body });
      assert.equal(response.status, 400, JSON.stringify(body));
    }
  });

  it('lists, filters by platform, updates and deletes, scoped to the owner', async function () {
    const forum = (
      await h.http('POST', '/api/v1/social-accounts', {
        apiKey,
        body: { platform: 'forum', name: 'F', credentials: forumApp() },
      })
    ).body.account;
    const all = await h.http('GET', '/api/v1/social-accounts', { apiKey });
    assert.ok(all.body.accounts.length >= 3);
    const forums = await h.http('GET', '/api/v1/social-accounts?platform=forum', { apiKey });
    assert.ok(
      forums.body.accounts.some((a: any) => a.id === forum.id),
      'the forum account is listed',
    );
    assert.ok(forums.body.accounts.every((a: any) => a.platform === 'forum'));
    assert.equal((await h.http('GET', '/api/v1/social-accounts?platform=myspace', { apiKey })).status, 400);

    const other = await h.createUser();
    assert.equal(
      (await h.http('PATCH', `/api/v1/social-accounts/${forum.id}`, { apiKey: other.apiKey, body: { name: 'mine' } }))
        .status,
      404,
    );
    assert.equal((await h.http('DELETE', `/api/v1/social-accounts/${forum.id}`, { apiKey: other.apiKey })).status, 404);
    assert.equal((await h.http('GET', '/api/v1/social-accounts', { apiKey: other.apiKey })).body.accounts.length, 0);

    assert.equal((await h.http('PATCH', `/api/v1/social-accounts/${forum.id}`, { apiKey, body: {} })).status, 400);
    const platformChange = await h.http('PATCH', `/api/v1/social-accounts/${forum.id}`, {
      apiKey,
      body: { platform: 'microblog' },
    });
    assert.equal(platformChange.status, 400);
    assert.match(platformChange.body.error.message, /platform/);

    const renamed = await h.http('PATCH', `/api/v1/social-accounts/${forum.id}`, {
      apiKey,
      body: { name: 'Renamed', isActive: false },
    });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.account.name, 'Renamed');
    assert.equal(renamed.body.account.isActive, false);
    assert.equal(renamed.body.account.platform, 'forum');

    const badCredentials = await h.http('PATCH', `/api/v1/social-accounts/${forum.id}`, {
      apiKey,
      body: { credentials: { forumClientId: 'nope', forumClientSecret: 'nope' } },
    });
    assert.equal(badCredentials.status, 400);
    const fresh = forumApp();
    const newCredentials = await h.http('PATCH', `/api/v1/social-accounts/${forum.id}`, {
      apiKey,
      body: { credentials: fresh },
    });
    assert.equal(newCredentials.status, 200);
    assert.equal(newCredentials.body.account.meta.username, fresh.forumUsername);
    const wrongShape = await h.http('PATCH', `/api/v1/social-accounts/${forum.id}`, {
      apiKey,
      body: { credentials: { username: 'a', email: 'a@example.com', password: 'b' } },
    });
    assert.equal(wrongShape.status, 400);

    assert.equal((await h.http('DELETE', `/api/v1/social-accounts/${forum.id}`, { apiKey })).status, 204);
    assert.equal((await h.http('DELETE', `/api/v1/social-accounts/${forum.id}`, { apiKey })).status, 404);
    assert.equal((await h.http('DELETE', '/api/v1/social-accounts/not-a-uuid', { apiKey })).status, 400);
  });

  it('disconnects the upstream microblog session when its account is deleted', async function () {
    const credentials = microblogAccount(false);
    const created = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: { platform: 'microblog', name: 'Leaving', credentials },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(
      (await h.http('DELETE', `/api/v1/social-accounts/${created.body.account.id}`, { apiKey })).status,
      204,
    );
    assert.ok(h.microblog.loggedOut().includes(credentials.username));
  });
});
