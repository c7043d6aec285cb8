import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import { WorkflowFailedError } from '@temporalio/client';
import { findValidation, findValidValidationByFingerprint } from '../../db/repos/market-validations';
import { createEventVerification, findEventVerification } from '../../db/repos/market-event-verifications';
import { iconBelongsTo } from '../../db/repos/market-icons';
import {
  createSubmission,
  getOwnSubmission,
  listOwnSubmissions,
  replaceSubmission,
  submitForReview,
} from '../../db/repos/market-submissions';
import {
  findMcpSubmission,
  findMcpSubmissions,
  findPublicMcpEntry,
  mcpDetailsWriter,
  mcpMarketHooks,
  type McpSubmission,
} from '../../db/repos/market-mcp';
import { findApiKeyOwner } from '../../db/repos/market-tool-calls';
import { paginationMeta } from '../../db/repos/pagination';
import { seal } from '../../lib/crypto';
import { signChargeToken } from '../../lib/market/charge-token';
import type { Discovery, DiscoveryRequest } from '../../lib/market/discovery';
import { ruleBroken } from '../../lib/market/errors';
import type { MonetizationStrategy } from '../../lib/market/listing';
import {
  prepareMcpSubmission,
  type McpSubmissionRequest,
  type PreparedMcpSubmission,
} from '../../lib/market/mcp-submission';
import { OpenApiDocumentError, readOpenApiDocument } from '../../lib/tools/openapi-reader';
import { verificationComplete, type EventVerificationRecord } from '../../lib/market/records';
import { transition } from '../../lib/market/review-state';
import { requireSecureSourceUrl } from '../../lib/market/source-url';
import { McpCredentialRequest } from '../../lib/schemas/market-hosted';
import type { SourceParamValues } from '../../lib/tools/types';
import {
  MarketEventVerificationRequest,
  McpMarketDiscoveryRequest,
  McpMarketListQuery,
  McpMarketSubmissionRequest,
  SubmissionsQuery,
} from '../../lib/schemas/market';
import {
  DISCOVERY_PARAMS_AAD,
  type MarketSourceInput,
  type ValidateSourceInput,
  type ValidationView,
} from '../../lib/market/source-input';
import type { UserContext, UserState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError, notFound, unauthorized } from '../errors';
import { preflightUrl } from '../services/url-preflight';
import { issueEntryCredential } from '../services/market-credentials';
import { startAndWait } from '../services/workflow-call';
import { searchToolMarket } from '../services/market-catalog';
import { parseBody, parseQuery, parseUuidParam } from '../validation';
import {
  addRevisionRoute,
  apiBaseUrl,
  iconUrlFor,
  marketErrors,
  ownerSubmissionView,
  publicEntryView,
  publicOrigin,
  submissionCoreFields,
} from './market-common';

type DiscoveryBody = Omit<DiscoveryRequest, 'params'> & { params: Record<string, unknown> };

