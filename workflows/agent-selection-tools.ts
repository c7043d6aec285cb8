import { isCancellation, patched } from '@temporalio/workflow';
import type { ActionOutcome, AgentBrainActivities, AgentToolbox, ModelAction } from '../activities/agent/brain';
import type { AgentToolCallOutcome } from '../activities/agent/tool-call';
import { brain } from './agent-brain';
import type { AgentLoopState, AgentWorkflowInput } from './agent-state';
import { describeFailure } from './failures';
import { TOOL_CALL_RECORDED_WITH_CALL } from './patches';
import { mayHaveRun, toolCallActivities } from './tool-calls';

/** activities/agent/brain.ts UNKNOWN_TOOL_ERROR: the record of a call to a tool the run does not have. */
const UNKNOWN_TOOL_ERROR = 'no such tool';
/** Before ONE_AGENT_LOOP: what a step showed of one tool result at most (now the record activity decides). */
const LEGACY_TOOL_RESULT_CHARS = 8_000;

type ToolCallRecord = Parameters<AgentBrainActivities['recordAgentToolCall']>[0];
type SelectionTool = AgentToolbox['tools'][number];

/** The job's MCP/OpenAPI tools (custom_mcps / market_mcps / an agent-market listing's), which join any toolbox. */
export interface SelectionTools {
  readonly maxToolCalls: number;
  /** The selected tool of this model-facing name, if any. */
  get(name: string): SelectionTool | undefined;
  /** Calls this job may still send (max_tool_calls counts them across the whole job). */
  left(): number;
  /**
   * One call (`entry` undefined: a tool the run does not have, recorded as such), recorded in
   * agent_tool_calls; what the model reads of it. `reply`: a conversation's position for the answer.
   */
  call(entry: SelectionTool | undefined, action: ModelAction, reply: ToolCallRecord['reply']): Promise<ActionOutcome>;
  /**
   * After a step that began with `leftBefore` calls left: the note that max_tool_calls is now spent, given
   * once (the selection tools are no longer offered), or null.
   */
  spentNote(leftBefore: number): string | null;
}

/** Runs begun before ONE_AGENT_LOOP: the step's outcome of a tool call as the loop composed it then (the record returned nothing). */
function legacyToolCallOutcome(call: ToolCallRecord, max: number): ActionOutcome {
  const text = call.output?.text ?? '';
  const cut = text.length > LEGACY_TOOL_RESULT_CHARS ? `${text.slice(0, LEGACY_TOOL_RESULT_CHARS)}… (cut)` : text;
  const message =
    call.status === 'not_sent'
      ? `not sent: this run may make at most ${max} tool call(s) (max_tool_calls) and has made them all`
      : call.status === 'failed'
        ? `the tool call failed${call.mayHaveRun ? ' and was not sent again (it may have run)' : ''}: ${call.error}`
        : call.status === 'error'
          ? `error from the tool: ${cut}`
          : `result: ${cut}`;
  return { ok: call.status === 'completed', navigated: false, message };
}

/**
 * The job's tool selections, prepared by the prepareAgentToolbox activity. `oneLoop`: the run recorded
 * ONE_AGENT_LOOP (else it composes a call's outcome itself); `conversation`: a tool-only run.
 */
export async function prepareSelectionTools(
  input: AgentWorkflowInput,
  state: AgentLoopState,
  { oneLoop, conversation }: { oneLoop: boolean; conversation: boolean },
): Promise<SelectionTools> {
  const { jobId } = input;
  const activities = toolCallActivities(input.toolCallTimeoutMs);
  const prepared = await brain.prepareAgentToolbox({ jobId });
  const byName = new Map(prepared.tools.map((t) => [t.name, t]));
  const max = prepared.maxToolCalls;
  const left = () => Math.max(0, max - (state.toolCallsSent ?? 0));

  /**
   * The record is a regular activity, as the agent loop's always were (custom agents' were local): it
   * turns the tool's answer into model input, which may outgrow a local activity's (an image result to
   * store), and runs begun before ONE_AGENT_LOOP keep the history shape they recorded.
   */
  const recordToolCall = async (call: ToolCallRecord): Promise<ActionOutcome> => {
    const told = await brain.recordAgentToolCall(call);
    return oneLoop ? told : legacyToolCallOutcome(call, max);
  };

  /**
   * One call of a selection tool: the callAgentTool activity, which calls the tool (it classifies
   * retries; a call that may have run is never sent twice) and writes its agent_tool_calls row, and
   * says what the model reads of it; when the tool answered but the row could not be written, the
   * record activity writes it (the call is not sent again). Runs begun before TOOL_CALL_RECORDED_WITH_CALL:
   * callTool, then the record activity. A call that got no answer is recorded failed by the record
   * activity. max_tool_calls counts the calls sent in the whole job: the call past it is recorded not_sent.
   * A tool-only run also records a call of a tool it does not have (other toolboxes' tools answer those).
   */
  const call: SelectionTools['call'] = async (entry, action, reply) => {
    const startedAt = Date.now();
    const index = (state.toolCallsRecorded = (state.toolCallsRecorded ?? 0) + 1);
    const record = {
      jobId,
      index,
      source: entry?.source ?? '-',
      tool: entry?.tool ?? action.name,
      startedAt,
      ...(reply && { reply }),
    };
    if (!entry) return recordToolCall({ ...record, status: 'failed', durationMs: 0, error: UNKNOWN_TOOL_ERROR });
    if ((state.toolCallsSent ?? 0) >= max) {
      // A conversation's answer to the call tells the model the budget is spent.
      if (conversation) state.toldToolsSpent = true;
      return recordToolCall({ ...record, status: 'not_sent', durationMs: 0, error: `max_tool_calls (${max}) reached` });
    }
    state.toolCallsSent = (state.toolCallsSent ?? 0) + 1;
    const toolCall = {
      jobId,
      selection: entry.ref,
      tool: entry.tool,
      args: action.args,
      timeoutMs: input.toolCallTimeoutMs,
    };
    const recordFailure = (err: unknown) => {
      if (isCancellation(err)) throw err;
      return recordToolCall({
        ...record,
        status: 'failed',
        durationMs: Date.now() - startedAt,
        error: describeFailure(err),
        mayHaveRun: mayHaveRun(err),
      });
    };
    if (oneLoop && patched(TOOL_CALL_RECORDED_WITH_CALL)) {
      let done: AgentToolCallOutcome;
      try {
        done = await activities.callAgentTool({ call: toolCall, record });
      } catch (err) {
        return recordFailure(err);
      }
      if ('recorded' in done) return done.recorded;
      // The tool answered but its row was not written: written now, without sending the call again.
      return recordToolCall(done.call);
    }
    try {
      const output = await activities.callTool(toolCall);
      const error = output.isError ? output.text.slice(0, 500) : null;
      return recordToolCall({
        ...record,
        status: output.isError ? 'error' : 'completed',
        durationMs: output.durationMs,
        costMicros: output.costMicros,
        error,
        output,
      });
    } catch (err) {
      return recordFailure(err);
    }
  };

  const spentNote = (leftBefore: number): string | null => {
    if (left() !== 0 || (conversation ? state.toldToolsSpent : leftBefore === 0)) return null;
    if (conversation) {
      state.toldToolsSpent = true;
      return `You have used all ${max} tool call(s) this run may make (max_tool_calls). Call done now with what you have.`;
    }
    return `You have used all ${max} tool call(s) of your connected tool sources this run may make (max_tool_calls); those tools are no longer offered.`;
  };

  return { maxToolCalls: max, get: (name) => byName.get(name), left, call, spentNote };
}
