import { randomBytes } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { totp } from '../../../lib/social/totp';

export interface FakeMicroblogAccountInput {
  username: string;
  email: string;
  password: string;
  totpSecret?: string;
  displayName?: string;
  /** The next password login is treated as unusual and must confirm the account email. */
  unusualLogin?: boolean;
  locked?: boolean;
}

export interface FakeMicroblogRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface FakeMicroblogPost {
  id: string;
  author: string;
  text: string;
  replyTo: string | null;
  createdAt: string;
}

export interface FakeMicroblogFailure {
  status: number;
  /** Exact pathname to fail; any request when omitted. */
  path?: string;
  retryAfterSeconds?: number;
  times?: number;
}

export interface FakeMicroblogDelay {
  /** Exact pathname whose answer is delayed. */
  path: string;
  /** The request is carried out at once; its answer is sent this much later. */
  ms: number;
  times?: number;
}

export interface FakeMicroblog {
  base: string;
  addAccount(account: FakeMicroblogAccountInput): void;
  addPost(author: string, text: string): string;
  posts(): FakeMicroblogPost[];
  likes(): { username: string; postId: string }[];
  reposts(): { username: string; postId: string }[];
  sessions(): { username: string; token: string }[];
  loggedOut(): string[];
  requests: FakeMicroblogRequest[];
  expireSessions(): void;
  failNext(failure: FakeMicroblogFailure): void;
  /** Carries out the next matching request but answers late, as when the answer is lost to a timeout. */
  delayAnswers(delay: FakeMicroblogDelay): void;
  /**
   * Refuses (429, Retry-After: 1) an API write arriving less than `ms` after the previous one, as the site does to
   * clients that write too fast. Off until set.
   */
  setWriteSpacing(ms: number): void;
  close(): Promise<void>;
}

interface Account {
  username: string;
  email: string;
  password: string;
  totpSecret: string | undefined;
  displayName: string;
  unusualLogin: boolean;
  locked: boolean;
  failedPasswords: number;
}

type FlowStage = 'credentials' | 'email' | 'totp' | 'done';

interface LoginFlow {
  id: string;
  csrf: string;
  stage: FlowStage;
  username?: string;
  failedAttempts: number;
}

interface Session {
  token: string;
  csrf: string;
  username: string;
}

interface Incoming {
  request: IncomingMessage;
  response: ServerResponse;
  url: URL;
  cookies: Record<string, string>;
  form: URLSearchParams;
  json: Record<string, unknown>;
}

const MAX_FAILED_PASSWORDS = 5;
const MAX_FAILED_CHALLENGES = 3;
const MAX_POST_LENGTH = 280;

function token(): string {
  return randomBytes(18).toString('base64url');
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

function parseCookies(header: string | undefined): Record<string, string> {
  const cookies: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const separator = part.indexOf('=');
    if (separator > 0) cookies[part.slice(0, separator).trim()] = part.slice(separator + 1).trim();
  }
  return cookies;
}

function page(title: string, content: string): string {
  return `<!doctype html><html><head><title>${escapeHtml(title)} / Microblog</title></head><body><main>${content}</main></body></html>`;
}

function errorBanner(code: string | undefined, message: string | undefined): string {
  return code && message
    ? `<div class="form-error" role="alert" data-error="${code}">${escapeHtml(message)}</div>`
    : '';
}

function loginPage(flow: LoginFlow, error?: { code: string; message: string }): string {
  return page(
    'Log in',
    `<h1>Sign in to Microblog</h1>${errorBanner(error?.code, error?.message)}
<form method="post" action="/login" class="login-form">
  <input type="hidden" name="csrf" value="${flow.csrf}">
  <label>Phone, email or username <input type="text" name="identifier" autocomplete="username"></label>
  <label>Password <input type="password" name="password" autocomplete="current-password"></label>
  <button type="submit">Log in</button>
</form>`,
  );
}

function challengePage(flow: LoginFlow, error?: { code: string; message: string }): string {
  if (flow.stage === 'email') {
    return page(
      'Confirm your identity',
      `<h1>We noticed an unusual login</h1><p>Confirm the email address on this account.</p>${errorBanner(error?.code, error?.message)}
<form method="post" action="/login/challenge">
  <input type="hidden" name="flow" value="${flow.id}">
  <input type="email" name="email" autocomplete="email">
  <button type="submit">Next</button>
</form>`,
    );
  }
  return page(
    'Two-factor authentication',
    `<h1>Enter your verification code</h1><p>Use the code from your authenticator app.</p>${errorBanner(error?.code, error?.message)}
<form method="post" action="/login/2fa">
  <input type="hidden" name="flow" value="${flow.id}">
  <input type="text" name="code" inputmode="numeric" autocomplete="one-time-code">
  <button type="submit">Verify</button>
</form>`,
  );
}

