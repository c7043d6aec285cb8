import { proxyActivities } from '@temporalio/workflow';
import type { PageActivities } from '../activities/page';
import type { BrowserActivities } from '../activities/browser';
import type { ExtractionActivities } from '../activities/llm';
import { describeFailure } from './failures';
import { billing, deliverWebhook, jobs } from './job-lifecycle';

export interface ScrapeWorkflowInput {
  jobId: string;
  browserTaskQueue: string;
  hasWebhook: boolean;
}

/** What the workflow returns: a reference to the job row, never the (possibly large) result itself. */
export interface JobOutcome {
  jobId: string;
  status: 'completed' | 'failed';
  error: string | null;
}

const page = proxyActivities<PageActivities>({
  startToCloseTimeout: '90s',
  retry: { initialInterval: '2s', maximumAttempts: 3, nonRetryableErrorTypes: ['ScrapeRejected', 'HoldExhaustedError'] },
});
const llm = proxyActivities<ExtractionActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '15s',
  retry: { initialInterval: '2s', maximumAttempts: 4, nonRetryableErrorTypes: ['ScrapeRejected', 'ExtractionError', 'HoldExhaustedError'] },
});
export async function scrapeWorkflow(input: ScrapeWorkflowInput): Promise<JobOutcome> {
  const { jobId } = input;
  const browser = proxyActivities<BrowserActivities>({
    taskQueue: input.browserTaskQueue,
    startToCloseTimeout: '3m',
    heartbeatTimeout: '15s',
    retry: { initialInterval: '2s', maximumAttempts: 3, nonRetryableErrorTypes: ['ScrapeRejected', 'HoldExhaustedError'] },
  });

  await jobs.beginJob(jobId);
  let error: string | null = null;
  try {
    const fetched = await page.fetchPage(jobId);
    if (fetched.needsBrowser) await browser.renderPage(jobId);
    await llm.extractPageData(jobId);
  } catch (err) {
    error = describeFailure(err);
  }
  await billing.settleJobUsage({ jobId, agentName: 'scrape', outcome: error === null ? 'completed' : 'failed' });
  const outcome = await jobs.finishScrapeJob({ jobId, error });
  await deliverWebhook(jobId, input.hasWebhook);
  return outcome;
}
