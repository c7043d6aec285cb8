import type { Db } from '../../db/connect';
import { appendJobLog } from '../../db/repos/jobs';
import { assertHoldCovers } from '../../db/repos/job-usage';
import { extractionWorstCaseMicros } from '../../lib/billing/worst-case';
import { getRouterApiKey } from '../../db/repos/users';
import { jsonSchemaForRequest } from '../../lib/llm/structured-output';
import { LlmUnavailableError, type LlmProviders } from '../../lib/llm/providers';
import { stepKey, withHeartbeat } from '../heartbeat';
import { loadJob } from '../jobs';
import { getPageSnapshot, saveExtractedData } from '../../db/repos/page-snapshots';
import { rejectScrape } from '../rejections';
import { DEFAULT_MAX_INPUT_CHARS, ExtractionError, extractStructured, truncateForModel } from './extract';
import { recordLlmUsage } from './usage';
import { ApplicationFailure } from '@temporalio/activity';
import OpenAI from 'openai';

export interface ExtractionDeps {
  db: Db;
  llm: LlmProviders;
  masterKey: Buffer;
}

export function createExtractionActivities(deps: ExtractionDeps) {
  const { db } = deps;

  return {
    /** Extracts the requested data from the stored page snapshot with the job's model; re-asks once on invalid output. */
    async extractPageData(jobId: string): Promise<void> {
      const { job, request } = await loadJob(db, jobId, 'scrape');
      const snapshot = await getPageSnapshot(db, jobId);
      let provider;
      try {
        provider = await deps.llm.resolve(request.llm_provider, () => getRouterApiKey(db, deps.masterKey, job.user_id));
      } catch (err) {
        if (err instanceof LlmUnavailableError) throw rejectScrape(err.message);
        throw err;
      }
      const output = jsonSchemaForRequest(request.structured_output);
      if (provider.walletBilled && !deps.llm.prices.accepts(request.llm_model)) {
        throw rejectScrape(
          `llm_model "${request.llm_model}" is no longer offered with llm_provider "service" (it is not in the price table)`,
        );
      }
      if (provider.walletBilled) {
        const prompt =
          truncateForModel(snapshot.markdown, DEFAULT_MAX_INPUT_CHARS) +
          JSON.stringify(output) +
          (request.system_prompt ?? '');
        await assertHoldCovers(db, jobId, extractionWorstCaseMicros(deps.llm.prices, request.llm_model, prompt));
      }
      await appendJobLog(db, jobId, `extracting with ${request.llm_provider}/${request.llm_model}`);
      const { walletBilled } = provider;
      try {
        const extracted = await withHeartbeat(() =>
          extractStructured(
            {
              client: provider.client,
              // Each call is recorded as soon as it answers: a re-ask that fails keeps the first call's usage.
              recordCall: (call, index) =>
                recordLlmUsage(db, deps.llm.prices, {
                  jobId,
                  usageKey: stepKey(jobId, `llm-${index}`),
                  ...call,
                  walletBilled,
                }),
            },
            {
              model: request.llm_model,
              systemPrompt: request.system_prompt,
              page: { url: snapshot.final_url, markdown: snapshot.markdown, metadata: snapshot.metadata },
              output,
            },
          ),
        );
        const reasked = extracted.usage.calls > 1 ? ' after one re-ask' : '';
        await saveExtractedData(
          db,
          jobId,
          extracted.data,
          `extracted data (${extracted.usage.promptTokens}+${extracted.usage.completionTokens} tokens${reasked})`,
        );
      } catch (err) {
        if (err instanceof ExtractionError) {
          throw ApplicationFailure.nonRetryable(`Extraction failed: ${err.message}`, 'ExtractionError');
        }
        const refusal = describeProviderRefusal(err);
        if (refusal) throw rejectScrape(refusal);
        throw err;
      }
    },
  };
}

export type ExtractionActivities = ReturnType<typeof createExtractionActivities>;

/** Client errors from the LLM endpoint are final; their text is not echoed when it could quote credentials. */
function describeProviderRefusal(err: unknown): string | null {
  if (!(err instanceof OpenAI.APIError) || err.status === undefined) return null;
  if (err.status >= 500 || err.status === 429 || err.status === 408) return null;
  if (err.status === 401 || err.status === 403) return `The LLM provider rejected the credentials (HTTP ${err.status})`;
  const message = String(err.message ?? '')
    .replace(/(sk|key)[-_][\w-]{6,}/gi, '[redacted]')
    .slice(0, 300);
  return `The LLM provider refused the request (HTTP ${err.status}): ${message}`;
}
