import type { Db } from '../../db/connect';
import type { Job } from '../../db/schema';
import { loadJob } from '../jobs';

/** An agent job (loaded by the one job loader) with its tasks in order: the task, then the follow-up tasks. */
export async function loadAgentJob(db: Db, jobId: string, masterKey?: Buffer) {
  const { job, request } = await loadJob(db, jobId, 'agent', masterKey);
  return { job, request, tasks: [request.task, ...(request.follow_up_tasks ?? [])] };
}

/**
 * The tasks as the job's stored request shows them, without its sealed parts: the label a result
 * carries. An agent-market run keeps the task the model sees sealed (a filled template is its
 * provider's private text), so its label is the consumer's own task, if any.
 */
export function visibleTasks(job: Job): string[] {
  const request = job.request as { task?: string; follow_up_tasks?: string[] };
  return [request.task ?? PRIVATE_TASK_LABEL, ...(request.follow_up_tasks ?? [])];
}

export const PRIVATE_TASK_LABEL = "(the agent's own task)";

/** What each optimization_mode changes. */
export const OPTIMIZATION_PROFILES = {
  speed: { observationChars: 6_000, historySteps: 3, finalAnswerRetries: 0, temperature: undefined as number | undefined },
  balanced: { observationChars: 12_000, historySteps: 8, finalAnswerRetries: 1, temperature: undefined as number | undefined },
  consistency: { observationChars: 16_000, historySteps: 12, finalAnswerRetries: 3, temperature: 0 as number | undefined },
} as const;
