import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import { recordUsage } from '../../db/repos/job-usage';
import { ModelNotPricedError, type PriceTable } from '../../lib/billing/pricing';

export interface LlmUsageRecord {
  jobId: string;
  /** Unique per call of a step (stepKey(jobId, `llm-${index}`)): a retried write, or a retried step, records it once. */
  usageKey: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** How many calls this record covers; 1 when recorded per call. */
  calls?: number;
  /** False for the `router` provider: the tokens are the account's own, recorded at no cost. */
  walletBilled: boolean;
}

/**
 * The one way LLM usage is recorded for a job (extraction, agent decisions, the extract tool):
 * a job_usage row priced from the price table when the wallet pays. A wallet-billed model the
 * table does not list is never priced by guess: the run stops (non-retryable) instead. The API
 * refuses such models up front, so this only happens when the operator withdrew a model while a
 * run was using it.
 */
export async function recordLlmUsage(db: Db, prices: PriceTable, usage: LlmUsageRecord): Promise<void> {
  let costMicros = 0;
  if (usage.walletBilled) {
    try {
      costMicros = prices.costMicros(usage.model, usage.promptTokens, usage.completionTokens);
    } catch (err) {
      if (err instanceof ModelNotPricedError) {
        throw ApplicationFailure.nonRetryable(
          `${err.message}; the service provider can no longer bill it (operator: LLM_MODEL_PRICES)`,
          'ModelNotSupported',
        );
      }
      throw err;
    }
  }
  await recordUsage(db, {
    jobId: usage.jobId,
    usageKey: usage.usageKey,
    kind: 'llm',
    model: usage.model,
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    quantity: usage.calls ?? 1,
    costMicros,
  });
}
