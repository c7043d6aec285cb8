import type { ProxyConfig } from '../net/proxy';
import { fetchBuffered, type BufferedResponse } from '../net/buffered-fetch';
import type { NetworkPolicy } from '../net/ssrf';
import { FetchError, ssrfRefusal } from '../net/transport';

export interface ForumCredentials {
  forumClientId: string;
  forumClientSecret: string;
  forumUserAgent?: string;
  forumUsername?: string;
  forumPassword?: string;
}

export interface ForumEndpoints {
  /** e.g. https://oauth.reddit.com */
  apiBase: string;
  /** e.g. https://www.reddit.com */
  authBase: string;
}

export interface ForumTransport {
  policy: NetworkPolicy;
  proxy?: ProxyConfig | null;
  timeoutMs?: number;
}

export interface ForumClientOptions {
  /** Minimum spacing between writes (submit, comment, vote). */
  minIntervalMs?: number;
}

export type ForumMode = 'password' | 'client_credentials';

export type ForumErrorCode = 'invalid_credentials' | 'forbidden' | 'not_found' | 'rate_limited' | 'bad_request' | 'upstream';

export class ForumError extends Error {
  readonly code: ForumErrorCode;
  readonly status?: number;
  readonly retryAfterSeconds?: number;

  constructor(code: ForumErrorCode, message: string, details: { status?: number; retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'ForumError';
    this.code = code;
    if (details.status !== undefined) this.status = details.status;
    if (details.retryAfterSeconds !== undefined) this.retryAfterSeconds = details.retryAfterSeconds;
  }
}

export interface ForumIdentity {
  username: string;
  karma: number;
  createdAt: string | null;
}

export interface ForumPost {
  id: string;
  /** Fullname, `t3_<id>`. */
  name: string;
  community: string;
  title: string;
  text: string;
  url: string;
  author: string;
  score: number;
  commentCount: number;
  permalink: string;
  createdAt: string | null;
}

export interface ForumComment {
  id: string;
  /** Fullname, `t1_<id>`. */
  name: string;
  /** Fullname of the post (`t3_…`) or comment (`t1_…`) replied to. */
  parentId: string;
  author: string;
  text: string;
  score: number;
  /** 0 for top-level comments. */
  depth: number;
  createdAt: string | null;
}

export interface ForumThread {
  post: ForumPost;
  comments: ForumComment[];
}

export interface ForumSubmission {
  id: string;
  name: string;
  url: string;
}

export interface ForumCommentReceipt {
  id: string;
  name: string;
  parentId: string;
}

export type ForumVoteDirection = 1 | 0 | -1;

export interface ForumVoteReceipt {
  id: string;
  direction: ForumVoteDirection;
}

export type ForumSearchSort = 'relevance' | 'hot' | 'top' | 'new' | 'comments';
export type ForumListingSort = 'new' | 'hot';

export interface ForumSearchOptions {
  community?: string;
  limit?: number;
  sort?: ForumSearchSort;
}

export interface ForumSubmitInput {
  community: string;
  title: string;
  text?: string;
  url?: string;
}

export interface ForumCommentInput {
  parentId: string;
  text: string;
}

export interface ForumVoteInput {
  id: string;
  direction: ForumVoteDirection;
}

export interface ForumClient {
  readonly mode: ForumMode;
  /** Obtains an access token if none is held; rejects with ForumError when the credentials are refused. */
  authenticate(): Promise<void>;
  me(): Promise<ForumIdentity>;
  search(query: string, options?: ForumSearchOptions): Promise<ForumPost[]>;
  listCommunity(community: string, sort: ForumListingSort, limit: number): Promise<ForumPost[]>;
  getPost(postId: string, options?: { commentLimit?: number }): Promise<ForumThread>;
  submitPost(input: ForumSubmitInput): Promise<ForumSubmission>;
  comment(input: ForumCommentInput): Promise<ForumCommentReceipt>;
  vote(input: ForumVoteInput): Promise<ForumVoteReceipt>;
  /** The signed-in account's newest posts, newest first (to find a write whose answer was lost). */
  ownPosts(limit?: number): Promise<ForumPost[]>;
  /** The signed-in account's newest comments, newest first. */
  ownComments(limit?: number): Promise<ForumComment[]>;
}

export type ForumValidation =
  | { ok: true; meta: { username: string | null; mode: ForumMode; karma?: number } }
  | { ok: false; message: string };

const DEFAULT_USER_AGENT = 'server:scrape-platform:0.1.0';
const DEFAULT_WRITE_INTERVAL_MS = 1_000;
const MAX_RATE_LIMIT_WAIT_MS = 10_000;
const DEFAULT_TOKEN_LIFETIME_SECONDS = 3_600;
const MAX_TOKEN_REFRESH_MARGIN_MS = 30_000;
const DEFAULT_LIMIT = 25;
const MAX_LIMIT = 100;
const MAX_TITLE_LENGTH = 300;
const MAX_DETAIL_LENGTH = 200;
const COMMUNITY_NAME = /^[A-Za-z0-9][A-Za-z0-9_]{1,20}$/;
const POST_ID = /^[a-z0-9]{1,16}$/i;
const FULLNAME = /^t[13]_[a-z0-9]{1,16}$/i;

type Json = Record<string, unknown>;
type Query = Record<string, string | number | undefined>;

interface ApiRequest {
  method: 'GET' | 'POST';
  path: string;
  query?: Query;
  form?: Record<string, string>;
  write?: boolean;
}

interface AccessToken {
  value: string;
  refreshAt: number;
}

interface RateLimitState {
  remaining: number;
  resetAt: number;
}

export function forumMode(creds: ForumCredentials): ForumMode {
  return creds.forumUsername && creds.forumPassword ? 'password' : 'client_credentials';
}

export async function validateForumCredentials(
  endpoints: ForumEndpoints,
  creds: ForumCredentials,
  transport: ForumTransport,
): Promise<ForumValidation> {
  if (!creds.forumClientId?.trim() || !creds.forumClientSecret) {
    return { ok: false, message: 'A forum client ID and client secret are both required' };
  }
  try {
    const client = createForumClient(endpoints, creds, transport);
    if (client.mode === 'client_credentials') {
      await client.authenticate();
      return { ok: true, meta: { username: null, mode: 'client_credentials' } };
    }
    const identity = await client.me();
    return { ok: true, meta: { username: identity.username, mode: 'password', karma: identity.karma } };
  } catch (error) {
    if (error instanceof ForumError) return { ok: false, message: error.message };
    throw error;
  }
}

export function createForumClient(
  endpoints: ForumEndpoints,
  creds: ForumCredentials,
  transport: ForumTransport,
  options: ForumClientOptions = {},
): ForumClient {
  const session = new ForumSession(endpoints, creds, transport, options.minIntervalMs ?? DEFAULT_WRITE_INTERVAL_MS);
  const requireIdentity = (action: string) => {
    if (session.mode === 'password') return;
    throw new ForumError(
      'forbidden',
      `${action} needs a forum username and password; these credentials are app-only (client credentials) and read-only`,
    );
  };

  let username: string | null = null;
  const ownListing = async (what: 'submitted' | 'comments', limit: number | undefined) => {
    requireIdentity('Reading the account\'s own posts');
    username ??= toIdentity(await session.call({ method: 'GET', path: '/api/v1/me' })).username;
    return session.call({ method: 'GET', path: `/user/${encodeURIComponent(username)}/${what}`, query: { sort: 'new', limit: clampLimit(limit) } });
  };

  return {
    mode: session.mode,

    authenticate: async () => {
      await session.accessToken();
    },

    async me() {
      requireIdentity('Reading the account identity');
      return toIdentity(await session.call({ method: 'GET', path: '/api/v1/me' }));
    },

    async search(query, { community, limit, sort } = {}) {
      const path = community === undefined ? '/search' : `/r/${communityName(community)}/search`;
      const listing = await session.call({
        method: 'GET',
        path,
        query: {
          q: query,
          limit: clampLimit(limit),
          sort,
          type: 'link',
          restrict_sr: community === undefined ? undefined : 1,
        },
      });
      return postsFrom(listing);
    },

    async listCommunity(community, sort, limit) {
      const listing = await session.call({
        method: 'GET',
        path: `/r/${communityName(community)}/${listingSort(sort)}`,
        query: { limit: clampLimit(limit) },
      });
      return postsFrom(listing);
    },

    async getPost(postId, { commentLimit } = {}) {
      const id = postIdentifier(postId);
      const answer = await session.call({ method: 'GET', path: `/comments/${id}`, query: { limit: commentLimit === undefined ? undefined : clampLimit(commentLimit) } });
      if (!Array.isArray(answer)) throw new ForumError('upstream', 'The forum answered a post request with an unexpected shape');
      const [post] = postsFrom(answer[0]);
      if (!post) throw new ForumError('not_found', `Post ${id} was not found`);
      const comments = flattenComments(answer[1], 0, []);
      return { post, comments: commentLimit === undefined ? comments : comments.slice(0, clampLimit(commentLimit)) };
    },

    async submitPost({ community, title, text, url }) {
      requireIdentity('Posting');
      const sr = communityName(community);
      const trimmedTitle = title.trim();
      if (trimmedTitle === '' || trimmedTitle.length > MAX_TITLE_LENGTH) {
        throw new ForumError('bad_request', `A post title must be 1–${MAX_TITLE_LENGTH} characters`);
      }
      if (url !== undefined && text !== undefined) throw new ForumError('bad_request', 'A post has either text or a url, not both');
      const body: Record<string, string> = url === undefined ? { kind: 'self', text: text ?? '' } : { kind: 'link', url };
      const answer = await session.call({
        method: 'POST',
        path: '/api/submit',
        form: { sr, title: trimmedTitle, ...body, api_type: 'json' },
        write: true,
      });
      const data = thingResult(answer, 'post', session.redact);
      return { id: str(data.id), name: str(data.name) || `t3_${str(data.id)}`, url: str(data.url) };
    },

    async comment({ parentId, text }) {
      requireIdentity('Commenting');
      const parent = fullname(parentId, 'parentId');
      if (text.trim() === '') throw new ForumError('bad_request', 'A comment needs some text');
      const answer = await session.call({
        method: 'POST',
        path: '/api/comment',
        form: { thing_id: parent, text, api_type: 'json' },
        write: true,
      });
      const data = thingResult(answer, 'comment', session.redact);
      return { id: str(data.id), name: str(data.name) || `t1_${str(data.id)}`, parentId: str(data.parent_id) || parent };
    },

    async vote({ id, direction }) {
      requireIdentity('Voting');
      const target = fullname(id, 'id');
      if (direction !== 1 && direction !== 0 && direction !== -1) throw new ForumError('bad_request', 'A vote direction is 1, 0 or -1');
      await session.call({ method: 'POST', path: '/api/vote', form: { id: target, dir: String(direction) }, write: true });
      return { id: target, direction };
    },

    async ownPosts(limit) {
      return postsFrom(await ownListing('submitted', limit));
    },

    async ownComments(limit) {
      return listingChildren(await ownListing('comments', limit))
        .filter((child) => child.kind === 't1')
        .map((child) => toComment(child.data, 0));
    },
  };
}

class ForumSession {
  readonly mode: ForumMode;
  private readonly apiBase: string;
  private readonly tokenUrl: string;
  private readonly userAgent: string;
  private token: AccessToken | null = null;
  private pendingGrant: Promise<AccessToken> | null = null;
  private rateLimit: RateLimitState | null = null;
  private nextWriteAt = 0;

