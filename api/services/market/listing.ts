import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import type { Db } from '../../../db/connect';
import { createEventVerification, findEventVerification } from '../../../db/repos/market-event-verifications';
import { iconBelongsTo } from '../../../db/repos/market-icons';
import { findValidation, findValidValidationByFingerprint } from '../../../db/repos/market-validations';
import type { Config } from '../../../lib/config';
import { seal } from '../../../lib/crypto';
import { signChargeToken } from '../../../lib/market/charge-token';
import { DiscoveryError, type Discovery, type DiscoveryRequest } from '../../../lib/market/discovery';
import { ruleBroken } from '../../../lib/market/errors';
import {
  prepareMcpSubmission,
  type McpSubmissionRequest,
  type PreparedMcpSubmission,
} from '../../../lib/market/mcp-submission';
import { verificationComplete, type EventVerificationRecord } from '../../../lib/market/records';
import { runtimeDiscover } from '../../../lib/market/runtime-discover';
import { requireSecureSourceUrl } from '../../../lib/market/source-url';
import {
  DISCOVERY_PARAMS_AAD,
  type MarketSourceInput,
  type ValidateSourceInput,
  type ValidationView,
} from '../../../lib/market/source-input';
import type { NetworkPolicy } from '../../../lib/net/ssrf';
import { OpenApiDocumentError, readOpenApiDocument } from '../../../lib/tools/openapi/reader';
import {
  createRevision,
  createSubmission,
  deleteSubmission,
  getOwnSubmission,
  replaceSubmission,
  submitForReview,
} from '../../../db/repos/market-submissions';
import { mcpDetailsWriter, mcpMarketHooks } from '../../../db/repos/market-mcp';
import { transition } from '../../../lib/market/review-state';
import { MarketEventVerificationRequest, McpMarketSubmissionRequest } from '../../../lib/schemas/market';
import { ApiError } from '../../errors';
import { submissionCoreFields } from './submission-fields';
import { parseBody } from '../../validation';
import { preflightUrl } from '../shared/url-preflight';
import { startAndWait } from '../shared/start-and-wait';

/**
 * A tool-market listing's first steps, for the REST routes (/mcp-market/discover, /validate,
 * /submissions) and the console's listing wizard alike: discover or validate a source through its
 * workflow, and check a submission against the caller's own validation and verification.
 */
export interface ListingDeps {
  db: Db;
  temporal: Client;
  config: Config;
  policy: NetworkPolicy;
}

export type DiscoveryBody = Omit<DiscoveryRequest, 'params'> & { params: Record<string, unknown> };

/** Refuses at the door what discovery would refuse: missing or doubled sources, plain http, internal literals. */
export function checkDiscoveryRequest(body: DiscoveryBody, deps: Pick<ListingDeps, 'policy'>): void {
  const secure = (value: string, field: string) => {
    requireSecureSourceUrl(value, field, deps.policy);
    try {
      preflightUrl(field, value, deps.policy);
    } catch (err) {
      if (err instanceof ApiError) throw new ApiError(400, 'ssrf_blocked', err.message, err.details);
      throw err;
    }
  };
  if (body.type === 'remote_mcp') {
    if (!body.url)
      throw ruleBroken('source_required', 'url (the HTTPS MCP endpoint) is required for remote_mcp', 'body/url');
    secure(body.url, 'url');
    return;
  }
  const given = [
    body.url ? 'url' : null,
    body.spec != null ? 'spec' : null,
    typeof body.specText === 'string' ? 'specText' : null,
  ].filter(Boolean);
  if (given.length === 0)
    throw ruleBroken('source_required', 'Give the OpenAPI document as spec, specText or url', 'body/spec');
  if (given.length > 1)
    throw ruleBroken(
      'source_conflict',
      `Give the OpenAPI document once (got ${given.join(' and ')})`,
      `body/${given[1]}`,
    );
  if (body.url) secure(body.url, 'url');
  if (body.openapiBaseUrl) secure(body.openapiBaseUrl, 'openapiBaseUrl');
  if (!body.url) {
    try {
      readOpenApiDocument({ spec: body.spec, specText: body.specText });
    } catch (err) {
      if (err instanceof OpenApiDocumentError)
        throw ruleBroken('invalid_openapi_document', err.message, body.spec != null ? 'body/spec' : 'body/specText');
      throw err;
    }
  }
}

