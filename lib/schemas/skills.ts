import { pageParameter, pageSizeParameter } from './common';
import { SkillItemSchema } from '../skills/item';

/** Query of GET /skills/directory/search and /skills/directory/ai-search. */
export const SkillsSearchQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['q'],
  properties: {
    q: {
      type: 'string',
      minLength: 1,
      maxLength: 500,
      pattern: '\\S',
      description: 'What to look for (required, not blank)',
    },
    page: pageParameter,
    pageSize: pageSizeParameter(20),
  },
} as const;

export interface SkillsSearchParams {
  q: string;
  page: number;
  pageSize: number;
}

const nullable = (schema: Record<string, unknown>) => ({ ...schema, type: [schema.type as string, 'null'] });

/** The contract's SkillsDirectoryItem: every AgentSkillSelection field plus tags and stars. */
export const SkillsDirectoryItemSchema = {
  $id: 'SkillsDirectoryItem',
  type: 'object',
  additionalProperties: false,
  required: [
    'provider',
    'externalId',
    'name',
    'description',
    'repositoryUrl',
    'githubOwner',
    'githubRepo',
    'sourceUrl',
    'version',
    'skillMdContent',
    'tags',
    'stars',
  ],
  properties: {
    provider: { type: 'string' },
    externalId: { type: 'string' },
    name: { type: 'string' },
    description: nullable({ type: 'string' }),
    repositoryUrl: nullable({ type: 'string', format: 'uri' }),
    githubOwner: nullable({ type: 'string' }),
    githubRepo: nullable({ type: 'string' }),
    sourceUrl: nullable({ type: 'string', format: 'uri' }),
    version: nullable({ type: 'string' }),
    skillMdContent: nullable({ type: 'string' }),
    tags: { type: 'array', items: { type: 'string' } },
    stars: nullable({ type: 'number' }),
  },
} as const;

export const SkillsSearchResponse = {
  $id: 'SkillsSearchResponse',
  type: 'object',
  required: ['items', 'meta'],
  properties: {
    items: { type: 'array', items: { $ref: 'SkillsDirectoryItem' } },
    meta: {
      type: 'object',
      required: ['page', 'pageSize', 'total'],
      properties: {
        page: { type: 'integer' },
        pageSize: { type: 'integer' },
        total: { type: 'integer' },
        mode: { type: 'string', enum: ['ai', 'plain'], description: 'ai-search only: how the answer was produced' },
        fallbackReason: { type: 'string', description: 'ai-search only: why plain search answered' },
        plan: { type: 'object', description: 'ai-search only: the LLM plan (keywords, tags, intent)' },
        reranked: { type: 'boolean' },
        cached: { type: 'boolean' },
      },
    },
  },
} as const;

/** POST /admin/skills/import: a chunk of JSON Lines (the CLI sends a file in chunks under the body limit). */
export const AdminSkillsImportRequest = {
  $id: 'AdminSkillsImportRequest',
  type: 'object',
  additionalProperties: false,
  required: ['jsonl'],
  properties: {
    jsonl: { type: 'string', description: 'JSON Lines, one SkillsDirectoryItem (+ optional license) per line' },
    firstLine: {
      type: 'integer',
      minimum: 1,
      default: 1,
      description: 'Line number of the first line, for error reports',
    },
  },
} as const;

export const AdminSkillsRefreshRequest = {
  $id: 'AdminSkillsRefreshRequest',
  type: 'object',
  additionalProperties: false,
  properties: {
    repos: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'string', pattern: '^[\\w.-]+/[\\w.-]+$' } },
    wait: { type: 'boolean', default: false, description: 'Answer with the refresh result instead of 202 at start' },
  },
} as const;

export { SkillItemSchema };