  constructor(
    endpoints: ForumEndpoints,
    private readonly creds: ForumCredentials,
    private readonly transport: ForumTransport,
    private readonly minWriteIntervalMs: number,
  ) {
    this.mode = forumMode(creds);
    this.apiBase = baseUrl(endpoints.apiBase, 'API');
    this.tokenUrl = `${baseUrl(endpoints.authBase, 'auth')}/api/v1/access_token`;
    this.userAgent =
      creds.forumUserAgent?.trim() || (this.mode === 'password' ? `${DEFAULT_USER_AGENT} (by /u/${creds.forumUsername})` : DEFAULT_USER_AGENT);
  }

  async accessToken(): Promise<string> {
    if (this.token && Date.now() < this.token.refreshAt) return this.token.value;
    this.pendingGrant ??= this.grant().finally(() => {
      this.pendingGrant = null;
    });
    this.token = await this.pendingGrant;
    return this.token.value;
  }

  async call(request: ApiRequest): Promise<unknown> {
    if (request.write) await this.awaitWriteSlot();
    let response = await this.sendAuthorized(request);
    if (response.status === 401) {
      response = await this.sendAuthorized(request);
      if (response.status === 401) {
        throw this.error('invalid_credentials', 'The forum rejected the access token even after signing in again', { status: 401 });
      }
    }
    return this.interpret(response, request);
  }

