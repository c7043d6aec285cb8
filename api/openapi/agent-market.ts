import {
  AgentMarketListQuery,
  AgentMarketListResponse,
  AgentMarketPublicEntry,
  AgentMarketPurchase,
  AgentMarketSubmission,
  AgentMarketToolPricing,
  AgentMarketSubmissionRequest,
  AgentMarketSubmissionsResponse,
  MarketAgentRunRecord,
  MarketAgentRunRequest,
  MarketAgentRunResponse,
} from '../../lib/schemas/agent-market';
import { SubmissionsQuery } from '../../lib/schemas/market';
import { longPollWait } from './long-polling';
import { body, error, json, optionalQuery, ref, unauthorized, uuidPath } from './fragments';

/** The agent market's part of the OpenAPI document (components and paths), merged by api/openapi/document.ts. */
export const AGENT_MARKET_COMPONENTS = [
  AgentMarketSubmissionRequest,
  AgentMarketSubmission,
  AgentMarketSubmissionsResponse,
  AgentMarketPublicEntry,
  AgentMarketToolPricing,
  AgentMarketListResponse,
  AgentMarketPurchase,
  MarketAgentRunRequest,
  MarketAgentRunResponse,
  MarketAgentRunRecord,
];

const tags = ['Agent market'];
const SLUG_RELEASE =
  'a slug is released when its draft is deleted, or when its listing never reached review — only draft or rejected submissions — and has not changed for MARKET_DRAFT_SLUG_DAYS, default 30';
const RULES =
  'prompt_template_required, undeclared_placeholder, invalid_input_schema (including a pattern that cannot run in linear time or a $ref outside the schema: see "JSON Schemas you give the platform"), invalid_structured_output, model_not_supported, unknown_market_tool, ' +
  'invalid_params (an mcpSelections params key the tool-market listing does not declare, or a value its requiredUserParamsSchema refuses), invalid_custom_selection, insecure_url, invalid_slug, icon_not_found';

