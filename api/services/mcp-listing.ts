import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import type { Db } from '../../db/connect';
import { findEventVerification } from '../../db/repos/market-event-verifications';
import { iconBelongsTo } from '../../db/repos/market-icons';
import { findValidation } from '../../db/repos/market-validations';
import type { Config } from '../../lib/config';
import { seal } from '../../lib/crypto';
import type { Discovery, DiscoveryRequest } from '../../lib/market/discovery';
import { ruleBroken } from '../../lib/market/errors';
import {
  prepareMcpSubmission,
  type McpSubmissionRequest,
  type PreparedMcpSubmission,
} from '../../lib/market/mcp-submission';
import { requireSecureSourceUrl } from '../../lib/market/source-url';
import {
  DISCOVERY_PARAMS_AAD,
  type MarketSourceInput,
  type ValidateSourceInput,
  type ValidationView,
} from '../../lib/market/source-input';
import type { NetworkPolicy } from '../../lib/net/ssrf';
import { OpenApiDocumentError, readOpenApiDocument } from '../../lib/tools/openapi-reader';
import { createSubmission, submitForReview } from '../../db/repos/market-submissions';
import { mcpDetailsWriter } from '../../db/repos/market-mcp';
import { McpMarketSubmissionRequest } from '../../lib/schemas/market';
import { ApiError } from '../errors';
import { submissionCoreFields } from '../routes/market-common';
import { parseBody } from '../validation';
import { preflightUrl } from './url-preflight';
import { startAndWait } from './workflow-call';

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

/**
 * POST /mcp-market/submissions then POST /submissions/{id}/submit, in one step (the console's
 * listing wizard): the body is checked as the REST route checks it, the submission is created under
 * the caller and sent to review. Returns the submission's id.
 */
export async function createAndSubmitListing(
  deps: ListingDeps,
  userId: string,
  body: unknown,
  iconUrl: (key: string) => string,
): Promise<string> {
  const request = parseBody<McpSubmissionRequest>(McpMarketSubmissionRequest, body);
  const prepared = await prepareSubmission(deps, userId, request, iconUrl);
  const id = await createSubmission(deps.db, {
    market: 'mcp',
    ownerId: userId,
    fields: submissionCoreFields(prepared),
    writeDetails: mcpDetailsWriter(deps.config.masterKey, prepared),
    draftSlugTtlMs: deps.config.market.draftSlugTtlMs,
  });
  await submitForReview(deps.db, 'mcp', userId, id, { draftSlugTtlMs: deps.config.market.draftSlugTtlMs });
  return id;
}
