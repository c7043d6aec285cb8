import { httpUrl, paginationQuery } from './common';

/** JSON Schemas of the tool market (provider side): requests validated by ajv and documented in the OpenAPI document. */

const fingerprint = {
  type: 'string',
  pattern: '^[0-9a-f]{64}$',
  description: 'SHA-256 source fingerprint (64 lowercase hex characters) returned by validation',
} as const;
const sourceType = { type: 'string', enum: ['remote_mcp', 'openapi'] } as const;
const monetization = { type: 'string', enum: ['free', 'provider_event', 'tool_call_fixed'] } as const;
const submissionStatus = {
  type: 'string',
  enum: ['draft', 'pending_review', 'approved', 'rejected', 'disabled'],
} as const;
const usd = { type: 'number', minimum: 0, maximum: 1_000_000 } as const;
const eventName = {
  type: 'string',
  minLength: 1,
  maxLength: 128,
  pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]*$',
  description: 'Stable event name: letters, digits, _ . : - (starting with a letter or digit), at most 128 characters',
} as const;
const jsonObject = { type: 'object' } as const;
const nullableUri = { type: ['string', 'null'], format: 'uri', maxLength: 2048 } as const;

const toolProperties = {
  toolName: {
    type: 'string',
    minLength: 1,
    maxLength: 128,
    description: "The tool's name at the source (must be one of the validated tools)",
  },
  displayName: {
    type: 'string',
    minLength: 1,
    maxLength: 200,
    description:
      "Shown in the catalogue and served as the tool's title on the hosted endpoint; scanned like upstream text (400 tool_poisoning)",
  },
  description: {
    type: ['string', 'null'],
    maxLength: 10_000,
    description:
      "What buyers read in the catalogue and models read in the hosted endpoint's tools/list. Omitted, null or blank: the upstream's validated description. Your own text is scanned like upstream text " +
      "(a finding is 400 tool_poisoning); the rug-pull gate keeps comparing the upstream's current definitions with its validated ones, not with this text",
  },
  upstreamDescription: {
    type: ['string', 'null'],
    readOnly: true,
    description:
      "Owner view only: the upstream's own description as validated (what the rug-pull gate watches). Ignored when sent",
  },
  inputSchema: {
    type: 'object',
    description:
      'JSON Schema of the arguments; taken from the validated source; when sent it must equal it (400 tool_definition_mismatch)',
  },
  clientPriceUsd: {
    ...usd,
    description:
      'Per upstream call under tool_call_fixed (required for every tool there; an upstream error result is still billable; calls refused before reaching the upstream are not); ignored for other strategies',
  },
  providerRevenueUsd: { ...usd, description: 'Informational; settlement follows MARKET_COMMISSION_RATE' },
  isEnabled: { type: 'boolean', default: true },
} as const;

export const MarketToolDefinition = {
  $id: 'MarketToolDefinition',
  type: 'object',
  required: ['toolName', 'displayName'],
  properties: toolProperties,
} as const;

const pricingEventProperties = {
  eventName,
  title: { type: 'string', maxLength: 200 },
  description: { type: ['string', 'null'], maxLength: 2000 },
  unitPriceUsd: {
    type: 'number',
    exclusiveMinimum: 0,
    maximum: 1_000_000,
    description: 'USD per event unit; > 0 (at least 0.000001)',
  },
  providerRevenueUsd: { ...usd, description: 'Requested revenue; settlement follows MARKET_COMMISSION_RATE' },
} as const;

export const MarketPricingEvent = {
  $id: 'MarketPricingEvent',
  type: 'object',
  required: ['eventName', 'unitPriceUsd'],
  properties: pricingEventProperties,
} as const;

export const McpMarketDiscoveryRequest = {
  $id: 'McpMarketDiscoveryRequest',
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  description:
    'remote_mcp: `url` is the HTTPS MCP endpoint. openapi: the document as `spec` (object), `specText` (JSON or YAML) or `url` (HTTPS address of the document), with `openapiBaseUrl` when it has no absolute https server. ' +
    'Plain http is refused (400 insecure_url) except for hosts opened by NETWORK_ALLOWLIST; localhost, loopback, private, link-local and metadata addresses and redirects to them are refused (400 ssrf_blocked). External $refs are not followed.',
  properties: {
    type: sourceType,
    url: { ...httpUrl, description: 'Remote MCP URL, or hosted OpenAPI document URL' },
    openapiBaseUrl: {
      ...httpUrl,
      description: "Absolute HTTPS base; overrides the document's servers; ignored for remote MCP",
    },
    specText: { type: 'string', maxLength: 900_000, description: 'Inline OpenAPI document, JSON or YAML' },
    spec: { type: ['object', 'null'], description: 'Parsed OpenAPI document' },
    params: {
      type: 'object',
      default: {},
      maxProperties: 50,
      additionalProperties: { type: ['string', 'number', 'boolean'] },
      description:
        'Temporary discovery parameters (auth values, ...): used for this call only, never stored in plain text, never returned',
    },
  },
} as const;

