import { AgentTransaction, LogsResponse, SystemLog, TransactionsResponse } from '../../lib/schemas/logs';
import { ErrorResponse, PaginationMeta, PaginationQuery } from '../../lib/schemas/common';
import { JobAccepted, JobFallback, JobRecord } from '../../lib/schemas/jobs';
import { ScrapeRequest, ScrapeResult } from '../../lib/schemas/scrape';
import { AgenticScraperRequest, AgentResult } from '../../lib/schemas/agentscraper';
import {
  ForumCredentials,
  MicroblogCredentials,
  SocialAccount,
  SocialAccountCreateRequest,
  SocialAccountUpdateRequest,
} from '../../lib/schemas/social';
import { Automation, AutomationCreateRequest } from '../../lib/schemas/automations';
import { AccountSummary, ApiKeyBudgets, ApiKeyBudgetsRequest } from '../../lib/schemas/account';
import { SkillsDirectoryItemSchema, SkillsSearchQuery, SkillsSearchResponse } from '../../lib/schemas/skills';
import { DiscoveredTool, McpDiscoveryRequest, McpDiscoveryResponse, ToolSourceParam } from '../../lib/schemas/tools';
import { MARKET_COMPONENTS, marketPaths } from './market';
import { longPollWait } from './long-polling';
import { customAgentSchemas } from '../../lib/schemas/custom-agents';
import { AGENT_MARKET_COMPONENTS, agentMarketPaths } from './agent-market';
import { body, error, json, ref, uuidPath } from './fragments';

type Schema = { $id?: string } & Record<string, unknown>;

/** Subschemas that the ajv schemas embed (they have no `$id`), documented once as components and referenced where they appear. */
const SHARED_SUBSCHEMAS: Record<string, object> = { ForumCredentials, MicroblogCredentials };
const sharedName = new Map(Object.entries(SHARED_SUBSCHEMAS).map(([name, schema]) => [schema, name]));

const COMPONENTS: Schema[] = [
  ErrorResponse,
  PaginationMeta,
  SystemLog,
  AgentTransaction,
  LogsResponse,
  TransactionsResponse,
  JobRecord,
  JobAccepted,
  JobFallback,
  ScrapeRequest,
  ScrapeResult,
  AgenticScraperRequest,
  AgentResult,
  SocialAccount,
  SocialAccountCreateRequest,
  SocialAccountUpdateRequest,
  ...Object.entries(SHARED_SUBSCHEMAS).map(([name, schema]) => ({ $id: name, ...schema })),
  Automation,
  AutomationCreateRequest,
  SkillsDirectoryItemSchema,
  SkillsSearchResponse,
  McpDiscoveryRequest,
  McpDiscoveryResponse,
  DiscoveredTool,
  ToolSourceParam,
  ...customAgentSchemas,
  ...MARKET_COMPONENTS,
  ...AGENT_MARKET_COMPONENTS,
  AccountSummary,
  ApiKeyBudgets,
  ApiKeyBudgetsRequest,
];

/** The ajv schemas, rewritten for OpenAPI: `$id` dropped, bare `$ref: Name` and shared subschemas pointed at components. */
function toOpenApi(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toOpenApi);
  if (value === null || typeof value !== 'object') return value;
  const shared = sharedName.get(value);
  if (shared) return { $ref: `#/components/schemas/${shared}` };
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === '$id') continue;
    out[key] =
      key === '$ref' && typeof inner === 'string' && !inner.startsWith('#')
        ? `#/components/schemas/${inner}`
        : toOpenApi(inner);
  }
  return out;
}

function queryParameters(schema: {
  properties: Record<string, Record<string, unknown>>;
  required?: readonly string[];
}) {
  return Object.entries(schema.properties).map(([name, s]) => ({
    name,
    in: 'query',
    required: schema.required?.includes(name) ?? false,
    schema: toOpenApi(s),
    description: s.description,
  }));
}

