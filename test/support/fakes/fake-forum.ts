import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeForumPost {
  id: string;
  name: string;
  community: string;
  kind: 'self' | 'link';
  title: string;
  text: string;
  url: string;
  author: string;
  score: number;
  numComments: number;
  permalink: string;
  createdUtc: number;
}

export interface FakeForumComment {
  id: string;
  name: string;
  /** Fullname of the post or comment replied to. */
  parentId: string;
  /** Fullname of the post the comment belongs to. */
  linkId: string;
  author: string;
  text: string;
  score: number;
  createdUtc: number;
}

export interface FakeForumVote {
  /** Fullname voted on. */
  id: string;
  username: string;
  direction: 1 | -1;
}

export interface FakeCommentSeed {
  text: string;
  author?: string;
  score?: number;
  replies?: FakeCommentSeed[];
}

export interface FakePostSeed {
  title: string;
  text?: string;
  url?: string;
  author?: string;
  score?: number;
  createdUtc?: number;
  comments?: FakeCommentSeed[];
}

export interface FakeForumRequest {
  /** Which listener answered: the OAuth token host or the API host. */
  server: 'auth' | 'api';
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The urlencoded body, decoded. */
  form: Record<string, string>;
  remoteAddress: string;
  receivedAt: number;
  /** Set once answered. */
  status: number;
}

export interface FakeForumFailure {
  status: number;
  /** Only requests to this exact path fail; any path when omitted. */
  path?: string;
  body?: unknown;
  /** How many matching requests fail; 1 when omitted. */
  times?: number;
}

export interface FakeForumDelay {
  /** Only requests to this exact path are delayed. */
  path: string;
  /** The request is carried out at once; its answer is sent this much later. */
  ms: number;
  /** How many matching requests are delayed; 1 when omitted. */
  times?: number;
}

export interface FakeForumOptions {
  tokenLifetimeSeconds?: number;
  /** Requests allowed per rate-limit window; 600 when omitted. */
  rateLimitQuota?: number;
}

export interface FakeForum {
  /** `http://127.0.0.1:<port>` answering the OAuth API (Reddit's oauth.reddit.com). */
  apiBase: string;
  /** `http://127.0.0.1:<port>` answering `/api/v1/access_token` (Reddit's www.reddit.com). */
  authBase: string;
  requests: FakeForumRequest[];
  addApp(app: { clientId: string; clientSecret: string }): void;
  addUser(user: { username: string; password: string; karma?: number }): void;
  /** Creates the community (if new) and adds the seeded posts, newest last; returns the posts created. */
  addCommunity(name: string, posts?: FakePostSeed[]): FakeForumPost[];
  posts(): FakeForumPost[];
  comments(): FakeForumComment[];
  votes(): FakeForumVote[];
  /** Every access token handed out so far. */
  issuedTokens(): string[];
  setTokenLifetime(seconds: number): void;
  /** Invalidates every token handed out so far, as if they had expired. */
  revokeTokens(): void;
  failNext(failure: FakeForumFailure): void;
  /** Carries out the next matching request but answers late, as when the answer is lost to a timeout. */
  delayAnswers(delay: FakeForumDelay): void;
  setRateLimit(limit: { remaining: number; resetSeconds: number }): void;
  /** Refuses (429) a write (submit, comment, vote) arriving less than `ms` after the previous one, as the site does. Off until set. */
  setWriteSpacing(ms: number): void;
  close(): Promise<void>;
}

interface FakeUser {
  password: string;
  karma: number;
  createdUtc: number;
}

interface FakeToken {
  clientId: string;
  username: string | null;
  expiresAt: number;
}

interface RateWindow {
  remaining: number;
  endsAt: number;
}

interface Exchange {
  request: FakeForumRequest;
  /** Sent with whatever answer follows. */
  headers: Record<string, string>;
  respond(status: number, body: unknown, headers?: Record<string, string>): void;
}

type Json = Record<string, unknown>;

