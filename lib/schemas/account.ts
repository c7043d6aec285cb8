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
