import type { FromSchema } from 'json-schema-to-ts';
import { httpUrl, proxyCountry, proxyCountryWhenEnabled } from './common';
import { AgentStructuredOutputField } from './agentscraper';
import { ForumCredentials } from './social';
import { LLM_MODEL_DESCRIPTION, LLM_PROVIDER_DESCRIPTION } from './llm';

const uuid = { type: 'string', format: 'uuid' } as const;

export const SavedSocialSelection = {
  type: 'object',
  additionalProperties: false,
  required: ['mode'],
  properties: {
    mode: { const: 'saved' },
    accountIds: { type: 'array', minItems: 1, maxItems: 50, uniqueItems: true, items: uuid },
    useAll: { type: 'boolean', description: 'true selects every saved account of the platform' },
  },
} as const;

export const ForumInlineSelection = {
  type: 'object',
  additionalProperties: false,
  required: ['mode', 'credentials'],
  properties: { mode: { const: 'inline' }, credentials: ForumCredentials },
} as const;

export const AgentSkillSelection = {
  type: 'object',
  required: ['provider', 'externalId', 'name'],
  properties: {
    provider: { type: 'string', minLength: 1, maxLength: 100 },
    externalId: { type: 'string', minLength: 1, maxLength: 500 },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: ['string', 'null'], maxLength: 5000 },
    repositoryUrl: { type: ['string', 'null'], format: 'uri' },
    githubOwner: { type: ['string', 'null'] },
    githubRepo: { type: ['string', 'null'] },
    sourceUrl: { type: ['string', 'null'], format: 'uri' },
    version: { type: ['string', 'null'] },
    skillMdContent: { type: ['string', 'null'], maxLength: 100_000 },
  },
} as const;

export const SkillsConfig = {
  type: 'object',
  additionalProperties: false,
  required: ['mode'],
  properties: {
    mode: { type: 'string', enum: ['none', 'selected'] },
    selected: { type: 'array', maxItems: 20, items: AgentSkillSelection, default: [] },
  },
} as const;

export const MarketMcpSelectionRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['mcp_id'],
  properties: {
    mcp_id: uuid,
    tool_names: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    params: { type: 'object', default: {} },
    max_total_usd: {
      type: 'number',
      exclusiveMinimum: 0,
      multipleOf: 0.000001,
      maximum: 1_000_000,
      description:
        "Extra property (not in the contract): the most this selection's market run may charge per execution. The run charge limit is min(available balance, this, MARKET_RUN_CHARGE_LIMIT_USD)",
    },
  },
} as const;

export const CustomMcpSelectionRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', enum: ['remote_mcp', 'openapi'] },
    name: { type: ['string', 'null'], maxLength: 200 },
    source_url: { type: ['string', 'null'], format: 'uri' },
    openapi_spec: { type: ['object', 'string', 'null'] },
    tool_names: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    params: { type: 'object', default: {} },
    tool_discovery_cache: { type: 'object', default: {} },
  },
} as const;

export const AutomationCreateRequest = {
  $id: 'AutomationCreateRequest',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'cron', 'task', 'automation_type'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    cron: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description:
        '5 fields, or 6/7 with a leading seconds field, or @daily / @every 10m style descriptors. It may not fire more often than the ' +
        'minimum interval between runs (AUTOMATION_MIN_INTERVAL_MINUTES, default 5 minutes): otherwise 400 cron_too_frequent, naming the minimum',
    },
    timezone: { type: 'string', minLength: 1, maxLength: 100, description: 'IANA time zone, default UTC' },
    task: { type: 'string', minLength: 1, maxLength: 20000 },
    automation_type: { type: 'string', enum: ['forum-agent', 'microblog-agent'] },
    llm_provider: {
      type: 'string',
      enum: ['service', 'router'],
      default: 'service',
      description: LLM_PROVIDER_DESCRIPTION,
    },
    llm_model: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      default: 'router/auto',
      description: LLM_MODEL_DESCRIPTION,
    },
    webhook_url: httpUrl,
    structured_output: { type: 'array', minItems: 1, maxItems: 100, items: AgentStructuredOutputField },
    captcha_solver_enabled: { type: 'boolean', default: false },
    proxy_enabled: { type: 'boolean', default: false },
    proxy_country: proxyCountry,
    forum: { oneOf: [SavedSocialSelection, ForumInlineSelection] },
    microblog: SavedSocialSelection,
    skills: SkillsConfig,
    market_mcps: {
      type: 'array',
      maxItems: 50,
      items: MarketMcpSelectionRequest,
      default: [],
      description:
        'Approved tool-market entries the agent may call: 400 market_entry_not_found, market_tool_not_found, or invalid_params (a params key the entry does not declare, or a value its requiredUserParamsSchema refuses)',
    },
    custom_mcps: { type: 'array', maxItems: 50, items: CustomMcpSelectionRequest, default: [] },
  },
  ...proxyCountryWhenEnabled,
} as const;

export const Automation = {
  $id: 'Automation',
  type: 'object',
  required: ['id', 'userId', 'name', 'cron', 'payload', 'status', 'createdAt', 'updatedAt', 'isPaused'],
  properties: {
    id: uuid,
    userId: uuid,
    name: { type: 'string' },
    cron: { type: 'string' },
    timezone: { type: ['string', 'null'] },
    payload: { type: 'object', description: 'The request as stored, secrets masked' },
    status: { type: 'string', enum: ['active', 'paused'], description: 'Read from the Temporal Schedule' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    isPaused: { type: 'boolean' },
  },
} as const;

export type SavedSelection = { mode: 'saved'; accountIds?: string[]; useAll?: boolean };
export type InlineForumSelection = { mode: 'inline'; credentials: Record<string, string> };

/** A body AutomationCreateRequest accepts, as ajv leaves it (a property with a default is always there). */
export type AutomationCreateBody = FromSchema<typeof AutomationCreateRequest>;
