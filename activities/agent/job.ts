import type { Db } from '../../db/connect';
import { getJob } from '../../db/repos/jobs';
import type { Job } from '../../db/schema';
import type { CustomAgentBody } from '../../lib/schemas/custom-agents';
import { loadJob } from '../jobs';

/** An agent job (loaded by the one job loader) with its tasks in order: the task, then the follow-up tasks. */
export async function loadAgentJob(db: Db, jobId: string, masterKey?: Buffer) {
  const { job, request } = await loadJob(db, jobId, 'agent', masterKey);
  return { job, request, tasks: [request.task, ...(request.follow_up_tasks ?? [])] };
}

/** The request a custom-agent run keeps on its job row (params redacted; they are in the job's sealed secrets). */
export type CustomAgentRunRequest = Omit<CustomAgentBody, 'cron' | 'timezone'> & { automationId?: string };

/**
 * A job of the agent loop with what the model remembers of it:
 * - `steps`: browser and social runs (agentic, automation, agent-market jobs). Each step stores its
 *   observation and outcomes (agent_steps); a decision's prompt is rebuilt from the task, the latest
 *   steps and the current observation.
 * - `conversation`: tool-only runs (custom-agent jobs). The whole exchange with the model is kept in
 *   order (custom_agent_messages): every tool call gets its tool message.
 */
export type LoopJob =
  | ({ memory: 'steps' } & Awaited<ReturnType<typeof loadAgentJob>>)
  | { memory: 'conversation'; job: Job; request: CustomAgentRunRequest };

/** The job of an agent loop activity; with the master key, a steps job's request has its sealed secrets (see loadJob). */
export async function loadLoopJob(db: Db, jobId: string, masterKey?: Buffer): Promise<LoopJob> {
  const job = await getJob(db, jobId);
  if (job.kind === 'custom-agent')
    return { memory: 'conversation', job, request: job.request as unknown as CustomAgentRunRequest };
  return { memory: 'steps', ...(await loadAgentJob(db, jobId, masterKey)) };
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
  speed: {
    observationChars: 6_000,
    historySteps: 3,
    finalAnswerRetries: 0,
    temperature: undefined as number | undefined,
  },
  balanced: {
    observationChars: 12_000,
    historySteps: 8,
    finalAnswerRetries: 1,
    temperature: undefined as number | undefined,
  },
  consistency: {
    observationChars: 16_000,
    historySteps: 12,
    finalAnswerRetries: 3,
    temperature: 0 as number | undefined,
  },
} as const;
