import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import { appendJobLog, getJob } from '../../db/repos/jobs';
import { getWebhookSecret } from '../../db/repos/users';
import { signWebhook } from '../../lib/crypto';
import { toJobRecord } from '../../db/job-record';
import { fetchBuffered } from '../../lib/net/buffered-fetch';
import type { NetworkPolicy } from '../../lib/net/ssrf';
import { ssrfRefusal } from '../../lib/net/transport';
import { jobLog } from '../../lib/log';
import { webhookDeliveries } from '../../lib/metrics';

export interface WebhookDeps {
  db: Db;
  masterKey: Buffer;
  policy: NetworkPolicy;
  now?: () => number;
}

export const WEBHOOK_SIGNATURE_HEADER = 'x-webhook-signature';

export function createWebhookActivities(deps: WebhookDeps) {
  const now = deps.now ?? Date.now;
  return {
    /**
     * POSTs the finished job record to the job's webhook_url, signed with the account's webhook secret.
     * Non-2xx answers and network errors throw, so Temporal retries with backoff; redirects are not followed.
     */
    async deliverJobWebhook(jobId: string): Promise<{ status: number }> {
      const job = await getJob(deps.db, jobId);
      if (!job.webhook_url) return { status: 0 };
      const event = job.status === 'completed' ? 'job.completed' : 'job.failed';
      const rawBody = JSON.stringify({ event, kind: job.kind, job: toJobRecord(job) });
      const timestamp = Math.floor(now() / 1000);
      const secret = await getWebhookSecret(deps.db, deps.masterKey, job.user_id);
      let response;
      try {
        response = await fetchBuffered(job.webhook_url, {
          policy: deps.policy,
          method: 'POST',
          maxRedirects: 0,
          timeoutMs: 10_000,
          maxBytes: 64 * 1024,
          body: rawBody,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'scrape-platform-webhooks/1',
            'x-webhook-id': `${job.id}:${job.status}`,
            'x-webhook-event': event,
            'x-webhook-timestamp': String(timestamp),
            [WEBHOOK_SIGNATURE_HEADER]: signWebhook(secret, rawBody, timestamp),
          },
        });
      } catch (err) {
        const refusal = ssrfRefusal(err);
        if (refusal) {
          webhookDeliveries.labels('blocked').inc();
          jobLog(jobId).warn({ reason: refusal.message }, 'webhook blocked by the SSRF guard');
          await appendJobLog(deps.db, jobId, `webhook not sent: ${refusal.message}`);
          throw ApplicationFailure.nonRetryable(`webhook blocked: ${refusal.message}`, 'WebhookRejected');
        }
        webhookDeliveries.labels('network_error').inc();
        jobLog(jobId).warn({ reason: (err as Error).message }, 'webhook attempt failed');
        await appendJobLog(deps.db, jobId, `webhook attempt failed: ${(err as Error).message}`);
        throw err;
      }
      if (response.status < 200 || response.status >= 300) {
        webhookDeliveries.labels('http_error').inc();
        jobLog(jobId).warn({ status: response.status }, 'webhook attempt answered an error status');
        await appendJobLog(deps.db, jobId, `webhook attempt answered HTTP ${response.status}; will retry`);
        throw new Error(`webhook endpoint answered HTTP ${response.status}`);
      }
      webhookDeliveries.labels('delivered').inc();
      jobLog(jobId).info({ status: response.status }, 'webhook delivered');
      await appendJobLog(deps.db, jobId, `webhook delivered (HTTP ${response.status})`);
      return { status: response.status };
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
