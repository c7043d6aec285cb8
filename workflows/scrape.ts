import { proxyActivities } from '@temporalio/workflow';
import type { JobActivities } from '../activities/jobs';
import type { PageActivities } from '../activities/page';
import type { BrowserActivities } from '../activities/browser';
import type { ExtractionActivities } from '../activities/llm';
import type { BillingActivities } from '../activities/billing';
import type { WebhookActivities } from '../activities/webhooks';
import { describeFailure } from './failures';

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

const jobs = proxyActivities<JobActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 20 },
});
const billing = proxyActivities<BillingActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '1m', maximumAttempts: 50 },
});
const page = proxyActivities<PageActivities>({
  startToCloseTimeout: '90s',
  retry: { initialInterval: '2s', maximumAttempts: 3, nonRetryableErrorTypes: ['ScrapeRejected'] },
});
const llm = proxyActivities<ExtractionActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '15s',
  retry: { initialInterval: '2s', maximumAttempts: 4, nonRetryableErrorTypes: ['ScrapeRejected', 'ExtractionError'] },
});
const webhooks = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '10m', maximumAttempts: 10, nonRetryableErrorTypes: ['WebhookRejected'] },
});

export async function scrapeWorkflow(input: ScrapeWorkflowInput): Promise<JobOutcome> {
  const { jobId } = input;
  const browser = proxyActivities<BrowserActivities>({
    taskQueue: input.browserTaskQueue,
    startToCloseTimeout: '3m',
    heartbeatTimeout: '15s',
    retry: { initialInterval: '2s', maximumAttempts: 3, nonRetryableErrorTypes: ['ScrapeRejected'] },
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
  if (input.hasWebhook) {
    try {
      await webhooks.deliverJobWebhook(jobId);
    } catch (err) {
      await jobs.logJobProgress(jobId, `webhook delivery gave up: ${describeFailure(err)}`);
    }
  }
  return outcome;
}
