import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { ToolActivities, ToolCallInput, ToolCallOutput } from '../../activities/tools';

/**
 * A test-only workflow that runs the callTool activity under a chosen timeout and retry policy, so
 * tests can watch Temporal's real attempt/heartbeat machinery apply the no-duplicate rule.
 */
export interface ToolCallProbeInput {
  call: ToolCallInput;
  startToCloseMs: number;
  maximumAttempts: number;
}

export type ToolCallProbeResult =
  { ok: true; output: ToolCallOutput } | { ok: false; type: string; message: string; details?: unknown };

export async function toolCallProbeWorkflow(input: ToolCallProbeInput): Promise<ToolCallProbeResult> {
  const { callTool } = proxyActivities<ToolActivities>({
    startToCloseTimeout: input.startToCloseMs,
    retry: { initialInterval: '300ms', backoffCoefficient: 1, maximumAttempts: input.maximumAttempts },
  });
  try {
    return { ok: true, output: await callTool(input.call) };
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    if (cause instanceof ApplicationFailure)
      return {
        ok: false,
        type: cause.type ?? 'ApplicationFailure',
        message: cause.message,
        details: cause.details?.[0],
      };
    if (cause instanceof TimeoutFailure) return { ok: false, type: 'Timeout', message: cause.message };
    return { ok: false, type: 'Other', message: String(cause) };
  }
}
