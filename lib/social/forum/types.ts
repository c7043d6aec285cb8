/** The forum adapter's public shapes: credentials, endpoints, the client's methods and what they return. */
import type { ProxyConfig } from '../../net/proxy';
import type { NetworkPolicy } from '../../net/ssrf';

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
  { ok: true; meta: { username: string | null; mode: ForumMode; karma?: number } } | { ok: false; message: string };
