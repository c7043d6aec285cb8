/**
 * The forum (Reddit-style) adapter: OAuth sign-in (password or app-only client credentials), search,
 * listings, posts with comments, and writes (submit, comment, vote) spaced and rate limited, every
 * request through the SSRF guard. Modules: types (public shapes), client (the methods), session
 * (token, rate limit, HTTP), answers (reading listings and results), input (checks), json, errors.
 */
export { createForumClient, validateForumCredentials } from './client';
export { ForumError, type ForumErrorCode } from './errors';
export { forumMode } from './session';
export type {
  ForumClient,
  ForumClientOptions,
  ForumComment,
  ForumCommentInput,
  ForumCommentReceipt,
  ForumCredentials,
  ForumEndpoints,
  ForumIdentity,
  ForumListingSort,
  ForumMode,
  ForumPost,
  ForumSearchOptions,
  ForumSearchSort,
  ForumSubmission,
  ForumSubmitInput,
  ForumThread,
  ForumTransport,
  ForumValidation,
  ForumVoteDirection,
  ForumVoteInput,
  ForumVoteReceipt,
} from './types';
