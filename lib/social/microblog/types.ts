/** The microblog adapter's public shapes: credentials, the stored session, the client's methods and what they return. */
import type { ProxyConfig } from '../../net/proxy';
import type { NetworkPolicy } from '../../net/ssrf';
import type { MicroblogErrorCode } from './errors';

export type MicroblogCredentials = {
  username: string;
  email: string;
  password: string;
  totp_secret?: string;
  proxy_country?: string;
};

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
