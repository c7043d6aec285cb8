import type { ToolDefinition } from './browser/tools';

function tool(
  name: string,
  description: string,
  properties: Record<string, unknown>,
  required: string[],
): ToolDefinition {
  return {
    type: 'function',
    function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
  } as ToolDefinition;
}

const limit = { type: 'integer', minimum: 1, maximum: 50, description: 'How many items, default 10' };

/** Forum (Reddit-style) tools of the social agents. */
export const FORUM_TOOLS: readonly ToolDefinition[] = [
  tool(
    'search_posts',
    'Search posts, optionally within one community.',
    { query: { type: 'string' }, community: { type: 'string' }, limit },
    ['query'],
  ),
  tool(
    'list_community',
    "List a community's new or hot posts.",
    { community: { type: 'string' }, sort: { type: 'string', enum: ['new', 'hot'] }, limit },
    ['community', 'sort'],
  ),
  tool('read_post', 'Read a post with its comments.', { post_id: { type: 'string' }, comment_limit: limit }, [
    'post_id',
  ]),
  tool(
    'submit_post',
    'Submit a new text or link post to a community.',
    { community: { type: 'string' }, title: { type: 'string' }, text: { type: 'string' }, url: { type: 'string' } },
    ['community', 'title'],
  ),
  tool(
    'comment',
    'Comment on a post.',
    { post_id: { type: 'string', description: 'Post id or t3_ fullname' }, text: { type: 'string' } },
    ['post_id', 'text'],
  ),
  tool(
    'reply',
    'Reply to a comment.',
    { comment_id: { type: 'string', description: 'Comment id or t1_ fullname' }, text: { type: 'string' } },
    ['comment_id', 'text'],
  ),
  tool(
    'vote',
    'Upvote (1), downvote (-1) or clear a vote (0) on a post or comment fullname.',
    { id: { type: 'string' }, direction: { type: 'integer', enum: [1, 0, -1] } },
    ['id', 'direction'],
  ),
];

/** Microblog tools of the social agents. */
export const MICROBLOG_TOOLS: readonly ToolDefinition[] = [
  tool('search', 'Search posts.', { query: { type: 'string' }, limit }, ['query']),
  tool('read_timeline', "Read the account's home timeline.", { limit }, []),
  tool('read_post', 'Read a post with its replies.', { post_id: { type: 'string' } }, ['post_id']),
  tool('post', 'Publish a post (at most 280 characters).', { text: { type: 'string', maxLength: 280 } }, ['text']),
  tool('reply', 'Reply to a post.', { post_id: { type: 'string' }, text: { type: 'string', maxLength: 280 } }, [
    'post_id',
    'text',
  ]),
  tool('like', 'Like a post.', { post_id: { type: 'string' } }, ['post_id']),
  tool('repost', 'Repost a post.', { post_id: { type: 'string' } }, ['post_id']),
];
