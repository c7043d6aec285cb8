import { paginationQuery } from './common';

/** JSON Schemas of the consumer side of the tool market (hosted MCP endpoint) and the provider's revenue view. */

const money = { type: 'number', format: 'double' } as const;

export const McpCredentialRequest = {
  $id: 'McpCredentialRequest',
  type: 'object',
  additionalProperties: false,
  properties: {
    params: {
      type: 'object',
      default: {},
      maxProperties: 50,
      additionalProperties: { type: ['string', 'number', 'boolean'] },
      description:
        "Values for the entry's requiredUserParamsSchema: only the names it declares (none for an entry without parameters), valid for it, else 400 invalid_params naming the key; sealed inside the credential, never returned",
    },
    maxTotalUsdPerRun: {
      type: 'number',
      exclusiveMinimum: 0,
      multipleOf: 0.000001,
      maximum: 1_000_000,
      description:
        'Extension: your cap per market run of this credential, in USD (whole micro-USD). A provider_event run — your calls of this credential that follow each other ' +
        'with less than MARKET_RUN_IDLE_GRACE_SECONDS between them, for at most MARKET_RUN_TTL_MINUTES — holds and can be charged at most ' +
        'min(available balance, this, MARKET_RUN_CHARGE_LIMIT_USD), sent to the provider as x-service-charge-max-total-usd. A window of fixed-price calls (calls less than MARKET_RUN_WINDOW_IDLE_SECONDS apart) is a run too: the call that would take it past this opens the next window; a fixed-price call above it on its own is refused (run_limit_reached)',
    },
    label: {
      type: 'string',
      maxLength: 100,
      description:
        'Extension: a name for the credential (where you use it), shown in GET /mcp-market/credentials; not a secret',
    },
    budgetTotalUsd: {
      type: 'number',
      exclusiveMinimum: 0,
      multipleOf: 0.000001,
      maximum: 1_000_000,
      description:
        'Extension: the most all calls of this credential may spend together, in USD (whole micro-USD; more than 6 decimals is 400 validation_failed). ' +
        'Unlike maxTotalUsdPerRun, which bounds one run (a window of calls), it bounds every run of the credential: an active run counts what it holds, any other what it was charged. A call that would pass it is refused (budget_reached, nothing charged); a provider_event run holds at most what is left. Changed with PATCH /mcp-market/credentials/{credentialId}',
    },
    budgetMonthlyUsd: {
      type: 'number',
      exclusiveMinimum: 0,
      multipleOf: 0.000001,
      maximum: 1_000_000,
      description:
        'Extension: the most the calls of this credential may spend per calendar month (UTC), in USD (whole micro-USD), counted as budgetTotalUsd is; a run counts in the month it opened. ' +
        'A call that would pass it is refused (budget_reached) until the month ends or the budget is raised',
    },
    maxRunChargeUsd: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: 1_000_000,
      deprecated: true,
      description:
        'Deprecated alias of maxTotalUsdPerRun (sending both with different values is 400 validation_failed)',
    },
  },
} as const;

export const McpCredentialResponse = {
  $id: 'McpCredentialResponse',
  type: 'object',
  required: ['credential', 'mcpUrl'],
  properties: {
    credential: {
      type: 'string',
      description:
        'MCP_CLIENT_CREDENTIAL: send it as Authorization: Bearer <credential>. A secret equivalent to your API key; bound to this entry',
    },
    mcpUrl: { type: 'string', format: 'uri', description: '{mcp_url}/mcp/{entryId}' },
    credentialId: {
      type: 'string',
      format: 'uuid',
      description:
        'Sent to providers as x-service-charge-selection-id; the id of GET /mcp-market/credentials and DELETE /mcp-market/credentials/{credentialId}',
    },
    entryId: { type: 'string', format: 'uuid' },
    label: { type: ['string', 'null'], description: 'Extension: the label given, or null' },
    maxTotalUsdPerRun: {
      type: ['number', 'null'],
      format: 'double',
      description: 'Extension: your cap per market run of this credential (null: none but the run charge limit)',
    },
    maxRunChargeUsd: {
      type: ['number', 'null'],
      format: 'double',
      deprecated: true,
      description: 'Deprecated: the same value as maxTotalUsdPerRun',
    },
    budgetTotalUsd: { ...money, type: ['number', 'null'], description: 'Extension: the total budget (null: none)' },
    budgetMonthlyUsd: {
      ...money,
      type: ['number', 'null'],
      description: 'Extension: the budget per calendar month, UTC (null: none)',
    },
  },
} as const;

