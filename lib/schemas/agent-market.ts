import type { FromSchema } from 'json-schema-to-ts';
import { httpUrl, paginationQuery } from './common';
import { AgentStructuredOutputField } from './agentscraper';
import { CustomMcpSelectionRequest, MarketMcpSelectionRequest, SkillsConfig } from './automations';
import { LLM_MODEL_DESCRIPTION } from './llm';

/** JSON Schemas of the agent market: requests validated by ajv and documented in the OpenAPI document. */

const submissionStatus = {
  type: 'string',
  enum: ['draft', 'pending_review', 'approved', 'rejected', 'disabled'],
} as const;
const runMode = {
  type: 'string',
  enum: ['template', 'task'],
  description: '`template`: the run fills promptTemplate with `inputs`; `task`: the run request gives the task',
} as const;
const llmProvider = { type: 'string', enum: ['service', 'router'] } as const;
const nullableUri = { type: ['string', 'null'], format: 'uri', maxLength: 2048 } as const;
const structuredOutput = { type: 'array', minItems: 1, maxItems: 100, items: AgentStructuredOutputField } as const;

export const AgentMarketSubmissionRequest = {
  $id: 'AgentMarketSubmissionRequest',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'suggestedLlmProvider', 'suggestedLlmModel', 'runMode', 'systemPrompt'],
  description:
    'Full replacement on update. systemPrompt, promptTemplate and selection params are sealed at rest and never shown to consumers. ' +
    'Rules (400 with the rule as code): prompt_template_required (runMode template), undeclared_placeholder (a {{name}} of promptTemplate not in inputSchema.properties), ' +
    'invalid_input_schema, invalid_structured_output, model_not_supported (suggestedLlmModel with provider service), unknown_market_tool (an mcpSelections entry that is not an approved tool-market listing, or a tool it does not offer), ' +
    "invalid_params (an mcpSelections params key the listing's requiredUserParamsSchema does not declare, or a value it refuses), invalid_custom_selection, invalid_slug, icon_not_found. 409 slug_taken.",
  properties: {
    slug: { type: 'string', minLength: 1, maxLength: 200, description: 'Normalised; derived from name when omitted' },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: ['string', 'null'], maxLength: 10_000 },
    iconUrl: nullableUri,
    iconObjectKey: {
      type: ['string', 'null'],
      format: 'uuid',
      description: 'An icon uploaded by the caller (POST /market/icons)',
    },
    priceUsd: {
      type: 'number',
      minimum: 0,
      maximum: 1_000_000,
      default: 0,
      description: 'One-time purchase price in USD; 0 means free',
    },
    suggestedLlmProvider: { ...llmProvider, description: 'Used when the run request gives no llm_provider' },
    suggestedLlmModel: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: `Used when the run request gives no llm_model. ${LLM_MODEL_DESCRIPTION}`,
    },
    runMode,
    allowTaskOverride: {
      type: 'boolean',
      default: false,
      description:
        'Extension: a template agent accepts a `task` in the run request, appended after the filled template (400 task_not_allowed otherwise)',
    },
    systemPrompt: {
      type: 'string',
      minLength: 1,
      maxLength: 50_000,
      description: "Private: instructions added to the agent runtime's system prompt",
    },
    promptTemplate: {
      type: ['string', 'null'],
      maxLength: 50_000,
      description:
        "Private: the task of a template agent; {{name}} placeholders are filled with the run's inputs as plain text",
    },
    inputSchema: {
      type: 'object',
      description:
        'JSON Schema (type object) of the template inputs; every placeholder must be one of its properties; runs reject unknown keys',
    },
    structuredOutput: { ...structuredOutput, description: "Field list the run's result.data must match" },
    skills: SkillsConfig,
    mcpSelections: {
      type: 'array',
      maxItems: 20,
      items: MarketMcpSelectionRequest,
      default: [],
      description:
        "Approved tool-market entries and tools the agent uses; params sealed, only the names each entry's requiredUserParamsSchema declares (400 invalid_params). " +
        'max_total_usd (extension) caps what one run of the agent may spend through the selection; consumers see the tools, their prices and this cap in the public agent view',
    },
    customMcpSelections: {
      type: 'array',
      maxItems: 20,
      items: CustomMcpSelectionRequest,
      default: [],
      description: "The owner's private tool sources; params sealed",
    },
  },
} as const;

