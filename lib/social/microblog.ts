import type { ProxyConfig } from '../net/proxy';
import { fetchBuffered, type BufferedResponse } from '../net/buffered-fetch';
import type { NetworkPolicy } from '../net/ssrf';
import { FetchError, ssrfRefusal } from '../net/transport';
import { isBase32Secret, totp } from './totp';

export type MicroblogCredentials = {
  username: string;
  email: string;
  password: string;
  totp_secret?: string;
  proxy_country?: string;
};

export type MicroblogErrorCode =
  | 'invalid_credentials'
  | 'totp_required'
  | 'totp_invalid'
  | 'locked'
  | 'rate_limited'
  | 'not_found'
  | 'bad_request'
  | 'upstream';

export class MicroblogError extends Error {
  readonly code: MicroblogErrorCode;
  /** Set on `rate_limited` when the site said how long to wait. */
  readonly retryAfterMs: number | undefined;
  /** The site's own error code, when it gave one (e.g. `already_reposted`). */
  readonly upstreamCode: string | undefined;

  constructor(code: MicroblogErrorCode, message: string, options: { cause?: unknown; retryAfterMs?: number; upstreamCode?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MicroblogError';
    this.code = code;
    this.retryAfterMs = options.retryAfterMs;
    this.upstreamCode = options.upstreamCode;
  }
}

export interface MicroblogTransport {
  policy: NetworkPolicy;
  proxy?: ProxyConfig | null;
  timeoutMs?: number;
}

/** Plain JSON: safe to seal, store and hand back to `createMicroblogClient`. */
export type MicroblogSession = {
  username: string;
  cookies: Record<string, string>;
  /** Sent as `x-csrf-token` on API writes; the site's `mb_csrf` cookie. */
  csrf: string;
  createdAt: number;
};

export type MicroblogProfile = {
  username: string;
  displayName?: string;
};

export type MicroblogPost = {
  id: string;
  url: string;
  text: string;
  author: MicroblogProfile;
  createdAt: string;
  replyToId?: string;
  likeCount: number;
  repostCount: number;
  replyCount: number;
};

export type MicroblogThread = {
  post: MicroblogPost;
  replies: MicroblogPost[];
};

export type MicroblogPostRef = {
  id: string;
  url: string;
};

export type MicroblogValidation =
  | { ok: true; session: MicroblogSession; meta: MicroblogProfile }
  | { ok: false; code: MicroblogErrorCode; message: string };

export interface MicroblogClientOptions {
  /** Minimum spacing between writes (posts, replies, likes, reposts); default 1000 ms. */
  minIntervalMs?: number;
  /** Called at most once per request when the site answers 401. */
  relogin?: () => Promise<MicroblogSession>;
}

export interface MicroblogClient {
  /** The session in use, including any cookies refreshed or replaced by a relogin. */
  readonly session: MicroblogSession;
  me(): Promise<MicroblogProfile>;
  search(query: string, options?: { limit?: number }): Promise<MicroblogPost[]>;
  timeline(options?: { limit?: number }): Promise<MicroblogPost[]>;
  getPost(id: string): Promise<MicroblogThread>;
  post(text: string): Promise<MicroblogPostRef>;
  reply(postId: string, text: string): Promise<MicroblogPostRef>;
  like(postId: string): Promise<void>;
  repost(postId: string): Promise<void>;
  /** The signed-in account's newest posts and replies, newest first (to find a write whose answer was lost). */
  ownPosts(options?: { limit?: number }): Promise<MicroblogPost[]>;
  disconnect(): Promise<void>;
}

export const MICROBLOG_MAX_POST_LENGTH = 280;

const SESSION_COOKIE = 'mb_session';
const CSRF_COOKIE = 'mb_csrf';
const USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const DEFAULT_TIMEOUT_MS = 15_000;
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;
const MAX_RATE_LIMIT_WAIT_MS = 10_000;
const MAX_RATE_LIMIT_RETRIES = 2;
const MAX_LOGIN_STEPS = 8;
const DEFAULT_MIN_WRITE_INTERVAL_MS = 1_000;
const DEFAULT_LIST_LIMIT = 20;
const MAX_LIST_LIMIT = 100;
const MAX_QUERY_LENGTH = 500;
const MAX_UPSTREAM_MESSAGE_LENGTH = 200;
const POST_ID = /^[A-Za-z0-9_-]{1,64}$/;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

class CookieJar {
  private readonly cookies: Map<string, string>;

