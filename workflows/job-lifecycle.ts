import { proxyActivities } from '@temporalio/workflow';
import type { JobActivities } from '../activities/jobs';
import type { BillingActivities } from '../activities/billing';
import type { WebhookActivities } from '../activities/webhooks';
import { describeFailure } from './failures';

/** Activities every job workflow uses: job rows, usage settlement and the completion webhook. */
export const jobs = proxyActivities<JobActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 20 },
});

export const billing = proxyActivities<BillingActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '1m', maximumAttempts: 50 },
});

const webhooks = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '10m', maximumAttempts: 10, nonRetryableErrorTypes: ['WebhookRejected'] },
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
