/** The microblog client (read, post, reply, like, repost), its write spacing and relogin on 401, and the credential check run when an account is saved. */
import { apiFailure, parseJson, parsePost, parsePostRef, parsePosts, parseProfile } from './answers';
import { MicroblogConnection, parseBase, sleep } from './connection';
import { MicroblogError } from './errors';
import { checkPostId, checkPostText, listLimit } from './input';
import { loginMicroblog } from './login';
import type {
  MicroblogClient,
  MicroblogClientOptions,
  MicroblogCredentials,
  MicroblogPost,
  MicroblogPostRef,
  MicroblogProfile,
  MicroblogSession,
  MicroblogThread,
  MicroblogTransport,
  MicroblogValidation,
} from './types';

const DEFAULT_MIN_WRITE_INTERVAL_MS = 1_000;
const MAX_QUERY_LENGTH = 500;

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
    if (trimmed.length > MAX_QUERY_LENGTH)
      throw new MicroblogError('bad_request', `Search query is longer than ${MAX_QUERY_LENGTH} characters`);
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
    return parsePosts((await this.call('GET', path, "the request for the account's own posts")).posts);
  }

  async disconnect(): Promise<void> {
    const response = await this.connection.send({
      method: 'POST',
      target: '/logout',
      form: {},
      headers: { 'x-csrf-token': this.current.csrf },
    });
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

  private async call(
    method: 'GET' | 'POST',
    path: string,
    action: string,
    json?: unknown,
  ): Promise<Record<string, unknown>> {
    const send = () =>
      this.connection.send({
        method,
        target: path,
        json,
        headers: method === 'POST' ? { 'x-csrf-token': this.current.csrf } : {},
      });
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
