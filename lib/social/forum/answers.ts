/** What the forum's answers mean: listings as posts and comments, write results, identities, error details. */
import { ForumError } from './errors';
import { asObject, isoTime, num, parseJson, positiveNumber, str, truncate, type Json } from './json';
import type { ForumComment, ForumIdentity, ForumPost } from './types';

export function thingResult(answer: unknown, what: 'post' | 'comment', redact: (text: string) => string): Json {
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
  if (!thing || str(thing.id) === '')
    throw new ForumError('upstream', `The forum accepted the ${what} but did not say what it created`);
  return thing;
}

function describeApiError(entry: unknown): string {
  if (!Array.isArray(entry)) return truncate(String(entry));
  const [code, message, field] = entry.map((part) => (typeof part === 'string' ? part : ''));
  const context = [code, field ? `field ${field}` : ''].filter(Boolean).join(', ');
  return truncate(context ? `${message || code} (${context})` : message);
}

export function errorDetail(body: Buffer): string {
  const parsed = asObject(parseJson(body));
  if (!parsed) return '';
  const parts = [parsed.reason, parsed.explanation, parsed.message].filter(
    (part): part is string => typeof part === 'string' && part !== '',
  );
  return truncate([...new Set(parts)].join(' – '));
}

export function postsFrom(listing: unknown): ForumPost[] {
  return listingChildren(listing)
    .filter((child) => child.kind === 't3')
    .map((child) => toPost(child.data));
}

export function flattenComments(listing: unknown, depth: number, into: ForumComment[]): ForumComment[] {
  for (const child of listingChildren(listing)) {
    if (child.kind !== 't1') continue;
    into.push(toComment(child.data, depth));
    flattenComments(child.data.replies, depth + 1, into);
  }
  return into;
}

export function listingChildren(listing: unknown): Array<{ kind: string; data: Json }> {
  const children = asObject(asObject(listing)?.data)?.children;
  if (!Array.isArray(children)) return [];
  return children.flatMap((child) => {
    const object = asObject(child);
    const data = asObject(object?.data);
    return object && data && typeof object.kind === 'string' ? [{ kind: object.kind, data }] : [];
  });
}

export function toPost(data: Json): ForumPost {
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

export function toComment(data: Json, depth: number): ForumComment {
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

export function toIdentity(answer: unknown): ForumIdentity {
  const data = asObject(answer);
  const username = data?.name;
  if (typeof username !== 'string' || username === '')
    throw new ForumError('upstream', 'The forum answered the identity request without a username');
  const karma =
    typeof data?.total_karma === 'number' ? data.total_karma : num(data?.link_karma) + num(data?.comment_karma);
  return { username, karma, createdAt: isoTime(data?.created_utc) };
}
