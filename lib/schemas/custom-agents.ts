import type { FieldSpec } from '../llm/structured-output';
import { AgentStructuredOutputField } from './agentscraper';
import { AgentSkillSelection, CustomMcpSelectionRequest, MarketMcpSelectionRequest, SkillsConfig } from './automations';
import { JobRecord } from './jobs';
import { LLM_MODEL_DESCRIPTION, LLM_PROVIDER_DESCRIPTION } from './llm';
import { SourceParamValuesSchema } from './tools';

const uuid = { type: 'string', format: 'uuid' } as const;

export const DEFAULT_MAX_TOOL_CALLS = 20;

const paramsDescription =
  'Values the source needs (see POST /agents/discover-mcp): sealed at rest, never returned (shown as "[redacted]")';

/** The fields of a custom agent, shared by create, run and update (update: every field optional, null clears a nullable one). */
const customAgentFields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  cron: {
    type: 'string',
    minLength: 1,
    maxLength: 200,
    description:
      'Cron expression (as for POST /automations, with the same minimum interval). Required by POST /agents; ignored by POST /agents/run',
  },
  timezone: {
    type: 'string',
    minLength: 1,
    maxLength: 100,
    description: 'IANA time zone of the cron expression, default UTC',
  },
  task: { type: 'string', minLength: 1, maxLength: 20000 },
  system_prompt: {
    type: ['string', 'null'],
    maxLength: 20000,
    description: "Instructions placed before the platform's own in the system prompt",
  },
  expected_output: {
    type: ['string', 'null'],
    maxLength: 5000,
    description: 'What the final answer should look like, in words',
  },
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
  max_tool_calls: {
    type: 'integer',
    minimum: 1,
    maximum: 1000,
    default: DEFAULT_MAX_TOOL_CALLS,
    description:
      'Bounds the tool invocations of one whole execution (counted durably, across worker restarts); the call past the bound is not sent and the model is told to finish',
  },
  skills: {
    oneOf: [{ type: 'array', maxItems: 20, items: AgentSkillSelection }, SkillsConfig],
    default: [],
    description:
      "AgentSkillSelection items (or a SkillsConfig object); each skill's skillMdContent (or its description) joins the system prompt",
  },
  market_mcps: {
    type: 'array',
    maxItems: 50,
    items: {
      ...MarketMcpSelectionRequest,
      properties: {
        ...MarketMcpSelectionRequest.properties,
        params: { ...SourceParamValuesSchema, default: {}, description: paramsDescription },
      },
    },
    default: [],
    description:
      'Approved tool-market entries (mcp_id is the listing id) and the tools used of each; unknown entries are 400 market_entry_not_found, unknown tool names 400 market_tool_not_found; ' +
      "params take only the names the entry's requiredUserParamsSchema declares, with values it allows (none for an entry without parameters), else 400 invalid_params naming the key",
  },
  custom_mcps: {
    type: 'array',
    maxItems: 50,
    items: {
      ...CustomMcpSelectionRequest,
      properties: {
        ...CustomMcpSelectionRequest.properties,
        params: { ...SourceParamValuesSchema, default: {}, description: paramsDescription },
      },
    },
    default: [],
    description: 'Remote MCP servers and OpenAPI APIs used as tools',
  },
  structured_output: {
    type: 'array',
    minItems: 1,
    maxItems: 100,
    items: AgentStructuredOutputField,
    description: 'Fields of the final result (result.data), validated; an invalid answer is re-asked once',
  },
  webhook_url: {
    type: 'string',
    format: 'uri',
    pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
    maxLength: 2048,
    description: 'Receives each finished run',
  },
} as const;

export const CustomAgentRequest = {
  $id: 'CustomAgentRequest',
  type: 'object',
  additionalProperties: false,
  required: ['task'],
  properties: customAgentFields,
} as const;

/** A field of PATCH: no default (an omitted field is kept, not reset), and null allowed when `clearable`. */
function patchField(schema: Record<string, unknown>, clearable: boolean): Record<string, unknown> {
  const { default: _default, ...rest } = schema;
  if (!clearable) return rest;
  if (rest.oneOf) return { ...rest, oneOf: [...(rest.oneOf as unknown[]), { type: 'null' }] };
  const type = rest.type as string | string[];
  return { ...rest, type: [...new Set([...(Array.isArray(type) ? type : [type]), 'null'])] };
}

const NOT_CLEARABLE = new Set(['name', 'cron', 'task']);

/** PATCH /agents/{id}: the same fields, all optional; null clears a nullable field (one with a default goes back to it). */
export const CustomAgentUpdateRequest = {
  $id: 'CustomAgentUpdateRequest',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: Object.fromEntries(
    Object.entries(customAgentFields).map(([key, schema]) => [
      key,
      patchField(schema as Record<string, unknown>, !NOT_CLEARABLE.has(key)),
    ]),
  ),
};

