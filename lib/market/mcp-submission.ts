import type { FromSchema } from 'json-schema-to-ts';
import type { McpMarketSubmissionRequest } from '../schemas/market';
import type { NetworkPolicy } from '../net/ssrf';
import { canonicalJson } from './canonical-json';
import type { Discovery, MarketSourceType } from './discovery';
import { MarketRuleError, ruleBroken } from './errors';
import { sourceFingerprint, type SourceIdentity } from './fingerprint';
import { usdToMicros } from '../money';
import type { MonetizationStrategy, StoredMarketTool, StoredPricingEvent } from './listing';
import { OpenApiDocumentError, readOpenApiDocument } from '../tools/openapi/reader';
import { scanInstructions, scanText, type PoisoningFinding } from './poisoning';
import { verificationComplete, type EventVerificationRecord, type ValidationRecord } from './records';
import { slugFor } from './slug';
import { requireSecureSourceUrl } from './source-url';
import { checkUserParamsSchema } from './user-params-schema';

/** A body McpMarketSubmissionRequest accepts, as ajv leaves it (a property with a default is always there). */
export type McpSubmissionRequest = FromSchema<typeof McpMarketSubmissionRequest>;

/** Everything a submission stores, checked and normalised (staticConfig still plain: the repository seals it). */
export interface PreparedMcpSubmission {
  slug: string;
  type: MarketSourceType;
  name: string;
  description: string | null;
  iconUrl: string | null;
  iconObjectKey: string | null;
  remoteMcpUrl: string | null;
  openapiBaseUrl: string | null;
  openapiSpec: Record<string, unknown> | null;
  staticConfig: Record<string, unknown>;
  requiredUserParamsSchema: Record<string, unknown>;
  monetizationStrategy: MonetizationStrategy;
  pricingEvents: StoredPricingEvent[];
  tools: StoredMarketTool[];
  sourceFingerprint: string;
  validationId: string;
  eventVerificationId: string | null;
  /** The validated discovery (tools, parameters, source metadata); what the client sent as discoveryCache is not trusted. */
  discoveryCache: Discovery;
  /** Tool names and display names: the listing's full-text search reads them. */
  searchText: string;
}

export interface SubmissionContext {
  /** The caller's validation with that id, or null (unknown or another user's). */
  validation: ValidationRecord | null;
  /** The caller's event verification with that id, or null. */
  verification: EventVerificationRecord | null;
  /** Whether iconObjectKey names an icon the caller uploaded. */
  iconOwned: boolean;
  policy: NetworkPolicy;
  now: Date;
}

function sourceOf(
  request: McpSubmissionRequest,
  policy: NetworkPolicy,
): { identity: SourceIdentity; spec: Record<string, unknown> | null } {
  if (request.type === 'remote_mcp') {
    if (!request.remoteMcpUrl)
      throw ruleBroken('source_required', 'remoteMcpUrl is required for a remote_mcp entry', 'body/remoteMcpUrl');
    requireSecureSourceUrl(request.remoteMcpUrl, 'remoteMcpUrl', policy);
    return { identity: { type: 'remote_mcp', url: request.remoteMcpUrl }, spec: null };
  }
  const hasSpec = request.openapiSpec !== undefined && request.openapiSpec !== null;
  const hasText = typeof request.openapiSpecText === 'string';
  if (!hasSpec && !hasText)
    throw ruleBroken(
      'source_required',
      'openapiSpec or openapiSpecText is required for an openapi entry',
      'body/openapiSpec',
    );
  if (hasSpec && hasText)
    throw ruleBroken(
      'source_conflict',
      'Send the OpenAPI document once: openapiSpec or openapiSpecText, not both',
      'body/openapiSpecText',
    );
  if (request.openapiBaseUrl) requireSecureSourceUrl(request.openapiBaseUrl, 'openapiBaseUrl', policy);
  let document: Record<string, unknown>;
  try {
    document = readOpenApiDocument({ spec: request.openapiSpec, specText: request.openapiSpecText });
  } catch (err) {
    if (err instanceof OpenApiDocumentError)
      throw ruleBroken('invalid_openapi_document', err.message, hasText ? 'body/openapiSpecText' : 'body/openapiSpec');
    throw err;
  }
  return { identity: { type: 'openapi', document, baseUrl: request.openapiBaseUrl ?? null }, spec: document };
}