/**
 * The ApplicationFailure an activity threw for a refused or unreachable source, if that is why the
 * workflow failed (DiscoveryError at once; DiscoveryRetryable once the retries are spent).
 */
function discoveryFailure(err: unknown): ApiError | null {
  for (let cause: unknown = err; cause; cause = (cause as { cause?: unknown }).cause) {
    const failure = cause as { type?: string; details?: unknown[]; message?: string };
    if (failure.type === 'DiscoveryError' || failure.type === 'DiscoveryRetryable') {
      const detail = (failure.details?.[0] ?? {}) as { code?: string; status?: number };
      return new ApiError(
        detail.status ?? 400,
        detail.code ?? 'invalid_source',
        failure.message ?? 'The source was refused',
      );
    }
  }
  return null;
}

/** Starts a discovery or validation workflow and waits (bounded) for its answer. */
async function runSourceWorkflow<T>(
  deps: ListingDeps,
  userId: string,
  kind: 'discover' | 'validate',
  args: MarketSourceInput | ValidateSourceInput,
  workflowId: string,
): Promise<T> {
  const timeoutMs = deps.config.market.discoveryTimeoutMs;
  const outcome = await startAndWait<T>(
    deps.temporal,
    {
      workflowType: kind === 'discover' ? 'marketDiscoveryWorkflow' : 'marketValidationWorkflow',
      workflowId,
      taskQueue: deps.config.taskQueues.platform,
      args: [args],
      userId,
      kind: kind === 'discover' ? 'market-discovery' : 'market-validation',
    },
    {
      waitMs: timeoutMs,
      cancelOnTimeout: true,
      failure: (err: unknown) =>
        discoveryFailure(err) ??
        (err instanceof WorkflowFailedError
          ? new ApiError(502, 'discovery_failed', 'Discovering the source failed after retries; try again later')
          : undefined),
    },
  );
  if (!outcome.finished)
    throw new ApiError(504, 'discovery_timeout', `The source did not answer within ${Math.round(timeoutMs / 1000)}s`);
  return outcome.result;
}

function sourceInput(deps: ListingDeps, body: DiscoveryBody): MarketSourceInput {
  const { params, ...request } = body;
  return {
    request,
    sealedParams: Object.keys(params).length
      ? seal(deps.config.masterKey, JSON.stringify(params), DISCOVERY_PARAMS_AAD)
      : null,
  };
}

/** POST /mcp-market/discover: what the source offers (nothing is stored). */
export async function discoverSource(deps: ListingDeps, userId: string, body: DiscoveryBody): Promise<Discovery> {
  checkDiscoveryRequest(body, deps);
  return runSourceWorkflow<Discovery>(
    deps,
    userId,
    'discover',
    sourceInput(deps, body),
    `market-discovery-${randomUUID()}`,
  );
}

/** POST /mcp-market/validate: discovers the source and stores its validation report under the caller. */
export async function validateSource(deps: ListingDeps, userId: string, body: DiscoveryBody): Promise<ValidationView> {
  checkDiscoveryRequest(body, deps);
  const validationId = randomUUID();
  const input: ValidateSourceInput = { ...sourceInput(deps, body), validationId, ownerId: userId };
  return runSourceWorkflow<ValidationView>(deps, userId, 'validate', input, `market-validation-${validationId}`);
}

/** Loads what the rules read (only the caller's records) and checks the submission. */
export async function prepareSubmission(
  deps: ListingDeps,
  userId: string,
  body: McpSubmissionRequest,
  iconUrl: (key: string) => string,
): Promise<PreparedMcpSubmission> {
  const [validation, verification, iconOwned] = await Promise.all([
    findValidation(deps.db, userId, body.validationId),
    body.eventVerificationId ? findEventVerification(deps.db, userId, body.eventVerificationId) : null,
    body.iconObjectKey ? iconBelongsTo(deps.db, userId, body.iconObjectKey) : false,
  ]);
  return prepareMcpSubmission(
    body,
    { validation, verification, iconOwned, policy: deps.policy, now: new Date() },
    iconUrl,
  );
}