export const CustomAgentResponse = {
  $id: 'CustomAgentResponse',
  type: 'object',
  required: ['agent'],
  properties: {
    agent: {
      type: 'object',
      required: ['id', 'name', 'payload'],
      properties: {
        id: { ...uuid, description: 'Also the id of its automation (GET /automations)' },
        name: { type: 'string' },
        payload: {
          type: 'object',
          description: 'The stored request; every params value of custom_mcps and market_mcps reads "[redacted]"',
        },
      },
    },
  },
} as const;

export const CustomAgentRunResponse = {
  $id: 'CustomAgentRunResponse',
  type: 'object',
  required: ['queued', 'jobId', 'status'],
  properties: {
    queued: { type: 'boolean', description: 'true: the queue accepted the run' },
    jobId: { ...uuid, description: 'The run id (poll GET /agents/runs/{jobId}); not an automation id' },
    status: { type: 'string', enum: ['pending'] },
  },
} as const;

export const ToolCallRecord = {
  $id: 'ToolCallRecord',
  type: 'object',
  required: ['index', 'source', 'tool', 'status', 'startedAt', 'durationMs', 'costUsd', 'error'],
  properties: {
    index: { type: 'integer', description: 'Position among the tool calls of the run, from 1' },
    source: { type: 'string', description: 'The selection: its name, else custom_mcps[i] / market_mcps[i]' },
    tool: { type: 'string' },
    status: {
      type: 'string',
      enum: ['completed', 'error', 'failed', 'not_sent'],
      description:
        'completed: the tool answered; error: the tool reported an error; failed: no answer (unreachable, timeout, not resent because it may have run); not_sent: past max_tool_calls',
    },
    startedAt: { type: 'string', format: 'date-time' },
    durationMs: { type: 'integer' },
    costUsd: { type: 'number' },
    error: { type: ['string', 'null'] },
  },
} as const;

export const CustomAgentRun = {
  $id: 'CustomAgentRun',
  type: 'object',
  description:
    'The job record (as for scrape and agentic jobs) plus the tool calls and the usage of the run. Arguments and results of tool calls are not shown: they can hold secrets.',
  required: [...JobRecord.required, 'toolCalls', 'usage'],
  properties: {
    ...JobRecord.properties,
    toolCalls: { type: 'array', items: { $ref: 'ToolCallRecord' } },
    usage: {
      type: 'object',
      required: ['llmTokens', 'toolCalls', 'costUsd'],
      properties: {
        llmTokens: { type: 'integer', description: 'Prompt and completion tokens of every model call so far' },
        toolCalls: { type: 'integer', description: 'Tool calls sent so far' },
        costUsd: {
          type: 'number',
          description: "Cost recorded so far (what settlement charges, within the run's hold)",
        },
        llmCalls: { type: 'integer', description: 'Model calls so far' },
        promptTokens: { type: 'integer' },
        completionTokens: { type: 'integer' },
        browserSeconds: { type: 'number', description: 'Browser time so far (runs with a browser)' },
      },
    },
  },
} as const;

export interface CustomMcpBody {
  type: 'remote_mcp' | 'openapi';
  name?: string | null;
  source_url?: string | null;
  openapi_spec?: Record<string, unknown> | string | null;
  tool_names: string[];
  params: Record<string, string | number | boolean>;
  tool_discovery_cache: Record<string, unknown>;
}

export interface MarketMcpBody {
  mcp_id: string;
  tool_names: string[];
  params: Record<string, string | number | boolean>;
}

export type SkillsBody =
  | {
      provider?: string;
      externalId?: string;
      name: string;
      description?: string | null;
      skillMdContent?: string | null;
    }[]
  | {
      mode: 'none' | 'selected';
      selected?: { name: string; description?: string | null; skillMdContent?: string | null }[];
    };

export interface CustomAgentBody {
  name?: string;
  cron?: string;
  timezone?: string;
  task: string;
  system_prompt?: string | null;
  expected_output?: string | null;
  llm_provider: 'service' | 'router';
  llm_model: string;
  max_tool_calls: number;
  skills: SkillsBody;
  market_mcps: MarketMcpBody[];
  custom_mcps: CustomMcpBody[];
  structured_output?: FieldSpec[];
  webhook_url?: string;
}

export type CustomAgentUpdateBody = { [K in keyof CustomAgentBody]?: CustomAgentBody[K] | null };

export const customAgentSchemas = [
  CustomAgentRequest,
  CustomAgentUpdateRequest,
  CustomAgentResponse,
  CustomAgentRunResponse,
  ToolCallRecord,
  CustomAgentRun,
];