/** Rule 5: a valid, unexpired validation of the caller whose fingerprint is the submitted source's. */
function checkValidation(
  request: McpSubmissionRequest,
  identity: SourceIdentity,
  context: SubmissionContext,
): ValidationRecord {
  const validation = context.validation;
  if (!validation)
    throw ruleBroken(
      'validation_not_found',
      'validationId does not name a validation of this account',
      'body/validationId',
    );
  if (validation.expiresAt <= context.now)
    throw ruleBroken(
      'validation_expired',
      `The validation expired at ${validation.expiresAt.toISOString()}; validate the source again`,
      'body/validationId',
    );
  if (validation.status !== 'valid')
    throw ruleBroken(
      'validation_not_valid',
      `The validation is ${validation.status}; only a valid source can be submitted`,
      'body/validationId',
    );
  if (request.sourceFingerprint !== validation.sourceFingerprint) {
    throw ruleBroken(
      'fingerprint_mismatch',
      'sourceFingerprint is not the fingerprint of the referenced validation',
      'body/sourceFingerprint',
    );
  }
  if (
    request.type !== validation.type ||
    sourceFingerprint(identity, validation.discovery.tools) !== validation.sourceFingerprint
  ) {
    throw ruleBroken(
      'fingerprint_mismatch',
      'The submitted source (type, URL or OpenAPI document and base URL) is not the validated one; validate this source and use its fingerprint',
      request.type === 'remote_mcp' ? 'body/remoteMcpUrl' : 'body/openapiSpec',
    );
  }
  return validation;
}

function priceMicros(usd: number | undefined, path: string): number | null {
  if (usd === undefined) return null;
  const micros = usdToMicros(usd);
  if (micros < 0) throw ruleBroken('invalid_price', 'Prices are at least 0', path);
  return micros;
}

/**
 * What a provider writes about its listing is scanned like upstream text (poisoning.ts): each tool's
 * displayName (served as the MCP tool title) and description (served as its description) as tool
 * text, the listing's name and description and the pricing events' titles and descriptions (served to
 * the model in tools/list pricing metadata) as text for the model. A finding refuses the submission
 * (400 tool_poisoning, one detail per finding) — the validation vouched for the upstream's text only.
 */
function checkProviderText(
  request: McpSubmissionRequest,
  tools: StoredMarketTool[],
  events: StoredPricingEvent[],
  validation: ValidationRecord,
): void {
  const siblingNames = validation.discovery.tools.map((tool) => tool.name);
  const details: { path: string; message: string }[] = [];
  const report = (path: string, findings: PoisoningFinding[]) => {
    for (const finding of findings)
      details.push({ path, message: `${finding.code}: ${finding.message}: "${finding.excerpt}"` });
  };
  report('body/name', scanInstructions(request.name, 'name', siblingNames));
  if (request.description)
    report('body/description', scanInstructions(request.description, 'description', siblingNames));
  tools.forEach((tool, i) => {
    const context = { selfName: tool.toolName, siblingNames };
    report(`body/tools/${i}/displayName`, scanText(tool.displayName, 'displayName', context));
    if (tool.providerDescription)
      report(`body/tools/${i}/description`, scanText(tool.providerDescription, 'description', context));
  });
  events.forEach((event, i) => {
    if (event.title) report(`body/pricingEvents/${i}/title`, scanInstructions(event.title, 'title', siblingNames));
    if (event.description)
      report(`body/pricingEvents/${i}/description`, scanInstructions(event.description, 'description', siblingNames));
  });
  if (details.length) {
    throw new MarketRuleError(
      400,
      'tool_poisoning',
      `What the listing says fails the tool-poisoning scan (${details[0].path}: ${details[0].message})`,
      details,
    );
  }
}

/**
 * The listed tools: a non-empty subset of the validated ones, their input schemas as discovered. A
 * provider may describe a tool in its own words (description; null, blank or omitted shows the
 * upstream's); the upstream's validated description is kept apart for the rug-pull gate.
 */