export async function startFakeMicroblog(): Promise<FakeMicroblog> {
  const accounts = new Map<string, Account>();
  const flows = new Map<string, LoginFlow>();
  const sessions = new Map<string, Session>();
  const posts: FakeMicroblogPost[] = [];
  const likes: { username: string; postId: string }[] = [];
  const reposts: { username: string; postId: string }[] = [];
  const loggedOut: string[] = [];
  const requests: FakeMicroblogRequest[] = [];
  const failures: Array<FakeMicroblogFailure & { times: number }> = [];
  const delays: Array<FakeMicroblogDelay & { times: number }> = [];
  /** When each path is open again after a 429 with Retry-After: earlier requests are refused again, as the site does. */
  const retryAfterEnds = new Map<string, number>();
  let writeSpacingMs = 0;
  let lastWriteAt: number | null = null;
  let nextPostNumber = 1n;
  let base = '';

  const findAccount = (identifier: string) => {
    const wanted = identifier.trim().replace(/^@/, '').toLowerCase();
    return [...accounts.values()].find(
      (account) => account.username.toLowerCase() === wanted || account.email.toLowerCase() === wanted,
    );
  };

  const createPost = (author: string, text: string, replyTo: string | null): FakeMicroblogPost => {
    const post = {
      id: String(1_790_000_000_000_000_000n + nextPostNumber++),
      author,
      text,
      replyTo,
      createdAt: new Date().toISOString(),
    };
    posts.push(post);
    return post;
  };

  const postJson = (post: FakeMicroblogPost, viewer: string) => {
    const author = accounts.get(post.author.toLowerCase());
    return {
      id: post.id,
      url: `${base}/${post.author}/status/${post.id}`,
      text: post.text,
      author: { username: post.author, display_name: author?.displayName ?? post.author },
      created_at: post.createdAt,
      reply_to: post.replyTo,
      like_count: likes.filter((like) => like.postId === post.id).length,
      repost_count: reposts.filter((repost) => repost.postId === post.id).length,
      reply_count: posts.filter((candidate) => candidate.replyTo === post.id).length,
      liked: likes.some((like) => like.postId === post.id && like.username === viewer),
    };
  };

  const sendHtml = (incoming: Incoming, status: number, html: string, cookies: string[] = []) => {
    incoming.response
      .writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'set-cookie': cookies })
      .end(html);
  };

  const sendJson = (incoming: Incoming, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const send = () => {
      if (!incoming.response.destroyed)
        incoming.response
          .writeHead(status, { 'content-type': 'application/json', ...headers })
          .end(JSON.stringify(body));
    };
    const index = delays.findIndex((delay) => delay.path === incoming.url.pathname);
    if (index === -1) return send();
    const delay = delays[index];
    if (--delay.times <= 0) delays.splice(index, 1);
    setTimeout(send, delay.ms);
  };

  const sendApiError = (
    incoming: Incoming,
    status: number,
    code: string,
    message: string,
    headers: Record<string, string> = {},
  ) => sendJson(incoming, status, { error: { code, message } }, headers);

  const redirect = (incoming: Incoming, location: string, cookies: string[] = []) => {
    incoming.response.writeHead(302, { location, 'set-cookie': cookies }).end();
  };

  const flowCookie = (flow: LoginFlow) => `login_flow=${flow.id}; Path=/; HttpOnly; SameSite=Lax`;
  const clearFlowCookie = 'login_flow=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax';

  const currentFlow = (incoming: Incoming): LoginFlow | undefined => {
    const flow = flows.get(incoming.cookies.login_flow ?? '');
    return flow && flow.stage !== 'done' ? flow : undefined;
  };

  const completeLogin = (incoming: Incoming, flow: LoginFlow, account: Account) => {
    flow.stage = 'done';
    flows.delete(flow.id);
    account.failedPasswords = 0;
    const session: Session = { token: token(), csrf: token(), username: account.username };
    sessions.set(session.token, session);
    redirect(incoming, '/home', [
      clearFlowCookie,
      `mb_session=${session.token}; Path=/; HttpOnly; Secure; SameSite=Lax`,
      `mb_csrf=${session.csrf}; Path=/; Secure; SameSite=Strict`,
    ]);
  };

  const advanceAfter = (incoming: Incoming, flow: LoginFlow, account: Account) => {
    if (flow.stage === 'credentials' && account.unusualLogin) flow.stage = 'email';
    else if (flow.stage !== 'totp' && account.totpSecret) flow.stage = 'totp';
    else return completeLogin(incoming, flow, account);
    redirect(incoming, `/login/challenge?flow=${flow.id}`);
  };

  const failChallenge = (incoming: Incoming, flow: LoginFlow, code: string, message: string) => {
    flow.failedAttempts++;
    if (flow.failedAttempts >= MAX_FAILED_CHALLENGES) flows.delete(flow.id);
    sendHtml(incoming, 401, challengePage(flow, { code, message }));
  };

  const getLogin = (incoming: Incoming) => {
    const flow: LoginFlow = { id: token(), csrf: token(), stage: 'credentials', failedAttempts: 0 };
    flows.set(flow.id, flow);
    sendHtml(incoming, 200, loginPage(flow), [flowCookie(flow)]);
  };

  const postLogin = (incoming: Incoming) => {
    const flow = currentFlow(incoming);
    if (!flow || flow.stage !== 'credentials' || incoming.form.get('csrf') !== flow.csrf) {
      return sendHtml(
        incoming,
        403,
        page('Error', '<p data-error="csrf">Your session timed out. Refresh the page and try again.</p>'),
      );
    }
    const account = findAccount(incoming.form.get('identifier') ?? '');
    if (account?.locked) {
      return sendHtml(
        incoming,
        423,
        loginPage(flow, { code: 'locked', message: 'This account is temporarily locked.' }),
      );
    }
    if (!account || account.password !== incoming.form.get('password')) {
      if (account && ++account.failedPasswords >= MAX_FAILED_PASSWORDS) account.locked = true;
      return sendHtml(
        incoming,
        401,
        loginPage(flow, { code: 'invalid_credentials', message: 'Wrong username or password.' }),
      );
    }
    flow.username = account.username;
    advanceAfter(incoming, flow, account);
  };

  const challengeFlow = (incoming: Incoming, flowId: string | null): LoginFlow | undefined => {
    const flow = currentFlow(incoming);
    return flow && flow.id === flowId && flow.username ? flow : undefined;
  };

  const getChallenge = (incoming: Incoming) => {
    const flow = challengeFlow(incoming, incoming.url.searchParams.get('flow'));
    if (!flow || (flow.stage !== 'email' && flow.stage !== 'totp')) return redirect(incoming, '/login');
    sendHtml(incoming, 200, challengePage(flow));
  };

  const postEmailChallenge = (incoming: Incoming) => {
    const flow = challengeFlow(incoming, incoming.form.get('flow'));
    const account = flow?.username ? accounts.get(flow.username.toLowerCase()) : undefined;
    if (!flow || !account || flow.stage !== 'email') return redirect(incoming, '/login');
    if ((incoming.form.get('email') ?? '').trim().toLowerCase() !== account.email.toLowerCase()) {
      return failChallenge(incoming, flow, 'email_mismatch', 'That email address does not match this account.');
    }
    account.unusualLogin = false;
    advanceAfter(incoming, flow, account);
  };

  const postTotp = (incoming: Incoming) => {
    const flow = challengeFlow(incoming, incoming.form.get('flow'));
    const account = flow?.username ? accounts.get(flow.username.toLowerCase()) : undefined;
    if (!flow || !account?.totpSecret || flow.stage !== 'totp') return redirect(incoming, '/login');
    const now = Date.now();
    const accepted = [totp(account.totpSecret, now), totp(account.totpSecret, now - 30_000)];
    if (!accepted.includes((incoming.form.get('code') ?? '').trim())) {
      return failChallenge(incoming, flow, 'totp_invalid', 'That code is incorrect.');
    }
    completeLogin(incoming, flow, account);
  };

  const sessionOf = (incoming: Incoming): Session | undefined => sessions.get(incoming.cookies.mb_session ?? '');

  const getHome = (incoming: Incoming) => {
    const session = sessionOf(incoming);
    if (!session) return redirect(incoming, '/login');
    sendHtml(incoming, 200, page('Home', `<h1>Home</h1><p>Signed in as @${escapeHtml(session.username)}</p>`));
  };

  const postLogout = (incoming: Incoming) => {
    const session = sessionOf(incoming);
    if (!session) return redirect(incoming, '/login');
    if (incoming.request.headers['x-csrf-token'] !== session.csrf)
      return sendHtml(incoming, 403, page('Error', '<p data-error="csrf">Forbidden</p>'));
    sessions.delete(session.token);
    loggedOut.push(session.username);
    redirect(incoming, '/login', ['mb_session=; Path=/; Max-Age=0', 'mb_csrf=; Path=/; Max-Age=0']);
  };

  const handleApi = (incoming: Incoming) => {
    const session = sessionOf(incoming);
    if (!session) return sendApiError(incoming, 401, 'unauthorized', 'Authentication required');
    const { method } = incoming.request;
    if (method === 'POST' && incoming.request.headers['x-csrf-token'] !== session.csrf) {
      return sendApiError(incoming, 403, 'csrf_mismatch', 'CSRF token missing or wrong');
    }
    const path = incoming.url.pathname;
    const limit = Math.min(100, Math.max(1, Number(incoming.url.searchParams.get('limit') ?? 20) || 20));
    const newestFirst = (list: FakeMicroblogPost[]) =>
      [...list]
        .reverse()
        .slice(0, limit)
        .map((post) => postJson(post, session.username));
    if (method === 'GET' && path === '/api/me') {
      const account = accounts.get(session.username.toLowerCase());
      return sendJson(incoming, 200, {
        id: session.username.toLowerCase(),
        username: session.username,
        display_name: account?.displayName,
      });
    }
    if (method === 'GET' && path === '/api/search') {
      const query = (incoming.url.searchParams.get('q') ?? '').toLowerCase();
      if (!query) return sendApiError(incoming, 400, 'missing_query', 'q is required');
      return sendJson(incoming, 200, {
        posts: newestFirst(posts.filter((post) => post.text.toLowerCase().includes(query))),
      });
    }
    if (method === 'GET' && path === '/api/timeline/home') {
      return sendJson(incoming, 200, { posts: newestFirst(posts.filter((post) => post.replyTo === null)) });
    }
    const ownPosts = /^\/api\/users\/([^/]+)\/posts$/.exec(path);
    if (method === 'GET' && ownPosts) {
      const author = decodeURIComponent(ownPosts[1]).toLowerCase();
      return sendJson(incoming, 200, {
        posts: newestFirst(posts.filter((post) => post.author.toLowerCase() === author)),
      });
    }
    if (method === 'POST' && path === '/api/posts') return createFromJson(incoming, session, null);
    const postRoute = /^\/api\/posts\/([^/]+)(?:\/(replies|like|repost))?$/.exec(path);
    const target = postRoute ? posts.find((post) => post.id === postRoute[1]) : undefined;
    if (postRoute && !target) return sendApiError(incoming, 404, 'not_found', 'No such post');
    if (target && method === 'GET' && !postRoute?.[2]) {
      const replies = posts
        .filter((post) => post.replyTo === target.id)
        .map((post) => postJson(post, session.username));
      return sendJson(incoming, 200, { post: postJson(target, session.username), replies });
    }
    if (target && method === 'POST' && postRoute?.[2] === 'replies')
      return createFromJson(incoming, session, target.id);
    if (target && method === 'POST' && postRoute?.[2] === 'like') {
      if (!likes.some((like) => like.postId === target.id && like.username === session.username))
        likes.push({ username: session.username, postId: target.id });
      return sendJson(incoming, 200, { liked: true });
    }
    if (target && method === 'POST' && postRoute?.[2] === 'repost') {
      if (reposts.some((repost) => repost.postId === target.id && repost.username === session.username)) {
        return sendApiError(incoming, 403, 'already_reposted', 'You have already reposted this post');
      }
      reposts.push({ username: session.username, postId: target.id });
      return sendJson(incoming, 200, { reposted: true });
    }
    sendApiError(incoming, 404, 'not_found', 'No such endpoint');
  };

  const createFromJson = (incoming: Incoming, session: Session, replyTo: string | null) => {
    const text = incoming.json.text;
    if (typeof text !== 'string' || text.trim() === '')
      return sendApiError(incoming, 400, 'empty_text', 'Text is required');
    if ([...text].length > MAX_POST_LENGTH)
      return sendApiError(incoming, 400, 'text_too_long', 'Text is longer than 280 characters');
    const post = createPost(session.username, text, replyTo);
    sendJson(incoming, 201, { id: post.id, url: `${base}/${post.author}/status/${post.id}` });
  };

  const injectedFailure = (incoming: Incoming): boolean => {
    const index = failures.findIndex((failure) => failure.path === undefined || failure.path === incoming.url.pathname);
    if (index === -1) return false;
    const failure = failures[index];
    if (--failure.times <= 0) failures.splice(index, 1);
    const headers: Record<string, string> =
      failure.retryAfterSeconds === undefined ? {} : { 'retry-after': String(failure.retryAfterSeconds) };
    if (failure.status === 429 && failure.retryAfterSeconds !== undefined)
      retryAfterEnds.set(incoming.url.pathname, Date.now() + failure.retryAfterSeconds * 1000);
    sendJson(
      incoming,
      failure.status,
      { error: { code: 'injected', message: `Injected HTTP ${failure.status}` } },
      headers,
    );
    return true;
  };

  /** Too early: inside a Retry-After the site announced for this path (50 ms allowed for timer granularity), or a write too soon after the last. */
  const refusedAsTooEarly = (incoming: Incoming): boolean => {
    const now = Date.now();
    const path = incoming.url.pathname;
    const reopensAt = retryAfterEnds.get(path);
    if (reopensAt !== undefined && now < reopensAt - 50) {
      sendApiError(incoming, 429, 'rate_limited', 'Retry-After not waited out', {
        'retry-after': String(Math.ceil((reopensAt - now) / 1000)),
      });
      return true;
    }
    if (incoming.request.method !== 'POST' || !path.startsWith('/api/')) return false;
    const tooSoon = lastWriteAt !== null && now - lastWriteAt < writeSpacingMs;
    lastWriteAt = now;
    if (tooSoon)
      sendApiError(incoming, 429, 'rate_limited', `Writes must be at least ${writeSpacingMs} ms apart`, {
        'retry-after': '1',
      });
    return tooSoon;
  };

  const route = (incoming: Incoming) => {
    if (refusedAsTooEarly(incoming) || injectedFailure(incoming)) return;
    const { method } = incoming.request;
    const path = incoming.url.pathname;
    if (path.startsWith('/api/')) return handleApi(incoming);
    if (method === 'GET' && path === '/login') return getLogin(incoming);
    if (method === 'POST' && path === '/login') return postLogin(incoming);
    if (method === 'GET' && path === '/login/challenge') return getChallenge(incoming);
    if (method === 'POST' && path === '/login/challenge') return postEmailChallenge(incoming);
    if (method === 'POST' && path === '/login/2fa') return postTotp(incoming);
    if (method === 'GET' && path === '/home') return getHome(incoming);
    if (method === 'POST' && path === '/logout') return postLogout(incoming);
    sendHtml(incoming, 404, page('Not found', '<p>Nothing here.</p>'));
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = request.url ?? '/';
      requests.push({ method: request.method ?? '', path, headers: request.headers, body });
      const contentType = request.headers['content-type'] ?? '';
      let json: Record<string, unknown> = {};
      if (contentType.startsWith('application/json')) {
        try {
          json = JSON.parse(body) as Record<string, unknown>;
        } catch {
          return void response
            .writeHead(400, { 'content-type': 'application/json' })
            .end('{"error":{"code":"bad_json"}}');
        }
      }
      route({
        request,
        response,
        url: new URL(path, 'http://microblog.invalid'),
        cookies: parseCookies(request.headers.cookie),
        form: new URLSearchParams(contentType.startsWith('application/x-www-form-urlencoded') ? body : ''),
        json,
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    base,
    addAccount(input) {
      accounts.set(input.username.toLowerCase(), {
        username: input.username,
        email: input.email,
        password: input.password,
        totpSecret: input.totpSecret,
        displayName: input.displayName ?? input.username,
        unusualLogin: input.unusualLogin ?? false,
        locked: input.locked ?? false,
        failedPasswords: 0,
      });
    },
    addPost: (author, text) => createPost(author, text, null).id,
    posts: () => posts.map((post) => ({ ...post })),
    likes: () => likes.map((like) => ({ ...like })),
    reposts: () => reposts.map((repost) => ({ ...repost })),
    sessions: () =>
      [...sessions.values()].map(({ username, token: sessionToken }) => ({ username, token: sessionToken })),
    loggedOut: () => [...loggedOut],
    requests,
    expireSessions: () => sessions.clear(),
    setWriteSpacing: (ms) => void (writeSpacingMs = ms),
    failNext: (failure) => failures.push({ ...failure, times: failure.times ?? 1 }),
    delayAnswers: (delay) => delays.push({ ...delay, times: delay.times ?? 1 }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