  constructor(initial: Record<string, string> = {}) {
    this.cookies = new Map(Object.entries(initial));
  }

  absorb(setCookies: readonly string[]): void {
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';');
      const separator = pair.indexOf('=');
      if (separator <= 0) continue;
      const name = pair.slice(0, separator).trim();
      const value = pair.slice(separator + 1).trim();
      if (value === '' || isExpiry(attributes)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  header(): string | undefined {
    if (this.cookies.size === 0) return undefined;
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  replaceAll(cookies: Record<string, string>): void {
    this.cookies.clear();
    for (const [name, value] of Object.entries(cookies)) this.cookies.set(name, value);
  }

  clear(): void {
    this.cookies.clear();
  }

  snapshot(): Record<string, string> {
    return Object.fromEntries(this.cookies);
  }
}

function isExpiry(attributes: readonly string[]): boolean {
  for (const attribute of attributes) {
    const [rawName, ...rest] = attribute.split('=');
    const name = rawName.trim().toLowerCase();
    const value = rest.join('=').trim();
    if (name === 'max-age' && Number(value) <= 0) return true;
    if (name === 'expires' && Date.parse(value) <= Date.now()) return true;
  }
  return false;
}

interface MicroblogRequest {
  method: 'GET' | 'POST';
  /** A path under the base URL, or an absolute URL on the same origin. */
  target: string | URL;
  form?: Record<string, string>;
  json?: unknown;
  headers?: Record<string, string>;
}

class MicroblogConnection {
  readonly jar: CookieJar;

  constructor(
    private readonly base: URL,
    private readonly transport: MicroblogTransport,
    cookies: Record<string, string> = {},
  ) {
    this.jar = new CookieJar(cookies);
  }

  async send(request: MicroblogRequest): Promise<BufferedResponse> {
    for (let attempt = 0; ; attempt++) {
      const response = await this.sendOnce(request);
      if (response.status !== 429) return response;
      const waitMs = retryAfterMs(response.headers['retry-after']);
      if (waitMs === undefined || waitMs > MAX_RATE_LIMIT_WAIT_MS || attempt >= MAX_RATE_LIMIT_RETRIES) {
        throw rateLimited(waitMs);
      }
      await sleep(waitMs);
    }
  }

  redirectTarget(response: BufferedResponse): URL {
    const location = response.headers.location;
    if (!location) throw new MicroblogError('upstream', `Microblog answered HTTP ${response.status} without a Location`);
    return this.sameOrigin(new URL(location, response.url));
  }

  private async sendOnce(request: MicroblogRequest): Promise<BufferedResponse> {
    const url = typeof request.target === 'string' ? this.pathUrl(request.target) : this.sameOrigin(request.target);
    const headers: Record<string, string> = {
      'user-agent': USER_AGENT,
      accept: request.json === undefined && !url.pathname.includes('/api/') ? 'text/html,application/xhtml+xml' : 'application/json',
      ...request.headers,
    };
    const cookie = this.jar.header();
    if (cookie) headers.cookie = cookie;
    let body: string | undefined;
    if (request.form) {
      body = new URLSearchParams(request.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      headers['content-type'] = 'application/json';
    }
    if (request.method === 'POST') headers.origin = this.base.origin;
    let response: BufferedResponse;
    try {
      response = await fetchBuffered(url, {
        policy: this.transport.policy,
        proxy: this.transport.proxy ?? null,
        timeoutMs: this.transport.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxBytes: MAX_RESPONSE_BYTES,
        maxRedirects: 0,
        method: request.method,
        headers,
        body,
      });
    } catch (error) {
      throw networkFailure(error);
    }
    this.jar.absorb(response.setCookies);
    return response;
  }

  private pathUrl(path: string): URL {
    const url = new URL(this.base);
    url.pathname = this.base.pathname.replace(/\/+$/, '') + path.replace(/\?.*$/, '');
    url.search = path.includes('?') ? path.slice(path.indexOf('?')) : '';
    return url;
  }

  private sameOrigin(url: URL): URL {
    if (url.origin !== this.base.origin) {
      throw new MicroblogError('upstream', `Microblog sent the client to another site (${url.origin}); refusing to follow`);
    }
    return url;
  }
}

function parseBase(base: string): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new MicroblogError('bad_request', 'Microblog base URL is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new MicroblogError('bad_request', `Microblog base URL must use http: or https:, got ${url.protocol}`);
  }
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  return url;
}

function retryAfterMs(header: string | undefined): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function rateLimited(waitMs: number | undefined): MicroblogError {
  const advice = waitMs === undefined ? '' : `; retry in ${Math.ceil(waitMs / 1000)} s`;
  return new MicroblogError('rate_limited', `Microblog is rate limiting this account${advice}`, { retryAfterMs: waitMs });
}

function networkFailure(error: unknown): MicroblogError {
  if (error instanceof MicroblogError) return error;
  if (ssrfRefusal(error)) {
    return new MicroblogError('upstream', `Microblog is not reachable under the network policy: ${(error as Error).message}`, { cause: error });
  }
  if (error instanceof FetchError) {
    return new MicroblogError('upstream', `Could not reach Microblog: ${error.message}`, { cause: error });
  }
  return new MicroblogError('upstream', 'Could not reach Microblog', { cause: error });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface HtmlForm {
  action: string | undefined;
  hidden: Record<string, string>;
  inputs: Set<string>;
}

/** Each `<form …>` up to the next `</form>`; a linear scan (a lazy regex over an unclosed form rescans the rest of the page per form). */
function* formsIn(html: string): Generator<[formAttributes: string, content: string]> {
  const open = /<form\b([^<>]*)>/gi;
  const close = /<\/form>/gi;
  for (let match = open.exec(html); match; match = open.exec(html)) {
    close.lastIndex = open.lastIndex;
    const end = close.exec(html);
    if (!end) return;
    yield [match[1]!, html.slice(open.lastIndex, end.index)];
    open.lastIndex = close.lastIndex;
  }
}

function parseForms(html: string): HtmlForm[] {
  const forms: HtmlForm[] = [];
  for (const [formAttributes, content] of formsIn(html)) {
    const form: HtmlForm = { action: parseAttributes(formAttributes).action, hidden: {}, inputs: new Set() };
    for (const [, inputAttributes] of content.matchAll(/<input\b([^<>]*)>/gi)) {
      const { name, type, value } = parseAttributes(inputAttributes);
      if (!name) continue;
      if (type?.toLowerCase() === 'hidden') form.hidden[name] = value ?? '';
      else form.inputs.add(name);
    }
    forms.push(form);
  }
  return forms;
}

function parseAttributes(source: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const [, name, doubleQuoted, singleQuoted, bare] of source.matchAll(/([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/g)) {
    attributes[name.toLowerCase()] = decodeEntities(doubleQuoted ?? singleQuoted ?? bare ?? '');
  }
  return attributes;
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|#39);/gi, (entity, body: string) => {
    const lower = body.toLowerCase();
    if (lower.startsWith('#x')) return String.fromCodePoint(parseInt(lower.slice(2), 16));
    if (lower.startsWith('#')) return String.fromCodePoint(Number(lower.slice(1)));
    return ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" } as Record<string, string>)[lower] ?? entity;
  });
}

function pageErrorCode(html: string): string | undefined {
  return /\bdata-error\s*=\s*["']([\w-]+)["']/i.exec(html)?.[1];
}

type LoginStep = 'password' | 'email' | 'totp';

interface LoginIdentity {
  username: string;
  email: string;
  password: string;
  totpSecret: string | undefined;
}

const STEP_FIELD: Record<LoginStep, string> = { password: 'password', email: 'email', totp: 'code' };

function checkCredentials(creds: MicroblogCredentials): LoginIdentity {
  const username = (creds.username ?? '').trim().replace(/^@/, '');
  if (!username) throw new MicroblogError('invalid_credentials', 'Microblog username is missing');
  if (!creds.password) throw new MicroblogError('invalid_credentials', `Microblog password for @${username} is missing`);
  const totpSecret = creds.totp_secret?.trim() || undefined;
  if (totpSecret !== undefined && !isBase32Secret(totpSecret)) {
    throw new MicroblogError(
      'totp_invalid',
      `The TOTP secret for @${username} is not a Base32 setup key (at least 16 characters of A-Z and 2-7); a one-time code cannot be used`,
    );
  }
  return { username, email: (creds.email ?? '').trim(), password: creds.password, totpSecret };
}

function loginAnswer(step: LoginStep, identity: LoginIdentity): Record<string, string> {
  if (step === 'password') return { identifier: identity.username, password: identity.password };
  if (step === 'email') {
    if (!identity.email) {
      throw new MicroblogError('invalid_credentials', `Microblog asks to confirm the email address of @${identity.username}, but none is configured`);
    }
    return { email: identity.email };
  }
  if (!identity.totpSecret) {
    throw new MicroblogError('totp_required', `Microblog account @${identity.username} has two-factor authentication; add its TOTP secret`);
  }
  return { code: totp(identity.totpSecret) };
}

function loginRejection(step: LoginStep, username: string): MicroblogError {
  if (step === 'totp') {
    return new MicroblogError('totp_invalid', `Microblog rejected the two-factor code for @${username}; check the TOTP secret and the server clock`);
  }
  if (step === 'email') return new MicroblogError('invalid_credentials', `Microblog did not accept the email confirmation for @${username}`);
  return new MicroblogError('invalid_credentials', `Microblog rejected the username or password for @${username}`);
}

function loginFailure(response: BufferedResponse, lastStep: LoginStep, username: string): MicroblogError {
  const marker = pageErrorCode(response.body.toString('utf8'));
  if (response.status === 423 || marker === 'locked') {
    return new MicroblogError('locked', `Microblog account @${username} is locked; unlock it on the website`);
  }
  if (marker === 'totp_invalid') return loginRejection('totp', username);
  if (marker === 'email_mismatch') return loginRejection('email', username);
  if (marker === 'invalid_credentials') return loginRejection('password', username);
  if (response.status === 401) return loginRejection(lastStep, username);
  if (response.status === 403) return new MicroblogError('upstream', 'Microblog refused the login form (its form token expired or was rejected)');
  return new MicroblogError('upstream', `Microblog login failed with HTTP ${response.status}`);
}

function pendingStep(forms: HtmlForm[]): { step: LoginStep; form: HtmlForm } | undefined {
  for (const step of ['totp', 'email', 'password'] as const) {
    const form = forms.find((candidate) => candidate.inputs.has(STEP_FIELD[step]));
    if (form) return { step, form };
  }
  return undefined;
}

function submitForm(connection: MicroblogConnection, page: BufferedResponse, form: HtmlForm, answer: Record<string, string>): Promise<BufferedResponse> {
  return connection.send({ method: 'POST', target: new URL(form.action || page.url, page.url), form: { ...form.hidden, ...answer } });
}

function sessionFrom(jar: CookieJar, username: string): MicroblogSession | undefined {
  const csrf = jar.get(CSRF_COOKIE);
  if (!jar.get(SESSION_COOKIE) || !csrf) return undefined;
  return { username, cookies: jar.snapshot(), csrf, createdAt: Date.now() };
}

/** Signs in through the web login: password form, then any email confirmation and TOTP challenge the site asks for. */
export async function loginMicroblog(base: string, creds: MicroblogCredentials, transport: MicroblogTransport): Promise<MicroblogSession> {
  const identity = checkCredentials(creds);
  const connection = new MicroblogConnection(parseBase(base), transport);
  let response = await connection.send({ method: 'GET', target: '/login' });
  let lastStep: LoginStep = 'password';
  const answered = new Set<LoginStep>();
  for (let step = 0; step < MAX_LOGIN_STEPS; step++) {
    if (REDIRECT_STATUSES.has(response.status)) {
      const session = sessionFrom(connection.jar, identity.username);
      if (session) return session;
      response = await connection.send({ method: 'GET', target: connection.redirectTarget(response) });
      continue;
    }
    if (response.status !== 200) throw loginFailure(response, lastStep, identity.username);
    const pending = pendingStep(parseForms(response.body.toString('utf8')));
    if (!pending) throw new MicroblogError('upstream', 'Microblog showed an unexpected page during login');
    if (answered.has(pending.step)) throw loginRejection(pending.step, identity.username);
    const answer = loginAnswer(pending.step, identity);
    lastStep = pending.step;
    answered.add(pending.step);
    response = await submitForm(connection, response, pending.form, answer);
  }
  throw new MicroblogError('upstream', `Microblog login did not finish within ${MAX_LOGIN_STEPS} steps`);
}

export async function validateMicroblogCredentials(
  base: string,
  creds: MicroblogCredentials,
  transport: MicroblogTransport,
): Promise<MicroblogValidation> {
  try {
    const session = await loginMicroblog(base, creds, transport);
    const meta = await createMicroblogClient(base, session, transport, { minIntervalMs: 0 }).me();
    return { ok: true, session, meta };
  } catch (error) {
    if (error instanceof MicroblogError) return { ok: false, code: error.code, message: error.message };
    throw error;
  }
}

interface ApiErrorBody {
  code?: string;
  message?: string;
}

function apiError(response: BufferedResponse): ApiErrorBody {
  try {
    const parsed = JSON.parse(response.body.toString('utf8')) as { error?: unknown };
    const error = parsed?.error;
    if (typeof error === 'string') return { message: error };
    if (error && typeof error === 'object') {
      const { code, message } = error as Record<string, unknown>;
      return { code: typeof code === 'string' ? code : undefined, message: typeof message === 'string' ? message : undefined };
    }
  } catch {
    /* not JSON */
  }
  return {};
}

function apiFailure(response: BufferedResponse, action: string, username: string): MicroblogError {
  const { status } = response;
  const { code, message } = apiError(response);
  const detail = message ? `: ${message.slice(0, MAX_UPSTREAM_MESSAGE_LENGTH)}` : '';
  if (status === 401) {
    return new MicroblogError('invalid_credentials', `Microblog session for @${username} has expired or was revoked; log in again`);
  }
  const options = { upstreamCode: code };
  if (status === 423 || code === 'locked') return new MicroblogError('locked', `Microblog account @${username} is locked${detail}`, options);
  if (status === 404) return new MicroblogError('not_found', `Microblog could not find what ${action} needs${detail}`, options);
  if (status >= 400 && status < 500) return new MicroblogError('bad_request', `Microblog rejected ${action} (HTTP ${status})${detail}`, options);
  return new MicroblogError('upstream', `Microblog failed ${action} (HTTP ${status})${detail}`, options);
}

function parseJson(response: BufferedResponse, action: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(response.body.toString('utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    /* fall through */
  }
  throw new MicroblogError('upstream', `Microblog answered ${action} with something other than a JSON object`);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function parseProfile(value: unknown): MicroblogProfile {
  const record = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>;
  const username = text(record.username);
  if (!username) throw new MicroblogError('upstream', 'Microblog returned a profile without a username');
  const displayName = text(record.display_name);
  return displayName ? { username, displayName } : { username };
}

function parsePost(value: unknown): MicroblogPost {
  const record = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>;
  const id = text(record.id);
  if (!id) throw new MicroblogError('upstream', 'Microblog returned a post without an id');
  const replyToId = text(record.reply_to);
  return {
    id,
    url: text(record.url) ?? '',
    text: text(record.text) ?? '',
    author: parseProfile(record.author),
    createdAt: text(record.created_at) ?? '',
    ...(replyToId ? { replyToId } : {}),
    likeCount: count(record.like_count),
    repostCount: count(record.repost_count),
    replyCount: count(record.reply_count),
  };
}

function parsePosts(value: unknown): MicroblogPost[] {
  if (!Array.isArray(value)) throw new MicroblogError('upstream', 'Microblog returned a post list that is not an array');
  return value.map(parsePost);
}

function parsePostRef(body: Record<string, unknown>): MicroblogPostRef {
  const id = text(body.id);
  if (!id) throw new MicroblogError('upstream', 'Microblog did not return the id of the new post');
  return { id, url: text(body.url) ?? '' };
}

function checkPostText(value: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new MicroblogError('bad_request', 'Post text is empty');
  const length = [...value].length;
  if (length > MICROBLOG_MAX_POST_LENGTH) {
    throw new MicroblogError('bad_request', `Post text is ${length} characters; Microblog allows at most ${MICROBLOG_MAX_POST_LENGTH}`);
  }
  return value;
}

function checkPostId(id: string): string {
  if (typeof id !== 'string' || !POST_ID.test(id)) throw new MicroblogError('bad_request', 'Post id must be 1-64 letters, digits, "-" or "_"');
  return id;
}

function listLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIST_LIMIT;
  return Math.min(MAX_LIST_LIMIT, Math.max(1, Math.floor(limit)));
}

class HttpMicroblogClient implements MicroblogClient {
  private readonly connection: MicroblogConnection;
  private current: MicroblogSession;
  private sessionGeneration = 0;
  private relogging: Promise<void> | undefined;
  private writeQueue: Promise<unknown> = Promise.resolve();
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private readonly minIntervalMs: number;
  private readonly relogin: (() => Promise<MicroblogSession>) | undefined;

  constructor(base: URL, session: MicroblogSession, transport: MicroblogTransport, options: MicroblogClientOptions) {
    this.connection = new MicroblogConnection(base, transport, session.cookies);
    this.current = { ...session, cookies: { ...session.cookies } };
    this.minIntervalMs = Math.max(0, options.minIntervalMs ?? DEFAULT_MIN_WRITE_INTERVAL_MS);
    this.relogin = options.relogin;
  }

  get session(): MicroblogSession {
    return { ...this.current, cookies: this.connection.jar.snapshot() };
  }

  async me(): Promise<MicroblogProfile> {
    return parseProfile(await this.call('GET', '/api/me', 'the profile request'));
  }

  async search(query: string, options: { limit?: number } = {}): Promise<MicroblogPost[]> {
    const trimmed = typeof query === 'string' ? query.trim() : '';
    if (!trimmed) throw new MicroblogError('bad_request', 'Search query is empty');
    if (trimmed.length > MAX_QUERY_LENGTH) throw new MicroblogError('bad_request', `Search query is longer than ${MAX_QUERY_LENGTH} characters`);
    const params = new URLSearchParams({ q: trimmed, limit: String(listLimit(options.limit)) });
    return parsePosts((await this.call('GET', `/api/search?${params}`, 'the search')).posts);
  }

  async timeline(options: { limit?: number } = {}): Promise<MicroblogPost[]> {
    const params = new URLSearchParams({ limit: String(listLimit(options.limit)) });
    return parsePosts((await this.call('GET', `/api/timeline/home?${params}`, 'the timeline request')).posts);
  }

  async getPost(id: string): Promise<MicroblogThread> {
    const body = await this.call('GET', `/api/posts/${checkPostId(id)}`, 'the post request');
    return { post: parsePost(body.post), replies: parsePosts(body.replies ?? []) };
  }

  async post(postText: string): Promise<MicroblogPostRef> {
    const checked = checkPostText(postText);
    return parsePostRef(await this.write('/api/posts', { text: checked }, 'the new post'));
  }

  async reply(postId: string, replyText: string): Promise<MicroblogPostRef> {
    const path = `/api/posts/${checkPostId(postId)}/replies`;
    const checked = checkPostText(replyText);
    return parsePostRef(await this.write(path, { text: checked }, 'the reply'));
  }

  async like(postId: string): Promise<void> {
    await this.write(`/api/posts/${checkPostId(postId)}/like`, {}, 'the like');
  }

  async repost(postId: string): Promise<void> {
    await this.write(`/api/posts/${checkPostId(postId)}/repost`, {}, 'the repost');
  }

  async ownPosts(options: { limit?: number } = {}): Promise<MicroblogPost[]> {
    const params = new URLSearchParams({ limit: String(listLimit(options.limit)) });
    const path = `/api/users/${encodeURIComponent(this.current.username)}/posts?${params}`;
    return parsePosts((await this.call('GET', path, 'the request for the account\'s own posts')).posts);
  }

  async disconnect(): Promise<void> {
    const response = await this.connection.send({ method: 'POST', target: '/logout', form: {}, headers: { 'x-csrf-token': this.current.csrf } });
    const status = response.status;
    const loggedOut = (status >= 200 && status < 400) || status === 401;
    if (!loggedOut) throw apiFailure(response, 'the logout', this.current.username);
    this.connection.jar.clear();
  }

  private write(path: string, json: unknown, action: string): Promise<Record<string, unknown>> {
    const run = this.writeQueue.then(async () => {
      const waitMs = this.lastWriteAt + this.minIntervalMs - Date.now();
      if (waitMs > 0) await sleep(waitMs);
      this.lastWriteAt = Date.now();
      return this.call('POST', path, action, json);
    });
    this.writeQueue = run.catch(() => undefined);
    return run;
  }

  private async call(method: 'GET' | 'POST', path: string, action: string, json?: unknown): Promise<Record<string, unknown>> {
    const send = () =>
      this.connection.send({ method, target: path, json, headers: method === 'POST' ? { 'x-csrf-token': this.current.csrf } : {} });
    const generation = this.sessionGeneration;
    let response = await send();
    if (response.status === 401 && this.relogin) {
      await this.refreshSession(generation);
      response = await send();
    }
    if (response.status < 200 || response.status >= 300) throw apiFailure(response, action, this.current.username);
    return parseJson(response, action);
  }

  private async refreshSession(staleGeneration: number): Promise<void> {
    if (this.sessionGeneration !== staleGeneration) return;
    this.relogging ??= (async () => {
      try {
        const fresh = await this.relogin!();
        this.current = { ...fresh, cookies: { ...fresh.cookies } };
        this.connection.jar.replaceAll(fresh.cookies);
        this.sessionGeneration++;
      } finally {
        this.relogging = undefined;
      }
    })();
    await this.relogging;
  }
}

export function createMicroblogClient(
  base: string,
  session: MicroblogSession,
  transport: MicroblogTransport,
  options: MicroblogClientOptions = {},
): MicroblogClient {
  return new HttpMicroblogClient(parseBase(base), session, transport, options);
}