const discoveredTool = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    inputSchema: {
      type: ['object', 'null'],
      description:
        "JSON Schema of the arguments, as models get it (an MCP server's `$schema` left out; `listing` has it)",
    },
    annotations: { type: ['object', 'null'] },
    listing: {
      type: 'object',
      description:
        'Remote MCP: the tool exactly as the server listed it (inputSchema with `$schema`, outputSchema, title, annotations, icons, _meta). A listing keeps it, and the hosted endpoint serves it in tools/list',
    },
  },
} as const;

const discoveryParam = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string' },
    in: { type: 'string' },
    required: { type: 'boolean' },
    secret: { type: 'boolean' },
    description: { type: ['string', 'null'] },
  },
} as const;

export const McpMarketDiscoveryResponse = {
  $id: 'McpMarketDiscoveryResponse',
  type: 'object',
  required: ['tools', 'params'],
  properties: {
    title: { type: ['string', 'null'] },
    description: { type: ['string', 'null'] },
    tools: { type: 'array', items: discoveredTool },
    params: {
      type: 'array',
      items: discoveryParam,
      description: 'Parameters the source needs (names and where they go; never values)',
    },
    authRequired: { type: 'boolean', description: 'The source refused discovery without credentials' },
    prompts: {
      type: 'array',
      description:
        "Remote MCP: the server's prompts (first page, at most 200), when it offers them. Not part of the fingerprint; the poisoning scan reads their names, titles, descriptions and argument texts.",
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string' },
          title: { type: 'string' },
          description: { type: 'string' },
          arguments: {
            type: 'array',
            items: {
              type: 'object',
              required: ['name'],
              properties: {
                name: { type: 'string' },
                title: { type: 'string' },
                description: { type: 'string' },
                required: { type: 'boolean' },
              },
            },
          },
        },
      },
    },
    resources: {
      type: 'array',
      description:
        "Remote MCP: the server's resources (first page, at most 200), when it offers them. Not part of the fingerprint; the poisoning scan reads their names, titles and descriptions.",
      items: {
        type: 'object',
        required: ['uri', 'name'],
        properties: {
          uri: { type: 'string' },
          name: { type: 'string' },
          title: { type: 'string' },
          description: { type: 'string' },
          mimeType: { type: 'string' },
        },
      },
    },
    source: {
      type: 'object',
      description:
        'How the source was reached (not part of the fingerprint): remote MCP transport (streamable_http or sse), protocolVersion and server {name, version}; OpenAPI specification (e.g. "OpenAPI 3.1.0") and serverUrl',
    },
  },
} as const;

export const ValidationReport = {
  $id: 'MarketValidationReport',
  type: 'object',
  required: ['issues', 'toolCount', 'qualityScore'],
  description:
    'qualityScore 0–100: the mean of per-tool scores (20 each: name of 1–64 [A-Za-z0-9_-]; a description; an informative description of 40+ characters and 6+ words; an object input schema; described properties), ' +
    'minus 10 above 50 tools and 20 per duplicated name. Error issues (tool poisoning: hidden_unicode, model_directive, secret_access, exfiltration, tool_shadowing, confusable_name; llm_review when the platform LLM judged the source malicious; duplicate_tool_name; no_tools) make the source invalid. ' +
    "The scan reads every string a model sees: each tool's name (also compared with the source's other tools and well-known tool names by Unicode TR39 skeleton), title, description, and every string of its input and output schemas under any keyword (description, title, default, examples, enum, const, nested properties; property names as words), the server's prompts and resources; text is NFKC-normalised and stripped of invisible and bidirectional characters (which are findings themselves) before matching. The source title and description (an MCP server's instructions) are text written for the model and are scanned for the dangerous classes only, not for addressing the model. " +
    'Its rules and their measured false-positive rate and recall on real servers and published attacks are in the selling guide (npm run eval:poisoning).',
  properties: {
    issues: {
      type: 'array',
      items: {
        type: 'object',
        required: ['severity', 'code', 'message'],
        properties: {
          severity: { type: 'string', enum: ['error', 'warning', 'info'] },
          code: { type: 'string' },
          message: { type: 'string' },
          tool: { type: 'string' },
          field: {
            type: 'string',
            description: 'Which text of the tool: name, description, inputSchema/properties/x/description, ...',
          },
        },
      },
    },
    toolCount: { type: 'integer' },
    qualityScore: { type: 'integer', minimum: 0, maximum: 100 },
    toolScores: {
      type: 'array',
      items: { type: 'object', properties: { tool: { type: 'string' }, score: { type: 'integer' } } },
    },
    llmReview: {
      type: 'object',
      required: ['model', 'verdict', 'reason', 'evidence', 'reviewedAt'],
      description:
        "The platform LLM's second opinion on the source (a fixed rubric; present only when the operator configured MARKET_SCAN_LLM_MODEL). Never the only gate: the rules' findings stand whatever it says; `malicious` adds an llm_review error, `suspicious` a warning, `unavailable` (the review failed) nothing.",
      properties: {
        model: { type: 'string' },
        verdict: { type: 'string', enum: ['benign', 'suspicious', 'malicious', 'unavailable'] },
        reason: { type: 'string' },
        evidence: { type: 'string', description: 'The offending text as the model quoted it (empty when benign)' },
        reviewedAt: { type: 'string', format: 'date-time' },
      },
    },
  },
} as const;

