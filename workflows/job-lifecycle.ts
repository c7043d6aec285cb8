import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { JobActivities } from '../activities/jobs';
import type { BillingActivities } from '../activities/billing';
import type { WebhookActivities } from '../activities/webhooks';
import { describeFailure } from './failures';

/**
 * Job-row bookkeeping and usage settlement are short database writes, so they run as local
 * activities: executed by the worker running the workflow, recorded in its history, retried, but
 * without a round trip through the Temporal server for each.
 */
export const jobs = proxyLocalActivities<JobActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 20 },
});

export const billing = proxyLocalActivities<BillingActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '1m', maximumAttempts: 50 },
});

const webhooks = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30s',
  retry: {
    initialInterval: '5s',
    backoffCoefficient: 2,
    maximumInterval: '10m',
    maximumAttempts: 10,
    nonRetryableErrorTypes: ['WebhookRejected'],
  },
});

/** Delivers the finished job to its webhook_url with durable retries; giving up is logged, never a job failure. */
export async function deliverWebhook(jobId: string, hasWebhook: boolean): Promise<void> {
  if (!hasWebhook) return;
  try {
    await webhooks.deliverJobWebhook(jobId);
  } catch (err) {
    await jobs.logJobProgress(jobId, `webhook delivery gave up: ${describeFailure(err)}`);
  }
}
