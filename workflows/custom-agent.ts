import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  patched,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { CustomAgentRunActivities } from '../activities/automations/custom-agent-run';
import { runAgentLoop, type AgentWorkflowInput } from './agent';
import { customAgentWorkflowV1 } from './custom-agent-v1';
import { billing, deliverWebhook } from './job-lifecycle';
import { ONE_AGENT_LOOP } from './patches';
import type { JobOutcome } from './scrape';

/** A one-off run (POST /agents/run: the job exists) or a scheduled one (its Schedule names the agent). */
export interface CustomAgentWorkflowInput {
  /** One-off run: the admitted job. */
  jobId?: string;
  /** Scheduled run: the stored agent (its automation id); the run creates its job. */
  automationId?: string;
  hasWebhook?: boolean;
  /** Model decisions per run at most (AGENT_MAX_STEPS). */
  maxSteps: number;
  deadlineMs: number;
  /** How long one tool call may take (default 2 minutes). */
  toolCallTimeoutMs?: number;
  /** The run continues as new once its history has this many events (AGENT_HISTORY_EVENTS; default 5,000). */
  historyEventsLimit?: number;
  /** Set when a long run continues as new: the agent loop goes on where it stopped. */
  resume?: AgentWorkflowInput;
}

const admission = proxyActivities<CustomAgentRunActivities>({
  startToCloseTimeout: '5m',
  retry: { initialInterval: '2s', maximumAttempts: 4, nonRetryableErrorTypes: ['AutomationGone'] },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/**
 * A custom agent's run. The type keeps its name: Schedules and started runs name it. A run begun
 * before the one agent loop (no `one-agent-loop` marker in its history) replays the code it began on,
 * customAgentWorkflowV1, to its end; every other run is customAgentRun.
 */
export async function customAgentWorkflow(
  input: CustomAgentWorkflowInput,
): Promise<JobOutcome | { status: 'skipped'; reason: string }> {
  if (!patched(ONE_AGENT_LOOP)) return customAgentWorkflowV1(input);
  return customAgentRun(input);
}

/**
 * A custom agent's run on the one agent loop (workflows/agent.ts) with the job's tool selections as
 * its whole toolbox: the model keeps one conversation, and the run continues as new like every agent
 * run. A scheduled run first records its job (or is skipped when the account cannot pay).
 */
export async function customAgentRun(
  input: CustomAgentWorkflowInput,
): Promise<JobOutcome | { status: 'skipped'; reason: string }> {
  const continueAs = (next: AgentWorkflowInput) =>
    continueAsNew<typeof customAgentWorkflow>({ ...input, resume: next });
  if (input.resume) return runAgentLoop(input.resume, continueAs);
  let jobId = input.jobId;
  let hasWebhook = input.hasWebhook ?? false;
  if (!jobId) {
    if (!input.automationId)
      throw ApplicationFailure.nonRetryable('customAgentWorkflow needs a jobId or an automationId', 'BadInput');
    const start = await admission.startCustomAgentRun({
      automationId: input.automationId,
      runId: workflowInfo().workflowId,
    });
    if (start.kind === 'skipped') return { status: 'skipped', reason: start.reason };
    if (start.kind === 'unusable') {
      return CancellationScope.nonCancellable(async () => {
        await billing.settleJobUsage({ jobId: start.jobId, agentName: 'custom-agent', outcome: 'failed' });
        await deliverWebhook(start.jobId, start.hasWebhook);
        return { jobId: start.jobId, status: 'failed' as const, error: start.error };
      });
    }
    jobId = start.jobId;
    hasWebhook = start.hasWebhook;
  }
  return runAgentLoop(
    {
      jobId,
      toolbox: 'tools',
      selectionTools: true,
      hasWebhook,
      taskCount: 1,
      maxSteps: input.maxSteps,
      deadlineMs: input.deadlineMs,
      agentName: 'custom-agent',
      historyEventsLimit: input.historyEventsLimit,
      toolCallTimeoutMs: input.toolCallTimeoutMs,
    },
    continueAs,
  );
}
