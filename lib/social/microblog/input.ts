/** Checks of what callers pass (post text, post ids, list limits), before anything is sent. */
import { MicroblogError } from './errors';

export const MICROBLOG_MAX_POST_LENGTH = 280;

const DEFAULT_LIST_LIMIT = 20;
const MAX_LIST_LIMIT = 100;
const POST_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function checkPostText(value: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new MicroblogError('bad_request', 'Post text is empty');
  const length = [...value].length;
  if (length > MICROBLOG_MAX_POST_LENGTH) {
    throw new MicroblogError(
      'bad_request',
      `Post text is ${length} characters; Microblog allows at most ${MICROBLOG_MAX_POST_LENGTH}`,
    );
  }
  return value;
}

export function checkPostId(id: string): string {
  if (typeof id !== 'string' || !POST_ID.test(id))
    throw new MicroblogError('bad_request', 'Post id must be 1-64 letters, digits, "-" or "_"');
  return id;
}

export function listLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIST_LIMIT;
  return Math.min(MAX_LIST_LIMIT, Math.max(1, Math.floor(limit)));
}
