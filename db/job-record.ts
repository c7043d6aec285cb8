import type { Job } from './schema';

/** The job record exactly as the contract shapes it (ApiScrapeJob / ApiAgenticJob). */
export interface JobRecord {
  id: string;
  userId: string;
  status: Job['status'];
  request: Record<string, unknown>;
  result: Record<string, unknown> | null;
  error: string | null;
  logs: string[];
  webhookUrl: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toJobRecord(job: Job): JobRecord {
  return {
    id: job.id,
    userId: job.user_id,
    status: job.status,
    request: job.request,
    result: job.result ?? null,
    error: job.error,
    logs: job.logs,
    webhookUrl: job.webhook_url,
    createdAt: new Date(job.created_at).toISOString(),
    updatedAt: new Date(job.updated_at).toISOString(),
  };
}