export const McpMarketValidationResponse = {
  $id: 'McpMarketValidationResponse',
  type: 'object',
  required: ['validationId', 'status', 'sourceFingerprint', 'report'],
  properties: {
    validationId: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: ['valid', 'invalid', 'needs_parameters'] },
    sourceFingerprint: fingerprint,
    parametersRequired: { type: 'boolean' },
    requiredParameters: {
      type: 'array',
      items: discoveryParam,
      description: 'With needs_parameters: the parameters to give in params',
    },
    report: { $ref: 'MarketValidationReport' },
    discovery: { $ref: 'McpMarketDiscoveryResponse' },
    expiresAt: {
      type: 'string',
      format: 'date-time',
      description: 'Validations are owned by the caller and expire (24 h by default)',
    },
  },
} as const;

export const MarketEventVerificationRequest = {
  $id: 'MarketEventVerificationRequest',
  type: 'object',
  additionalProperties: false,
  required: ['sourceFingerprint', 'eventNames'],
  properties: {
    sourceFingerprint: { ...fingerprint, description: 'Fingerprint of a valid, unexpired validation of the caller' },
    eventNames: { type: 'array', minItems: 1, maxItems: 50, uniqueItems: true, items: eventName },
  },
} as const;

export const MarketEventVerification = {
  $id: 'MarketEventVerification',
  type: 'object',
  required: ['id', 'runId', 'eventNames', 'expiresAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    runId: { type: 'string', format: 'uuid', description: 'The {runId} of POST /provider/runs/{runId}/charge' },
    sourceFingerprint: fingerprint,
    eventNames: { type: 'array', items: { type: 'string' } },
    verifiedEventNames: { type: 'array', items: { type: 'string' } },
    complete: { type: 'boolean', description: 'True when every event name has been charged once in verification mode' },
    expiresAt: { type: 'string', format: 'date-time' },
    chargeToken: {
      type: 'string',
      description: 'Secret, returned only when the verification is created: send it as x-service-charge-token',
    },
    apiBaseUrl: {
      type: 'string',
      format: 'uri',
      description: 'Canonical REST base for verification and production charges',
    },
  },
} as const;

export const MarketIconUploadRequest = {
  $id: 'MarketIconUploadRequest',
  type: 'object',
  additionalProperties: false,
  required: ['fileName', 'contentType', 'base64'],
  properties: {
    fileName: { type: 'string', minLength: 1, maxLength: 255 },
    contentType: { type: 'string', enum: ['image/png'] },
    base64: {
      type: 'string',
      minLength: 1,
      maxLength: 400_000,
      description: 'The PNG file, base64 (at most 256 KiB decoded, 16–1024 px per side)',
    },
  },
} as const;

export const MarketIconUploadResponse = {
  $id: 'MarketIconUploadResponse',
  type: 'object',
  required: ['iconObjectKey', 'iconUrl'],
  properties: {
    iconObjectKey: { type: 'string', description: 'Send as iconObjectKey in a submission (only the uploader may)' },
    iconUrl: { type: 'string', format: 'uri', description: 'Public address of the icon (image/png)' },
    width: { type: 'integer' },
    height: { type: 'integer' },
  },
} as const;

