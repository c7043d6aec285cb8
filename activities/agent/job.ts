import type { Db } from '../../db/connect';
import { loadJob } from '../jobs';

/** An agent job (loaded by the one job loader) with its tasks in order: the task, then the follow-up tasks. */
export async function loadAgentJob(db: Db, jobId: string, masterKey?: Buffer) {
  const { job, request } = await loadJob(db, jobId, 'agent', masterKey);
  return { job, request, tasks: [request.task, ...(request.follow_up_tasks ?? [])] };
}

/** What each optimization_mode changes. */
export const OPTIMIZATION_PROFILES = {
  speed: { observationChars: 6_000, historySteps: 3, finalAnswerRetries: 0, temperature: undefined as number | undefined },
  balanced: { observationChars: 12_000, historySteps: 8, finalAnswerRetries: 1, temperature: undefined as number | undefined },
  consistency: { observationChars: 16_000, historySteps: 12, finalAnswerRetries: 3, temperature: 0 as number | undefined },
} as const;