const ownerProperties = {
  id: { type: 'string', format: 'uuid' },
  publicId: {
    type: 'string',
    format: 'uuid',
    description: "The listing's public id (agentId), shared by its revisions",
  },
  live: { type: 'boolean' },
  slug: { type: 'string' },
  name: { type: 'string' },
  description: { type: ['string', 'null'] },
  iconUrl: { type: ['string', 'null'] },
  iconObjectKey: { type: ['string', 'null'] },
  status: submissionStatus,
  parentEntryId: { type: ['string', 'null'], format: 'uuid' },
  priceUsd: { type: 'number', minimum: 0 },
  suggestedLlmProvider: { type: 'string' },
  suggestedLlmModel: { type: 'string' },
  runMode,
  allowTaskOverride: { type: 'boolean' },
  systemPrompt: { type: 'string' },
  promptTemplate: { type: ['string', 'null'] },
  inputSchema: { type: ['object', 'null'] },
  structuredOutput: { type: ['array', 'null'], items: AgentStructuredOutputField },
  skills: { type: ['object', 'null'] },
  mcpSelections: { type: 'array', items: { type: 'object' }, description: 'params masked' },
  customMcpSelections: { type: 'array', items: { type: 'object' }, description: 'params masked' },
  reviewReason: { type: ['string', 'null'] },
  stats: {
    type: 'object',
    description: 'Aggregates of the listing (all revisions): purchases, runs and revenue; never individual consumers',
    properties: { purchases: { type: 'integer' }, runs: { type: 'integer' }, revenueUsd: { type: 'number' } },
  },
  createdAt: { type: 'string', format: 'date-time' },
  updatedAt: { type: 'string', format: 'date-time' },
  submittedAt: { type: ['string', 'null'], format: 'date-time' },
  reviewedAt: { type: ['string', 'null'], format: 'date-time' },
} as const;

export const AgentMarketSubmission = {
  $id: 'AgentMarketSubmission',
  type: 'object',
  description: "The owner's view: prompts decrypted for the owner only",
  required: ['id', 'slug', 'name', 'status', 'priceUsd', 'runMode', 'systemPrompt'],
  properties: ownerProperties,
} as const;

export const AgentMarketSubmissionsResponse = {
  $id: 'AgentMarketSubmissionsResponse',
  type: 'object',
  required: ['submissions', 'meta'],
  properties: {
    submissions: { type: 'array', items: { $ref: 'AgentMarketSubmission' } },
    meta: { $ref: 'PaginationMeta' },
  },
} as const;

export const AgentMarketPublicEntry = {
  $id: 'AgentMarketPublicEntry',
  type: 'object',
  description:
    'An approved agent; prompts, selection parameters, provider identity and review data are omitted (marketTools shows which market tools it calls and their prices)',
  required: ['id', 'slug', 'name', 'priceUsd', 'runMode'],
  properties: {
    id: { type: 'string', format: 'uuid', description: 'The agentId' },
    slug: { type: 'string' },
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    iconUrl: { type: ['string', 'null'] },
    priceUsd: { type: 'number', minimum: 0 },
    suggestedLlmProvider: { type: 'string' },
    suggestedLlmModel: { type: 'string' },
    runMode,
    allowTaskOverride: { type: 'boolean' },
    inputSchema: { type: ['object', 'null'] },
    structuredOutput: { type: ['array', 'null'], items: AgentStructuredOutputField },
    purchased: { type: 'boolean', description: 'Whether the caller may run it: bought, free, or their own' },
    marketTools: {
      type: 'array',
      description:
        "Extension: the tool-market tools the agent calls, billed to the consumer's wallet on top of the run (see MarketAgentRunRequest.max_total_usd)",
      items: { $ref: 'AgentMarketToolPricing' },
    },
  },
} as const;

export const AgentMarketToolPricing = {
  $id: 'AgentMarketToolPricing',
  type: 'object',
  description:
    "A market tool an agent uses, with what its calls cost the consumer (the listing's public id, the selected tools, their prices)",
  required: ['mcpId', 'available'],
  properties: {
    mcpId: { type: 'string', format: 'uuid', description: 'The tool-market listing (GET /mcp-market/mcps/{id})' },
    available: {
      type: 'boolean',
      description:
        'false: the listing is no longer approved; runs of the agent are refused (409 market_tool_unavailable) until its provider changes it',
    },
    slug: { type: 'string' },
    name: { type: 'string' },
    monetizationStrategy: { type: 'string', enum: ['free', 'provider_event', 'tool_call_fixed'] },
    tools: {
      type: 'array',
      items: {
        type: 'object',
        required: ['toolName'],
        properties: {
          toolName: { type: 'string' },
          displayName: { type: 'string' },
          clientPriceUsd: { type: 'number', description: 'Per answered call (tool_call_fixed); 0 otherwise' },
        },
      },
    },
    pricingEvents: {
      type: 'array',
      description: 'provider_event: what the provider charges per unit of each event',
      items: {
        type: 'object',
        properties: {
          eventName: { type: 'string' },
          description: { type: ['string', 'null'] },
          unitPriceUsd: { type: 'number' },
        },
      },
    },
    maxTotalUsd: {
      type: ['number', 'null'],
      description: "The agent's cap on what one run may spend through this tool (null: none but the run charge limit)",
    },
  },
} as const;