export const McpMarketSubmissionRequest = {
  $id: 'McpMarketSubmissionRequest',
  type: 'object',
  additionalProperties: false,
  required: ['validationId', 'sourceFingerprint', 'type', 'name', 'monetizationStrategy'],
  description:
    'Full replacement on update: omitted fields are not kept. requiredUserParamsSchema: a JSON Schema of type object with flat string/number/integer/boolean properties; secret fields are marked "writeOnly": true ' +
    '(required for names with key, token, secret, password, auth, cookie, session, ... words). staticConfig is sealed at rest and shown masked. tools: omit to list every validated tool.',
  properties: {
    validationId: { type: 'string', format: 'uuid' },
    sourceFingerprint: fingerprint,
    eventVerificationId: { type: ['string', 'null'], format: 'uuid' },
    slug: {
      type: ['string', 'null'],
      maxLength: 200,
      description: 'Normalised to lowercase [a-z0-9-]; derived from name when omitted; unique in the market',
    },
    type: sourceType,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: ['string', 'null'], maxLength: 10_000 },
    iconUrl: { ...nullableUri, description: 'https URL; ignored when iconObjectKey is given' },
    iconObjectKey: {
      type: ['string', 'null'],
      maxLength: 200,
      description: "From POST /market/icons; must be the caller's",
    },
    remoteMcpUrl: { ...nullableUri, description: 'HTTPS MCP endpoint; required for remote_mcp' },
    openapiBaseUrl: nullableUri,
    openapiSpec: { type: ['object', 'null'] },
    openapiSpecText: { type: 'string', maxLength: 900_000 },
    discoveryCache: {
      type: 'object',
      description: "Accepted for compatibility; the stored discovery is the validation's",
    },
    staticConfig: {
      type: 'object',
      maxProperties: 100,
      description: 'Provider-owned configuration sent to the upstream; sealed at rest, never shown in clear',
    },
    requiredUserParamsSchema: { type: 'object' },
    monetizationStrategy: monetization,
    pricingEvents: {
      type: 'array',
      maxItems: 50,
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['eventName', 'unitPriceUsd'],
        properties: pricingEventProperties,
      },
    },
    tools: {
      type: 'array',
      minItems: 1,
      maxItems: 500,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['toolName', 'displayName'],
        properties: toolProperties,
      },
    },
  },
} as const;

const publicEntryProperties = {
  id: { type: 'string', format: 'uuid', description: 'The public id: stable across approved revisions' },
  slug: { type: 'string' },
  type: sourceType,
  name: { type: 'string' },
  description: { type: ['string', 'null'] },
  iconUrl: { type: ['string', 'null'] },
  monetizationStrategy: monetization,
  requiredUserParamsSchema: jsonObject,
  pricingEvents: { type: 'array', items: { $ref: 'MarketPricingEvent' } },
  tools: { type: 'array', items: { $ref: 'MarketToolDefinition' } },
} as const;

export const McpMarketPublicEntry = {
  $id: 'McpMarketPublicEntry',
  type: 'object',
  required: ['id', 'slug', 'type', 'name', 'monetizationStrategy', 'tools'],
  description:
    'An approved listing. Provider secrets, staticConfig, the source URL or document, ownership and review data are never shown.',
  properties: publicEntryProperties,
} as const;

