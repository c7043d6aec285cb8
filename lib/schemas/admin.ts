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

/** POST /admin/oauth/clients: an operator-managed OAuth client (issue 25). */
export const OAuthClientRequest = {
  $id: 'AdminOAuthClientRequest',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'redirectUris'],
  properties: {
    clientId: {
      type: 'string',
      pattern: '^[A-Za-z0-9][A-Za-z0-9._~-]{2,99}$',
      description: 'Chosen by the operator (letters, digits, . _ ~ -; 3 to 100); generated when absent',
    },
    name: { type: 'string', minLength: 1, maxLength: 100 },
    redirectUris: {
      type: 'array',
      minItems: 1,
      maxItems: 10,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 2_000 },
    },
    tokenEndpointAuthMethod: {
      type: 'string',
      enum: ['none', 'client_secret_basic', 'client_secret_post'],
      description: 'none (the default): a public client (PKCE only); otherwise a confidential client with a secret',
    },
  },
} as const;
