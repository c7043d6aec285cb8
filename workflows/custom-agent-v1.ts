import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentToolbox as ToolboxSummary } from '../activities/agent/brain';
import type { LegacyCustomAgentActivities } from '../activities/agent/legacy-custom-agent';
import type { CustomAgentRunActivities } from '../activities/automations/custom-agent-run';
import type { CustomAgentWorkflowInput } from './custom-agent';
import { describeFailure } from './failures';
import { billing, deliverWebhook, jobs } from './job-lifecycle';
import type { JobOutcome } from './scrape';
import { mayHaveRun as mayHaveRunAt, toolCallActivities } from './tool-calls';

/*
 * customAgentWorkflow as it ran before the one agent loop (only its callTool helpers now come from
 * tool-calls.ts), kept so that runs begun then replay: customAgentWorkflow runs this only when
 * patched('one-agent-loop') is false, i.e. for a run whose history began before the patch. It calls the old activity names (activities/agent/
 * legacy-custom-agent.ts). Remove both once no such run is open (docs/operations.md, "Workflow versions").
 */

type CustomAgentActivities = LegacyCustomAgentActivities & CustomAgentRunActivities;

const agent = proxyActivities<CustomAgentActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '30s',
  retry: {
    initialInterval: '2s',
    maximumAttempts: 4,
    nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError', 'AutomationGone', 'ModelNotSupported'],
  },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

const bookkeeping = proxyLocalActivities<CustomAgentActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 20 },
});

class AgentStop extends Error {}

/**
 * A custom agent: the model decides → one callTool activity per tool call → … → done. The number of
 * tool calls sent is workflow state, so a worker crash replays it instead of resetting it; the call
 * past max_tool_calls is not sent and the model is told so, and gets only `done` from then on. A tool
 * call is retried only as the callTool activity classifies it (ToolCallFailed / ToolCallMayHaveRun are
 * final and go back to the model as error results). Usage is settled once, also for failed runs.
 */