function checkTools(request: McpSubmissionRequest, validation: ValidationRecord): StoredMarketTool[] {
  const discovered = new Map(validation.discovery.tools.map((tool) => [tool.name, tool]));
  const given =
    request.tools ?? validation.discovery.tools.map((tool) => ({ toolName: tool.name, displayName: tool.name }));
  if (given.length === 0)
    throw ruleBroken(
      'tools_required',
      'List at least one tool (or omit tools to list every validated tool)',
      'body/tools',
    );
  const seen = new Set<string>();
  const fixed = request.monetizationStrategy === 'tool_call_fixed';
  return given.map((tool, i) => {
    const at = `body/tools/${i}`;
    const source = discovered.get(tool.toolName);
    if (!source)
      throw ruleBroken('unknown_tool', `"${tool.toolName}" is not a tool of the validated source`, `${at}/toolName`);
    if (seen.has(tool.toolName))
      throw ruleBroken('duplicate_tool', `"${tool.toolName}" is listed twice`, `${at}/toolName`);
    seen.add(tool.toolName);
    const t = tool as NonNullable<McpSubmissionRequest['tools']>[number];
    if (t.inputSchema !== undefined && canonicalJson(t.inputSchema) !== canonicalJson(source.inputSchema ?? {})) {
      throw ruleBroken(
        'tool_definition_mismatch',
        `The inputSchema of "${tool.toolName}" differs from the validated source's; omit it or send it unchanged`,
        `${at}/inputSchema`,
      );
    }
    if (fixed && t.clientPriceUsd === undefined) {
      throw ruleBroken(
        'tool_price_required',
        `tool_call_fixed entries price every tool: clientPriceUsd of "${tool.toolName}" is missing`,
        `${at}/clientPriceUsd`,
      );
    }
    const upstreamDescription = source.description ?? null;
    const written = typeof t.description === 'string' && t.description.trim() ? t.description : null;
    return {
      toolName: tool.toolName,
      displayName: tool.displayName,
      description: upstreamDescription,
      providerDescription: written !== null && written !== upstreamDescription ? written : null,
      inputSchema: source.inputSchema ?? null,
      ...(source.listing && { listing: source.listing }),
      clientPriceMicros: fixed ? priceMicros(t.clientPriceUsd, `${at}/clientPriceUsd`) : null,
      providerRevenueMicros: fixed ? priceMicros(t.providerRevenueUsd, `${at}/providerRevenueUsd`) : null,
      isEnabled: t.isEnabled ?? true,
    };
  });
}

/** provider_event: priced events, each proven by a complete, unexpired verification of this source. */
function checkPricingEvents(
  request: McpSubmissionRequest,
  context: SubmissionContext,
): { events: StoredPricingEvent[]; verificationId: string | null } {
  if (request.monetizationStrategy !== 'provider_event') return { events: [], verificationId: null };
  const given = request.pricingEvents ?? [];
  if (given.length === 0)
    throw ruleBroken(
      'pricing_events_required',
      'provider_event entries need at least one pricing event',
      'body/pricingEvents',
    );
  const seen = new Set<string>();
  const events = given.map((event, i) => {
    const at = `body/pricingEvents/${i}`;
    if (seen.has(event.eventName))
      throw ruleBroken('duplicate_event_name', `The event "${event.eventName}" is listed twice`, `${at}/eventName`);
    seen.add(event.eventName);
    const unitPriceMicros = usdToMicros(event.unitPriceUsd);
    if (unitPriceMicros < 1)
      throw ruleBroken(
        'invalid_unit_price',
        'unitPriceUsd must be greater than 0 (at least 0.000001)',
        `${at}/unitPriceUsd`,
      );
    return {
      eventName: event.eventName,
      title: event.title ?? null,
      description: event.description ?? null,
      unitPriceMicros,
      providerRevenueMicros: priceMicros(event.providerRevenueUsd, `${at}/providerRevenueUsd`),
    };
  });
  if (!request.eventVerificationId)
    throw ruleBroken(
      'event_verification_required',
      'provider_event entries need eventVerificationId: verify every pricing event first',
      'body/eventVerificationId',
    );
  const verification = context.verification;
  const at = 'body/eventVerificationId';
  if (!verification)
    throw ruleBroken(
      'event_verification_not_found',
      'eventVerificationId does not name an event verification of this account',
      at,
    );
  if (verification.sourceFingerprint !== request.sourceFingerprint)
    throw ruleBroken('event_verification_mismatch', 'The event verification is for another source fingerprint', at);
  if (verification.expiresAt <= context.now)
    throw ruleBroken(
      'event_verification_expired',
      `The event verification expired at ${verification.expiresAt.toISOString()}`,
      at,
    );
  if (!verificationComplete(verification)) {
    const missing = verification.eventNames.filter((name) => !verification.verifiedEventNames.includes(name));
    throw ruleBroken(
      'event_verification_incomplete',
      `The event verification is not complete; still unverified: ${missing.join(', ')}`,
      at,
    );
  }
  const unverified = events.filter((event) => !verification.verifiedEventNames.includes(event.eventName));
  if (unverified.length) {
    throw ruleBroken(
      'event_not_verified',
      `Pricing events not covered by the verification: ${unverified.map((e) => e.eventName).join(', ')}`,
      'body/pricingEvents',
    );
  }
  return { events, verificationId: verification.id };
}