const DEFAULT_TOKEN_LIFETIME_SECONDS = 3_600;
const DEFAULT_RATE_LIMIT_QUOTA = 600;
const RATE_LIMIT_WINDOW_SECONDS = 600;
const DEFAULT_LISTING_LIMIT = 25;
const MAX_LISTING_LIMIT = 100;
const DEFAULT_AUTHOR = 'seed_author';
const FIRST_THING_ID = 1_000_000;

export async function startFakeForum(options: FakeForumOptions = {}): Promise<FakeForum> {
  const requests: FakeForumRequest[] = [];
  const apps = new Map<string, string>();
  const users = new Map<string, FakeUser>();
  const tokens = new Map<string, FakeToken>();
  const communities = new Map<string, string>();
  const posts: FakeForumPost[] = [];
  const comments: FakeForumComment[] = [];
  const votes = new Map<string, FakeForumVote>();
  const failures: Array<FakeForumFailure & { times: number }> = [];
  const delays: Array<FakeForumDelay & { times: number }> = [];
  const quota = options.rateLimitQuota ?? DEFAULT_RATE_LIMIT_QUOTA;
  let tokenLifetimeSeconds = options.tokenLifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
  let rateWindow: RateWindow = { remaining: quota, endsAt: Date.now() + RATE_LIMIT_WINDOW_SECONDS * 1000 };
  let writeSpacingMs = 0;
  let lastWriteAt: number | null = null;
  let nextThingId = FIRST_THING_ID;
  let webOrigin = '';

  const newId = () => (nextThingId++).toString(36);
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const findCommunity = (name: string) => communities.get(name.toLowerCase());
  const findPost = (id: string) => posts.find((post) => post.id === id);
  const findThing = (fullname: string): FakeForumPost | FakeForumComment | undefined =>
    fullname.startsWith('t3_')
      ? posts.find((post) => post.name === fullname)
      : comments.find((comment) => comment.name === fullname);

  function createPost(community: string, seed: FakePostSeed & { createdUtc: number }): FakeForumPost {
    const id = newId();
    const slug = seed.title
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_|_$/g, '')
      .slice(0, 40);
    const permalink = `/r/${community}/comments/${id}/${slug}/`;
    const post: FakeForumPost = {
      id,
      name: `t3_${id}`,
      community,
      kind: seed.url === undefined ? 'self' : 'link',
      title: seed.title,
      text: seed.text ?? '',
      url: seed.url ?? `${webOrigin}${permalink}`,
      author: seed.author ?? DEFAULT_AUTHOR,
      score: seed.score ?? 1,
      numComments: 0,
      permalink,
      createdUtc: seed.createdUtc,
    };
    posts.push(post);
    return post;
  }

  function createComment(parentId: string, seed: { text: string; author: string; score?: number }): FakeForumComment {
    const parent = findThing(parentId);
    const linkId = parent && 'linkId' in parent ? parent.linkId : parentId;
    const id = newId();
    const comment: FakeForumComment = {
      id,
      name: `t1_${id}`,
      parentId,
      linkId,
      author: seed.author,
      text: seed.text,
      score: seed.score ?? 1,
      createdUtc: nowSeconds(),
    };
    comments.push(comment);
    const post = posts.find((candidate) => candidate.name === linkId);
    if (post) post.numComments += 1;
    return comment;
  }

  function seedComments(parentId: string, seeds: readonly FakeCommentSeed[]): void {
    for (const seed of seeds) {
      const comment = createComment(parentId, {
        text: seed.text,
        author: seed.author ?? DEFAULT_AUTHOR,
        score: seed.score,
      });
      seedComments(comment.name, seed.replies ?? []);
    }
  }

  function authenticate(exchange: Exchange): FakeToken | null {
    const header = exchange.request.headers.authorization ?? '';
    const match = /^bearer\s+(\S+)$/i.exec(header);
    const token = match ? tokens.get(match[1]) : undefined;
    if (!token || Date.now() >= token.expiresAt) {
      exchange.respond(
        401,
        { message: 'Unauthorized', error: 401 },
        { 'www-authenticate': 'Bearer realm="reddit", error="invalid_token"' },
      );
      return null;
    }
    return token;
  }

  function issueToken(exchange: Exchange): void {
    const { headers, form } = exchange.request;
    const basic = /^basic\s+(\S+)$/i.exec(headers.authorization ?? '');
    const [clientId, ...secretParts] = basic ? Buffer.from(basic[1], 'base64').toString('utf8').split(':') : [];
    if (!clientId || apps.get(clientId) !== secretParts.join(':')) {
      exchange.respond(401, { message: 'Unauthorized', error: 401 });
      return;
    }
    let username: string | null = null;
    if (form.grant_type === 'password') {
      const user = users.get(form.username ?? '');
      if (!user || user.password !== form.password) {
        exchange.respond(401, { error: 'invalid_grant' });
        return;
      }
      username = form.username;
    } else if (form.grant_type !== 'client_credentials') {
      exchange.respond(400, { error: 'unsupported_grant_type' });
      return;
    }
    const accessToken = randomBytes(18).toString('base64url');
    tokens.set(accessToken, { clientId, username, expiresAt: Date.now() + tokenLifetimeSeconds * 1000 });
    exchange.respond(200, {
      access_token: accessToken,
      token_type: 'bearer',
      expires_in: tokenLifetimeSeconds,
      scope: '*',
    });
  }

  function takeRateLimit(exchange: Exchange): boolean {
    const now = Date.now();
    if (now >= rateWindow.endsAt) rateWindow = { remaining: quota, endsAt: now + RATE_LIMIT_WINDOW_SECONDS * 1000 };
    const exhausted = rateWindow.remaining <= 0;
    if (!exhausted) rateWindow.remaining -= 1;
    const resetSeconds = String(Math.max(0, Math.ceil((rateWindow.endsAt - now) / 1000)));
    exchange.headers['x-ratelimit-remaining'] = rateWindow.remaining.toFixed(1);
    exchange.headers['x-ratelimit-used'] = String(Math.max(0, quota - rateWindow.remaining));
    exchange.headers['x-ratelimit-reset'] = resetSeconds;
    if (!exhausted) return true;
    exchange.respond(429, { message: 'Too Many Requests', error: 429 }, { 'retry-after': resetSeconds });
    return false;
  }

  /** A write too soon after the previous one is refused, as Reddit's "you are doing that too much". */
  function tooSoonAfterLastWrite(exchange: Exchange): boolean {
    const { method, path, receivedAt } = exchange.request;
    if (method !== 'POST' || !['/api/submit', '/api/comment', '/api/vote'].includes(path)) return false;
    const tooSoon = lastWriteAt !== null && receivedAt - lastWriteAt < writeSpacingMs;
    lastWriteAt = receivedAt;
    if (tooSoon)
      exchange.respond(
        429,
        { message: 'Too Many Requests', error: 429, reason: 'writes too close together' },
        { 'retry-after': '1' },
      );
    return tooSoon;
  }

  function takeFailure(exchange: Exchange): boolean {
    const index = failures.findIndex((failure) => failure.path === undefined || failure.path === exchange.request.path);
    if (index === -1) return false;
    const failure = failures[index];
    failure.times -= 1;
    if (failure.times <= 0) failures.splice(index, 1);
    exchange.respond(
      failure.status,
      failure.body ?? { message: http.STATUS_CODES[failure.status] ?? 'Error', error: failure.status },
    );
    return true;
  }

  function postJson(post: FakeForumPost): Json {
    return {
      kind: 't3',
      data: {
        id: post.id,
        name: post.name,
        title: post.title,
        selftext: post.text,
        is_self: post.kind === 'self',
        author: post.author,
        subreddit: post.community,
        score: post.score,
        num_comments: post.numComments,
        permalink: post.permalink,
        url: post.url,
        created_utc: post.createdUtc,
      },
    };
  }

  function listing(children: Json[], after: string | null = null): Json {
    return { kind: 'Listing', data: { after, before: null, dist: children.length, children } };
  }

  function postListing(candidates: FakeForumPost[], query: Record<string, string>): Json {
    const limit = listingLimit(query.limit);
    const page = candidates.slice(0, limit);
    return listing(page.map(postJson), candidates.length > limit ? page[page.length - 1].name : null);
  }

  function commentTree(post: FakeForumPost, limit: number): Json {
    let budget = limit;
    let omitted = 0;
    const build = (parentId: string, depth: number): Json[] =>
      comments
        .filter((comment) => comment.parentId === parentId)
        .flatMap((comment) => {
          if (budget <= 0) {
            omitted += 1;
            return [];
          }
          budget -= 1;
          const replies = build(comment.name, depth + 1);
          return [
            {
              kind: 't1',
              data: {
                id: comment.id,
                name: comment.name,
                parent_id: comment.parentId,
                link_id: comment.linkId,
                author: comment.author,
                body: comment.text,
                score: comment.score,
                depth,
                subreddit: post.community,
                created_utc: comment.createdUtc,
                replies: replies.length > 0 ? listing(replies) : '',
              },
            },
          ];
        });
    const topLevel = build(post.name, 0);
    if (omitted > 0) {
      topLevel.push({
        kind: 'more',
        data: { count: omitted, depth: 0, parent_id: post.name, children: [], id: '_', name: 't1__' },
      });
    }
    return listing(topLevel);
  }

  function handleApi(exchange: Exchange): void {
    const { method, path, query, form } = exchange.request;
    if (!takeRateLimit(exchange) || tooSoonAfterLastWrite(exchange)) return;
    const token = authenticate(exchange);
    if (!token) return;
    const respond = (status: number, body: unknown) => exchange.respond(status, body);
    const notFound = () => respond(404, { message: 'Not Found', error: 404 });
    const needsUser = (): string | null => {
      if (token.username === null) respond(403, { message: 'Forbidden', error: 403 });
      return token.username;
    };

    let match: RegExpExecArray | null;
    if (method === 'GET' && path === '/api/v1/me') {
      const username = needsUser();
      if (username === null) return;
      const user = users.get(username)!;
      return respond(200, {
        name: username,
        id: username.length.toString(36),
        total_karma: user.karma,
        link_karma: user.karma,
        comment_karma: 0,
        created_utc: user.createdUtc,
      });
    }
    if (method === 'GET' && (match = /^\/(?:r\/([^/]+)\/)?search$/.exec(path))) {
      const community = match[1] === undefined ? undefined : findCommunity(match[1]);
      if (match[1] !== undefined && !community) return notFound();
      const restrictTo = ['1', 'on', 'true'].includes(query.restrict_sr ?? '') ? community : undefined;
      const needle = (query.q ?? '').toLowerCase();
      const found = posts
        .filter((post) => restrictTo === undefined || post.community === restrictTo)
        .filter((post) => needle !== '' && `${post.title}\n${post.text}`.toLowerCase().includes(needle));
      return respond(200, postListing(sortPosts(found, query.sort === 'top' ? 'top' : 'new'), query));
    }
    if (method === 'GET' && (match = /^\/r\/([^/]+)\/(new|hot)$/.exec(path))) {
      const community = findCommunity(match[1]);
      if (!community) return notFound();
      const inCommunity = posts.filter((post) => post.community === community);
      return respond(200, postListing(sortPosts(inCommunity, match[2] === 'hot' ? 'top' : 'new'), query));
    }
    if (method === 'GET' && (match = /^\/user\/([^/]+)\/(submitted|comments)$/.exec(path))) {
      const author = decodeURIComponent(match[1]);
      if (match[2] === 'submitted')
        return respond(
          200,
          postListing(
            sortPosts(
              posts.filter((post) => post.author === author),
              'new',
            ),
            query,
          ),
        );
      const own = comments
        .filter((comment) => comment.author === author)
        .reverse()
        .slice(0, listingLimit(query.limit));
      return respond(
        200,
        listing(
          own.map((comment) => ({
            kind: 't1',
            data: {
              id: comment.id,
              name: comment.name,
              parent_id: comment.parentId,
              link_id: comment.linkId,
              author: comment.author,
              body: comment.text,
              score: comment.score,
              created_utc: comment.createdUtc,
            },
          })),
        ),
      );
    }
    if (method === 'GET' && (match = /^\/comments\/([a-z0-9]+)(?:\/.*)?$/.exec(path))) {
      const post = findPost(match[1]);
      if (!post) return notFound();
      return respond(200, [listing([postJson(post)]), commentTree(post, listingLimit(query.limit, 200))]);
    }
    if (method === 'POST' && path === '/api/submit') {
      const username = needsUser();
      if (username === null) return;
      const community = findCommunity(form.sr ?? '');
      const errors: string[][] = [];
      if (!community) errors.push(['SUBREDDIT_NOEXIST', "that community doesn't exist", 'sr']);
      if (!form.title?.trim()) errors.push(['NO_TEXT', 'we need something here', 'title']);
      if (form.kind === 'link' && !form.url) errors.push(['NO_URL', 'a url is required', 'url']);
      if (form.kind !== 'link' && form.kind !== 'self')
        errors.push(['INVALID_OPTION', 'that option is not valid', 'kind']);
      if (!community || errors.length > 0) return respond(200, { json: { errors } });
      const post = createPost(community, {
        title: form.title,
        text: form.kind === 'self' ? (form.text ?? '') : undefined,
        url: form.kind === 'link' ? form.url : undefined,
        author: username,
        createdUtc: nowSeconds(),
      });
      return respond(200, {
        json: {
          errors: [],
          data: { url: `${webOrigin}${post.permalink}`, drafts_count: 0, id: post.id, name: post.name },
        },
      });
    }
    if (method === 'POST' && path === '/api/comment') {
      const username = needsUser();
      if (username === null) return;
      const parentId = form.thing_id ?? '';
      if (!findThing(parentId))
        return respond(200, { json: { errors: [['NO_THING_ID', "that thing doesn't exist", 'thing_id']] } });
      if (!form.text?.trim())
        return respond(200, { json: { errors: [['NO_TEXT', 'we need something here', 'text']] } });
      const comment = createComment(parentId, { text: form.text, author: username });
      return respond(200, {
        json: {
          errors: [],
          data: {
            things: [
              {
                kind: 't1',
                data: {
                  id: comment.id,
                  name: comment.name,
                  parent_id: comment.parentId,
                  link_id: comment.linkId,
                  body: comment.text,
                  author: username,
                },
              },
            ],
          },
        },
      });
    }
    if (method === 'POST' && path === '/api/vote') {
      const username = needsUser();
      if (username === null) return;
      const thing = findThing(form.id ?? '');
      const direction = Number(form.dir);
      if (!thing || ![1, 0, -1].includes(direction)) {
        return respond(400, {
          message: 'Bad Request',
          error: 400,
          reason: thing ? 'INVALID_OPTION' : 'INVALID_ID',
          fields: [thing ? 'dir' : 'id'],
        });
      }
      const key = `${username}\n${thing.name}`;
      const previous = votes.get(key)?.direction ?? 0;
      thing.score += direction - previous;
      if (direction === 0) votes.delete(key);
      else votes.set(key, { id: thing.name, username, direction: direction as 1 | -1 });
      return respond(200, {});
    }
    notFound();
  }

  function handler(server: FakeForumRequest['server']) {
    return (incoming: IncomingMessage, outgoing: ServerResponse) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const url = new URL(incoming.url ?? '/', 'http://fake-forum.invalid');
        const body = Buffer.concat(chunks).toString('utf8');
        const isForm = (incoming.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
        const request: FakeForumRequest = {
          server,
          method: incoming.method ?? '',
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          headers: incoming.headers,
          body,
          form: isForm ? Object.fromEntries(new URLSearchParams(body)) : {},
          remoteAddress: incoming.socket.remoteAddress ?? '',
          receivedAt: Date.now(),
          status: 0,
        };
        requests.push(request);
        const exchange: Exchange = {
          request,
          headers: {},
          respond(status, answer, headers = {}) {
            request.status = status;
            const send = () => {
              if (outgoing.destroyed) return;
              outgoing.writeHead(status, {
                'content-type': 'application/json; charset=UTF-8',
                ...exchange.headers,
                ...headers,
              });
              outgoing.end(JSON.stringify(answer));
            };
            const index = delays.findIndex((delay) => delay.path === request.path);
            if (index === -1) return send();
            const delay = delays[index];
            if (--delay.times <= 0) delays.splice(index, 1);
            setTimeout(send, delay.ms);
          },
        };
        if (takeFailure(exchange)) return;
        if (server === 'api') return handleApi(exchange);
        if (request.method === 'POST' && request.path === '/api/v1/access_token') return issueToken(exchange);
        exchange.respond(404, { message: 'Not Found', error: 404 });
      });
    };
  }

  const apiServer = http.createServer(handler('api'));
  const authServer = http.createServer(handler('auth'));
  const [apiBase, authBase] = await Promise.all([listen(apiServer), listen(authServer)]);
  webOrigin = authBase;

  return {
    apiBase,
    authBase,
    requests,
    addApp({ clientId, clientSecret }) {
      apps.set(clientId, clientSecret);
    },
    addUser({ username, password, karma = 42 }) {
      users.set(username, { password, karma, createdUtc: nowSeconds() - 86_400 * 365 });
    },
    addCommunity(name, seeds = []) {
      const community = findCommunity(name) ?? name;
      communities.set(name.toLowerCase(), community);
      const baseTime = nowSeconds() - seeds.length * 60;
      return seeds.map((seed, index) => {
        const post = createPost(community, { ...seed, createdUtc: seed.createdUtc ?? baseTime + index * 60 });
        seedComments(post.name, seed.comments ?? []);
        return { ...post };
      });
    },
    posts: () => posts.map((post) => ({ ...post })),
    comments: () => comments.map((comment) => ({ ...comment })),
    votes: () => [...votes.values()].map((vote) => ({ ...vote })),
    issuedTokens: () => [...tokens.keys()],
    setTokenLifetime(seconds) {
      tokenLifetimeSeconds = seconds;
    },
    revokeTokens() {
      for (const token of tokens.values()) token.expiresAt = 0;
    },
    failNext(failure) {
      failures.push({ ...failure, times: failure.times ?? 1 });
    },
    delayAnswers(delay) {
      delays.push({ ...delay, times: delay.times ?? 1 });
    },
    setRateLimit({ remaining, resetSeconds }) {
      rateWindow = { remaining, endsAt: Date.now() + resetSeconds * 1000 };
    },
    setWriteSpacing(ms) {
      writeSpacingMs = ms;
    },
    close: () => Promise.all([stop(apiServer), stop(authServer)]).then(() => undefined),
  };
}

function sortPosts(posts: FakeForumPost[], order: 'new' | 'top'): FakeForumPost[] {
  return [...posts].sort((a, b) => (order === 'new' ? b.createdUtc - a.createdUtc : b.score - a.score));
}

function listingLimit(value: string | undefined, fallback = DEFAULT_LISTING_LIMIT): number {
  const limit = Number(value);
  return Number.isInteger(limit) && limit > 0 ? Math.min(limit, Math.max(MAX_LISTING_LIMIT, fallback)) : fallback;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function stop(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
