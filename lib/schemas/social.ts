export const ForumCredentials = {
  type: 'object',
  additionalProperties: false,
  required: ['forumClientId', 'forumClientSecret'],
  properties: {
    forumClientId: { type: 'string', minLength: 1, maxLength: 200 },
    forumClientSecret: { type: 'string', minLength: 1, maxLength: 500 },
    forumUserAgent: { type: 'string', minLength: 1, maxLength: 300 },
    forumUsername: { type: 'string', minLength: 1, maxLength: 100 },
    forumPassword: { type: 'string', minLength: 1, maxLength: 500 },
  },
} as const;

export const MicroblogCredentials = {
  type: 'object',
  additionalProperties: false,
  required: ['username', 'email', 'password'],
  properties: {
    username: { type: 'string', minLength: 1, maxLength: 100 },
    email: { type: 'string', format: 'email', maxLength: 320 },
    password: { type: 'string', minLength: 1, maxLength: 500 },
    totp_secret: {
      type: 'string',
      description: 'The Base32 TOTP secret (as shown when 2FA was set up), never a six-digit code',
      pattern: '^(?![0-9 ]{6,8}$)[A-Za-z2-7 =]{16,128}$',
    },
    proxy_country: { type: 'string', pattern: '^[A-Za-z]{2}$' },
  },
} as const;

export const SocialAccount = {
  $id: 'SocialAccount',
  type: 'object',
  required: ['id', 'userId', 'platform', 'name', 'isActive', 'validationStatus', 'meta', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    userId: { type: 'string', format: 'uuid' },
    platform: { type: 'string', enum: ['forum', 'microblog'] },
    name: { type: 'string' },
    isActive: { type: 'boolean' },
    validationStatus: { type: 'string', enum: ['valid', 'invalid', 'unchecked'] },
    validationMessage: { type: ['string', 'null'] },
    lastValidatedAt: { type: ['string', 'null'], format: 'date-time' },
    meta: { type: 'object', description: 'Safe metadata such as the upstream username' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const SocialAccountCreateRequest = {
  $id: 'SocialAccountCreateRequest',
  type: 'object',
  additionalProperties: false,
  required: ['platform', 'name', 'credentials'],
  properties: {
    platform: { type: 'string', enum: ['forum', 'microblog'] },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    isActive: { type: 'boolean' },
    credentials: { type: 'object' },
  },
  if: { properties: { platform: { const: 'forum' } }, required: ['platform'] },
  then: { properties: { credentials: ForumCredentials } },
  else: { properties: { credentials: MicroblogCredentials } },
} as const;

export const SocialAccountUpdateRequest = {
  $id: 'SocialAccountUpdateRequest',
  type: 'object',
  additionalProperties: false,
  anyOf: [{ required: ['name'] }, { required: ['isActive'] }, { required: ['credentials'] }],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    isActive: { type: 'boolean' },
    credentials: {
      type: 'object',
      description: "Same shape as the account platform's credentials; validated upstream again",
    },
  },
} as const;

export const SocialAccountsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { platform: { type: 'string', enum: ['forum', 'microblog'] } },
} as const;
