import {
  ActivityCancellationType,
  CancellationScope,
  continueAsNew,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { AutomationActivities } from '../activities/automations';
import { runAgentLoop, type AgentWorkflowInput } from './agent';
import { billing, deliverWebhook } from './job-lifecycle';
import type { JobOutcome } from './scrape';

export interface AutomationRunInput {
  automationId: string;
  browserTaskQueue: string;
  maxSteps: number;
  deadlineMs: number;
  historyEventsLimit?: number;
  socialToolTimeoutMs?: number;
  /** Set when a long run continues as new: the agent loop goes on where it stopped. */
  resume?: AgentWorkflowInput;
}

const automations = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '1m',
  retry: { initialInterval: '1s', maximumAttempts: 10, nonRetryableErrorTypes: ['AutomationGone'] },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/** A scheduled execution that was not run (inactive subscription, empty wallet): no job, no charge. */
export interface SkippedAutomationRun {
  status: 'skipped';
  reason: string;
}

/** One execution of a scheduled automation (started by its Temporal Schedule): a job row, then the shared agent loop. */
export async function automationRunWorkflow(input: AutomationRunInput): Promise<JobOutcome | SkippedAutomationRun> {
  const continueAs = (next: AgentWorkflowInput) =>
    continueAsNew<typeof automationRunWorkflow>({ ...input, resume: next });
  if (input.resume) return runAgentLoop(input.resume, continueAs);
  const run = await automations.startAutomationRun({
    automationId: input.automationId,
    runId: workflowInfo().workflowId,
  });
  if (run.kind === 'skipped') return { status: 'skipped', reason: run.reason };
  if (run.kind === 'unusable') {
    return CancellationScope.nonCancellable(async () => {
      await billing.settleJobUsage({ jobId: run.jobId, agentName: run.agentName, outcome: 'failed' });
      await deliverWebhook(run.jobId, run.hasWebhook);
      return run.outcome;
    });
  }
  return runAgentLoop(
    {
      jobId: run.jobId,
      toolbox: 'social',
      browserTaskQueue: input.browserTaskQueue,
      hasWebhook: run.hasWebhook,
      taskCount: run.taskCount,
      maxSteps: input.maxSteps,
      deadlineMs: input.deadlineMs,
      agentName: run.agentName,
      historyEventsLimit: input.historyEventsLimit,
      socialToolTimeoutMs: input.socialToolTimeoutMs,
      ...(run.selectionTools && { selectionTools: true }),
    },
    continueAs,
  );
}