export const MarketCredential = {
  $id: 'MarketCredential',
  type: 'object',
  required: [
    'id',
    'entryId',
    'entryName',
    'label',
    'maxTotalUsdPerRun',
    'budgetTotalUsd',
    'budgetMonthlyUsd',
    'spentUsd',
    'spentThisMonthUsd',
    'createdAt',
    'lastUsedAt',
    'revokedAt',
    'status',
    'source',
    'app',
  ],
  description: 'Extension: one issued MCP client credential as the account sees it (never the token or its params)',
  properties: {
    id: { type: 'string', format: 'uuid', description: 'credentialId (x-service-charge-selection-id)' },
    entryId: { type: 'string', format: 'uuid' },
    entryName: { type: ['string', 'null'], description: "The entry's name while it is live, else null" },
    label: { type: ['string', 'null'] },
    maxTotalUsdPerRun: {
      type: ['number', 'null'],
      format: 'double',
      description: 'The limit of one run (a window of calls) of this credential; null: none but the run charge limit',
    },
    budgetTotalUsd: {
      type: ['number', 'null'],
      format: 'double',
      description: 'What all its calls may spend together (null: no total budget)',
    },
    budgetMonthlyUsd: {
      type: ['number', 'null'],
      format: 'double',
      description: 'What its calls may spend per calendar month, UTC (null: no monthly budget)',
    },
    spentUsd: { ...money, description: 'What its calls were charged so far' },
    spentThisMonthUsd: {
      ...money,
      description: 'What its calls were charged this calendar month (UTC; a run counts in the month it opened)',
    },
    createdAt: { type: 'string', format: 'date-time' },
    lastUsedAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'The last request made with it on the hosted endpoint or try a tool (minute precision), or null',
    },
    revokedAt: { type: ['string', 'null'], format: 'date-time' },
    status: {
      type: 'string',
      enum: ['active', 'revoked', 'key_rotated'],
      description:
        'revoked: by DELETE (or the console), or its OAuth grant was revoked; key_rotated: the API key it was made with was rotated',
    },
    source: {
      type: 'string',
      enum: ['direct', 'oauth'],
      description:
        'direct: issued by POST /mcp-market/mcps/{id}/credentials or the console; oauth: held by an app you connected with OAuth (it ends with that grant, and revoking it disconnects the app)',
    },
    app: {
      type: ['object', 'null'],
      description: 'The OAuth client holding it (source oauth), else null',
      required: ['clientId', 'name'],
      properties: {
        clientId: { type: ['string', 'null'], description: "The client's id (null for an older grant not linked)" },
        name: { type: ['string', 'null'], description: "The client's name when it was connected" },
      },
    },
  },
} as const;

export const MarketCredentialsResponse = {
  $id: 'MarketCredentialsResponse',
  type: 'object',
  required: ['credentials', 'meta'],
  properties: {
    credentials: { type: 'array', items: { $ref: 'MarketCredential' } },
    meta: { $ref: 'PaginationMeta' },
  },
} as const;

export const MarketCredentialBudgetsRequest = {
  $id: 'MarketCredentialBudgetsRequest',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  description: "Extension: a credential's budgets; a number sets one, null removes it, an absent one stays as it is",
  properties: {
    budgetTotalUsd: {
      type: ['number', 'null'],
      exclusiveMinimum: 0,
      multipleOf: 0.000001,
      maximum: 1_000_000,
      description: 'What all its calls may spend together, in USD (whole micro-USD)',
    },
    budgetMonthlyUsd: {
      type: ['number', 'null'],
      exclusiveMinimum: 0,
      multipleOf: 0.000001,
      maximum: 1_000_000,
      description: 'What its calls may spend per calendar month (UTC), in USD (whole micro-USD)',
    },
  },
} as const;

export const MarketCredentialRevocation = {
  $id: 'MarketCredentialRevocation',
  type: 'object',
  required: ['id', 'revokedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    revokedAt: { type: 'string', format: 'date-time', description: 'When it was first revoked' },
  },
} as const;

export const MarketCredentialsQuery = paginationQuery(20);

const RevenueEvent = {
  type: 'object',
  required: ['eventName', 'charges', 'chargedCount', 'totalChargedUsd', 'providerRevenueUsd'],
  properties: {
    eventName: { type: 'string', description: 'A pricing event, or tool_call for fixed-price calls' },
    toolName: { type: ['string', 'null'] },
    charges: { type: 'integer' },
    chargedCount: { type: 'integer' },
    totalChargedUsd: money,
    providerRevenueUsd: money,
  },
} as const;

export const ProviderRevenueRun = {
  $id: 'ProviderRevenueRun',
  type: 'object',
  required: [
    'runId',
    'entryId',
    'status',
    'createdAt',
    'maxTotalUsd',
    'totalChargedUsd',
    'commissionUsd',
    'providerRevenueUsd',
    'events',
  ],
  properties: {
    runId: { type: 'string', format: 'uuid' },
    entryId: { type: 'string', format: 'uuid' },
    selectionId: { type: 'string' },
    status: { type: 'string', enum: ['open', 'closed'] },
    createdAt: { type: 'string', format: 'date-time' },
    expiresAt: { type: 'string', format: 'date-time' },
    closedAt: { type: ['string', 'null'], format: 'date-time' },
    settledAt: { type: ['string', 'null'], format: 'date-time' },
    maxTotalUsd: { ...money, description: "The run's charge limit (its hold)" },
    totalChargedUsd: money,
    commissionUsd: money,
    providerRevenueUsd: money,
    events: { type: 'array', items: RevenueEvent },
  },
} as const;

export const ProviderRevenueResponse = {
  $id: 'ProviderRevenueResponse',
  type: 'object',
  required: ['totals', 'runs', 'meta'],
  properties: {
    totals: {
      type: 'object',
      required: ['runs', 'totalChargedUsd', 'commissionUsd', 'providerRevenueUsd'],
      properties: {
        runs: { type: 'integer' },
        totalChargedUsd: money,
        commissionUsd: money,
        providerRevenueUsd: money,
      },
    },
    runs: { type: 'array', items: { $ref: 'ProviderRevenueRun' } },
    meta: { $ref: 'PaginationMeta' },
  },
} as const;

export const ProviderRevenueQuery = paginationQuery(20);