const DESCRIPTION = `Scraping, browser-agent and marketplace platform, interface version 1.0.0.

Every operation needs \`X-API-Key\`. Errors always have the body \`{"error": {"code", "message", "details"?, "requestId"}}\` (schema ErrorResponse).

**Metered runs.** POST /scrape is refused with 403 \`subscription_inactive\` when the subscription is not active, 402 \`insufficient_funds\` while the available balance (balance minus the holds of running jobs, see GET /account) is not positive, and 429 \`monthly_limit_reached\` at the plan's monthly operation limit (shared with POST /agentscraper).

**Holds.** Admission reserves a hold for the run: up to a per-kind maximum set by the operator, never more than the available balance. A run stops with a clear error when its recorded usage reaches its hold, and settlement debits the true cost (once per job, also for failed runs), never more than the hold, and releases the rest, so a balance never goes below zero.

**LLM models.** With \`llm_provider: "service"\` (billed from the wallet) \`llm_model\` must be one of the models in the operator's price table; any other id is refused with 400 \`model_not_supported\`, whose message and details list the accepted models (POST /scrape, /agentscraper, /automations). With \`llm_provider: "router"\` (the account's own key) the model id is free text.

**Automations.** A \`cron\` that can fire twice within the minimum interval between runs (default 5 minutes) is refused with 400 \`cron_too_frequent\`, naming the minimum. Scheduled runs of an account whose subscription is inactive or whose wallet has no available balance are skipped (a system log line; no job, no charge).

**Idempotency.** Send \`Idempotency-Key: <any stable string>\` with POST /scrape to make retries safe: the same key returns the same job and never starts a second run. When a request answered 503 (the job could not be started), the key is free again: a retry admits and starts a new job.

**Webhooks.** When \`webhook_url\` is given, the finished job record is POSTed to it as \`{"event": "job.completed"|"job.failed", "kind", "job": JobRecord}\` with headers \`X-Webhook-Id\` (stable per event, for de-duplication), \`X-Webhook-Timestamp\` (unix seconds) and \`X-Webhook-Signature: t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<raw body>">\` keyed with the account's webhook secret (GET /account/webhook-secret). Non-2xx answers are retried with exponential backoff (5 s doubling, up to 10 attempts); redirects are not followed; the address passes the SSRF guard.

**Scrape output.** Without \`structured_output\`, \`result.data\` is \`{"summary": string, "key_points": string[]}\`. A field list \`[{id, type}]\` (types string, number, integer, boolean, object and their [] forms) or a JSON Schema with an object root shapes \`result.data\` instead; the model's answer is validated and re-asked once when invalid.

**JSON Schemas you give the platform** (a \`structured_output\` JSON Schema; in the markets a listing's \`requiredUserParamsSchema\` and an agent's \`inputSchema\`; the \`outputSchema\` of an MCP server's tools) are compiled on their own and must be safe to run: \`pattern\` and \`patternProperties\` run on a linear-time engine (RE2 syntax: ECMA-262 patterns without backreferences or lookaround, \`\\uXXXX\` escapes allowed, at most 3,000 compiled instructions); \`$ref\` only points inside the schema (\`#\` or \`#/$defs/name\`); \`$id\` only at the root; \`$anchor\`, \`$dynamicRef\`, \`$dynamicAnchor\`, \`$recursiveRef\` and \`$recursiveAnchor\` are not accepted; no reference may loop back without descending into the value, and the schema expanded through its references stays under 20,000 subschemas (at most 200,000 characters, 64 levels deep). A schema breaking these rules is refused with a 400 whose message says which rule.

**Market params.** Wherever a consumer gives values for a tool-market entry (a credential's \`params\`, a \`market_mcps\` item's \`params\` in POST /agents, /agents/run, PATCH /agents/{id} and POST /automations, an agent-market listing's \`mcpSelections\`), only the parameter names the entry's \`requiredUserParamsSchema\` declares are accepted, with values that schema allows; an entry without parameters accepts none. Anything else is 400 \`invalid_params\`, with one detail per offending key (e.g. \`body/market_mcps/0/params/X-Service-Charge-Token\`).`;

/** A JobRecord whose `result` is the given schema (or null until the job has one). */
const jobRecordOf = (result: string) => ({
  allOf: [ref('JobRecord'), { properties: { result: { anyOf: [ref(result), { type: 'null' }] } } }],
});

