// Network rule: every packet in this file goes to 127.0.0.1.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { proxyFromTemplate } from '../../lib/net/proxy';
import { parseNetworkAllowlist, PUBLIC_ONLY_POLICY } from '../../lib/net/ssrf';
import {
  createMicroblogClient,
  loginMicroblog,
  MicroblogError,
  validateMicroblogCredentials,
  type MicroblogClientOptions,
  type MicroblogCredentials,
  type MicroblogErrorCode,
  type MicroblogSession,
  type MicroblogTransport,
} from '../../lib/social/microblog';
import { base32Decode, isBase32Secret, totp } from '../../lib/social/totp';
import { startFakeMicroblog, type FakeMicroblog } from '../support/fakes/fake-microblog';

const RFC_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
const ALICE_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
const WRONG_SECRET = 'KRUGKIDROVUWG2ZAMJZG653OEBTG66BA';

const alice: MicroblogCredentials = {
  username: 'alice',
  email: 'alice@example.test',
  password: 'alice-pass-Secret1',
  totp_secret: ALICE_SECRET,
};
const bob: MicroblogCredentials = { username: 'bob', email: 'bob@example.test', password: 'bob-pass-Secret2' };
const carol: MicroblogCredentials = {
  username: 'carol',
  email: 'carol@example.test',
  password: 'carol-pass-Secret3',
  totp_secret: RFC_SECRET,
};

const transport: MicroblogTransport = { policy: parseNetworkAllowlist('127.0.0.1'), timeoutMs: 5_000 };
const observedErrors: MicroblogError[] = [];

