/** What the site's API answers mean: profiles, posts, new-post references, and failures as MicroblogError. */
import type { BufferedResponse } from '../../net/buffered-fetch';
import { MicroblogError } from './errors';
import type { MicroblogPost, MicroblogPostRef, MicroblogProfile } from './types';

const MAX_UPSTREAM_MESSAGE_LENGTH = 200;

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
      return {
        code: typeof code === 'string' ? code : undefined,
        message: typeof message === 'string' ? message : undefined,
      };
    }
  } catch {
    /* not JSON */
  }
  return {};
}

export function apiFailure(response: BufferedResponse, action: string, username: string): MicroblogError {
  const { status } = response;
  const { code, message } = apiError(response);
  const detail = message ? `: ${message.slice(0, MAX_UPSTREAM_MESSAGE_LENGTH)}` : '';
  if (status === 401) {
    return new MicroblogError(
      'invalid_credentials',
      `Microblog session for @${username} has expired or was revoked; log in again`,
    );
  }
  const options = { upstreamCode: code };
  if (status === 423 || code === 'locked')
    return new MicroblogError('locked', `Microblog account @${username} is locked${detail}`, options);
  if (status === 404)
    return new MicroblogError('not_found', `Microblog could not find what ${action} needs${detail}`, options);
  if (status >= 400 && status < 500)
    return new MicroblogError('bad_request', `Microblog rejected ${action} (HTTP ${status})${detail}`, options);
  return new MicroblogError('upstream', `Microblog failed ${action} (HTTP ${status})${detail}`, options);
}

export function parseJson(response: BufferedResponse, action: string): Record<string, unknown> {
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

export function parseProfile(value: unknown): MicroblogProfile {
  const record = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>;
  const username = text(record.username);
  if (!username) throw new MicroblogError('upstream', 'Microblog returned a profile without a username');
  const displayName = text(record.display_name);
  return displayName ? { username, displayName } : { username };
}

export function parsePost(value: unknown): MicroblogPost {
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

export function parsePosts(value: unknown): MicroblogPost[] {
  if (!Array.isArray(value))
    throw new MicroblogError('upstream', 'Microblog returned a post list that is not an array');
  return value.map(parsePost);
}

export function parsePostRef(body: Record<string, unknown>): MicroblogPostRef {
  const id = text(body.id);
  if (!id) throw new MicroblogError('upstream', 'Microblog did not return the id of the new post');
  return { id, url: text(body.url) ?? '' };
}
