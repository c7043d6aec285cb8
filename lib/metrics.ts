import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/**
 * This process's own Prometheus series: what happens in it (HTTP requests it answers, jobs its
 * activities finish, webhooks they deliver) plus Node's process metrics. State that lives in
 * Postgres (jobs by state, holds, debits) is read at scrape time instead (api/routes/metrics.ts),
 * so it is right whichever process did the work.
 */
export const processMetrics = new Registry();
collectDefaultMetrics({ register: processMetrics });

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request latency by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  registers: [processMetrics],
});

export const jobDuration = new Histogram({
  name: 'platform_job_duration_seconds',
  help: 'Time from acceptance to a terminal state, by job kind and final status (observed by the worker that finished the job)',
  labelNames: ['kind', 'status'] as const,
  buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
  registers: [processMetrics],
});

export type WebhookOutcome = 'delivered' | 'http_error' | 'network_error' | 'blocked';

export const webhookDeliveries = new Counter({
  name: 'platform_webhook_deliveries_total',
  help: 'Webhook delivery attempts by outcome (delivered, http_error, network_error, blocked by the SSRF guard)',
  labelNames: ['outcome'] as const,
  registers: [processMetrics],
});
for (const outcome of ['delivered', 'http_error', 'network_error', 'blocked'] satisfies WebhookOutcome[])
  webhookDeliveries.labels(outcome).inc(0);
