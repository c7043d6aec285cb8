export const CreateUserRequest = {
  $id: 'AdminCreateUserRequest',
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: { type: 'string', format: 'email', maxLength: 320 },
    plan: { type: 'string', minLength: 1, maxLength: 64 },
    creditUsd: { type: 'number', minimum: 0, maximum: 1_000_000 },
    monthlyOperationLimit: { type: 'integer', minimum: 0, maximum: 100_000_000 },
    automationLimit: { type: 'integer', minimum: 0, maximum: 100_000 },
  },
} as const;

export const CreditRequest = {
  $id: 'AdminCreditRequest',
  type: 'object',
  additionalProperties: false,
  required: ['amountUsd', 'idempotencyKey'],
  properties: {
    amountUsd: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
    idempotencyKey: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: 'string', maxLength: 500 },
  },
} as const;

export const SubscriptionChangeRequest = {
  $id: 'AdminSubscriptionChangeRequest',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    status: { type: 'string', enum: ['active', 'inactive'] },
    plan: { type: 'string', minLength: 1, maxLength: 64 },
    monthlyOperationLimit: { type: 'integer', minimum: 0, maximum: 100_000_000 },
    automationLimit: { type: 'integer', minimum: 0, maximum: 100_000 },
  },
} as const;

export const RouterKeyRequest = {
  $id: 'AdminRouterKeyRequest',
  type: 'object',
  additionalProperties: false,
  required: ['routerApiKey'],
  properties: { routerApiKey: { type: ['string', 'null'], minLength: 1, maxLength: 500 } },
} as const;
