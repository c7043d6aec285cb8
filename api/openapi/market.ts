import {
  MarketEventVerification,
  MarketEventVerificationRequest,
  MarketIconUploadRequest,
  MarketIconUploadResponse,
  MarketIdResponse,
  MarketPricingEvent,
  MarketToolDefinition,
  McpMarketDiscoveryRequest,
  McpMarketDiscoveryResponse,
  McpMarketListQuery,
  McpMarketListResponse,
  McpMarketPublicEntry,
  McpMarketSubmission,
  McpMarketSubmissionRequest,
  McpMarketSubmissionsResponse,
  McpMarketValidationResponse,
  ProviderEventChargeRequest,
  ProviderEventChargeResult,
  SubmissionsQuery,
  ValidationReport,
} from '../../lib/schemas/market';
import {
  MarketCredential,
  MarketCredentialBudgetsRequest,
  MarketCredentialRevocation,
  MarketCredentialsQuery,
  MarketCredentialsResponse,
  McpCredentialRequest,
  McpCredentialResponse,
  ProviderRevenueQuery,
  ProviderRevenueResponse,
  ProviderRevenueRun,
} from '../../lib/schemas/market-hosted';
import { body, error, json, optionalQuery, ref, unauthorized, uuidPath } from './fragments';

/** The tool market's part of the OpenAPI document (components and paths), merged by api/openapi/document.ts. */
export const MARKET_COMPONENTS = [
  MarketToolDefinition,
  MarketPricingEvent,
  McpMarketDiscoveryRequest,
  McpMarketDiscoveryResponse,
  ValidationReport,
  McpMarketValidationResponse,
  MarketEventVerificationRequest,
  MarketEventVerification,
  MarketIconUploadRequest,
  MarketIconUploadResponse,
  McpMarketSubmissionRequest,
  McpMarketSubmission,
  McpMarketSubmissionsResponse,
  McpMarketPublicEntry,
  McpMarketListResponse,
  MarketIdResponse,
  ProviderEventChargeRequest,
  ProviderEventChargeResult,
  McpCredentialRequest,
  McpCredentialResponse,
  MarketCredential,
  MarketCredentialsResponse,
  MarketCredentialBudgetsRequest,
  MarketCredentialRevocation,
  ProviderRevenueRun,
  ProviderRevenueResponse,
];

const tags = ['Tool market'];

const SUBMISSION_RULES =
  "Rules (400 with the rule as code): validation_not_found, validation_expired, validation_not_valid, fingerprint_mismatch (rule 5: a valid validation of the caller whose fingerprint is the submitted source's); " +
  "source_required, source_conflict, insecure_url, invalid_openapi_document; tools_required, unknown_tool, duplicate_tool, tool_definition_mismatch (an inputSchema other than the validated one), tool_price_required (tool_call_fixed); tool_poisoning (a tool's displayName or description, the listing's name or description, or a pricing event's title or description, fails the tool-poisoning scan; one detail per finding); " +
  'pricing_events_required, duplicate_event_name, invalid_unit_price, event_verification_required, event_verification_not_found, event_verification_mismatch, event_verification_expired, event_verification_incomplete, event_not_verified (provider_event); ' +
  'invalid_slug; icon_not_found; invalid_params_schema (including a pattern that cannot run in linear time, a $ref outside the schema, a nested $id: see "JSON Schemas you give the platform"), unmarked_secret_param, reserved_param_name (a header only the platform sets: Host, Cookie, hop-by-hop and transport headers, x-service-charge-*). 409 slug_taken.';