export const McpMarketSubmission = {
  $id: 'McpMarketSubmission',
  type: 'object',
  required: ['id', 'slug', 'type', 'name', 'status', 'tools'],
  description: 'The owner\'s view. staticConfig shows its keys with every value masked as "********".',
  properties: {
    ...publicEntryProperties,
    id: { type: 'string', format: 'uuid', description: "This submission's id" },
    publicId: {
      type: 'string',
      format: 'uuid',
      description: "The listing's public id (GET /mcp-market/mcps/{id}); revisions share it",
    },
    live: { type: 'boolean', description: 'This submission is what the public listing shows' },
    status: submissionStatus,
    parentEntryId: { type: ['string', 'null'], format: 'uuid' },
    iconObjectKey: { type: ['string', 'null'] },
    remoteMcpUrl: { type: ['string', 'null'] },
    openapiBaseUrl: { type: ['string', 'null'] },
    openapiSpec: { type: ['object', 'null'] },
    staticConfig: jsonObject,
    sourceFingerprint: fingerprint,
    validationId: { type: 'string', format: 'uuid' },
    eventVerificationId: { type: ['string', 'null'], format: 'uuid' },
    discoveryCache: jsonObject,
    reviewReason: { type: ['string', 'null'], description: "The reviewer's reason of the last rejection or disabling" },
    approvedToolsHash: {
      type: ['string', 'null'],
      description: 'SHA-256 of the approved tool list (name, description, inputSchema), set at approval',
    },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    submittedAt: { type: ['string', 'null'], format: 'date-time' },
    reviewedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const MarketIdResponse = {
  $id: 'MarketIdResponse',
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', format: 'uuid' } },
} as const;

export const McpMarketSubmissionsResponse = {
  $id: 'McpMarketSubmissionsResponse',
  type: 'object',
  required: ['submissions', 'meta'],
  properties: {
    submissions: { type: 'array', items: { $ref: 'McpMarketSubmission' } },
    meta: { $ref: 'PaginationMeta' },
  },
} as const;

export const McpMarketListResponse = {
  $id: 'McpMarketListResponse',
  type: 'object',
  required: ['mcps', 'meta'],
  properties: { mcps: { type: 'array', items: { $ref: 'McpMarketPublicEntry' } }, meta: { $ref: 'PaginationMeta' } },
} as const;

export const SubmissionsQuery = paginationQuery(20);

export const McpMarketListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    q: {
      type: 'string',
      maxLength: 200,
      description: 'Full text over name, description and tool names (every word must match; the last as a prefix)',
    },
    monetizationStrategy: monetization,
    ...paginationQuery(20).properties,
  },
} as const;

export const ProviderEventChargeRequest = {
  $id: 'ProviderEventChargeRequest',
  type: 'object',
  additionalProperties: false,
  required: ['eventName'],
  properties: {
    eventName: {
      type: 'string',
      minLength: 1,
      maxLength: 128,
      description: 'Exact event name of the listing (or of the verification)',
    },
    count: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1, description: 'Units actually produced' },
    toolName: { type: ['string', 'null'], maxLength: 128 },
    metadata: { type: 'object', default: {}, maxProperties: 50, description: 'No secrets or personal data' },
  },
} as const;

const money = { type: 'number', format: 'double' } as const;

export const ProviderEventChargeResult = {
  $id: 'ProviderEventChargeResult',
  type: 'object',
  required: [
    'chargeId',
    'eventName',
    'requestedCount',
    'chargedCount',
    'chargeableWithinLimit',
    'eventChargeLimitReached',
    'unitPriceUsd',
    'totalChargedUsd',
    'commissionRate',
    'commissionUsd',
    'providerRevenueUsd',
    'meterEventId',
    'replayed',
  ],
  properties: {
    chargeId: { type: 'string', description: 'Stable charge id; the verification id when verification is true' },
    eventName: { type: 'string' },
    requestedCount: { type: 'integer' },
    chargedCount: {
      type: 'integer',
      description:
        "Units accepted (what the run's remaining hold pays for, at most requestedCount); process at most this many. In verification mode it equals requestedCount",
    },
    chargeableWithinLimit: {
      type: 'integer',
      description:
        'Units of this event the run can still pay for after this charge (verification mode: requestedCount)',
    },
    eventChargeLimitReached: {
      type: 'boolean',
      description: "True when chargeableWithinLimit is 0: the run's charge limit is used up",
    },
    unitPriceUsd: {
      ...money,
      description: "The entry's price per unit when the run opened; 0 in verification mode (nothing is billed)",
    },
    totalChargedUsd: { ...money, description: "chargedCount × unitPriceUsd: the consumer's debit" },
    commissionRate: { ...money, description: 'MARKET_COMMISSION_RATE' },
    commissionUsd: { ...money, description: "floor(total × commissionRate) in micro-USD: the platform's share" },
    providerRevenueUsd: { ...money, description: "total − commission, credited to the provider's wallet" },
    meterEventId: { type: 'string' },
    replayed: {
      type: 'boolean',
      description: 'True when the idempotency key was already processed: the original result is returned',
    },
    verification: { type: 'boolean', description: 'True for a verification call (no money moves)' },
  },
} as const;

export const AdminMarketReviewRequest = {
  $id: 'AdminMarketReviewRequest',
  type: 'object',
  additionalProperties: false,
  required: ['action'],
  properties: {
    action: { type: 'string', enum: ['approve', 'reject', 'disable'] },
    reason: { type: 'string', minLength: 1, maxLength: 2000, description: 'Required to reject; optional to disable' },
  },
} as const;

export const AdminMarketSubmissionsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: submissionStatus,
    q: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      description:
        "Search: submissions whose name or slug contains it (case-insensitive), or whose id or listing's public id is it",
    },
    ...paginationQuery(50).properties,
  },
} as const;
