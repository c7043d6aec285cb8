import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { ActionOutcome, AgentBrainActivities, ModelAction } from '../activities/agent/brain';
import type { StepAt } from './agent-state';

/**
 * The model's activities and the run's bookkeeping (decide, accept a final answer, record a step or a
 * tool call, extract, prepare the tool selections, finish the job). A cancelled run waits for the activity
 * in flight to stop (and record what it used) before it settles.
 */
export const brain = proxyActivities<AgentBrainActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '15s',
  retry: {
    initialInterval: '2s',
    maximumAttempts: 4,
    nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError', 'ModelNotSupported'],
  },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/** A bound stopped the run (steps, deadline, the loop guard, no free browser, the model): its message is the job's error. */
export class AgentStop extends Error {}

/** The `extract` tool of the browser and social toolboxes: a question about what the step observed, answered by the model. */
export function extract(at: StepAt, action: ModelAction): Promise<ActionOutcome> {
  const { jobId, taskIndex, step } = at;
  return brain.runExtractTool({ jobId, taskIndex, step, question: String(action.args.question ?? '') });
}