export function marketPaths() {
  return {
    '/mcp-market/discover': {
      post: {
        operationId: 'discoverMarketSource',
        summary: 'Discover a remote MCP server or OpenAPI source: tools, parameters, source metadata (nothing stored)',
        tags,
        requestBody: body('McpMarketDiscoveryRequest'),
        responses: {
          200: json(ref('McpMarketDiscoveryResponse'), 'The discovery'),
          400: error(
            "Invalid body; source_required, source_conflict, credentials_in_url, insecure_url (plain http), ssrf_blocked (internal address or unsafe redirect), invalid_openapi_document, source_too_large, invalid_source; host_not_found (DNS has no address for the URL's host; the message names it)",
          ),
          401: unauthorized,
          502: error(
            'The source failed (after retries for transient failures): upstream_unreachable (connection refused, unreachable, DNS did not answer), upstream_error, tls_error, not_mcp_server, auth_required; discovery_failed: discovery failed unexpectedly',
          ),
          503: error('Workflow engine unavailable'),
          504: error('upstream_timeout; discovery_timeout (MARKET_DISCOVERY_TIMEOUT_MS)'),
        },
      },
    },
    '/mcp-market/validate': {
      post: {
        operationId: 'validateMarketSource',
        summary:
          'Discover, fingerprint and validate a source (quality score, tool-poisoning scan); stored for the caller for 24 h',
        tags,
        requestBody: body('McpMarketDiscoveryRequest'),
        responses: {
          200: json(
            ref('McpMarketValidationResponse'),
            'valid, invalid (an error issue) or needs_parameters (parametersRequired, requiredParameters)',
          ),
          400: error('As for discover'),
          401: unauthorized,
          502: error('As for discover'),
          503: error('Workflow engine unavailable'),
          504: error('As for discover'),
        },
      },
    },
    '/mcp-market/event-verifications': {
      post: {
        operationId: 'createEventVerification',
        summary:
          'Start an event verification: a run id and a short-lived charge token to prove each event with POST /provider/runs/{runId}/charge',
        tags,
        requestBody: body('MarketEventVerificationRequest'),
        responses: {
          201: json(ref('MarketEventVerification'), 'Created; chargeToken is only returned here'),
          400: error(
            'Invalid body; validation_required: no valid, unexpired validation of the caller has that fingerprint',
          ),
          401: unauthorized,
        },
      },
    },
    '/mcp-market/event-verifications/{id}': {
      get: {
        operationId: 'getEventVerification',
        summary: 'An event verification of the caller (no token)',
        tags,
        parameters: [uuidPath('id')],
        responses: {
          200: json(ref('MarketEventVerification'), 'The verification'),
          401: unauthorized,
          404: error('No such verification for this account'),
        },
      },
    },
    '/market/icons': {
      post: {
        operationId: 'uploadMarketIcon',
        summary: 'Upload a PNG icon (signature and full decode checked; at most 256 KiB, 16–1024 px per side)',
        tags,
        requestBody: body('MarketIconUploadRequest'),
        responses: {
          201: json(ref('MarketIconUploadResponse'), 'Stored under the caller'),
          400: error(
            'contentType not image/png; invalid_base64, invalid_png (wrong signature, truncated, corrupt, data after IEND), icon_too_large, icon_dimensions',
          ),
          401: unauthorized,
        },
      },
    },
    '/market/icons/{key}.png': {
      get: {
        operationId: 'getMarketIcon',
        summary: 'An uploaded icon (public: no API key needed); Content-Type image/png, X-Content-Type-Options nosniff',
        tags,
        security: [],
        parameters: [{ name: 'key', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
        responses: {
          200: { description: 'The PNG', content: { 'image/png': { schema: { type: 'string', format: 'binary' } } } },
          404: error('No such icon'),
        },
      },
    },
    '/mcp-market/submissions': {
      post: {
        operationId: 'createToolSubmission',
        summary: 'Create a tool-market submission (draft)',
        description: SUBMISSION_RULES,
        tags,
        requestBody: body('McpMarketSubmissionRequest'),
        responses: {
          201: json(ref('McpMarketSubmission'), 'The draft'),
          400: error('A rule is broken (code names it)'),
          401: unauthorized,
          409: error('slug_taken'),
        },
      },
      get: {
        operationId: 'listToolSubmissions',
        summary: "The caller's submissions, revisions included, newest first",
        tags,
        parameters: optionalQuery(SubmissionsQuery as never),
        responses: {
          200: json(ref('McpMarketSubmissionsResponse'), 'One page'),
          400: error('Invalid page or pageSize'),
          401: unauthorized,
        },
      },
    },
    '/mcp-market/submissions/{id}': {
      get: {
        operationId: 'getToolSubmission',
        summary: "One of the caller's submissions",
        tags,
        parameters: [uuidPath('id')],
        responses: {
          200: json(ref('McpMarketSubmission'), 'The submission'),
          401: unauthorized,
          404: error('No such submission for this account'),
        },
      },
      put: {
        operationId: 'replaceToolSubmission',
        summary: 'Replace a draft or rejected submission in full (omitted fields are not kept); it becomes a draft',
        description: SUBMISSION_RULES,
        tags,
        parameters: [uuidPath('id')],
        requestBody: body('McpMarketSubmissionRequest'),
        responses: {
          200: json(ref('McpMarketSubmission'), 'Replaced'),
          400: error('A rule is broken'),
          401: unauthorized,
          404: error('No such submission for this account'),
          409: error(
            'invalid_state (pending_review, approved or disabled: approved entries change through a revision); slug_taken',
          ),
        },
      },
    },
    '/mcp-market/submissions/{id}/submit': {
      post: {
        operationId: 'submitToolSubmission',
        summary: 'Submit a draft for review (draft → pending_review)',
        tags,
        parameters: [uuidPath('id')],
        responses: {
          200: json(ref('McpMarketSubmission'), 'Pending review'),
          401: unauthorized,
          404: error('No such submission for this account'),
          409: error('invalid_state: not a draft (e.g. submitted twice)'),
        },
      },
    },
    '/mcp-market/submissions/{id}/revisions': {
      post: {
        operationId: 'createToolSubmissionRevision',
        summary:
          'Start a revision of the live approved entry: a new draft copying it, with parentEntryId; approving it replaces the live listing under the same public id',
        tags,
        parameters: [uuidPath('id')],
        responses: {
          201: json(ref('MarketIdResponse'), "The revision's id"),
          401: unauthorized,
          404: error('No such submission for this account'),
          409: error('invalid_state: not the live approved entry'),
        },
      },
    },
    '/mcp-market/mcps': {
      get: {
        operationId: 'listMarketTools',
        summary: 'The public catalogue: approved entries, searchable',
        tags,
        parameters: optionalQuery(McpMarketListQuery as never),
        responses: {
          200: json(ref('McpMarketListResponse'), 'One page; with q ranked by relevance, else newest approval first'),
          400: error('Invalid query'),
          401: unauthorized,
        },
      },
    },
    '/mcp-market/mcps/{id}': {
      get: {
        operationId: 'getMarketTool',
        summary: 'One approved entry by its public id',
        tags,
        parameters: [uuidPath('id')],
        responses: {
          200: json(ref('McpMarketPublicEntry'), 'The entry'),
          401: unauthorized,
          404: error('No approved entry with this id'),
        },
      },
    },
    '/mcp-market/mcps/{id}/credentials': {
      post: {
        operationId: 'createMarketToolCredential',
        summary: 'Create an MCP client credential for the hosted MCP endpoint of an approved entry',
        description:
          'The hosted MCP endpoint of an entry is `{mcp_url}/mcp/{id}` (mcpUrl in the answer; {mcp_url} is MCP_PUBLIC_URL, by default the API origin, outside /api/v1): an MCP server ' +
          '(Streamable HTTP: the current protocol revision statelessly; the 2025 revisions with a session, Mcp-Session-Id, bound to the credential — another credential naming it gets 404) ' +
          "exposing the entry's approved tools (all by default; `?tools=a,b` narrows) as the provider's server listed them (inputSchema with $schema, outputSchema, annotations, icons, _meta), " +
          'each with its price in `_meta["scrape-platform/pricing"]`. Results pass through unchanged (every content block, structuredContent, isError, the tool\'s _meta; text cut at ' +
          "MARKET_TOOL_RESULT_MAX_KB, a binary block over MARKET_TOOL_RESULT_MAX_BINARY_MB fails with code too_large); progress and log messages are relayed while a call runs; a tool's " +
          "questions to the client (elicitation, sampling, roots) are relayed: input-required results on 2026-07-28 (the requestState is the platform's: single use, this credential's, " +
          'valid MARKET_INPUT_REQUIRED_TTL_SECONDS; else JSON-RPC -32602), requests in the session on 2025; such a call is billed once, when answered. notifications/cancelled or a closed ' +
          'request cancels the call upstream (not charged). Clients send `Authorization: Bearer <credential>`; for an entry without parameters the plain API key is accepted too. Missing or refused ' +
          'tokens get 401 with `WWW-Authenticate: Bearer realm="market-mcp", error=...`. The credential (a sealed token: entry id, the id of the API key that created it, the params, ' +
          'the cap) is rejected for any other entry, once revoked (DELETE /mcp-market/credentials/{credentialId}: the next request gets 401 invalid_token ' +
          "'This credential has been revoked; create a new one', nothing is called or billed), after the API key is rotated and after the entry's parameter schema changes: create a new one then. " +
          'The service records each credential (id, entry, label, cap, created, last used, revoked; never the token or the params) for GET /mcp-market/credentials. ' +
          'Calls: tool_call_fixed charges clientPriceUsd for every call the upstream answered (an isError result included), nothing for a refused or unanswered call; each such call ' +
          'holds exactly its price while it runs; calls of the credential that follow each other with less than MARKET_RUN_WINDOW_IDLE_SECONDS (default 5) between them share one market run ' +
          '(a window), which maxTotalUsdPerRun and MARKET_RUN_CHARGE_LIMIT_USD bound like any run: the call that would pass them opens the next window (a price above them on its own is ' +
          'refused with run_limit_reached). ' +
          "provider_event entries are charged by the provider (POST /provider/runs/{runId}/charge): the credential's calls that follow each other with less than " +
          'MARKET_RUN_IDLE_GRACE_SECONDS (default 60) between them share one run, which holds min(available balance, maxTotalUsdPerRun, MARKET_RUN_CHARGE_LIMIT_USD) — sent to the ' +
          'provider as x-service-charge-max-total-usd — and releases what was not charged that grace after the last call ended (at the latest MARKET_RUN_TTL_MINUTES after it opened). ' +
          'maxTotalUsdPerRun is an extension (maxRunChargeUsd: its deprecated alias, still accepted and returned): it bounds one run, and the next run opens at once, so it is no budget. ' +
          'Budgets (extension): budgetTotalUsd bounds what all calls of the credential spend together, budgetMonthlyUsd what they spend per calendar month (UTC); both are enforced in the statement that takes ' +
          'each call\'s hold (concurrent calls cannot pass them together), and a call that would pass one is refused as a tool error (isError, `_meta["scrape-platform/billing"].code` budget_reached, ' +
          'the message naming the budget and what is left), nothing sent or charged. Set or change them with PATCH /mcp-market/credentials/{credentialId}. ' +
          "x-service-charge-max-total-usd is the run's own limit (min(MARKET_RUN_CHARGE_LIMIT_USD, maxTotalUsdPerRun, what the budgets leave) when it opened), never the wallet: a charge above what the run holds is cut (eventChargeLimitReached). " +
          'free costs nothing. Each result carries `_meta["scrape-platform/billing"]` {runId, chargedUsd, outcome, code?}; every call is in /transactions and /logs. ' +
          'A tool whose upstream name, description or schema changed since approval is refused (code tool_changed) and the entry flagged for re-review. ' +
          "Params are checked again on every call (code invalid_params, nothing sent): only declared names within their enums; for remote MCP they are headers where the provider's staticConfig and the " +
          'x-service-charge-* headers win case-insensitively and a consumer never sets Host, Cookie, Content-Length, hop-by-hop, MCP transport or charge headers (Authorization only if declared); an OpenAPI ' +
          "server URL variable takes a consumer value only when declared, from its enum, and keeping the template's host. Tool calls do not follow redirects to another origin. Failure texts never name the " +
          "provider's host, and staticConfig values (and the charge token) read [redacted] in every text of a result (blocks, resources, structuredContent, _meta, progress, logs, questions). Upstream connections and MCP sessions are never shared between consumers.",
        tags,
        parameters: [uuidPath('id')],
        requestBody: body('McpCredentialRequest'),
        responses: {
          201: json(
            ref('McpCredentialResponse'),
            'The credential (shown once; a secret equivalent to the API key) and the endpoint address',
          ),
          400: error(
            "Invalid body (validation_failed: also maxTotalUsdPerRun, budgetTotalUsd or budgetMonthlyUsd not in whole micro-USD, naming the field); invalid_params: a params key the entry's requiredUserParamsSchema does not declare (an entry without parameters accepts none), or a value it refuses; one detail per key (body/params/<name>)",
          ),
          401: unauthorized,
          404: error('No approved entry with this id'),
          409: error(
            "invalid_params_schema: the entry's parameter schema can no longer be used (approved before the schema rules; its provider must revise it)",
          ),
        },
      },
    },
    '/mcp-market/credentials': {
      get: {
        operationId: 'listMarketToolCredentials',
        summary: "Extension: the account's MCP client credentials, newest first",
        description:
          'Every credential issued by POST /mcp-market/mcps/{id}/credentials (and the console), revoked ones included (status), without the token or its params, which the service does not keep. ' +
          'Credentials an OAuth client holds for you are listed too (source oauth, app): they end when the grant is revoked, and revoking one here ends its grant. ' +
          'A credential issued before credentials were recorded appears after its first use (createdAt: its issue time).',
        tags,
        parameters: optionalQuery(MarketCredentialsQuery as never),
        responses: {
          200: json(ref('MarketCredentialsResponse'), 'One page of credentials'),
          400: error('Invalid query'),
          401: unauthorized,
        },
      },
    },
    '/mcp-market/credentials/{credentialId}': {
      patch: {
        operationId: 'updateMarketToolCredentialBudgets',
        summary: "Extension: set one MCP client credential's budgets",
        description:
          'budgetTotalUsd: what all calls of the credential may spend together; budgetMonthlyUsd: what they may spend per calendar month (UTC; a run counts in the month it opened). ' +
          'A number sets the budget (whole micro-USD), null removes it, an absent one stays. The next call made with the credential is bounded by them (a call that would pass one is refused, ' +
          "code budget_reached, nothing charged); what it already spent counts. Works for any of the account's credentials, an OAuth grant's included.",
        tags,
        parameters: [uuidPath('credentialId')],
        requestBody: body('MarketCredentialBudgetsRequest'),
        responses: {
          200: json(ref('MarketCredential'), 'The credential with its budgets and what it spent'),
          400: error(
            'Invalid body (validation_failed: a budget not a positive amount in whole micro-USD, naming the field)',
          ),
          401: unauthorized,
          404: error("The account has no credential with this id (another account's is as absent)"),
        },
      },
      delete: {
        operationId: 'revokeMarketToolCredential',
        summary: 'Extension: revoke one MCP client credential',
        description:
          'The next request made with it on /mcp/{entryId} (or try a tool) is refused with 401 invalid_token and nothing is called or billed; calls already running finish. ' +
          'Idempotent: revoking a revoked credential answers 200 with its first revocation time. Other credentials, and the API key, keep working. ' +
          "Revoking an app's credential (source oauth) also ends that app's grant: its access and refresh tokens stop working.",
        tags,
        parameters: [uuidPath('credentialId')],
        responses: {
          200: json(ref('MarketCredentialRevocation'), 'Revoked'),
          401: unauthorized,
          404: error("The account has no credential with this id (another account's is as absent)"),
        },
      },
    },
    '/provider/revenue': {
      get: {
        operationId: 'getProviderRevenue',
        summary:
          "The provider's market revenue: runs of its entries (newest first) with their charges per event and the amounts",
        description:
          "Fixed-price calls appear as the event `tool_call` with their toolName. totals cover every run of the provider; commissionUsd is the platform's share (MARKET_COMMISSION_RATE).",
        tags: ['Provider event charge'],
        parameters: optionalQuery(ProviderRevenueQuery as never),
        responses: {
          200: json(ref('ProviderRevenueResponse'), 'One page of runs and the totals'),
          400: error('Invalid page or pageSize'),
          401: unauthorized,
        },
      },
    },
    '/provider/runs/{runId}/charge': {
      post: {
        operationId: 'chargeProviderEvent',
        summary:
          'Report a provider event of a run: production runs debit the consumer and credit the provider; verification runs move no money',
        description:
          "Send the provider's own X-API-Key, x-service-charge-token and an idempotency-key stable per logical event (reuse it on retries after network errors, 429 and 5xx). " +
          'A repeated key returns the original result with replayed true (also after the run closed); the same key with a different body is 409. ' +
          "Production (a market run opened by the hosted MCP endpoint or an agent): the event must be one of the entry's pricing events; chargedCount is what the run's remaining hold " +
          "(min(consumer's available balance, the consumer's cap, MARKET_RUN_CHARGE_LIMIT_USD) at opening) pays for, chargeableWithinLimit how many more units it can still pay for, " +
          'eventChargeLimitReached true when that is 0. totalChargedUsd = chargedCount × unitPriceUsd; commissionUsd = floor(total × MARKET_COMMISSION_RATE) in micro-USD; ' +
          "providerRevenueUsd = total − commission, credited to the provider's wallet in the same transaction as the consumer's debit. Process at most chargedCount units. " +
          "A run can span several calls of one consumer selection (a credential's calls that follow each other, an agent execution's calls): x-service-charge-max-total-usd is the " +
          'most the whole run can be charged, across those calls, so derive idempotency keys from the event, not from the run alone. A run accepts charges while a call uses it and ' +
          'for MARKET_RUN_IDLE_GRACE_SECONDS (default 60) after the last one ended, never after its token expires (MARKET_RUN_TTL_MINUTES).',
        tags: ['Provider event charge'],
        parameters: [
          uuidPath('runId'),
          { name: 'x-service-charge-token', in: 'header', required: true, schema: { type: 'string' } },
          { name: 'idempotency-key', in: 'header', required: true, schema: { type: 'string', maxLength: 200 } },
        ],
        requestBody: body('ProviderEventChargeRequest'),
        responses: {
          200: json(ref('ProviderEventChargeResult'), 'Charged (or verified), or replayed'),
          400: error('Invalid body; idempotency_key_required; unknown_event (not an event of this run)'),
          401: unauthorized,
          403: error(
            "invalid_charge_token (missing, malformed, forged or bound to another run or entry); charge_token_expired (the token and its run have expired); charge_forbidden (the key's account is not the run's provider)",
          ),
          404: error('run_not_found'),
          409: error(
            'idempotency_conflict: the key was used with a different request; run_closed: the run was closed, or the grace after its last call is over; entry_not_active: the entry was disabled after the run opened',
          ),
        },
      },
    },
  };
}
