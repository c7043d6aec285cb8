/** The forum client (search, read, post, comment, vote) and the credential check run when an account is saved. */
import { flattenComments, listingChildren, postsFrom, thingResult, toComment, toIdentity } from './answers';
import { ForumError } from './errors';
import { clampLimit, communityName, fullname, listingSort, postIdentifier } from './input';
import { str } from './json';
import { ForumSession } from './session';
import type {
  ForumClient,
  ForumClientOptions,
  ForumCredentials,
  ForumEndpoints,
  ForumTransport,
  ForumValidation,
} from './types';

const DEFAULT_WRITE_INTERVAL_MS = 1_000;
const MAX_TITLE_LENGTH = 300;

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
    requireIdentity("Reading the account's own posts");
    username ??= toIdentity(await session.call({ method: 'GET', path: '/api/v1/me' })).username;
    return session.call({
      method: 'GET',
      path: `/user/${encodeURIComponent(username)}/${what}`,
      query: { sort: 'new', limit: clampLimit(limit) },
    });
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
      const answer = await session.call({
        method: 'GET',
        path: `/comments/${id}`,
        query: { limit: commentLimit === undefined ? undefined : clampLimit(commentLimit) },
      });
      if (!Array.isArray(answer))
        throw new ForumError('upstream', 'The forum answered a post request with an unexpected shape');
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
      if (url !== undefined && text !== undefined)
        throw new ForumError('bad_request', 'A post has either text or a url, not both');
      const body: Record<string, string> =
        url === undefined ? { kind: 'self', text: text ?? '' } : { kind: 'link', url };
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
      return {
        id: str(data.id),
        name: str(data.name) || `t1_${str(data.id)}`,
        parentId: str(data.parent_id) || parent,
      };
    },

    async vote({ id, direction }) {
      requireIdentity('Voting');
      const target = fullname(id, 'id');
      if (direction !== 1 && direction !== 0 && direction !== -1)
        throw new ForumError('bad_request', 'A vote direction is 1, 0 or -1');
      await session.call({
        method: 'POST',
        path: '/api/vote',
        form: { id: target, dir: String(direction) },
        write: true,
      });
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