/** Refuses at the door what discovery would refuse: missing or doubled sources, plain http, internal literals. */
function checkDiscoveryRequest(body: DiscoveryBody, deps: ApiDeps): void {
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

function verificationView(v: EventVerificationRecord, base: string) {
  return {
    id: v.id,
    runId: v.runId,
    sourceFingerprint: v.sourceFingerprint,
    eventNames: v.eventNames,
    verifiedEventNames: v.verifiedEventNames,
    complete: verificationComplete(v),
    expiresAt: v.expiresAt.toISOString(),
    apiBaseUrl: base,
  };
}

/** /mcp-market: the tool market's provider side, its public catalogue and consumers' MCP client credentials (issue table in README "Selling tools"). */
export function mcpMarketRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>({ prefix: '/mcp-market' });
  router.use(marketErrors());
  const hooks = mcpMarketHooks(deps.config.masterKey);

  /** Starts a discovery or validation workflow and waits (bounded) for its answer. */
  async function runSourceWorkflow<T>(
    ctx: UserContext,
    kind: 'discover' | 'validate',
    args: MarketSourceInput | ValidateSourceInput,
    workflowId: string,
  ): Promise<T> {
    const user = ctx.state.user;
    const timeoutMs = deps.config.market.discoveryTimeoutMs;
    const outcome = await startAndWait<T>(
      deps.temporal,
      {
        workflowType: kind === 'discover' ? 'marketDiscoveryWorkflow' : 'marketValidationWorkflow',
        workflowId,
        taskQueue: deps.config.taskQueues.platform,
        args: [args],
        userId: user.userId,
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

  const sourceInput = (body: DiscoveryBody): MarketSourceInput => {
    const { params, ...request } = body;
    return {
      request,
      sealedParams: Object.keys(params).length
        ? seal(deps.config.masterKey, JSON.stringify(params), DISCOVERY_PARAMS_AAD)
        : null,
    };
  };

  router.post('/discover', async (ctx) => {
    const body = parseBody<DiscoveryBody>(McpMarketDiscoveryRequest, ctx.state.body);
    checkDiscoveryRequest(body, deps);
    ctx.body = await runSourceWorkflow<Discovery>(
      ctx,
      'discover',
      sourceInput(body),
      `market-discovery-${randomUUID()}`,
    );
  });

  router.post('/validate', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<DiscoveryBody>(McpMarketDiscoveryRequest, ctx.state.body);
    checkDiscoveryRequest(body, deps);
    const validationId = randomUUID();
    const input: ValidateSourceInput = { ...sourceInput(body), validationId, ownerId: user.userId };
    ctx.body = await runSourceWorkflow<ValidationView>(ctx, 'validate', input, `market-validation-${validationId}`);
  });

  router.post('/event-verifications', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<{ sourceFingerprint: string; eventNames: string[] }>(
      MarketEventVerificationRequest,
      ctx.state.body,
    );
    const validation = await findValidValidationByFingerprint(deps.db, user.userId, body.sourceFingerprint);
    if (!validation)
      throw ruleBroken(
        'validation_required',
        'No valid, unexpired validation of this account has that sourceFingerprint; validate the source first',
        'body/sourceFingerprint',
      );
    const verification = await createEventVerification(deps.db, {
      ownerId: user.userId,
      sourceFingerprint: body.sourceFingerprint,
      eventNames: body.eventNames,
      ttlMs: deps.config.market.eventVerificationTtlMs,
    });
    const chargeToken = signChargeToken(deps.config.market.chargeTokenKey, {
      kind: 'verification',
      runId: verification.runId,
      providerId: user.userId,
      sourceFingerprint: verification.sourceFingerprint,
      exp: verification.expiresAt.getTime(),
    });
    ctx.status = 201;
    ctx.body = { ...verificationView(verification, apiBaseUrl(ctx, deps)), chargeToken };
  });

  router.get('/event-verifications/:id', async (ctx) => {
    const user = ctx.state.user;
    const verification = await findEventVerification(deps.db, user.userId, parseUuidParam('id', ctx.params.id));
    if (!verification) throw notFound('Event verification');
    ctx.body = verificationView(verification, apiBaseUrl(ctx, deps));
  });

  /** Loads what the rules read (only the caller's records) and checks the submission. */
  async function prepare(ctx: UserContext, body: McpSubmissionRequest): Promise<PreparedMcpSubmission> {
    const user = ctx.state.user;
    const [validation, verification, iconOwned] = await Promise.all([
      findValidation(deps.db, user.userId, body.validationId),
      body.eventVerificationId ? findEventVerification(deps.db, user.userId, body.eventVerificationId) : null,
      body.iconObjectKey ? iconBelongsTo(deps.db, user.userId, body.iconObjectKey) : false,
    ]);
    return prepareMcpSubmission(
      body,
      { validation, verification, iconOwned, policy: deps.policy, now: new Date() },
      iconUrlFor(ctx, deps),
    );
  }

  const ownView = async (ctx: UserContext, id: string) => {
    const user = ctx.state.user;
    const submission = await findMcpSubmission(deps.db, id, user.userId);
    if (!submission) throw notFound('Submission');
    return ownerSubmissionView(submission, deps, iconUrlFor(ctx, deps));
  };

  router.post('/submissions', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<McpSubmissionRequest>(McpMarketSubmissionRequest, ctx.state.body);
    const prepared = await prepare(ctx, body);
    const id = await createSubmission(deps.db, {
      market: 'mcp',
      ownerId: user.userId,
      fields: submissionCoreFields(prepared),
      writeDetails: mcpDetailsWriter(deps.config.masterKey, prepared),
      draftSlugTtlMs: deps.config.market.draftSlugTtlMs,
    });
    ctx.status = 201;
    ctx.body = await ownView(ctx, id);
  });

  router.get('/submissions', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<{ page: number; pageSize: number }>(SubmissionsQuery, ctx.query);
    const { rows, total } = await listOwnSubmissions(deps.db, 'mcp', user.userId, page);
    const details = await findMcpSubmissions(
      deps.db,
      rows.map((r) => r.id),
    );
    const iconUrl = iconUrlFor(ctx, deps);
    ctx.body = {
      submissions: rows
        .map((r) => details.get(r.id))
        .filter((s): s is McpSubmission => !!s)
        .map((s) => ownerSubmissionView(s, deps, iconUrl)),
      meta: paginationMeta(page, total),
    };
  });

  router.get('/submissions/:id', async (ctx) => {
    ctx.body = await ownView(ctx, parseUuidParam('id', ctx.params.id));
  });

  router.put('/submissions/:id', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    const current = await getOwnSubmission(deps.db, 'mcp', user.userId, id);
    transition('update', current.status);
    const body = parseBody<McpSubmissionRequest>(McpMarketSubmissionRequest, ctx.state.body);
    const prepared = await prepare(ctx, body);
    await replaceSubmission(deps.db, {
      market: 'mcp',
      ownerId: user.userId,
      id,
      fields: submissionCoreFields(prepared),
      writeDetails: mcpDetailsWriter(deps.config.masterKey, prepared),
      draftSlugTtlMs: deps.config.market.draftSlugTtlMs,
    });
    ctx.body = await ownView(ctx, id);
  });

  router.post('/submissions/:id/submit', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    await submitForReview(deps.db, 'mcp', user.userId, id, { draftSlugTtlMs: deps.config.market.draftSlugTtlMs });
    ctx.body = await ownView(ctx, id);
  });

  addRevisionRoute(router, deps, 'mcp', hooks);

  router.get('/mcps', async (ctx) => {
    const query = parseQuery<{
      q?: string;
      monetizationStrategy?: MonetizationStrategy;
      page: number;
      pageSize: number;
    }>(McpMarketListQuery, ctx.query);
    const { rows, total } = await searchToolMarket(
      deps.db,
      { q: query.q, monetizationStrategy: query.monetizationStrategy },
      query,
    );
    const iconUrl = iconUrlFor(ctx, deps);
    ctx.body = { mcps: rows.map((row) => publicEntryView(row, iconUrl)), meta: paginationMeta(query, total) };
  });

  router.get('/mcps/:id', async (ctx) => {
    const entry = await findPublicMcpEntry(deps.db, parseUuidParam('id', ctx.params.id));
    if (!entry) throw notFound('Market entry');
    ctx.body = publicEntryView(entry, iconUrlFor(ctx, deps));
  });

  /** MCP client credentials for the hosted endpoint of a live entry (the consumer side). */
  router.post('/mcps/:id/credentials', async (ctx) => {
    const user = ctx.state.user;
    const entryId = parseUuidParam('id', ctx.params.id);
    const body = parseBody<{ params: SourceParamValues; maxTotalUsdPerRun?: number; maxRunChargeUsd?: number }>(
      McpCredentialRequest,
      ctx.state.body,
    );
    const issued = await issueEntryCredential(deps, {
      userId: user.userId,
      entryId,
      params: body.params,
      maxTotalUsdPerRun: body.maxTotalUsdPerRun,
      maxRunChargeUsd: body.maxRunChargeUsd,
      apiOrigin: publicOrigin(ctx, deps),
      apiKeyId: async () => {
        const key = await findApiKeyOwner(deps.db, ctx.get('x-api-key'));
        if (!key || key.userId !== user.userId) throw unauthorized();
        return key.apiKeyId;
      },
    });
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = issued;
  });

  return router;
}