/** MarketEventVerification: what GET /mcp-market/event-verifications/{id} answers. */
export function eventVerificationView(v: EventVerificationRecord, apiBaseUrl: string) {
  return {
    id: v.id,
    runId: v.runId,
    sourceFingerprint: v.sourceFingerprint,
    eventNames: v.eventNames,
    verifiedEventNames: v.verifiedEventNames,
    complete: verificationComplete(v),
    expiresAt: v.expiresAt.toISOString(),
    apiBaseUrl,
  };
}

export type EventVerificationView = ReturnType<typeof eventVerificationView>;

/**
 * POST /mcp-market/event-verifications (and the wizard's "events to verify" step): a verification
 * run for the caller's valid validation with that fingerprint, and the charge token its server
 * sends with each test charge (only in this answer: a secret). `apiBaseUrl` is where charges go.
 */
export async function startEventVerification(
  deps: ListingDeps,
  userId: string,
  body: unknown,
  apiBaseUrl: string,
): Promise<EventVerificationView & { chargeToken: string }> {
  const request = parseBody(MarketEventVerificationRequest, body);
  const validation = await findValidValidationByFingerprint(deps.db, userId, request.sourceFingerprint);
  if (!validation)
    throw ruleBroken(
      'validation_required',
      'No valid, unexpired validation of this account has that sourceFingerprint; validate the source first',
      'body/sourceFingerprint',
    );
  const verification = await createEventVerification(deps.db, {
    ownerId: userId,
    sourceFingerprint: request.sourceFingerprint,
    eventNames: request.eventNames,
    ttlMs: deps.config.market.eventVerificationTtlMs,
  });
  const chargeToken = signChargeToken(deps.config.market.chargeTokenKey, {
    kind: 'verification',
    runId: verification.runId,
    providerId: userId,
    sourceFingerprint: verification.sourceFingerprint,
    exp: verification.expiresAt.getTime(),
  });
  return { ...eventVerificationView(verification, apiBaseUrl), chargeToken };
}

/**
 * The OpenAPI document at `url`, read as discovery reads it (the same guarded fetch and reader), so
 * a submission of a source validated from its URL carries the document the fingerprint covers; a
 * document changed since its validation gives another fingerprint and is refused as such.
 */
async function openApiDocumentAt(
  deps: ListingDeps,
  url: string,
  openapiBaseUrl: string | null,
): Promise<Record<string, unknown>> {
  checkDiscoveryRequest({ type: 'openapi', url, openapiBaseUrl, params: {} }, deps);
  try {
    const result = await runtimeDiscover({ policy: deps.policy })({ type: 'openapi', url, openapiBaseUrl });
    if (!result.openapiDocument) throw new ApiError(400, 'invalid_source', 'The OpenAPI document could not be read');
    return result.openapiDocument;
  } catch (err) {
    if (err instanceof DiscoveryError) throw new ApiError(err.status, err.code, err.message);
    throw err;
  }
}

const slugTtl = (deps: ListingDeps) => ({ draftSlugTtlMs: deps.config.market.draftSlugTtlMs });

/**
 * POST /mcp-market/submissions: the body checked (schema, then prepareSubmission's rules against the
 * caller's own validation and verification) and stored as a new draft of the caller. Returns its id.
 */
export async function createListingDraft(
  deps: ListingDeps,
  userId: string,
  body: unknown,
  iconUrl: (key: string) => string,
): Promise<string> {
  const request = parseBody(McpMarketSubmissionRequest, body);
  const prepared = await prepareSubmission(deps, userId, request, iconUrl);
  return createSubmission(deps.db, {
    market: 'mcp',
    ownerId: userId,
    fields: submissionCoreFields(prepared),
    writeDetails: mcpDetailsWriter(deps.config.masterKey, prepared),
    ...slugTtl(deps),
  });
}

