// Network rule: every packet in this file goes to 127.0.0.1; the policy allows nothing else.
import assert from 'node:assert/strict';
import diagnosticsChannel from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

import { proxyFromTemplate } from '../../lib/net/proxy';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import {
  createForumClient,
  ForumError,
  validateForumCredentials,
  type ForumClient,
  type ForumCredentials,
  type ForumErrorCode,
  type ForumTransport,
} from '../../lib/social/forum';
import { startFakeForum, type FakeForum } from '../support/fakes/fake-forum';
import { startFakeProxy } from '../support/fakes/fake-proxy';

const APP = { clientId: 'app-id-7f3k', clientSecret: 'app-secret-Q9zX-do-not-leak' };
const USER = { username: 'alice_dev', password: 'correct-horse-battery-staple' };
const USER_AGENT = 'test:forum-adapter:1.0 (by /u/alice_dev)';
const transport: ForumTransport = { policy: parseNetworkAllowlist('127.0.0.1'), timeoutMs: 5_000 };

const passwordCredentials: ForumCredentials = {
  forumClientId: APP.clientId,
  forumClientSecret: APP.clientSecret,
  forumUserAgent: USER_AGENT,
  forumUsername: USER.username,
  forumPassword: USER.password,
};
const appOnlyCredentials: ForumCredentials = { forumClientId: APP.clientId, forumClientSecret: APP.clientSecret };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function rejectsWith(promise: Promise<unknown>, code: ForumErrorCode, message?: RegExp): Promise<ForumError> {
  const error = await promise.then(
    () => assert.fail(`expected a ForumError ${code}`),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof ForumError, `expected a ForumError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  if (message) assert.match(error.message, message);
  return error;
}

describe('forum adapter', function () {
  const outboundPeers: string[] = [];
  const onSocket = (message: unknown) => {
    const { socket } = message as { socket: Socket };
    socket.once('connect', () => outboundPeers.push(socket.remoteAddress ?? 'unknown'));
  };
  let forum: FakeForum;

  const endpoints = () => ({ apiBase: forum.apiBase, authBase: forum.authBase });
  const userClient = (minIntervalMs = 0): ForumClient =>
    createForumClient(endpoints(), passwordCredentials, transport, { minIntervalMs });
  const apiRequests = (path?: string) =>
    forum.requests.filter((request) => request.server === 'api' && (path === undefined || request.path === path));
  const tokenGrants = () =>
    forum.requests.filter((request) => request.server === 'auth' && request.path === '/api/v1/access_token');
  const assertNoSecrets = (text: string) => {
    for (const secret of [
      APP.clientSecret,
      USER.password,
      'wrong-secret-value',
      'wrong-password-value',
      ...forum.issuedTokens(),
    ]) {
      assert.ok(!text.includes(secret), `"${text}" leaks a secret`);
    }
  };

  before(() => diagnosticsChannel.subscribe('net.client.socket', onSocket));
  after(() => {
    diagnosticsChannel.unsubscribe('net.client.socket', onSocket);
    assert.ok(outboundPeers.length > 0);
    assert.deepEqual([...new Set(outboundPeers)], ['127.0.0.1']);
  });

  beforeEach(async () => {
    forum = await startFakeForum();
    forum.addApp(APP);
    forum.addUser({ ...USER, karma: 1234 });
    forum.addCommunity('typescript', [
      { title: 'Async iterators in practice', text: 'How do you use async iterators?', score: 5, author: 'bob' },
      {
        title: 'Strict mode everywhere',
        text: 'Turn on strict.',
        score: 50,
        comments: [
          { text: 'Agreed', replies: [{ text: 'Same here', replies: [{ text: 'Deep reply' }] }] },
          { text: 'Second top-level' },
        ],
      },
      { title: 'Newest question about generics', text: 'What is variance?', score: 1 },
    ]);
    forum.addCommunity('rust', [{ title: 'The borrow checker explained', text: 'Lifetimes and borrowing.', score: 9 }]);
  });

  afterEach(async () => {
    for (const request of forum.requests) assert.equal(request.remoteAddress, '127.0.0.1');
    await forum.close();
  });

  describe('validateForumCredentials', () => {
    it('accepts a script app with a password and reports the identity', async () => {
      const result = await validateForumCredentials(endpoints(), passwordCredentials, transport);
      assert.deepEqual(result, { ok: true, meta: { username: USER.username, mode: 'password', karma: 1234 } });

      const [grant] = tokenGrants();
      assert.equal(grant.method, 'POST');
      assert.equal(
        grant.headers.authorization,
        `Basic ${Buffer.from(`${APP.clientId}:${APP.clientSecret}`).toString('base64')}`,
      );
      assert.equal(grant.headers['user-agent'], USER_AGENT);
      assert.deepEqual(grant.form, { grant_type: 'password', username: USER.username, password: USER.password });
      const [me] = apiRequests('/api/v1/me');
      assert.equal(me.headers.authorization, `bearer ${forum.issuedTokens()[0]}`);
      assert.equal(me.headers['user-agent'], USER_AGENT);
    });

    it('accepts app-only client credentials without an identity check', async () => {
      const result = await validateForumCredentials(endpoints(), appOnlyCredentials, transport);
      assert.deepEqual(result, { ok: true, meta: { username: null, mode: 'client_credentials' } });
      assert.deepEqual(tokenGrants()[0].form, { grant_type: 'client_credentials' });
      assert.match(String(tokenGrants()[0].headers['user-agent']), /^server:scrape-platform:/);
      assert.equal(apiRequests().length, 0);
    });

    for (const [mode, creds] of [
      ['password', passwordCredentials],
      ['client_credentials', appOnlyCredentials],
    ] as const) {
      it(`refuses a wrong client secret (${mode}) without echoing it`, async () => {
        const result = await validateForumCredentials(
          endpoints(),
          { ...creds, forumClientSecret: 'wrong-secret-value' },
          transport,
        );
        assert.equal(result.ok, false);
        assert.ok(!result.ok);
        assert.match(result.message, /client ID or client secret/);
        assertNoSecrets(result.message);
        assert.equal(apiRequests().length, 0);
      });
    }

    it('refuses a wrong password with a clear message and no secret', async () => {
      const result = await validateForumCredentials(
        endpoints(),
        { ...passwordCredentials, forumPassword: 'wrong-password-value' },
        transport,
      );
      assert.ok(!result.ok);
      assert.match(result.message, /username or password/);
      assertNoSecrets(result.message);
    });

    it('needs a client ID and secret before contacting anyone', async () => {
      const result = await validateForumCredentials(
        endpoints(),
        { ...appOnlyCredentials, forumClientSecret: '' },
        transport,
      );
      assert.ok(!result.ok);
      assert.match(result.message, /client ID and client secret/);
      assert.equal(forum.requests.length, 0);
    });

    it('refuses hosts outside the network policy without connecting', async () => {
      const peersBefore = outboundPeers.length;
      const result = await validateForumCredentials(
        { apiBase: 'http://192.0.2.10', authBase: 'http://192.0.2.10' },
        passwordCredentials,
        transport,
      );
      assert.ok(!result.ok);
      assert.match(result.message, /network policy/);
      assertNoSecrets(result.message);
      assert.equal(outboundPeers.length, peersBefore);
    });
  });

  describe('tokens', () => {
    it('re-grants a token that is about to expire', async () => {
      forum.setTokenLifetime(1);
      const client = userClient();
      await client.me();
      await sleep(1_100);
      await client.me();
      assert.equal(tokenGrants().length, 2);
      assert.deepEqual(
        apiRequests().map((request) => request.status),
        [200, 200],
      );
    });

    it('re-grants once after a 401 and retries the request', async () => {
      const client = userClient();
      await client.me();
      forum.revokeTokens();
      const identity = await client.me();
      assert.equal(identity.username, USER.username);
      assert.equal(tokenGrants().length, 2);
      assert.deepEqual(
        apiRequests('/api/v1/me').map((request) => request.status),
        [200, 401, 200],
      );
    });

    it('gives up after the retried request is refused too', async () => {
      forum.failNext({ status: 401, path: '/api/v1/me', times: 5 });
      const error = await rejectsWith(userClient().me(), 'invalid_credentials', /access token/);
      assert.equal(error.status, 401);
      assert.equal(apiRequests('/api/v1/me').length, 2);
      assertNoSecrets(error.message);
    });

    it('shares one grant between concurrent requests', async () => {
      const client = userClient();
      await Promise.all([
        client.listCommunity('rust', 'new', 5),
        client.listCommunity('typescript', 'hot', 5),
        client.me(),
      ]);
      assert.equal(tokenGrants().length, 1);
    });
  });

  describe('reading', () => {
    it('searches everywhere or within one community', async () => {
      const client = userClient();
      const everywhere = await client.search('borrow');
      assert.deepEqual(
        everywhere.map((post) => [post.community, post.title]),
        [['rust', 'The borrow checker explained']],
      );
      const [request] = apiRequests('/search');
      assert.equal(request.query.q, 'borrow');

      const scoped = await client.search('async', { community: 'typescript', limit: 3, sort: 'new' });
      assert.equal(scoped.length, 1);
      const post = scoped[0];
      assert.equal(post.title, 'Async iterators in practice');
      assert.equal(post.text, 'How do you use async iterators?');
      assert.equal(post.author, 'bob');
      assert.equal(post.score, 5);
      assert.equal(post.name, `t3_${post.id}`);
      assert.match(post.permalink, new RegExp(`^/r/typescript/comments/${post.id}/`));
      assert.ok(post.createdAt && !Number.isNaN(Date.parse(post.createdAt)));
      const [scopedRequest] = apiRequests('/r/typescript/search');
      assert.equal(scopedRequest.query.restrict_sr, '1');
      assert.equal(scopedRequest.query.limit, '3');
      assert.equal(scopedRequest.query.sort, 'new');
      assert.deepEqual(await client.search('borrow', { community: 'typescript' }), []);
    });

    it('lists a community by new and by hot', async () => {
      const client = userClient();
      const newest = await client.listCommunity('typescript', 'new', 2);
      assert.deepEqual(
        newest.map((post) => post.title),
        ['Newest question about generics', 'Strict mode everywhere'],
      );
      const hottest = await client.listCommunity('r/typescript', 'hot', 10);
      assert.deepEqual(
        hottest.map((post) => post.score),
        [50, 5, 1],
      );
      assert.equal(apiRequests('/r/typescript/new')[0].query.limit, '2');
    });

    it('reads a post with its comment tree flattened', async () => {
      const strict = forum.posts().find((post) => post.title === 'Strict mode everywhere')!;
      const thread = await userClient().getPost(`t3_${strict.id}`);
      assert.equal(thread.post.title, 'Strict mode everywhere');
      assert.equal(thread.post.commentCount, 4);
      assert.deepEqual(
        thread.comments.map((comment) => [comment.text, comment.depth]),
        [
          ['Agreed', 0],
          ['Same here', 1],
          ['Deep reply', 2],
          ['Second top-level', 0],
        ],
      );
      assert.equal(thread.comments[0].parentId, strict.name);
      assert.equal(thread.comments[1].parentId, thread.comments[0].name);

      const limited = await userClient().getPost(strict.id, { commentLimit: 2 });
      assert.equal(limited.comments.length, 2);
    });

    it('reads with app-only credentials', async () => {
      const client = createForumClient(endpoints(), appOnlyCredentials, transport);
      assert.equal(client.mode, 'client_credentials');
      const posts = await client.listCommunity('rust', 'hot', 5);
      assert.equal(posts.length, 1);
    });
  });

  describe('writing', () => {
    it('submits self and link posts', async () => {
      const client = userClient();
      const self = await client.submitPost({ community: 'rust', title: 'Hello from the adapter', text: 'Body text' });
      assert.equal(self.name, `t3_${self.id}`);
      assert.match(self.url, new RegExp(`/r/rust/comments/${self.id}/`));
      const link = await client.submitPost({ community: 'rust', title: 'A link', url: 'https://example.com/article' });

      const stored = forum.posts();
      const storedSelf = stored.find((post) => post.id === self.id)!;
      assert.deepEqual(
        {
          community: storedSelf.community,
          kind: storedSelf.kind,
          title: storedSelf.title,
          text: storedSelf.text,
          author: storedSelf.author,
        },
        { community: 'rust', kind: 'self', title: 'Hello from the adapter', text: 'Body text', author: USER.username },
      );
      assert.equal(stored.find((post) => post.id === link.id)?.url, 'https://example.com/article');
      const [selfForm, linkForm] = apiRequests('/api/submit').map((request) => request.form);
      assert.deepEqual(selfForm, {
        sr: 'rust',
        title: 'Hello from the adapter',
        kind: 'self',
        text: 'Body text',
        api_type: 'json',
      });
      assert.deepEqual(linkForm, {
        sr: 'rust',
        title: 'A link',
        kind: 'link',
        url: 'https://example.com/article',
        api_type: 'json',
      });

      const listed = await client.listCommunity('rust', 'new', 10);
      assert.ok(listed.some((post) => post.id === self.id));
    });

    it('comments on a post and replies to a comment', async () => {
      const client = userClient();
      const post = forum.posts().find((candidate) => candidate.community === 'rust')!;
      const top = await client.comment({ parentId: post.name, text: 'Great explanation' });
      assert.equal(top.parentId, post.name);
      assert.equal(top.name, `t1_${top.id}`);
      const reply = await client.comment({ parentId: top.name, text: 'Thanks!' });
      assert.equal(reply.parentId, top.name);

      const stored = forum.comments().filter((comment) => comment.linkId === post.name);
      assert.deepEqual(
        stored.map((comment) => [comment.text, comment.parentId, comment.author]),
        [
          ['Great explanation', post.name, USER.username],
          ['Thanks!', top.name, USER.username],
        ],
      );
      assert.deepEqual(apiRequests('/api/comment')[0].form, {
        thing_id: post.name,
        text: 'Great explanation',
        api_type: 'json',
      });
      const thread = await client.getPost(post.id);
      assert.deepEqual(
        thread.comments.map((comment) => [comment.id, comment.depth]),
        [
          [top.id, 0],
          [reply.id, 1],
        ],
      );
    });

    it('votes and clears a vote', async () => {
      const client = userClient();
      const post = forum.posts().find((candidate) => candidate.community === 'rust')!;
      assert.deepEqual(await client.vote({ id: post.name, direction: 1 }), { id: post.name, direction: 1 });
      assert.deepEqual(forum.votes(), [{ id: post.name, username: USER.username, direction: 1 }]);
      assert.equal(forum.posts().find((candidate) => candidate.id === post.id)?.score, post.score + 1);
      assert.deepEqual(apiRequests('/api/vote')[0].form, { id: post.name, dir: '1' });

      await client.vote({ id: post.name, direction: 0 });
      assert.deepEqual(forum.votes(), []);
      assert.equal(forum.posts().find((candidate) => candidate.id === post.id)?.score, post.score);
    });

    it('refuses writes with app-only credentials without sending them', async () => {
      const client = createForumClient(endpoints(), appOnlyCredentials, transport);
      await rejectsWith(client.submitPost({ community: 'rust', title: 'Nope' }), 'forbidden', /username and password/);
      await rejectsWith(client.vote({ id: 't3_abc', direction: 1 }), 'forbidden');
      await rejectsWith(client.me(), 'forbidden');
      assert.equal(forum.requests.length, 0);
    });

    it('spaces writes by the minimum interval', async () => {
      const client = userClient(300);
      const post = forum.posts()[0];
      // The site refuses writes closer than 150 ms: half the client's spacing, since an arrival can lag its send.
      forum.setWriteSpacing(150);
      await client.vote({ id: post.name, direction: 1 });
      await client.vote({ id: post.name, direction: -1 });
      assert.deepEqual(
        apiRequests('/api/vote').map((request) => request.status),
        [200, 200],
      );
      assert.deepEqual(
        forum.votes().map((vote) => vote.direction),
        [-1],
      );
    });

    it('validates input before sending', async () => {
      const client = userClient();
      await rejectsWith(client.comment({ parentId: 'not-a-fullname', text: 'x' }), 'bad_request', /fullname/);
      await rejectsWith(client.listCommunity('../api/v1/me', 'new', 5), 'bad_request', /community name/);
      await rejectsWith(client.submitPost({ community: 'rust', title: '   ' }), 'bad_request', /title/);
      assert.equal(forum.requests.length, 0);
    });
  });

  describe('upstream errors', () => {
    it('maps a missing community to not_found', async () => {
      const error = await rejectsWith(userClient().listCommunity('doesnotexist', 'new', 5), 'not_found');
      assert.equal(error.status, 404);
    });

    it('maps SUBREDDIT_NOEXIST to bad_request with the forum message', async () => {
      const error = await rejectsWith(
        userClient().submitPost({ community: 'doesnotexist', title: 'Hello', text: 'x' }),
        'bad_request',
        /that community doesn't exist \(SUBREDDIT_NOEXIST, field sr\)/,
      );
      assertNoSecrets(error.message);
      assert.equal(forum.posts().length, 4);
    });

    it('maps a missing comment parent and a missing post', async () => {
      await rejectsWith(userClient().comment({ parentId: 't3_zzzzzz', text: 'hello' }), 'bad_request', /NO_THING_ID/);
      await rejectsWith(userClient().getPost('zzzzzz'), 'not_found');
    });

    it('maps 403 to forbidden and 5xx to upstream without leaking secrets', async () => {
      forum.failNext({
        status: 403,
        path: '/r/rust/hot',
        body: { reason: 'private', message: 'Forbidden', error: 403 },
      });
      const forbidden = await rejectsWith(userClient().listCommunity('rust', 'hot', 5), 'forbidden', /private/);
      assert.equal(forbidden.status, 403);

      forum.failNext({ status: 500, path: '/r/rust/hot' });
      const upstream = await rejectsWith(userClient().listCommunity('rust', 'hot', 5), 'upstream', /HTTP 500/);
      assert.equal(upstream.status, 500);
      assertNoSecrets(upstream.message);
    });

    it('maps a failing token endpoint to upstream', async () => {
      forum.failNext({ status: 503, path: '/api/v1/access_token' });
      const result = await validateForumCredentials(endpoints(), passwordCredentials, transport);
      assert.ok(!result.ok);
      assert.match(result.message, /HTTP 503/);
    });
  });

  describe('rate limits', () => {
    it('waits for a short reset when the quota is used up', async () => {
      const client = userClient();
      await client.me();
      forum.setRateLimit({ remaining: 1, resetSeconds: 1 });
      await client.listCommunity('rust', 'new', 5);
      // The fake answers 429 to a request before the reset: every answer 200 means the client waited for it.
      await client.listCommunity('rust', 'hot', 5);
      assert.deepEqual(
        apiRequests().map((request) => [request.path, request.status]),
        [
          ['/api/v1/me', 200],
          ['/r/rust/new', 200],
          ['/r/rust/hot', 200],
        ],
      );
    });

    it('throws rate_limited instead of waiting for a long reset', async () => {
      const client = userClient();
      forum.setRateLimit({ remaining: 1, resetSeconds: 60 });
      await client.listCommunity('rust', 'new', 5);
      const sent = forum.requests.length;
      const error = await rejectsWith(client.listCommunity('rust', 'hot', 5), 'rate_limited');
      assert.ok(error.retryAfterSeconds && error.retryAfterSeconds > 50 && error.retryAfterSeconds <= 60);
      assert.equal(forum.requests.length, sent);
    });

    it('maps a 429 answer to rate_limited', async () => {
      forum.setRateLimit({ remaining: 0, resetSeconds: 30 });
      const error = await rejectsWith(userClient().listCommunity('rust', 'new', 5), 'rate_limited');
      assert.equal(error.status, 429);
      assert.equal(error.retryAfterSeconds, 30);
    });
  });

  describe('transport', () => {
    it('goes through the configured proxy', async () => {
      const proxy = await startFakeProxy();
      try {
        const client = createForumClient(endpoints(), passwordCredentials, {
          ...transport,
          proxy: proxyFromTemplate(proxy.urlTemplate, 'us'),
        });
        await client.listCommunity('rust', 'new', 5);
        assert.deepEqual(
          proxy.requests.map((request) => new URL(request.target).pathname),
          ['/api/v1/access_token', '/r/rust/new'],
        );
        assert.ok(proxy.requests.every((request) => request.authorization?.startsWith('Basic ')));
      } finally {
        await proxy.close();
      }
    });
  });
});
