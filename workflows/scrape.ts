import {
  type ActivityOptions,
  ActivityCancellationType,
  CancellationScope,
  isCancellation,
  patched,
  proxyActivities,
} from '@temporalio/workflow';
import type { FinishOutcome } from '../activities/jobs';
import type { PageActivities } from '../activities/page';
import type { BrowserActivities } from '../activities/browser';
import type { ExtractionActivities } from '../activities/llm';
import type { FastPathActivities } from '../activities/page/fast-path';
import { describeFailure } from './failures';
import { billing, deliverWebhook, jobs } from './job-lifecycle';
import { STATIC_FAST_PATH_ONE_ACTIVITY } from './patches';

export interface ScrapeWorkflowInput {
  jobId: string;
  browserTaskQueue: string;
  hasWebhook: boolean;
}

/** What the workflow returns: a reference to the job row, never the (possibly large) result itself. */
export type JobOutcome = FinishOutcome;

/** A cancelled run waits for the activity in flight to stop (and record what it used) before it settles. */
const page = proxyActivities<PageActivities>({
  startToCloseTimeout: '90s',
  retry: {
    initialInterval: '2s',
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['ScrapeRejected', 'HoldExhaustedError'],
  },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});
const extractionOptions: ActivityOptions = {
  startToCloseTimeout: '5m',
  heartbeatTimeout: '15s',
  retry: {
    initialInterval: '2s',
    maximumAttempts: 4,
    nonRetryableErrorTypes: ['ScrapeRejected', 'ExtractionError', 'HoldExhaustedError'],
  },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
};
const llm = proxyActivities<ExtractionActivities>(extractionOptions);
/** fetch → convert → extract in one activity (the page's fetch heartbeats too); see activities/page/fast-path.ts. */
const fastPath = proxyActivities<FastPathActivities>(extractionOptions);
export async function scrapeWorkflow(input: ScrapeWorkflowInput): Promise<JobOutcome> {
  const { jobId } = input;
  const browser = proxyActivities<BrowserActivities>({
    taskQueue: input.browserTaskQueue,
    startToCloseTimeout: '3m',
    heartbeatTimeout: '15s',
    retry: {
      initialInterval: '2s',
      maximumAttempts: 3,
      nonRetryableErrorTypes: ['ScrapeRejected', 'HoldExhaustedError'],
    },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });

  let error: string | null = null;
  let cancellation: unknown = null;
  try {
    await jobs.beginJob(jobId);
    // Runs started before the fast path was one activity replay the three-step path they recorded.
    if (patched(STATIC_FAST_PATH_ONE_ACTIVITY)) {
      const outcome = await fastPath.fetchAndExtractPage(jobId);
      if (!outcome.extracted) {
        await browser.renderPage(jobId);
        await llm.extractPageData(jobId);
      }
    } else {
      const fetched = await page.fetchPage(jobId);
      if (fetched.needsBrowser) await browser.renderPage(jobId);
      await llm.extractPageData(jobId);
    }
  } catch (err) {
    if (isCancellation(err)) cancellation = err;
    error = describeFailure(err);
  }
  // Runs even when the run was cancelled (the activities above were waited for): charge what was used, end the job, tell the webhook.
  const outcome = await CancellationScope.nonCancellable(async () => {
    await billing.settleJobUsage({ jobId, agentName: 'scrape', outcome: error === null ? 'completed' : 'failed' });
    const finished = await jobs.finishScrapeJob({ jobId, error });
    await deliverWebhook(jobId, input.hasWebhook);
    return finished;
  });
  if (cancellation) throw cancellation;
  return outcome;
}
