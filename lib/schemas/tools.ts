import type { FromSchema } from 'json-schema-to-ts';
import { httpUrl } from './common';

/** Values of a tool source's params (credentials, API keys, server URL variables), by param name. Never stored in clear, never echoed. */
export const SourceParamValuesSchema = {
  type: 'object',
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 200 },
  additionalProperties: { type: ['string', 'number', 'boolean'], maxLength: 8192 },
  description:
    'Values the source needs, by param name (see the params of a discovery): e.g. {"Authorization": "Bearer …"} for a remote MCP server (each is sent as an HTTP header), or {"X-API-Key": "…"} for an OpenAPI security scheme (keyed by the header/query/cookie name or by the scheme name). Used for the request only; never returned or logged.',
} as const;

/** POST /agents/discover-mcp (the contract's McpDiscoveryRequest, plus params and openapiBaseUrl). */
export const McpDiscoveryRequest = {
  $id: 'McpDiscoveryRequest',
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', enum: ['remote_mcp', 'openapi'] },
    url: {
      ...httpUrl,
      description:
        'remote_mcp: the MCP endpoint (Streamable HTTP, or a legacy HTTP+SSE endpoint). openapi: the URL of the OpenAPI document. HTTPS is required except for hosts opened by NETWORK_ALLOWLIST; every connection and redirect passes the SSRF guard.',
    },
    specText: {
      type: 'string',
      minLength: 1,
      description: 'openapi: the document as JSON or YAML text (Swagger 2.0, OpenAPI 3.0 or 3.1)',
    },
    spec: { type: ['object', 'null'], description: 'openapi: the document, parsed' },
    openapiBaseUrl: {
      ...httpUrl,
      description:
        'openapi: the API base URL, overriding the servers of the document (needed when it has no absolute server URL)',
    },
    params: { ...SourceParamValuesSchema, default: {} },
  },
} as const;

/** A body McpDiscoveryRequest accepts, as ajv leaves it (a property with a default is always there). */
export type McpDiscoveryRequestBody = FromSchema<typeof McpDiscoveryRequest>;

export const DiscoveredTool = {
  $id: 'DiscoveredTool',
  type: 'object',
  required: ['name', 'description', 'inputSchema'],
  properties: {
    name: {
      type: 'string',
      description:
        'Tool name (OpenAPI: operationId, else method and path, sanitised to [A-Za-z0-9_-], at most 64 characters, unique)',
    },
    description: { type: ['string', 'null'] },
    inputSchema: {
      type: ['object', 'null'],
      description:
        'JSON Schema of the arguments. OpenAPI: path, query, header and cookie parameters as top-level properties, the request body as `body`',
    },
    annotations: {
      type: 'object',
      description:
        'MCP tool annotations as the server declares them; for OpenAPI from the method (GET/HEAD/OPTIONS read-only; those and PUT/DELETE idempotent). A tool call is retried automatically only when it provably did not reach the upstream or the tool is read-only or idempotent',
      properties: {
        title: { type: 'string' },
        readOnlyHint: { type: 'boolean' },
        destructiveHint: { type: 'boolean' },
        idempotentHint: { type: 'boolean' },
        openWorldHint: { type: 'boolean' },
      },
    },
  },
} as const;

export const ToolSourceParam = {
  $id: 'ToolSourceParam',
  type: 'object',
  required: ['name', 'in', 'required', 'secret', 'description'],
  properties: {
    name: { type: 'string', description: 'The key to give its value under in params' },
    in: {
      type: 'string',
      enum: ['header', 'query', 'cookie', 'server'],
      description:
        'Where the value goes: an HTTP header, query parameter or cookie of each request, or a variable of the server URL',
    },
    required: { type: 'boolean' },
    secret: { type: 'boolean', description: 'A credential: stored sealed, never shown again' },
    description: { type: 'string' },
  },
} as const;

export const McpDiscoveryResponse = {
  $id: 'McpDiscoveryResponse',
  type: 'object',
  required: ['title', 'description', 'tools', 'params', 'source'],
  properties: {
    title: { type: ['string', 'null'], description: 'MCP: the server name; OpenAPI: info.title' },
    description: { type: ['string', 'null'], description: 'MCP: the server instructions; OpenAPI: info.description' },
    tools: {
      type: 'array',
      items: { $ref: 'DiscoveredTool' },
      description: 'Empty when the MCP server answered 401/403 (source.authRequired)',
    },
    params: {
      type: 'array',
      items: { $ref: 'ToolSourceParam' },
      description:
        'What the source needs: the credential an MCP server asked for with 401 (Authorization), the API keys/tokens of OpenAPI security schemes, OpenAPI server URL variables; for an MCP server that accepted the request, the headers that were given',
    },
    source: {
      type: 'object',
      required: ['type', 'authRequired'],
      properties: {
        type: { type: 'string', enum: ['remote_mcp', 'openapi'] },
        transport: {
          type: 'string',
          enum: ['streamable_http', 'sse'],
          description: 'remote_mcp: Streamable HTTP, or the legacy HTTP+SSE transport',
        },
        protocolVersion: {
          type: 'string',
          description: 'remote_mcp: the negotiated MCP revision (the current stateless one, or a 2025/2024 revision)',
        },
        server: { type: 'object', properties: { name: { type: 'string' }, version: { type: 'string' } } },
        specification: { type: 'string', description: 'openapi: e.g. "OpenAPI 3.1.0", "Swagger 2.0"' },
        serverUrl: {
          type: ['string', 'null'],
          description:
            'openapi: where calls go; null when the document has no absolute server URL and no openapiBaseUrl was given',
        },
        authRequired: {
          type: 'boolean',
          description: 'The server refused the request for lack of (valid) credentials; params lists what it wants',
        },
      },
    },
  },
} as const;