export async function customAgentWorkflowV1(
  input: CustomAgentWorkflowInput,
): Promise<JobOutcome | { status: 'skipped'; reason: string }> {
  let jobId = input.jobId;
  let hasWebhook = input.hasWebhook ?? false;
  if (!jobId) {
    if (!input.automationId)
      throw ApplicationFailure.nonRetryable('customAgentWorkflow needs a jobId or an automationId', 'BadInput');
    const start = await agent.startCustomAgentRun({
      automationId: input.automationId,
      runId: workflowInfo().workflowId,
    });
    if (start.kind === 'skipped') return { status: 'skipped', reason: start.reason };
    jobId = start.jobId;
    hasWebhook = start.hasWebhook;
    if (start.kind === 'unusable') {
      return CancellationScope.nonCancellable(async () => {
        await billing.settleJobUsage({ jobId: start.jobId, agentName: 'custom-agent', outcome: 'failed' });
        await deliverWebhook(start.jobId, hasWebhook);
        return { jobId: start.jobId, status: 'failed' as const, error: start.error };
      });
    }
  }
  const runJobId: string = jobId;
  const tools = toolCallActivities(input.toolCallTimeoutMs);

  /** Tool calls sent so far (and the index of the next record); durable: replayed from history. */
  let sent = 0;
  let recorded = 0;
  let seq = 0;
  let finalAttempts = 0;
  let stoppedBy: string | null = null;
  let error: string | null = null;
  let cancellation: unknown = null;

  const run = async () => {
    await jobs.beginJob(runJobId);
    const toolbox: ToolboxSummary = await agent.prepareCustomAgentToolbox({ jobId: runJobId });
    const byName = new Map(toolbox.tools.map((t) => [t.name, t]));
    const deadline = Date.now() + input.deadlineMs;
    let notes: string[] = [];
    let told = false;
    for (let turn = 1; ; turn++) {
      if (turn > input.maxSteps)
        throw new AgentStop(`stopped: reached the bound of ${input.maxSteps} model decisions without finishing`);
      if (Date.now() > deadline)
        throw new AgentStop(`stopped: reached the deadline of ${Math.round(input.deadlineMs / 1000)}s`);
      const toolsLeft = Math.max(0, toolbox.maxToolCalls - sent);
      const decision = await agent.decideCustomAgentStep({ jobId: runJobId, turn, seq, notes, toolsLeft });
      if (decision.kind === 'stop') throw new AgentStop(decision.reason);
      seq = decision.nextSeq;
      notes = [];
      if (decision.calls.length === 0) {
        if (told) {
          // The budget is spent and the model answered in words: the run finishes with what it has.
          stoppedBy = 'max_tool_calls';
          return;
        }
        notes.push('Your last answer called no tool. Call a tool, or done when finished.');
        continue;
      }
      for (const call of decision.calls) {
        const here = seq++;
        if (call.name === 'done') {
          const verdict = await agent.acceptCustomAgentAnswer({
            jobId: runJobId,
            seq: here,
            callId: call.id,
            args: call.args,
            attempt: finalAttempts++,
          });
          if (verdict.accepted) return;
          continue;
        }
        const entry = byName.get(call.name);
        const startedAt = Date.now();
        if (!entry) {
          await bookkeeping.recordCustomAgentToolCall({
            jobId: runJobId,
            seq: here,
            callId: call.id,
            index: ++recorded,
            source: '-',
            tool: call.name,
            status: 'failed',
            startedAt,
            durationMs: 0,
            error: 'no such tool',
            text: `Error: there is no tool named "${call.name}". Use one of the tools offered, or done.`,
          });
          continue;
        }
        if (sent >= toolbox.maxToolCalls) {
          told = true;
          await bookkeeping.recordCustomAgentToolCall({
            jobId: runJobId,
            seq: here,
            callId: call.id,
            index: ++recorded,
            source: entry.source,
            tool: entry.tool,
            status: 'not_sent',
            startedAt,
            durationMs: 0,
            error: `max_tool_calls (${toolbox.maxToolCalls}) reached`,
            text: `Not sent: this run may make at most ${toolbox.maxToolCalls} tool call(s) (max_tool_calls) and has made them all. Call done now with what you have.`,
          });
          continue;
        }
        sent++;
        const index = ++recorded;
        try {
          const output = await tools.callTool({
            jobId: runJobId,
            selection: entry.ref,
            tool: entry.tool,
            args: call.args,
            timeoutMs: input.toolCallTimeoutMs,
          });
          await bookkeeping.recordCustomAgentToolCall({
            jobId: runJobId,
            seq: here,
            callId: call.id,
            index,
            source: entry.source,
            tool: entry.tool,
            status: output.isError ? 'error' : 'completed',
            startedAt,
            durationMs: output.durationMs,
            costMicros: output.costMicros,
            error: output.isError ? output.text.slice(0, 500) : null,
            text: output.isError ? `Error from the tool: ${output.text}` : output.text,
          });
        } catch (err) {
          if (isCancellation(err)) throw err;
          const reason = describeFailure(err);
          const mayHaveRun = mayHaveRunAt(err);
          await bookkeeping.recordCustomAgentToolCall({
            jobId: runJobId,
            seq: here,
            callId: call.id,
            index,
            source: entry.source,
            tool: entry.tool,
            status: 'failed',
            startedAt,
            durationMs: Date.now() - startedAt,
            error: reason,
            text: `The tool call failed${mayHaveRun ? ' and was not sent again (it may have run)' : ''}: ${reason}`,
          });
        }
      }
      if (sent >= toolbox.maxToolCalls && !told) {
        told = true;
        notes.push(
          `You have used all ${toolbox.maxToolCalls} tool call(s) this run may make (max_tool_calls). Call done now with what you have.`,
        );
      }
    }
  };

  try {
    await run();
  } catch (err) {
    if (isCancellation(err)) cancellation = err;
    error = err instanceof AgentStop ? err.message : describeFailure(err);
  }
  const outcome = await CancellationScope.nonCancellable(async () => {
    await billing.settleJobUsage({
      jobId: runJobId,
      agentName: 'custom-agent',
      outcome: error === null ? 'completed' : 'failed',
    });
    const finished = await bookkeeping.finishCustomAgentJob({ jobId: runJobId, error, stoppedBy });
    await deliverWebhook(runJobId, hasWebhook);
    return finished;
  });
  if (cancellation) throw cancellation;
  return outcome;
}
