import { log } from '@temporalio/activity';
import type { ToolActivities, ToolCallInput } from '../tools';
import type { ActionOutcome, AgentBrainActivities, AgentToolCallRecord } from './brain';

/**
 * One selection-tool call of an agent run as one activity: the call (callTool's retry rules: a call
 * that may have run is never sent twice) and its record (recordAgentToolCall: the agent_tool_calls
 * row, and what the model reads of the answer). The workflow's cycle is then the decision and this.
 */

/** What the workflow knows of a call's record before it is sent (the rest comes from the answer). */
export type PlannedToolCall = Pick<AgentToolCallRecord, 'jobId' | 'index' | 'source' | 'tool' | 'startedAt' | 'reply'>;

export interface AgentToolCallInput {
  call: ToolCallInput;
  record: PlannedToolCall;
}

/**
 * The call answered and was recorded (`recorded`: what the model reads), or it answered and its record
 * could not be written (`unrecorded`): the workflow writes `call` with recordAgentToolCall, whose own
 * retries only write. A call that got no answer fails the activity as callTool does; the workflow
 * records it failed.
 */
export type AgentToolCallOutcome = { recorded: ActionOutcome } | { unrecorded: string; call: AgentToolCallRecord };

/** The record of a call the tool answered (an answer with `isError` is the tool's own error). */
export function answeredToolCall(
  record: PlannedToolCall,
  output: Awaited<ReturnType<ToolActivities['callTool']>>,
): AgentToolCallRecord {
  return {
    ...record,
    status: output.isError ? 'error' : 'completed',
    durationMs: output.durationMs,
    costMicros: output.costMicros,
    error: output.isError ? output.text.slice(0, 500) : null,
    output,
  };
}

export function createAgentToolCallActivities(deps: {
  callTool: ToolActivities['callTool'];
  recordAgentToolCall: AgentBrainActivities['recordAgentToolCall'];
}) {
  return {
    /**
     * Calls the tool, then records the call. Once the tool answered, this activity does not fail: a retry
     * would send the call again. A record that cannot be written (the database, a crash of the write)
     * comes back `unrecorded` with the answer, for the workflow to record; the row's key (job, index)
     * makes every write of it land once.
     */
    async callAgentTool(input: AgentToolCallInput): Promise<AgentToolCallOutcome> {
      const output = await deps.callTool(input.call);
      const call = answeredToolCall(input.record, output);
      try {
        return { recorded: await deps.recordAgentToolCall(call) };
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        log.warn('the tool answered but its record was not written; the workflow records it', {
          jobId: call.jobId,
          index: call.index,
          reason,
        });
        return { unrecorded: reason.slice(0, 500), call };
      }
    },
  };
}

export type AgentToolCallActivities = ReturnType<typeof createAgentToolCallActivities>;