function checkIcon(
  request: McpSubmissionRequest,
  context: SubmissionContext,
  iconUrlFor: (key: string) => string,
): { iconUrl: string | null; iconObjectKey: string | null } {
  if (request.iconObjectKey) {
    if (!context.iconOwned)
      throw ruleBroken(
        'icon_not_found',
        'iconObjectKey does not name an icon this account uploaded (POST /market/icons)',
        'body/iconObjectKey',
      );
    return { iconObjectKey: request.iconObjectKey, iconUrl: iconUrlFor(request.iconObjectKey) };
  }
  if (request.iconUrl && !/^https:\/\//i.test(request.iconUrl))
    throw ruleBroken(
      'insecure_url',
      'iconUrl must be an https:// URL (or upload the icon and send iconObjectKey)',
      'body/iconUrl',
    );
  return { iconObjectKey: null, iconUrl: request.iconUrl ?? null };
}

/**
 * Checks a submission (create or full replacement) against every market rule and returns what to
 * store. Throws MarketRuleError (400 with a code naming the rule).
 */
export function prepareMcpSubmission(
  request: McpSubmissionRequest,
  context: SubmissionContext,
  iconUrlFor: (key: string) => string,
): PreparedMcpSubmission {
  const { identity, spec } = sourceOf(request, context.policy);
  const validation = checkValidation(request, identity, context);
  const tools = checkTools(request, validation);
  const { events, verificationId } = checkPricingEvents(request, context);
  checkProviderText(request, tools, events, validation);
  const slug = slugFor(request.slug, request.name);
  const icon = checkIcon(request, context, iconUrlFor);
  const requiredUserParamsSchema = request.requiredUserParamsSchema ?? {};
  checkUserParamsSchema(requiredUserParamsSchema);
  if (!request.name.trim())
    throw new MarketRuleError(400, 'validation_failed', 'name must not be blank', [
      { path: 'body/name', message: 'must not be blank' },
    ]);
  return {
    slug,
    type: request.type,
    name: request.name.trim(),
    description: request.description ?? null,
    ...icon,
    remoteMcpUrl: request.type === 'remote_mcp' ? request.remoteMcpUrl! : null,
    openapiBaseUrl: request.type === 'openapi' ? (request.openapiBaseUrl ?? null) : null,
    openapiSpec: spec,
    staticConfig: request.staticConfig ?? {},
    requiredUserParamsSchema,
    monetizationStrategy: request.monetizationStrategy,
    pricingEvents: events,
    tools,
    sourceFingerprint: validation.sourceFingerprint,
    validationId: validation.id,
    eventVerificationId: verificationId,
    discoveryCache: validation.discovery,
    searchText: tools
      .flatMap((t) => [t.toolName, t.displayName === t.toolName ? '' : t.displayName])
      .filter(Boolean)
      .join(' '),
  };
}