export function buildOpenApiDocument(serverUrl = '/api/v1') {
  const paginated = (operationId: string, name: string, summary: string) => ({
    get: {
      operationId,
      summary,
      tags: ['Logs and transactions'],
      parameters: queryParameters(PaginationQuery as never),
      responses: {
        200: json(ref(name), 'One page, newest first'),
        400: error('Invalid page or pageSize'),
        401: error('Missing or invalid API key'),
      },
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Scrape platform API',
      version: '1.0.0',
      description: DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: serverUrl }],
    security: [{ ApiKeyAuth: [] }],
    paths: {
      ...marketPaths(),
      ...agentMarketPaths(),
      '/scrape': {
        post: {
          operationId: 'createScrapeJob',
          summary: 'Scrape a URL with the LLM pipeline',
          tags: ['One-off scrape'],
          parameters: [
            { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 200 } },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('ScrapeRequest') } } },
          responses: {
            202: json(ref('JobAccepted'), 'Accepted (async true, the default)'),
            200: json(
              { oneOf: [ref('ScrapeResult'), ref('JobFallback')] },
              'Synchronous result (async false), or the fallback when the run failed or did not finish in time',
            ),
            400: error(
              'Invalid parameters, or model_not_supported: llm_model is not in the price table (llm_provider "service")',
            ),
            401: error('Missing or invalid API key'),
            402: error('No available balance (balance minus holds of running jobs)'),
            403: error('Subscription not active'),
            429: error('Monthly operation limit reached'),
            503: error('Workflow engine unavailable; nothing was started or counted'),
          },
        },
      },
      '/scrape/status/{jobId}': {
        get: {
          operationId: 'getScrapeJob',
          summary: 'Poll a scrape job (optionally long-polling with ?wait=N)',
          tags: ['One-off scrape'],
          parameters: [uuidPath('jobId'), longPollWait],
          'x-long-polling': { parameter: 'wait', maxSeconds: 30 },
          responses: {
            200: json(jobRecordOf('ScrapeResult'), 'The job record; result is the ScrapeResult once completed'),
            400: error('jobId is not a UUID, or wait is not an integer from 0 to 30'),
            401: error('Missing or invalid API key'),
            404: error('No such job for this account'),
          },
        },
      },
      '/agentscraper': {
        post: {
          operationId: 'createBrowserAgentJob',
          summary: 'Run a one-off autonomous browser agent',
          tags: ['One-off browser agent'],
          parameters: [
            { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 200 } },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('AgenticScraperRequest') } } },
          responses: {
            202: json(ref('JobAccepted'), 'Accepted'),
            400: error(
              'Invalid parameters, or model_not_supported: llm_model is not in the price table (llm_provider "service")',
            ),
            401: error('Missing or invalid API key'),
            402: error('No available balance (balance minus holds of running jobs)'),
            403: error('Subscription not active'),
            429: error('Monthly operation limit reached (shared with POST /scrape)'),
            503: error('Workflow engine unavailable; nothing was started or counted'),
          },
        },
      },
      '/agentscraper/status/{jobId}': {
        get: {
          operationId: 'getBrowserAgentJob',
          summary: 'Poll a browser-agent job (result: AgentResult; optionally long-polling with ?wait=N)',
          tags: ['One-off browser agent'],
          parameters: [uuidPath('jobId'), longPollWait],
          'x-long-polling': { parameter: 'wait', maxSeconds: 30 },
          responses: {
            200: json(jobRecordOf('AgentResult'), 'The job record; logs show each step as it happens'),
            400: error('jobId is not a UUID, or wait is not an integer from 0 to 30'),
            401: error('Missing or invalid API key'),
            404: error('No such job for this account'),
          },
        },
      },
      '/social-accounts': {
        get: {
          operationId: 'listSocialAccounts',
          summary: 'List saved social accounts (credentials are never returned)',
          tags: ['Social accounts'],
          parameters: [
            {
              name: 'platform',
              in: 'query',
              required: false,
              schema: { type: 'string', enum: ['forum', 'microblog'] },
            },
          ],
          responses: {
            200: json(
              { type: 'object', properties: { accounts: { type: 'array', items: ref('SocialAccount') } } },
              'The accounts',
            ),
            400: error('Unknown platform'),
            401: error('Missing or invalid API key'),
          },
        },
        post: {
          operationId: 'createSocialAccount',
          summary: 'Save an account after validating its credentials with the platform',
          tags: ['Social accounts'],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref('SocialAccountCreateRequest') } },
          },
          responses: {
            201: json(
              { type: 'object', properties: { account: ref('SocialAccount') } },
              'Saved; credentials encrypted at rest',
            ),
            400: error('Invalid body, or credentials_invalid: the platform refused them (nothing saved)'),
            401: error('Missing or invalid API key'),
          },
        },
      },
      '/social-accounts/{id}': {
        patch: {
          operationId: 'updateSocialAccount',
          summary: 'Rename, (de)activate or replace credentials (validated again); the platform never changes',
          tags: ['Social accounts'],
          parameters: [uuidPath('id')],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref('SocialAccountUpdateRequest') } },
          },
          responses: {
            200: json({ type: 'object', properties: { account: ref('SocialAccount') } }, 'Updated'),
            400: error('Nothing to change, platform given, or credentials refused'),
            401: error('Missing or invalid API key'),
            404: error('No such account for this user'),
          },
        },
        delete: {
          operationId: 'deleteSocialAccount',
          summary: 'Delete an account (a microblog session is also logged out upstream)',
          tags: ['Social accounts'],
          parameters: [uuidPath('id')],
          responses: {
            204: { description: 'Deleted' },
            401: error('Missing or invalid API key'),
            404: error('No such account for this user'),
          },
        },
      },
      '/automations': {
        get: {
          operationId: 'listAutomations',
          summary: 'List automations; status and isPaused are read from each Temporal Schedule',
          tags: ['Automations'],
          parameters: queryParameters(PaginationQuery as never),
          responses: {
            200: json(
              {
                type: 'object',
                properties: { automations: { type: 'array', items: ref('Automation') }, meta: ref('PaginationMeta') },
              },
              'One page, newest first',
            ),
            400: error('Invalid page or pageSize'),
            401: error('Missing or invalid API key'),
          },
        },
        post: {
          operationId: 'createAutomation',
          summary: 'Create a scheduled forum or microblog agent; the first execution is queued at once',
          tags: ['Automations'],
          requestBody: { required: true, content: { 'application/json': { schema: ref('AutomationCreateRequest') } } },
          responses: {
            201: json(
              { type: 'object', properties: { automation: ref('Automation') } },
              'Stored together with its Schedule',
            ),
            400: error(
              'Invalid body, cron or time zone; cron_too_frequent (fires more often than the minimum interval); model_not_supported; unknown, foreign or missing accounts; inline microblog credentials; refused inline forum credentials; market_entry_not_found, market_tool_not_found, invalid_params (market_mcps, as in POST /agents)',
            ),
            409: error(
              "invalid_params_schema: a selected entry's parameter schema can no longer be used (its provider must revise it)",
            ),
            401: error('Missing or invalid API key'),
            403: error('automation_limit_reached: the plan automation limit'),
            503: error('The scheduler is unavailable; nothing was stored'),
          },
        },
      },
      '/skills/directory/search': {
        get: {
          operationId: 'searchSkills',
          summary: 'Search the skills directory (weighted full text, last term as a prefix, typo-tolerant names)',
          tags: ['Skills directory'],
          parameters: queryParameters(SkillsSearchQuery as never),
          responses: {
            200: json(ref('SkillsSearchResponse'), 'Ranked items; each is usable as an AgentSkillSelection'),
            400: error('q missing or blank, page or pageSize out of range'),
            401: error('Missing or invalid API key'),
          },
        },
      },
      '/skills/directory/ai-search': {
        get: {
          operationId: 'searchSkillsWithAi',
          summary:
            'Natural-language search: an LLM plan, full text and embeddings fused by reciprocal rank, optional LLM rerank; charged as usage (plans cached per user for 10 minutes)',
          tags: ['Skills directory'],
          parameters: queryParameters(SkillsSearchQuery as never),
          responses: {
            200: json(
              ref('SkillsSearchResponse'),
              'Ranked items; meta.mode is "ai", or "plain" with meta.fallbackReason when no LLM or embeddings are configured',
            ),
            400: error('q missing or blank, page or pageSize out of range'),
            401: error('Missing or invalid API key'),
          },
        },
      },
      '/agents': {
        post: {
          operationId: 'createCustomAgent',
          summary:
            'Create a stored custom agent with its schedule (an automation of type custom-agent); the first execution is queued at once',
          description:
            'The agent, its automation record (same id, listed by GET /automations) and its Temporal Schedule are created together. Each execution runs the task with the selected tools (custom_mcps: remote MCP servers and OpenAPI APIs; market_mcps: approved tool-market entries) until the model calls done or max_tool_calls is spent. Every params value is sealed at rest and shown as "[redacted]".',
          tags: ['Custom agents'],
          requestBody: { required: true, content: { 'application/json': { schema: ref('CustomAgentRequest') } } },
          responses: {
            201: json(ref('CustomAgentResponse'), 'Stored together with its Schedule'),
            400: error(
              'validation_failed (invalid body, cron missing), cron_too_frequent, model_not_supported, ssrf_blocked / insecure_url / invalid_source (a source_url), market_entry_not_found, market_tool_not_found, invalid_params (a market_mcps params key the entry does not declare, or a value its requiredUserParamsSchema refuses; the details name the key)',
            ),
            409: error(
              "invalid_params_schema: a selected entry's parameter schema can no longer be used (its provider must revise it)",
            ),
            401: error('Missing or invalid API key'),
            403: error(
              'automation_limit_reached: the plan automation limit (stored custom agents count as automations)',
            ),
            503: error('The scheduler is unavailable; nothing was stored'),
          },
        },
      },
      '/agents/{id}': {
        patch: {
          operationId: 'updateCustomAgent',
          summary:
            'Change a stored custom agent: given fields replace the stored ones (a list replaces the whole list, params included), null clears a nullable field; a changed cron or timezone updates the Schedule',
          tags: ['Custom agents'],
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
          requestBody: { required: true, content: { 'application/json': { schema: ref('CustomAgentUpdateRequest') } } },
          responses: {
            200: json(ref('CustomAgentResponse'), 'The agent as stored now'),
            400: error(
              'Empty or invalid body, and every rule of POST /agents (invalid_params for market_mcps params, stored ones included)',
            ),
            401: error('Missing or invalid API key'),
            404: error('No custom agent of this account has this id'),
            409: error("invalid_params_schema: a selected entry's parameter schema can no longer be used"),
          },
        },
      },
      '/agents/run': {
        post: {
          operationId: 'runCustomAgent',
          summary: 'Queue exactly one execution of a custom agent (no automation record, no schedule; cron is ignored)',
          tags: ['Custom agents'],
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              schema: { type: 'string', maxLength: 200 },
              description: 'A retry with the same key returns the same run',
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('CustomAgentRequest') } } },
          responses: {
            202: json(ref('CustomAgentRunResponse'), 'Queued'),
            400: error(
              'Invalid body; every rule of POST /agents except the schedule (invalid_params for market_mcps params)',
            ),
            401: error('Missing or invalid API key'),
            402: error('insufficient_funds: no available balance'),
            409: error("invalid_params_schema: a selected entry's parameter schema can no longer be used"),
            403: error('subscription_inactive'),
            429: error('monthly_limit_reached'),
            503: error('Workflow engine unavailable; nothing was started'),
          },
        },
      },
      '/agents/runs/{jobId}': {
        get: {
          operationId: 'getCustomAgentRun',
          summary:
            'A custom-agent run (one-off or scheduled): the job record, its tool calls and its usage; poll until completed or failed',
          tags: ['Custom agents'],
          parameters: [uuidPath('jobId'), longPollWait],
          'x-long-polling': { parameter: 'wait', maxSeconds: 30 },
          responses: {
            200: json(ref('CustomAgentRun'), 'The run'),
            400: error('jobId is not a UUID, or wait is not an integer from 0 to 30'),
            401: error('Missing or invalid API key'),
            404: error('No run of this account has this id'),
          },
        },
      },
      '/agents/discover-mcp': {
        post: {
          operationId: 'discoverToolSource',
          summary: 'Discover the tools of a remote MCP server or an OpenAPI document, and the params it needs',
          description:
            'Runs as a Temporal workflow (`tools-discovery-<uuid>`) that the request waits for, at most 60 s. Remote MCP: Streamable HTTP (current stateless revision or the 2025 revisions), falling back to the legacy HTTP+SSE transport. OpenAPI: Swagger 2.0, OpenAPI 3.0/3.1, JSON or YAML, inline or by URL, with external $refs never resolved. HTTPS is required except for hosts opened by NETWORK_ALLOWLIST; every connection and redirect passes the SSRF guard. `params` values are used for this request only (sealed in the workflow history) and never returned or logged. An MCP server that answers 401/403 yields `tools: []`, `source.authRequired: true` and the credential it wants in `params`.',
          tags: ['Custom agents'],
          requestBody: { required: true, content: { 'application/json': { schema: ref('McpDiscoveryRequest') } } },
          responses: {
            200: json(ref('McpDiscoveryResponse'), 'The tools and what the source needs'),
            400: error(
              "validation_failed (body), invalid_source, ssrf_blocked (localhost, loopback, private, metadata addresses or a redirect there), insecure_url (plain http), invalid_openapi, source_too_large, host_not_found (DNS has no address for the URL's host; the message names it)",
            ),
            401: error('Missing or invalid API key'),
            502: error(
              'upstream_unreachable (connection refused, host unreachable, DNS did not answer), upstream_error, tls_error, not_mcp_server, discovery_failed',
            ),
            503: error('Workflow engine unavailable'),
            504: error('upstream_timeout, discovery_timeout'),
          },
        },
      },
      '/logs': paginated('listLogs', 'LogsResponse', 'System log lines of this account'),
      '/transactions': paginated(
        'listTransactions',
        'TransactionsResponse',
        'Usage charges (agent transactions) of this account',
      ),
      '/account': {
        get: {
          operationId: 'getAccount',
          summary:
            "This account: plan, limits, balance, held and available amounts, and this month's operations (not in the 1.0.0 contract)",
          tags: ['Account'],
          responses: { 200: json(ref('AccountSummary'), 'Account summary'), 401: error('Missing or invalid API key') },
        },
      },
      '/account/webhook-secret': {
        get: {
          operationId: 'getWebhookSecret',
          summary: "The secret that signs this account's webhooks (not in the 1.0.0 contract)",
          tags: ['Account'],
          responses: {
            200: json({ type: 'object', properties: { webhookSecret: { type: 'string' } } }, 'The secret'),
            401: error('Missing or invalid API key'),
          },
        },
      },
      '/account/api-key': {
        get: {
          operationId: 'getApiKeyBudgets',
          summary:
            "Extension: the API key this request is made with, its budgets for the account's own market calls and what they spent",
          description:
            "The account's own market tool calls are the calls made with the API key itself: as the bearer token at /mcp/{entryId} (an entry without parameters) " +
            'or with "Try a tool" in the console while signed in with this key. Calls made with an MCP client credential are bounded by that credential\'s budgets ' +
            "(PATCH /mcp-market/credentials/{credentialId}), an agent's market tools by its max_total_usd. spentUsd and spentThisMonthUsd are what those calls were charged.",
          tags: ['Account'],
          responses: {
            200: json(ref('ApiKeyBudgets'), 'The key (never its value), its budgets and what its own calls spent'),
            401: error('Missing or invalid API key'),
          },
        },
        patch: {
          operationId: 'updateApiKeyBudgets',
          summary:
            "Extension: set the budgets of the API key this request is made with, for the account's own market calls",
          description:
            'budgetTotalUsd: what the market tool calls made with this key may spend together; budgetMonthlyUsd: what they may spend per calendar month (UTC; a run counts in the month it opened). ' +
            "A number sets the budget (whole micro-USD), null removes it, an absent one stays. They are enforced in the statement that takes each call's hold, as a credential's are: " +
            'an active run counts what it holds, any other what it was charged, and concurrent calls cannot pass a budget together. A call that would pass one is refused as a tool error ' +
            '(isError, `_meta["scrape-platform/billing"].code` budget_reached, the message naming the budget and what is left), nothing sent or charged; a provider_event run holds at most what is left. ' +
            'What the key already spent counts. A rotated key (POST /admin/users/{userId}/rotate-key) passes its budgets on to the new key, which starts with nothing spent.',
          tags: ['Account'],
          requestBody: body('ApiKeyBudgetsRequest'),
          responses: {
            200: json(ref('ApiKeyBudgets'), 'The key with its budgets and what its own calls spent'),
            400: error(
              'Invalid body (validation_failed: a budget not a positive amount in whole micro-USD, naming the field; no field given)',
            ),
            401: error('Missing or invalid API key'),
          },
        },
      },
    },
    components: {
      securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      schemas: Object.fromEntries(COMPONENTS.map((s) => [s.$id!, toOpenApi(s)])),
    },
  };
}