export const AgentMarketListResponse = {
  $id: 'AgentMarketListResponse',
  type: 'object',
  required: ['agents', 'meta'],
  properties: {
    agents: { type: 'array', items: { $ref: 'AgentMarketPublicEntry' } },
    meta: { $ref: 'PaginationMeta' },
  },
} as const;

export const AgentMarketListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    q: {
      type: 'string',
      maxLength: 200,
      description: 'Full text over name and description (every word must match; the last as a prefix)',
    },
    ...paginationQuery(20).properties,
  },
} as const;

export const AgentMarketPurchase = {
  $id: 'AgentMarketPurchase',
  type: 'object',
  required: ['purchaseId', 'priceUsd'],
  properties: {
    purchaseId: { type: 'string', format: 'uuid' },
    priceUsd: { type: 'number', description: 'What was debited (once)' },
    agentId: { type: 'string', format: 'uuid' },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const MarketAgentRunRequest = {
  $id: 'MarketAgentRunRequest',
  type: 'object',
  additionalProperties: false,
  properties: {
    inputs: {
      type: 'object',
      description: "Template values; validated against the agent's inputSchema (unknown keys are refused)",
    },
    task: {
      type: 'string',
      minLength: 1,
      maxLength: 20_000,
      description: 'Required by task agents; a template agent accepts it only with allowTaskOverride',
    },
    llm_provider: { ...llmProvider, description: "Falls back to the listing's suggestedLlmProvider" },
    llm_model: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: "Falls back to the listing's suggestedLlmModel",
    },
    webhook_url: {
      ...httpUrl,
      description:
        'HTTPS endpoint (plain http only for hosts opened by NETWORK_ALLOWLIST) that receives the completed or failed run, signed',
    },
    headless: { type: 'boolean', default: false, description: 'false runs a headed Chromium under a virtual display' },
    max_total_usd: {
      type: 'number',
      exclusiveMinimum: 0,
      multipleOf: 0.000001,
      maximum: 1_000_000,
      description:
        "Extension: your cap, in USD (whole micro-USD), on what this run may spend through each of the agent's market tools (marketTools of the agent view). " +
        "A market tool's runs in this execution hold and charge at most min(your available balance, this, the agent's maxTotalUsd for it, MARKET_RUN_CHARGE_LIMIT_USD per run); " +
        'a call beyond it is refused to the agent (run_limit_reached) and charges nothing',
    },
  },
} as const;

export const MarketAgentRunResponse = {
  $id: 'MarketAgentRunResponse',
  type: 'object',
  required: ['jobId', 'status'],
  properties: { jobId: { type: 'string', format: 'uuid' }, status: { const: 'pending' } },
} as const;

export const MarketAgentRunRecord = {
  $id: 'MarketAgentRunRecord',
  type: 'object',
  description:
    'The job record plus agentId, toolCalls and usage. Prompts and the messages sent to the model never appear.',
  required: [
    'id',
    'userId',
    'status',
    'request',
    'result',
    'error',
    'logs',
    'createdAt',
    'updatedAt',
    'agentId',
    'toolCalls',
    'usage',
  ],
  properties: {
    id: { type: 'string', format: 'uuid' },
    userId: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: ['pending', 'processing', 'completed', 'failed'] },
    request: { type: 'object' },
    result: {
      type: ['object', 'null'],
      description: 'AgentResult: answer, data (structured output), tasks, steps, summary',
    },
    error: { type: ['string', 'null'] },
    logs: { type: 'array', items: { type: 'string' } },
    webhookUrl: { type: ['string', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    agentId: { type: 'string', format: 'uuid' },
    toolCalls: {
      type: 'array',
      items: { type: 'object' },
      description: 'The MCP tool calls of the run, as in custom-agent runs',
    },
    usage: {
      type: 'object',
      description:
        'As in custom-agent runs (llmTokens, toolCalls, costUsd: everything charged to the run), with the model calls and browser seconds',
      properties: {
        llmTokens: { type: 'integer' },
        toolCalls: { type: 'integer' },
        costUsd: { type: 'number' },
        llmCalls: { type: 'integer' },
        promptTokens: { type: 'integer' },
        completionTokens: { type: 'integer' },
        browserSeconds: { type: 'number' },
      },
    },
  },
} as const;

/** A body AgentMarketSubmissionRequest accepts, as ajv leaves it (a property with a default is always there). */
export type AgentMarketSubmissionBody = FromSchema<typeof AgentMarketSubmissionRequest>;

/** A body MarketAgentRunRequest accepts, as ajv leaves it (a property with a default is always there). */
export type MarketAgentRunBody = FromSchema<typeof MarketAgentRunRequest>;
