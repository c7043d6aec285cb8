import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import type { Config } from '../../lib/config';
import { unseal } from '../../lib/crypto';
import {
  DiscoveryError,
  normalisedDiscovery,
  type Discover,
  type Discovery,
  type DiscoveryResult,
} from '../../lib/market/discovery';
import type { SourceIdentity } from '../../lib/market/fingerprint';
import { readOpenApiDocument, OpenApiDocumentError } from '../../lib/tools/openapi/reader';
import { recordValidation, type StoredValidation } from '../../db/repos/market-validations';
import { createLlmClient, OPENAI_DEFAULT_BASE_URL } from '../../lib/llm/client';
import { reviewSourceWithLlm, type LlmReview } from '../../lib/market/llm-review';
import {
  DISCOVERY_PARAMS_AAD,
  type MarketSourceInput,
  type ValidateSourceInput,
  type ValidationView,
} from '../../lib/market/source-input';

/**
 * Failures the API turns into its answer, details [{ code, status }]: type DiscoveryError (final), or
 * DiscoveryRetryable (the upstream may come back; the workflow tries again, then the API answers it).
 */
function asFailure(err: unknown): unknown {
  if (err instanceof DiscoveryError) {
    const details = { code: err.code, status: err.status };
    return err.retryable
      ? ApplicationFailure.retryable(err.message, 'DiscoveryRetryable', details)
      : ApplicationFailure.nonRetryable(err.message, 'DiscoveryError', details);
  }
  if (err instanceof OpenApiDocumentError)
    return ApplicationFailure.nonRetryable(err.message, 'DiscoveryError', {
      code: 'invalid_openapi_document',
      status: 400,
    });
  return err;
}

/** How long the listing gate's LLM review may take before it counts as unavailable. */
const LLM_REVIEW_TIMEOUT_MS = 30_000;

/** The LLM second opinion of the listing gate, when MARKET_SCAN_LLM_MODEL and the service LLM endpoint are set. */
function sourceReviewer(config: Config): ((discovery: Discovery) => Promise<LlmReview>) | null {
  const model = config.market.scanLlmModel;
  const { baseURL, apiKey } = config.openai;
  if (!model || (!baseURL && !apiKey)) return null;
  const client = createLlmClient({
    baseURL: baseURL ?? OPENAI_DEFAULT_BASE_URL,
    apiKey: apiKey ?? '',
    timeoutMs: LLM_REVIEW_TIMEOUT_MS,
  });
  return (discovery) => reviewSourceWithLlm(client, model, discovery);
}

export function createMarketActivities({ db, config, discover }: { db: Db; config: Config; discover: Discover }) {
  const review = sourceReviewer(config);
  const run = async (
    input: MarketSourceInput,
  ): Promise<{ result: DiscoveryResult; params: Record<string, unknown> }> => {
    const params = input.sealedParams
      ? (JSON.parse(unseal(config.masterKey, input.sealedParams, DISCOVERY_PARAMS_AAD)) as Record<string, unknown>)
      : {};
    return { result: await discover({ ...input.request, params }), params };
  };

  const identityOf = (request: MarketSourceInput['request'], result: DiscoveryResult): SourceIdentity => {
    if (request.type === 'remote_mcp') return { type: 'remote_mcp', url: request.url! };
    const inline = request.spec != null || typeof request.specText === 'string';
    if (!inline && !result.openapiDocument)
      throw new DiscoveryError('invalid_source', 'The OpenAPI document could not be read');
    // A fetched document is read the same way as one given inline, so both fingerprint alike.
    const document = readOpenApiDocument(
      inline ? { spec: request.spec, specText: request.specText } : { spec: result.openapiDocument },
    );
    return { type: 'openapi', document, baseUrl: request.openapiBaseUrl ?? null };
  };

  return {
    /** Discovers a source (tools, params, source metadata). Nothing is stored. */
    async discoverMarketSource(input: MarketSourceInput): Promise<Discovery> {
      try {
        return normalisedDiscovery((await run(input)).result);
      } catch (err) {
        throw asFailure(err);
      }
    },

    /** Discovers a source, fingerprints and scans it, and stores the validation under its owner. */
    async validateMarketSource(input: ValidateSourceInput): Promise<ValidationView> {
      try {
        const { result, params } = await run(input);
        // The second opinion reads what the rules read; a source without tools has nothing to judge.
        const llmReview = review && result.tools.length ? await review(normalisedDiscovery(result)) : null;
        const stored = await recordValidation(db, {
          llmReview,
          id: input.validationId,
          ownerId: input.ownerId,
          source: identityOf(input.request, result),
          discovery: result,
          givenParamNames: Object.keys(params),
          ttlMs: config.market.validationTtlMs,
        });
        return validationView(stored);
      } catch (err) {
        throw asFailure(err);
      }
    },
  };
}

export function validationView(stored: StoredValidation): ValidationView {
  return {
    validationId: stored.id,
    status: stored.status,
    sourceFingerprint: stored.sourceFingerprint,
    parametersRequired: stored.parametersRequired,
    requiredParameters: stored.requiredParameters,
    report: stored.report,
    discovery: stored.discovery,
    expiresAt: stored.expiresAt.toISOString(),
  };
}

export type MarketActivities = ReturnType<typeof createMarketActivities>;