  private async sendAuthorized(request: ApiRequest): Promise<BufferedResponse> {
    const token = await this.accessToken();
    await this.awaitRateLimit();
    const response = await this.send(`${this.apiBase}${request.path}${queryString(request.query)}`, {
      method: request.method,
      headers: {
        authorization: `bearer ${token}`,
        'user-agent': this.userAgent,
        accept: 'application/json',
        ...(request.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: request.form ? new URLSearchParams(request.form).toString() : undefined,
    });
    this.recordRateLimit(response.headers);
    if (response.status === 401 && this.token?.value === token) this.token = null;
    return response;
  }

  private async grant(): Promise<AccessToken> {
    const form: Record<string, string> =
      this.mode === 'password'
        ? { grant_type: 'password', username: this.creds.forumUsername ?? '', password: this.creds.forumPassword ?? '' }
        : { grant_type: 'client_credentials' };
    const basic = Buffer.from(`${this.creds.forumClientId}:${this.creds.forumClientSecret}`).toString('base64');
    const requestedAt = Date.now();
    const response = await this.send(this.tokenUrl, {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        'user-agent': this.userAgent,
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(form).toString(),
    });
    const body = asObject(parseJson(response.body));
    const oauthError = typeof body?.error === 'string' ? body.error : undefined;
    if (oauthError === 'invalid_grant') {
      throw this.error(
        'invalid_credentials',
        'The forum rejected the username or password (invalid_grant); a script app only accepts accounts listed as its developers, and accounts with two-factor authentication are not supported',
        { status: response.status },
      );
    }
    if (response.status === 401 || response.status === 403 || oauthError === 'invalid_client' || oauthError === 'unauthorized_client') {
      throw this.error('invalid_credentials', `The forum rejected the client ID or client secret (HTTP ${response.status})`, {
        status: response.status,
      });
    }
    if (response.status === 429) throw this.rateLimitedError(response);
    if (oauthError && response.status < 500) {
      throw this.error('bad_request', `The forum refused to issue an access token: ${truncate(oauthError)}`, { status: response.status });
    }
    if (response.status < 200 || response.status >= 300) {
      throw this.error('upstream', `The forum's token endpoint answered HTTP ${response.status}`, { status: response.status });
    }
    const value = body?.access_token;
    if (typeof value !== 'string' || value === '') {
      throw this.error('upstream', 'The forum answered the token request without an access token', { status: response.status });
    }
    const lifetimeMs = positiveNumber(body?.expires_in, DEFAULT_TOKEN_LIFETIME_SECONDS) * 1000;
    return { value, refreshAt: requestedAt + lifetimeMs - Math.min(MAX_TOKEN_REFRESH_MARGIN_MS, lifetimeMs / 10) };
  }

  private interpret(response: BufferedResponse, request: ApiRequest): unknown {
    const { status } = response;
    const what = `${request.method} ${request.path}`;
    if (status >= 200 && status < 300) {
      const parsed = parseJson(response.body);
      if (parsed === undefined) throw this.error('upstream', `The forum answered ${what} with something other than JSON`, { status });
      return parsed;
    }
    if (status >= 300 && status < 400) {
      const location = response.headers.location ?? '';
      if (location.includes('/subreddits/search')) throw this.error('not_found', `${what}: that community does not exist`, { status });
      throw this.error('upstream', `The forum answered ${what} with an unexpected redirect (HTTP ${status})`, { status });
    }
    const detail = errorDetail(response.body);
    const suffix = detail ? `: ${detail}` : '';
    if (status === 429) throw this.rateLimitedError(response);
    if (status === 400 || status === 422) throw this.error('bad_request', `The forum refused ${what} (HTTP ${status})${suffix}`, { status });
    if (status === 403) throw this.error('forbidden', `The forum did not allow ${what} (HTTP 403)${suffix}`, { status });
    if (status === 404) throw this.error('not_found', `The forum found nothing at ${what} (HTTP 404)${suffix}`, { status });
    throw this.error('upstream', `The forum failed on ${what} (HTTP ${status})${suffix}`, { status });
  }

  private async send(url: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<BufferedResponse> {
    try {
      return await fetchBuffered(url, {
        ...init,
        policy: this.transport.policy,
        proxy: this.transport.proxy ?? null,
        timeoutMs: this.transport.timeoutMs,
        maxRedirects: 0,
      });
    } catch (error) {
      if (ssrfRefusal(error)) {
        throw this.error('upstream', `The network policy does not allow connecting to the forum: ${(error as Error).message}`, { cause: error });
      }
      if (error instanceof FetchError) throw this.error('upstream', `Could not reach the forum: ${error.message}`, { cause: error });
      throw error;
    }
  }

  private async awaitWriteSlot(): Promise<void> {
    const now = Date.now();
    const slot = Math.max(now, this.nextWriteAt);
    this.nextWriteAt = slot + this.minWriteIntervalMs;
    if (slot > now) await sleep(slot - now);
  }

  private async awaitRateLimit(): Promise<void> {
    const state = this.rateLimit;
    if (!state) return;
    if (state.remaining < 1) {
      const waitMs = state.resetAt - Date.now();
      if (waitMs > MAX_RATE_LIMIT_WAIT_MS) {
        const retryAfterSeconds = Math.ceil(waitMs / 1000);
        throw this.error('rate_limited', `The forum's rate limit is used up; retry in ${retryAfterSeconds} s`, { retryAfterSeconds });
      }
      if (waitMs > 0) await sleep(waitMs);
      if (this.rateLimit === state) this.rateLimit = null;
      return;
    }
    state.remaining -= 1;
  }

  private recordRateLimit(headers: Record<string, string>): void {
    const remaining = Number.parseFloat(headers['x-ratelimit-remaining'] ?? '');
    const resetSeconds = Number.parseFloat(headers['x-ratelimit-reset'] ?? '');
    if (Number.isFinite(remaining) && Number.isFinite(resetSeconds)) {
      this.rateLimit = { remaining, resetAt: Date.now() + resetSeconds * 1000 };
    }
  }

  private rateLimitedError(response: BufferedResponse): ForumError {
    const seconds = Number.parseFloat(response.headers['retry-after'] ?? response.headers['x-ratelimit-reset'] ?? '');
    const retryAfterSeconds = Number.isFinite(seconds) ? Math.max(0, Math.ceil(seconds)) : undefined;
    const when = retryAfterSeconds === undefined ? 'later' : `in ${retryAfterSeconds} s`;
    return this.error('rate_limited', `The forum is rate limiting this client (HTTP ${response.status}); retry ${when}`, {
      status: response.status,
      retryAfterSeconds,
    });
  }

  private error(code: ForumErrorCode, message: string, details: ConstructorParameters<typeof ForumError>[2] = {}): ForumError {
    return new ForumError(code, this.redact(message), details);
  }

  readonly redact = (text: string): string => {
    const secrets = [this.creds.forumClientSecret, this.creds.forumPassword, this.token?.value].filter(
      (secret): secret is string => typeof secret === 'string' && secret !== '',
    );
    return secrets.reduce((redacted, secret) => redacted.split(secret).join('[redacted]'), text);
  };
}

function thingResult(answer: unknown, what: 'post' | 'comment', redact: (text: string) => string): Json {
  const json = asObject(asObject(answer)?.json);
  if (!json) throw new ForumError('upstream', `The forum answered the ${what} request with an unexpected shape`);
  const errors = Array.isArray(json.errors) ? json.errors : [];
  if (errors.length > 0) {
    const described = redact(errors.map(describeApiError).join('; '));
    if (errors.some((entry) => Array.isArray(entry) && entry[0] === 'RATELIMIT')) {
      const seconds = positiveNumber(json.ratelimit, Number.NaN);
      throw new ForumError('rate_limited', `The forum refused the ${what}: ${described}`, {
        retryAfterSeconds: Number.isFinite(seconds) ? Math.ceil(seconds) : undefined,
      });
    }
    throw new ForumError('bad_request', `The forum refused the ${what}: ${described}`);
  }
  const data = asObject(json.data);
  const things = Array.isArray(data?.things) ? data.things : undefined;
  const thing = things ? asObject(asObject(things[0])?.data) : data;
  if (!thing || str(thing.id) === '') throw new ForumError('upstream', `The forum accepted the ${what} but did not say what it created`);
  return thing;
}

function describeApiError(entry: unknown): string {
  if (!Array.isArray(entry)) return truncate(String(entry));
  const [code, message, field] = entry.map((part) => (typeof part === 'string' ? part : ''));
  const context = [code, field ? `field ${field}` : ''].filter(Boolean).join(', ');
  return truncate(context ? `${message || code} (${context})` : message);
}

function errorDetail(body: Buffer): string {
  const parsed = asObject(parseJson(body));
  if (!parsed) return '';
  const parts = [parsed.reason, parsed.explanation, parsed.message].filter((part): part is string => typeof part === 'string' && part !== '');
  return truncate([...new Set(parts)].join(' – '));
}

function postsFrom(listing: unknown): ForumPost[] {
  return listingChildren(listing)
    .filter((child) => child.kind === 't3')
    .map((child) => toPost(child.data));
}

function flattenComments(listing: unknown, depth: number, into: ForumComment[]): ForumComment[] {
  for (const child of listingChildren(listing)) {
    if (child.kind !== 't1') continue;
    into.push(toComment(child.data, depth));
    flattenComments(child.data.replies, depth + 1, into);
  }
  return into;
}

function listingChildren(listing: unknown): Array<{ kind: string; data: Json }> {
  const children = asObject(asObject(listing)?.data)?.children;
  if (!Array.isArray(children)) return [];
  return children.flatMap((child) => {
    const object = asObject(child);
    const data = asObject(object?.data);
    return object && data && typeof object.kind === 'string' ? [{ kind: object.kind, data }] : [];
  });
}

function toPost(data: Json): ForumPost {
  const id = str(data.id);
  return {
    id,
    name: str(data.name) || `t3_${id}`,
    community: str(data.subreddit),
    title: str(data.title),
    text: str(data.selftext),
    url: str(data.url),
    author: str(data.author),
    score: num(data.score),
    commentCount: num(data.num_comments),
    permalink: str(data.permalink),
    createdAt: isoTime(data.created_utc),
  };
}

function toComment(data: Json, depth: number): ForumComment {
  const id = str(data.id);
  return {
    id,
    name: str(data.name) || `t1_${id}`,
    parentId: str(data.parent_id),
    author: str(data.author),
    text: str(data.body),
    score: num(data.score),
    depth,
    createdAt: isoTime(data.created_utc),
  };
}

function toIdentity(answer: unknown): ForumIdentity {
  const data = asObject(answer);
  const username = data?.name;
  if (typeof username !== 'string' || username === '') throw new ForumError('upstream', 'The forum answered the identity request without a username');
  const karma = typeof data?.total_karma === 'number' ? data.total_karma : num(data?.link_karma) + num(data?.comment_karma);
  return { username, karma, createdAt: isoTime(data?.created_utc) };
}

function communityName(input: string): string {
  const name = input.trim().replace(/^\/?r\//i, '');
  if (!COMMUNITY_NAME.test(name)) throw new ForumError('bad_request', 'A community name is 2–21 letters, digits or underscores');
  return name;
}

function postIdentifier(input: string): string {
  const id = input.trim().replace(/^t3_/i, '');
  if (!POST_ID.test(id)) throw new ForumError('bad_request', 'A post id is a short base-36 id, optionally prefixed with t3_');
  return id;
}

function fullname(input: string, field: string): string {
  const value = input.trim();
  if (!FULLNAME.test(value)) throw new ForumError('bad_request', `${field} must be a post (t3_…) or comment (t1_…) fullname`);
  return value;
}

function listingSort(sort: ForumListingSort): ForumListingSort {
  if (sort !== 'new' && sort !== 'hot') throw new ForumError('bad_request', 'A community listing is sorted by new or hot');
  return sort;
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIMIT;
  return Math.min(MAX_LIMIT, Math.max(1, Math.floor(limit)));
}

function baseUrl(value: string, which: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ForumError('bad_request', `The forum ${which} base URL is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ForumError('bad_request', `The forum ${which} base URL must be http(s)`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) params.set(key, String(value));
  }
  params.set('raw_json', '1');
  return `?${params.toString()}`;
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function asObject(value: unknown): Json | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function positiveNumber(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
}

function isoTime(seconds: unknown): string | null {
  return typeof seconds === 'number' && Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : null;
}

function truncate(text: string): string {
  return text.length > MAX_DETAIL_LENGTH ? `${text.slice(0, MAX_DETAIL_LENGTH - 1)}…` : text;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
