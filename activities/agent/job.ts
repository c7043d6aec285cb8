import type { Db } from '../../db/connect';
import { getJob } from '../../db/repos/jobs';
import type { AgenticScraperRequestBody } from '../../lib/schemas/agentscraper';
import { unsealRequestSecrets } from '../../lib/request-secrets';

/** The agent job's request; with the master key, secrets (cookies, sensitive_data values) are unsealed. */
export async function loadAgentJob(db: Db, jobId: string, masterKey?: Buffer) {
  const job = await getJob(db, jobId);
  const request = job.request as unknown as AgenticScraperRequestBody;
  const tasks = [request.task, ...(request.follow_up_tasks ?? [])];
  if (!masterKey) return { job, request, tasks };
  return { job, request: { ...request, ...unsealRequestSecrets(masterKey, jobId, job.sealed_secrets) } as AgenticScraperRequestBody, tasks };
}

/** What each optimization_mode changes. */
export const OPTIMIZATION_PROFILES = {
  speed: { observationChars: 6_000, historySteps: 3, finalAnswerRetries: 0, temperature: undefined as number | undefined },
  balanced: { observationChars: 12_000, historySteps: 8, finalAnswerRetries: 1, temperature: undefined as number | undefined },
  consistency: { observationChars: 16_000, historySteps: 12, finalAnswerRetries: 3, temperature: 0 as number | undefined },
} as const;
