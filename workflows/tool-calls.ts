import { ActivityCancellationType, ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { AgentToolCallActivities } from '../activities/agent/tool-call';
import type { ToolActivities } from '../activities/tools';

/** activities/tools' final failure types (not imported: workflows stay free of activity code). */
const TOOL_CALL_FAILED = 'ToolCallFailed';
const TOOL_CALL_MAY_HAVE_RUN = 'ToolCallMayHaveRun';

/**
 * The callTool activity of an agent run (and callAgentTool, the same call with its record). It classifies its own retries (only a call that provably
 * did not reach the upstream, or a read-only/idempotent tool, is tried again); ToolCallFailed and
 * ToolCallMayHaveRun are final and go back to the model as error results: a call that may have run
 * is never sent twice. A cancelled run waits for the call in flight to stop.
 */
export function toolCallActivities(toolCallTimeoutMs = 120_000) {
  return proxyActivities<ToolActivities & AgentToolCallActivities>({
    startToCloseTimeout: toolCallTimeoutMs + 15_000,
    heartbeatTimeout: '30s',
    retry: {
      initialInterval: '1s',
      maximumAttempts: 3,
      nonRetryableErrorTypes: [TOOL_CALL_FAILED, TOOL_CALL_MAY_HAVE_RUN],
    },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
}

/** A failed callTool that may have reached the tool: it was not sent again. */
export function mayHaveRun(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  return cause instanceof ApplicationFailure && cause.type === TOOL_CALL_MAY_HAVE_RUN;
}