export function agentMarketPaths() {
  return {
    '/agent-market/submissions': {
      post: {
        operationId: 'createAgentSubmission',
        summary: 'Submit an agent (a draft): prompts and selection params sealed at rest',
        tags,
        requestBody: body('AgentMarketSubmissionRequest'),
        responses: {
          201: json(ref('AgentMarketSubmission'), 'The draft (owner view)'),
          400: error(`Invalid body, or a broken rule: ${RULES}`),
          401: unauthorized,
          409: error(`slug_taken: another listing holds the slug (${SLUG_RELEASE})`),
        },
      },
      get: {
        operationId: 'listAgentSubmissions',
        summary: "The caller's agent submissions, newest first",
        tags,
        parameters: optionalQuery(SubmissionsQuery as never),
        responses: {
          200: json(ref('AgentMarketSubmissionsResponse'), 'One page'),
          400: error('Invalid page or pageSize'),
          401: unauthorized,
        },
      },
    },
    '/agent-market/submissions/{id}': {
      get: {
        operationId: 'getAgentSubmission',
        summary:
          "One of the caller's submissions, prompts decrypted for the owner, with aggregate stats of its listing",
        tags,
        parameters: [uuidPath('id')],
        responses: {
          200: json(ref('AgentMarketSubmission'), 'Owner view'),
          401: unauthorized,
          404: error('No such submission of this account'),
        },
      },
      put: {
        operationId: 'replaceAgentSubmission',
        summary: 'Replace a draft or rejected submission (full replacement; back to draft)',
        tags,
        parameters: [uuidPath('id')],
        requestBody: body('AgentMarketSubmissionRequest'),
        responses: {
          200: json(ref('AgentMarketSubmission'), 'Replaced'),
          400: error(`Invalid body, or a broken rule: ${RULES}`),
          401: unauthorized,
          404: error('No such submission of this account'),
          409: error(
            'invalid_state (pending_review, approved or disabled: an approved agent changes only through a revision); slug_taken',
          ),
        },
      },
      delete: {
        operationId: 'deleteAgentSubmission',
        summary:
          'Delete a draft or rejected submission (extension): its slug is released unless another submission of the listing uses it',
        description:
          `Drafts do not hold their slug forever: deleting one releases it at once, and otherwise ${SLUG_RELEASE}. ` +
          'A revision draft is deleted alone; the live agent of its listing stays, with its slug.',
        tags,
        parameters: [uuidPath('id')],
        responses: {
          204: { description: 'Deleted' },
          401: unauthorized,
          404: error('No such submission of this account'),
          409: error('invalid_state: pending_review, approved or disabled'),
        },
      },
    },
    '/agent-market/submissions/{id}/submit': {
      post: {
        operationId: 'submitAgentSubmission',
        summary: 'Send a draft to review (pending_review); its market tool selections are checked again',
        tags,
        parameters: [uuidPath('id')],
        responses: {
          200: json(ref('AgentMarketSubmission'), 'pending_review'),
          400: error('unknown_market_tool'),
          401: unauthorized,
          404: error('No such submission'),
          409: error(
            'invalid_state; slug_taken: the draft was left unchanged for MARKET_DRAFT_SLUG_DAYS and another listing took its slug (choose another with PUT)',
          ),
        },
      },
    },
    '/agent-market/submissions/{id}/revisions': {
      post: {
        operationId: 'createAgentSubmissionRevision',
        summary:
          'Start a revision of the live approved agent: a draft copy (prompts included) that replaces it under the same public id once approved',
        tags,
        parameters: [uuidPath('id')],
        responses: {
          201: json(ref('MarketIdResponse'), "The revision's submission id"),
          401: unauthorized,
          404: error('No such submission'),
          409: error('invalid_state: not approved, or not the live entry'),
        },
      },
    },
    '/agent-market/agents': {
      get: {
        operationId: 'listMarketAgents',
        summary: 'The catalogue of approved agents (full text with q)',
        tags,
        parameters: optionalQuery(AgentMarketListQuery as never),
        responses: {
          200: json(ref('AgentMarketListResponse'), 'One page; newest approval first, or by relevance with q'),
          400: error('Invalid query'),
          401: unauthorized,
        },
      },
    },
    '/agent-market/agents/{agentId}': {
      get: {
        operationId: 'getMarketAgent',
        summary: 'One approved agent',
        tags,
        parameters: [uuidPath('agentId')],
        responses: {
          200: json(ref('AgentMarketPublicEntry'), 'The agent'),
          401: unauthorized,
          404: error('No approved agent with this id'),
        },
      },
    },
    '/agent-market/agents/{agentId}/purchase': {
      post: {
        operationId: 'purchaseMarketAgent',
        summary:
          'Buy an agent once (idempotent per consumer and agent); the provider is credited the price less MARKET_COMMISSION_RATE',
        tags,
        parameters: [uuidPath('agentId')],
        responses: {
          201: json(ref('AgentMarketPurchase'), 'Bought: the price was debited'),
          200: json(ref('AgentMarketPurchase'), 'Already bought: the same purchase, nothing debited'),
          401: unauthorized,
          402: error('insufficient_funds: the available balance does not cover the price'),
          404: error('No approved agent with this id'),
          409: error('free_agent (nothing to buy); own_agent (owners run their agents without buying)'),
        },
      },
    },
    '/agent-market/agents/{agentId}/run': {
      post: {
        operationId: 'runMarketAgent',
        summary:
          'Run an agent on the shared agent runtime (browser headed under a virtual display unless headless); poll GET /agent-market/runs/{jobId}',
        description:
          "The agent's market tools (marketTools of the agent view) are billed to the caller's wallet like direct calls: a fixed-price call holds its price while it runs; a provider_event " +
          "tool holds min(available balance, max_total_usd, the agent's cap, MARKET_RUN_CHARGE_LIMIT_USD) while the agent uses it. When the run settles its market runs take no more calls " +
          "and release what they hold (a provider_event run after the grace for its provider's last charges, MARKET_RUN_IDLE_GRACE_SECONDS).",
        tags,
        parameters: [
          uuidPath('agentId'),
          { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 200 } },
        ],
        requestBody: { required: false, content: { 'application/json': { schema: ref('MarketAgentRunRequest') } } },
        responses: {
          202: json(ref('MarketAgentRunResponse'), 'Accepted'),
          400: error(
            'Invalid body (max_total_usd not in whole micro-USD included); unknown_input, invalid_inputs (against inputSchema), task_required (task agents), task_not_allowed (template agents without allowTaskOverride), model_not_supported, insecure_webhook_url, webhook_url to an internal address',
          ),
          401: unauthorized,
          402: error(
            "purchase_required (a paid agent not bought yet); insufficient_funds (no available balance for the run's hold)",
          ),
          403: error('Subscription not active'),
          404: error('No approved agent with this id'),
          409: error(
            "market_tool_unavailable: a tool-market listing the agent uses is no longer approved; invalid_input_schema: the agent's inputSchema can no longer be used (its owner must revise it)",
          ),
          429: error('Monthly operation limit reached'),
          503: error('Workflow engine unavailable; nothing was started or counted'),
        },
      },
    },
    '/agent-market/runs/{jobId}': {
      get: {
        operationId: 'getMarketAgentRun',
        summary: 'Poll a run of the caller: the job record plus agentId, toolCalls and usage (never prompts)',
        tags,
        parameters: [uuidPath('jobId'), longPollWait],
        'x-long-polling': { parameter: 'wait', maxSeconds: 30 },
        responses: {
          200: json(ref('MarketAgentRunRecord'), 'The run record'),
          400: error('jobId is not a UUID, or wait is not an integer from 0 to 30'),
          401: unauthorized,
          404: error('No such run of this account'),
        },
      },
    },
  };
}
