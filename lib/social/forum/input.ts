/** Checks of what callers pass (community names, post ids, fullnames, sorts, limits), before anything is sent. */
import { ForumError } from './errors';
import type { ForumListingSort } from './types';

const DEFAULT_LIMIT = 25;
const MAX_LIMIT = 100;
const COMMUNITY_NAME = /^[A-Za-z0-9][A-Za-z0-9_]{1,20}$/;
const POST_ID = /^[a-z0-9]{1,16}$/i;
const FULLNAME = /^t[13]_[a-z0-9]{1,16}$/i;

export function communityName(input: string): string {
  const name = input.trim().replace(/^\/?r\//i, '');
  if (!COMMUNITY_NAME.test(name))
    throw new ForumError('bad_request', 'A community name is 2–21 letters, digits or underscores');
  return name;
}

export function postIdentifier(input: string): string {
  const id = input.trim().replace(/^t3_/i, '');
  if (!POST_ID.test(id))
    throw new ForumError('bad_request', 'A post id is a short base-36 id, optionally prefixed with t3_');
  return id;
}

export function fullname(input: string, field: string): string {
  const value = input.trim();
  if (!FULLNAME.test(value))
    throw new ForumError('bad_request', `${field} must be a post (t3_…) or comment (t1_…) fullname`);
  return value;
}

export function listingSort(sort: ForumListingSort): ForumListingSort {
  if (sort !== 'new' && sort !== 'hot')
    throw new ForumError('bad_request', 'A community listing is sorted by new or hot');
  return sort;
}

export function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIMIT;
  return Math.min(MAX_LIMIT, Math.max(1, Math.floor(limit)));
}
