export const AccountSummary = {
  $id: 'AccountSummary',
  type: 'object',
  required: ['userId', 'email', 'subscription', 'balanceUsd', 'heldUsd', 'availableUsd', 'usage'],
  properties: {
    userId: { type: 'string', format: 'uuid' },
    email: { type: 'string' },
    subscription: {
      type: 'object',
      required: ['status', 'planId', 'monthlyOperationLimit', 'automationLimit'],
      properties: {
        status: { type: 'string', enum: ['active', 'inactive'] },
        planId: { type: 'string' },
        monthlyOperationLimit: { type: 'integer', description: '0 means no operations' },
        automationLimit: { type: 'integer' },
      },
    },
    balanceUsd: { type: 'number', description: 'The ledger balance: credits minus debits (never negative)' },
    heldUsd: {
      type: 'number',
      description:
        'What running work has reserved and not yet spent: the holds of running jobs (released when they are settled) plus the unused part (hold − charged) of open, unexpired tool-market runs',
    },
    availableUsd: {
      type: 'number',
      description:
        'balanceUsd − heldUsd: what new runs can reserve; a run is refused with 402 insufficient_funds when it is not positive',
    },
    usage: {
      type: 'object',
      required: ['period', 'operations'],
      properties: {
        period: { type: 'string', description: 'YYYY-MM (UTC)' },
        operations: { type: 'integer', description: 'Operations counted this month' },
      },
    },
  },
} as const;

const budgetUsd = (description: string) =>
  ({
    type: ['number', 'null'],
    exclusiveMinimum: 0,
    multipleOf: 0.000001,
    maximum: 1_000_000,
    description,
  }) as const;

export const ApiKeyBudgets = {
  $id: 'ApiKeyBudgets',
  type: 'object',
  required: ['id', 'prefix', 'createdAt', 'budgetTotalUsd', 'budgetMonthlyUsd', 'spentUsd', 'spentThisMonthUsd'],
  description:
    "Extension: the API key this request is made with, and its budgets for the account's own market tool calls: the calls made with the key itself " +
    '(as the bearer token at /mcp/{entryId}, or "Try a tool" in the console). Calls made with an MCP client credential are bounded by that credential\'s budgets, ' +
    "an agent's market tools by its max_total_usd. Never the key itself",
  properties: {
    id: { type: 'string', format: 'uuid' },
    prefix: { type: 'string', description: "The key's first 12 characters (sk_live_…), to tell keys apart" },
    createdAt: { type: 'string', format: 'date-time' },
    budgetTotalUsd: {
      type: ['number', 'null'],
      format: 'double',
      description: "What the key's own market calls may spend together (null: no total budget)",
    },
    budgetMonthlyUsd: {
      type: ['number', 'null'],
      format: 'double',
      description: 'What they may spend per calendar month, UTC (null: no monthly budget)',
    },
    spentUsd: { type: 'number', format: 'double', description: "What the key's own market calls were charged so far" },
    spentThisMonthUsd: {
      type: 'number',
      format: 'double',
      description: 'What they were charged this calendar month (UTC; a run counts in the month it opened)',
    },
  },
} as const;

export const ApiKeyBudgetsRequest = {
  $id: 'ApiKeyBudgetsRequest',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  description:
    'Extension: the budgets of the API key this request is made with; a number sets one, null removes it, an absent one stays as it is',
  properties: {
    budgetTotalUsd: budgetUsd(
      "What the key's own market tool calls may spend together, in USD (whole micro-USD; more than 6 decimals is 400 validation_failed). " +
        'An active run counts what it holds, any other what it was charged; a call that would pass it is refused (budget_reached, nothing charged)',
    ),
    budgetMonthlyUsd: budgetUsd(
      'What they may spend per calendar month (UTC), in USD (whole micro-USD), counted as budgetTotalUsd is; a run counts in the month it opened',
    ),
  },
} as const;