/**
 * PUT /mcp-market/submissions/{id}: full replacement of the caller's draft or rejected submission
 * (404 for another account's, 409 invalid_state in any other status, both before the body is read),
 * checked as a new one is.
 */
export async function replaceListingDraft(
  deps: ListingDeps,
  userId: string,
  id: string,
  body: unknown,
  iconUrl: (key: string) => string,
): Promise<void> {
  const current = await getOwnSubmission(deps.db, 'mcp', userId, id);
  transition('update', current.status);
  const request = parseBody(McpMarketSubmissionRequest, body);
  const prepared = await prepareSubmission(deps, userId, request, iconUrl);
  await replaceSubmission(deps.db, {
    market: 'mcp',
    ownerId: userId,
    id,
    fields: submissionCoreFields(prepared),
    writeDetails: mcpDetailsWriter(deps.config.masterKey, prepared),
    ...slugTtl(deps),
  });
}

/** POST /mcp-market/submissions/{id}/submit: the caller's draft goes to the review queue. */
export async function submitListing(deps: ListingDeps, userId: string, id: string): Promise<void> {
  await submitForReview(deps.db, 'mcp', userId, id, slugTtl(deps));
}

/**
 * POST /mcp-market/submissions/{id}/revisions: a new draft copying the caller's live approved entry
 * (409 invalid_state for any other). Returns the revision's id.
 */
export function startListingRevision(deps: ListingDeps, userId: string, id: string): Promise<string> {
  return createRevision(deps.db, 'mcp', userId, id, mcpMarketHooks(deps.config.masterKey));
}

/** The body with the OpenAPI document read from `openapiDocumentUrl` when it carries none. */
async function withOpenApiDocument(
  deps: ListingDeps,
  body: Record<string, unknown>,
  options: { openapiDocumentUrl?: string },
): Promise<Record<string, unknown>> {
  if (
    !options.openapiDocumentUrl ||
    body.type !== 'openapi' ||
    body.openapiSpec != null ||
    body.openapiSpecText != null
  )
    return body;
  return {
    ...body,
    openapiSpec: await openApiDocumentAt(
      deps,
      options.openapiDocumentUrl,
      typeof body.openapiBaseUrl === 'string' ? body.openapiBaseUrl : null,
    ),
  };
}

/**
 * POST /mcp-market/submissions then POST /submissions/{id}/submit, in one step (the console's
 * listing wizard): the body is checked as the REST route checks it, the submission is created under
 * the caller and sent to review. Returns the submission's id. With `openapiDocumentUrl` (an OpenAPI
 * source validated from its URL, the body without a document) the document is read from there first.
 */
export async function createAndSubmitListing(
  deps: ListingDeps,
  userId: string,
  body: Record<string, unknown>,
  iconUrl: (key: string) => string,
  options: { openapiDocumentUrl?: string } = {},
): Promise<string> {
  const id = await createListingDraft(deps, userId, await withOpenApiDocument(deps, body, options), iconUrl);
  await submitListing(deps, userId, id);
  return id;
}

/**
 * POST /submissions/{parentId}/revisions, PUT /submissions/{revisionId} and POST …/submit, in one
 * step (the console's listing wizard in revision mode): the revision of the caller's live approved
 * entry gets `body` and goes to review. When the body is refused (or the draft cannot be submitted)
 * the new draft is deleted again, so a failed attempt leaves nothing behind. Returns the revision's id.
 */
export async function reviseAndSubmitListing(
  deps: ListingDeps,
  userId: string,
  parentId: string,
  body: Record<string, unknown>,
  iconUrl: (key: string) => string,
  options: { openapiDocumentUrl?: string } = {},
): Promise<string> {
  const complete = await withOpenApiDocument(deps, body, options);
  const id = await startListingRevision(deps, userId, parentId);
  try {
    await replaceListingDraft(deps, userId, id, complete, iconUrl);
    await submitListing(deps, userId, id);
  } catch (err) {
    await deleteSubmission(deps.db, 'mcp', userId, id).catch(() => undefined);
    throw err;
  }
  return id;
}