async function expectMicroblogError(action: Promise<unknown>, code: MicroblogErrorCode): Promise<MicroblogError> {
  const error = await action.then(
    () => assert.fail(`expected a ${code} MicroblogError`),
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof MicroblogError, `expected MicroblogError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  observedErrors.push(error);
  return error;
}

describe('TOTP', () => {
  const vectors: [number, string][] = [
    [59, '94287082'],
    [1111111109, '07081804'],
    [1111111111, '14050471'],
    [1234567890, '89005924'],
    [2000000000, '69279037'],
    [20000000000, '65353130'],
  ];

  it('matches the RFC 6238 SHA1 vectors (8 digits) and their 6-digit truncations', () => {
    for (const [seconds, expected] of vectors) {
      assert.equal(totp(RFC_SECRET, seconds * 1000, 8), expected, `T=${seconds}`);
      assert.equal(totp(RFC_SECRET, seconds * 1000), expected.slice(2), `T=${seconds}`);
    }
  });

  it('decodes Base32 case-insensitively, ignoring spaces and padding', () => {
    assert.equal(base32Decode(RFC_SECRET).toString(), '12345678901234567890');
    assert.equal(base32Decode('mzxw 6ytb oi======').toString(), 'foobar');
    assert.equal(totp('gezd gnbv gy3t qojq gezd gnbv gy3t qojq', 59_000), '287082');
    assert.throws(() => base32Decode('not-base32!'), /not Base32/);
  });

  it('tells secrets from one-time codes', () => {
    assert.equal(isBase32Secret('123456'), false);
    assert.equal(isBase32Secret('12345678'), false);
    assert.equal(isBase32Secret('JBSWY3DP'), false);
    assert.equal(isBase32Secret('JBSWY3DPEHPK3PX1'), false);
    assert.equal(isBase32Secret(RFC_SECRET), true);
    assert.equal(isBase32Secret('jbsw y3dp ehpk 3pxp ===='), true);
  });
});

describe('Microblog adapter', () => {
  let fake: FakeMicroblog;

  beforeEach(async () => {
    fake = await startFakeMicroblog();
    fake.addAccount({
      username: 'alice',
      email: alice.email,
      password: alice.password,
      totpSecret: ALICE_SECRET,
      displayName: 'Alice A.',
    });
    fake.addAccount({ username: 'bob', email: bob.email, password: bob.password });
    fake.addAccount({
      username: 'carol',
      email: carol.email,
      password: carol.password,
      totpSecret: RFC_SECRET,
      unusualLogin: true,
    });
  });

  afterEach(() => fake.close());

  const paths = () => fake.requests.map((request) => `${request.method} ${request.path.replace(/\?.*$/, '')}`);
  const client = (session: MicroblogSession, options: MicroblogClientOptions = {}) =>
    createMicroblogClient(fake.base, session, transport, { minIntervalMs: 0, ...options });

  describe('login', () => {
    it('signs in an account without 2FA and returns a reusable, serialisable session', async () => {
      const session = await loginMicroblog(fake.base, bob, transport);
      assert.equal(session.username, 'bob');
      assert.deepEqual(paths(), ['GET /login', 'POST /login']);
      const [active] = fake.sessions();
      assert.equal(active.username, 'bob');
      assert.equal(session.cookies.mb_session, active.token);
      assert.equal(session.csrf, session.cookies.mb_csrf);
      assert.equal(session.cookies.login_flow, undefined);

      const login = fake.requests[1];
      const form = new URLSearchParams(login.body);
      assert.match(login.headers['content-type'] ?? '', /x-www-form-urlencoded/);
      assert.equal(form.get('identifier'), 'bob');
      assert.ok(form.get('csrf'));
      assert.match(login.headers.cookie ?? '', /login_flow=/);

      const restored = JSON.parse(JSON.stringify(session)) as MicroblogSession;
      assert.equal((await client(restored).me()).username, 'bob');
    });

    it('answers the TOTP challenge of a 2FA account', async () => {
      const session = await loginMicroblog(fake.base, alice, transport);
      assert.equal(session.username, 'alice');
      assert.deepEqual(paths(), ['GET /login', 'POST /login', 'GET /login/challenge', 'POST /login/2fa']);
      const code = new URLSearchParams(fake.requests[3].body).get('code') ?? '';
      assert.ok([totp(ALICE_SECRET), totp(ALICE_SECRET, Date.now() - 30_000)].includes(code));
      assert.equal(fake.sessions().length, 1);
    });

    it('confirms the email on an unusual login, then answers TOTP; the next login skips the email step', async () => {
      await loginMicroblog(fake.base, carol, transport);
      assert.deepEqual(paths(), [
        'GET /login',
        'POST /login',
        'GET /login/challenge',
        'POST /login/challenge',
        'GET /login/challenge',
        'POST /login/2fa',
      ]);
      assert.equal(new URLSearchParams(fake.requests[3].body).get('email'), carol.email);

      fake.requests.length = 0;
      await loginMicroblog(fake.base, carol, transport);
      assert.deepEqual(paths(), ['GET /login', 'POST /login', 'GET /login/challenge', 'POST /login/2fa']);
    });

    it('reports a wrong email confirmation as invalid credentials', async () => {
      await expectMicroblogError(
        loginMicroblog(fake.base, { ...carol, email: 'someone-else@example.test' }, transport),
        'invalid_credentials',
      );
      assert.equal(fake.sessions().length, 0);
    });

    it('rejects a wrong password', async () => {
      const error = await expectMicroblogError(
        loginMicroblog(fake.base, { ...bob, password: 'wrong-Secret9' }, transport),
        'invalid_credentials',
      );
      assert.match(error.message, /@bob/);
      assert.equal(fake.sessions().length, 0);
    });

    it('rejects a wrong TOTP secret as totp_invalid', async () => {
      await expectMicroblogError(
        loginMicroblog(fake.base, { ...alice, totp_secret: WRONG_SECRET }, transport),
        'totp_invalid',
      );
      assert.equal(fake.sessions().length, 0);
    });

    it('asks for the TOTP secret when a 2FA account has none', async () => {
      const { totp_secret: _omitted, ...withoutSecret } = alice;
      await expectMicroblogError(loginMicroblog(fake.base, withoutSecret, transport), 'totp_required');
    });

    it('refuses a one-time code given as the TOTP secret before contacting the site', async () => {
      await expectMicroblogError(
        loginMicroblog(fake.base, { ...alice, totp_secret: '123456' }, transport),
        'totp_invalid',
      );
      assert.equal(fake.requests.length, 0);
    });

    it('reports a locked account after repeated wrong passwords', async () => {
      for (let attempt = 0; attempt < 5; attempt++) {
        await expectMicroblogError(
          loginMicroblog(fake.base, { ...bob, password: `wrong-${attempt}` }, transport),
          'invalid_credentials',
        );
      }
      await expectMicroblogError(loginMicroblog(fake.base, bob, transport), 'locked');
    });

    it('refuses a base outside the network policy', async () => {
      const error = await expectMicroblogError(
        loginMicroblog(fake.base, bob, { policy: PUBLIC_ONLY_POLICY }),
        'upstream',
      );
      assert.match(error.message, /network policy/);
      assert.equal(fake.requests.length, 0);
    });
  });

  describe('validate', () => {
    it('returns the session and the profile', async () => {
      const result = await validateMicroblogCredentials(fake.base, alice, transport);
      assert.ok(result.ok);
      assert.deepEqual(result.meta, { username: 'alice', displayName: 'Alice A.' });
      assert.equal(result.session.username, 'alice');
    });

    it('returns a message instead of throwing', async () => {
      const result = await validateMicroblogCredentials(fake.base, { ...bob, password: 'nope-Secret7' }, transport);
      assert.equal(result.ok, false);
      assert.ok(!result.ok && /username or password/.test(result.message));
      assert.ok(!result.ok && !result.message.includes('nope-Secret7'));
    });
  });

  describe('API', () => {
    it('posts, replies, likes, reposts and reads them back', async () => {
      const session = await loginMicroblog(fake.base, alice, transport);
      const api = client(session);
      const existing = fake.addPost('bob', 'Temporal workflows are neat');

      const created = await api.post('Hello from the adapter');
      assert.match(created.id, /^\d+$/);
      assert.equal(created.url, `${fake.base}/alice/status/${created.id}`);
      const reply = await api.reply(existing, 'Agreed, very neat');
      await api.like(existing);
      await api.repost(existing);

      assert.deepEqual(
        fake.posts().map(({ author, text, replyTo }) => ({ author, text, replyTo })),
        [
          { author: 'bob', text: 'Temporal workflows are neat', replyTo: null },
          { author: 'alice', text: 'Hello from the adapter', replyTo: null },
          { author: 'alice', text: 'Agreed, very neat', replyTo: existing },
        ],
      );
      assert.deepEqual(fake.likes(), [{ username: 'alice', postId: existing }]);
      assert.deepEqual(fake.reposts(), [{ username: 'alice', postId: existing }]);

      const writes = fake.requests.filter((request) => request.method === 'POST' && request.path.startsWith('/api/'));
      assert.equal(writes.length, 4);
      for (const write of writes) {
        assert.equal(write.headers['x-csrf-token'], session.csrf);
        assert.match(write.headers.cookie ?? '', /mb_session=/);
      }

      const thread = await api.getPost(existing);
      assert.equal(thread.post.author.username, 'bob');
      assert.equal(thread.post.likeCount, 1);
      assert.equal(thread.post.repostCount, 1);
      assert.deepEqual(
        thread.replies.map((post) => [post.id, post.text, post.replyToId]),
        [[reply.id, 'Agreed, very neat', existing]],
      );

      const timeline = await api.timeline({ limit: 10 });
      assert.deepEqual(
        timeline.map((post) => post.text),
        ['Hello from the adapter', 'Temporal workflows are neat'],
      );
      assert.deepEqual(
        (await api.timeline({ limit: 1 })).map((post) => post.id),
        [created.id],
      );

      const found = await api.search('neat');
      assert.deepEqual(
        found.map((post) => post.text),
        ['Agreed, very neat', 'Temporal workflows are neat'],
      );
      assert.equal(new URL(fake.requests.at(-1)!.path, fake.base).searchParams.get('q'), 'neat');

      await expectMicroblogError(api.getPost('999'), 'not_found');
      await expectMicroblogError(api.repost(existing), 'bad_request');
    });

    it('enforces the 280-character limit before sending', async () => {
      const api = client(await loginMicroblog(fake.base, bob, transport));
      const before = fake.requests.length;
      const error = await expectMicroblogError(api.post('x'.repeat(281)), 'bad_request');
      assert.match(error.message, /281 characters.*280/);
      await expectMicroblogError(api.reply('1', 'y'.repeat(300)), 'bad_request');
      await expectMicroblogError(api.post('   '), 'bad_request');
      assert.equal(fake.requests.length, before);
      await api.post('🙂'.repeat(280));
      assert.equal(fake.posts().length, 1);
    });

    it('logs in again once when the session expired', async () => {
      let relogins = 0;
      const api = client(await loginMicroblog(fake.base, bob, transport), {
        relogin: async () => {
          relogins++;
          return loginMicroblog(fake.base, bob, transport);
        },
      });
      fake.expireSessions();
      await api.post('after expiry');
      assert.equal(relogins, 1);
      assert.equal(api.session.cookies.mb_session, fake.sessions()[0].token);
      assert.equal(fake.posts()[0].text, 'after expiry');
      await api.timeline();
      assert.equal(relogins, 1);
    });

    it('gives up when the fresh session is rejected too', async () => {
      const stale = await loginMicroblog(fake.base, bob, transport);
      let relogins = 0;
      const api = client(stale, {
        relogin: async () => {
          relogins++;
          return stale;
        },
      });
      fake.expireSessions();
      const error = await expectMicroblogError(api.timeline(), 'invalid_credentials');
      assert.match(error.message, /expired/);
      assert.equal(relogins, 1);
    });

    it('reports an expired session without a relogin hook', async () => {
      const api = client(await loginMicroblog(fake.base, bob, transport));
      fake.expireSessions();
      await expectMicroblogError(api.me(), 'invalid_credentials');
    });

    it('waits out a short 429 and gives up on a long one', async () => {
      const api = client(await loginMicroblog(fake.base, bob, transport));
      // The fake refuses a request that comes back before its Retry-After is over: a third request would show it.
      fake.failNext({ status: 429, path: '/api/timeline/home', retryAfterSeconds: 1 });
      await api.timeline();
      assert.equal(fake.requests.filter((request) => request.path.startsWith('/api/timeline/home')).length, 2);

      fake.failNext({ status: 429, path: '/api/posts', retryAfterSeconds: 60 });
      const error = await expectMicroblogError(api.post('rate limited'), 'rate_limited');
      assert.equal(error.retryAfterMs, 60_000);
      assert.equal(
        fake.requests.filter((request) => request.path === '/api/posts').length,
        1,
        'no retry of a long 429',
      );
      assert.equal(fake.posts().length, 0);
    });

    it('spaces writes by the minimum interval', async () => {
      const api = client(await loginMicroblog(fake.base, bob, transport), { minIntervalMs: 250 });
      // The site refuses writes closer than 125 ms: half the client's spacing, since an arrival can lag its send.
      fake.setWriteSpacing(125);
      const target = fake.addPost('alice', 'like me');
      await Promise.all([api.like(target), api.post('one'), api.post('two')]);
      assert.equal(
        fake.requests.filter((request) => request.method === 'POST' && request.path.startsWith('/api/')).length,
        3,
        'no write was refused and sent again',
      );
      assert.equal(fake.posts().length, 3);
    });

    it('maps upstream failures', async () => {
      const api = client(await loginMicroblog(fake.base, bob, transport));
      fake.failNext({ status: 503, path: '/api/me' });
      await expectMicroblogError(api.me(), 'upstream');
    });

    it('disconnects by logging out upstream', async () => {
      const api = client(await loginMicroblog(fake.base, alice, transport));
      await api.disconnect();
      assert.deepEqual(fake.loggedOut(), ['alice']);
      assert.deepEqual(fake.sessions(), []);
      assert.equal(fake.requests.at(-1)?.path, '/logout');
      await expectMicroblogError(api.me(), 'invalid_credentials');
    });
  });

  describe('proxy', () => {
    let proxy: { port: number; targets: string[]; authorizations: (string | undefined)[]; close(): Promise<void> };

    beforeEach(async () => {
      proxy = await startRecordingProxy();
    });

    afterEach(() => proxy.close());

    it('sends every request through the account proxy', async () => {
      const creds = { ...alice, proxy_country: 'de' };
      const viaProxy: MicroblogTransport = {
        ...transport,
        proxy: proxyFromTemplate(`http://user-{country}:proxy-pass@127.0.0.1:${proxy.port}`, creds.proxy_country),
      };
      const result = await validateMicroblogCredentials(fake.base, creds, viaProxy);
      assert.ok(result.ok);
      await createMicroblogClient(fake.base, result.session, viaProxy, { minIntervalMs: 0 }).post('via proxy');

      const expected = ['/login', '/login', '/login/challenge', '/login/2fa', '/api/me', '/api/posts'].map(
        (path) => `${fake.base}${path}`,
      );
      assert.deepEqual(
        proxy.targets.map((target) => target.replace(/\?.*$/, '')),
        expected,
      );
      assert.equal(proxy.targets.length, fake.requests.length);
      const credentials = `Basic ${Buffer.from('user-de:proxy-pass').toString('base64')}`;
      assert.deepEqual(
        proxy.authorizations,
        expected.map(() => credentials),
        'every request carried the proxy credentials',
      );
      assert.ok(fake.requests.every((request) => request.headers['proxy-authorization'] === undefined));
    });
  });

  after('no error message reveals a secret', () => {
    assert.ok(observedErrors.length >= 15, `only ${observedErrors.length} errors observed`);
    const secrets = [alice, bob, carol]
      .flatMap((creds) => [creds.password, creds.email, creds.totp_secret ?? ''])
      .filter(Boolean);
    secrets.push(
      WRONG_SECRET,
      'wrong-Secret9',
      'nope-Secret7',
      '123456',
      'someone-else@example.test',
      'mb_session',
      'login_flow',
    );
    const now = Date.now();
    for (const secret of [ALICE_SECRET, RFC_SECRET, WRONG_SECRET]) {
      for (const offset of [-60_000, -30_000, 0, 30_000]) secrets.push(totp(secret, now + offset));
    }
    for (const error of observedErrors) {
      const shown = `${error.message}\n${error.stack}\n${JSON.stringify(error)}`;
      for (const secret of secrets) assert.ok(!shown.includes(secret), `error "${error.message}" reveals a secret`);
      assert.doesNotMatch(shown, /mb_csrf|cookie/i);
    }
  });
});

async function startRecordingProxy() {
  const targets: string[] = [];
  const authorizations: (string | undefined)[] = [];
  const server = http.createServer((request, response) => {
    targets.push(request.url ?? '');
    authorizations.push(request.headers['proxy-authorization']);
    const target = new URL(request.url ?? '');
    if (target.hostname !== '127.0.0.1') return void response.writeHead(502).end();
    const { 'proxy-authorization': _authorization, ...headers } = request.headers;
    const upstream = http.request(target, { method: request.method, headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => response.writeHead(502).end());
    request.pipe(upstream);
  });
  server.on('connect', (_request, socket) => socket.end('HTTP/1.1 405 Method Not Allowed\r\n\r\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    targets,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
