import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import { appendJobLog, getJob, transitionJob } from '../../db/repos/jobs';
import { summarizeUsage } from '../../db/repos/job-usage';
import { getPageSnapshot } from '../../db/repos/page-snapshots';
import { microsToUsd } from '../../lib/money';
import type { Job, JobKind } from '../../db/schema';
import type { AgenticScraperRequestBody } from '../../lib/schemas/agentscraper';
import type { ScrapeRequestBody } from '../../lib/schemas/scrape';
import { unsealRequestSecrets } from '../../lib/request-secrets';

export interface FinishOutcome {
  jobId: string;
  status: 'completed' | 'failed';
  error: string | null;
}

/** The request each family of job carries: scrapes, and agent runs (one-off agentic jobs and automation runs). */
export interface JobRequests {
  scrape: ScrapeRequestBody;
  agent: AgenticScraperRequestBody;
}

const KINDS_OF: { [F in keyof JobRequests]: readonly JobKind[] } = {
  scrape: ['scrape'],
  agent: ['agentic', 'automation', 'agent-market'],
};

/**
 * The one job loader: the job and its request, typed by family. Given the master key, the request's sealed secrets
 * (cookies, sensitive_data values, inline credentials) are unsealed into it; only activities that use them pass one.
 */
export async function loadJob<F extends keyof JobRequests>(
  db: Db,
  jobId: string,
  family: F,
  masterKey?: Buffer,
): Promise<{ job: Job; request: JobRequests[F] }> {
  const job = await getJob(db, jobId);
  if (!KINDS_OF[family].includes(job.kind)) throw new Error(`Job ${jobId} is a ${job.kind} job, not a ${family} job`);
  const request = job.request as unknown as JobRequests[F];
  if (!masterKey) return { job, request };
  return {
    job,
    request: { ...request, ...unsealRequestSecrets(masterKey, jobId, job.sealed_secrets) } as JobRequests[F],
  };
}

export function createJobActivities({ db }: { db: Db }) {
  return {
    /**
     * Takes the job up. A job that is already finished was abandoned before its workflow ran (the
     * start looked failed to the API, which released its hold): this run must not do any work.
     */
    async beginJob(jobId: string): Promise<void> {
      if (await transitionJob(db, jobId, 'processing', { log: 'processing started', systemLogEvent: 'started' }))
        return;
      const current = await getJob(db, jobId);
      if (current.status === 'completed' || current.status === 'failed') {
        throw ApplicationFailure.nonRetryable(
          `job ${jobId} is already ${current.status} (${current.error ?? 'no error'}); this run does nothing`,
          'JobNotRunnable',
        );
      }
    },

    async logJobProgress(jobId: string, message: string): Promise<void> {
      await appendJobLog(db, jobId, message);
    },

    async finishScrapeJob({ jobId, error }: { jobId: string; error: string | null }): Promise<FinishOutcome> {
      const { job, request } = await loadJob(db, jobId, 'scrape');
      if (job.status === 'completed' || job.status === 'failed') return { jobId, status: job.status, error: job.error };
      const usage = await summarizeUsage(db, jobId);
      const llm = usage.llm[0];
      const usageView = {
        llmModel: llm?.model ?? request.llm_model,
        promptTokens: usage.llm.reduce((n, e) => n + e.promptTokens, 0),
        completionTokens: usage.llm.reduce((n, e) => n + e.completionTokens, 0),
        browserSeconds: usage.browserSeconds,
        costUsd: microsToUsd(usage.costMicros),
      };
      if (error !== null) {
        await transitionJob(db, jobId, 'failed', {
          error,
          result: null,
          log: `failed: ${error}`,
          systemLogEvent: `failed: ${error}`,
        });
        return { jobId, status: 'failed', error };
      }
      const snapshot = await getPageSnapshot(db, jobId);
      const result = {
        url: request.url,
        finalUrl: snapshot.final_url,
        statusCode: snapshot.status_code,
        renderedWith: snapshot.rendered_with,
        metadata: snapshot.metadata,
        markdown: snapshot.markdown,
        data: snapshot.data,
        usage: usageView,
      };
      await transitionJob(db, jobId, 'completed', {
        result,
        error: null,
        log: 'completed',
        systemLogEvent: `completed (${request.url})`,
      });
      return { jobId, status: 'completed', error: null };
    },
  };
}

export { reconcilePendingJobs, type PendingJobsReconciliation } from './reconcile';

export type JobActivities = ReturnType<typeof createJobActivities>;
