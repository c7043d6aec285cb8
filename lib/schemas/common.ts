/** JSON Schemas shared by ajv validation and the served OpenAPI document. */
export const ErrorResponse = {
  $id: 'ErrorResponse',
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'requestId'],
      properties: {
        code: {
          type: 'string',
          description:
            'Stable machine-readable code: validation_failed, invalid_json, unsupported_media_type, payload_too_large, unauthorized, ' +
            'subscription_inactive, insufficient_funds, not_found, method_not_allowed, monthly_limit_reached, service_unavailable, internal_error',
        },
        message: { type: 'string', description: 'Human-readable explanation' },
        details: {
          type: 'array',
          description: 'One entry per problem found in the request',
          items: {
            type: 'object',
            required: ['path', 'message'],
            properties: {
              path: {
                type: 'string',
                description: 'JSON pointer into the body (body/...), or query.<name>, path.<name>',
              },
              message: { type: 'string' },
            },
          },
        },
        requestId: { type: 'string', description: 'Also sent as the X-Request-Id response header' },
      },
    },
  },
} as const;

export const PaginationMeta = {
  $id: 'PaginationMeta',
  type: 'object',
  required: ['page', 'pageSize', 'total', 'totalPages'],
  properties: {
    page: { type: 'integer' },
    pageSize: { type: 'integer' },
    total: { type: 'integer' },
    totalPages: { type: 'integer' },
  },
} as const;

/** Highest page number a list accepts; with at most 100 items a page, every offset stays a small exact integer. */
export const MAX_PAGE = 1_000_000;
export const MAX_PAGE_SIZE = 100;

export const pageParameter = {
  type: 'integer',
  minimum: 1,
  maximum: MAX_PAGE,
  default: 1,
  description: `Page number, from 1 to ${MAX_PAGE}`,
} as const;

export function pageSizeParameter(defaultPageSize: number) {
  return {
    type: 'integer',
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: defaultPageSize,
    description: `Items per page, 1 to ${MAX_PAGE_SIZE}`,
  } as const;
}

export function paginationQuery(defaultPageSize: number) {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      page: pageParameter,
      pageSize: pageSizeParameter(defaultPageSize),
    },
  } as const;
}

export const PaginationQuery = paginationQuery(10);

export const httpUrl = {
  type: 'string',
  format: 'uri',
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
  maxLength: 2048,
} as const;

export const proxyCountry = { type: 'string', pattern: '^[A-Za-z]{2}$' } as const;

/**
 * `proxy_country` is required once `proxy_enabled` is true (spread into a request schema that has both).
 * `then` defines the property it requires, so readers of the OpenAPI document (and its linter) find it there.
 */
export const proxyCountryWhenEnabled = {
  if: { properties: { proxy_enabled: { const: true } }, required: ['proxy_enabled'] },
  then: { properties: { proxy_country: proxyCountry }, required: ['proxy_country'] },
} as const;
