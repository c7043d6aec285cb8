import { CancellationScope, continueAsNew, isCancellation, patched, workflowInfo } from '@temporalio/workflow';
import type { Decision } from '../activities/agent/brain';
import type { AgentOutcome, AgentTaskResult } from '../db/schema';
import { AgentStop, brain } from './agent-brain';
import { describeAction, passesLoopGuard } from './agent-loop-guard';
import { prepareSelectionTools, type SelectionTools } from './agent-selection-tools';
import { freshState, takeSeq, type AgentLoopState, type AgentWorkflowInput, type StepAt } from './agent-state';
import { chooseToolbox, type Toolbox } from './agent-toolbox';
import { describeFailure } from './failures';
import { billing, deliverWebhook, jobs } from './job-lifecycle';
import { ONE_AGENT_LOOP } from './patches';
import type { JobOutcome } from './scrape';

export type { AgentLoopState, AgentWorkflowInput } from './agent-state';
export { LOOP_STOP_REPEATS, LOOP_WARN_REPEATS } from './agent-loop-guard';

const DEFAULT_HISTORY_EVENTS_LIMIT = 5_000;
/** Well below Temporal's 50 MB history limit, leaving room for the step that runs when it is reached. */
const HISTORY_BYTES_LIMIT = 8 * 1024 * 1024;

/** One run of the loop: what its steps read and update. */
interface LoopRun {
  input: AgentWorkflowInput;
  state: AgentLoopState;
  /** What acts (chosen once): a browser session, the forum/microblog clients, or the tool selections alone. */
  toolbox: Toolbox;
  /** The job's MCP/OpenAPI tools (null: a job without tool selections). */
  selection: SelectionTools | null;
  stepsThisRun: number;
}

/** How a task ends: its accepted final answer (null: a tool-only run that ended on max_tool_calls), or the run continues as new. */
type TaskEnd =
  { kind: 'done'; result: (AgentTaskResult & { valid?: boolean }) | null; stoppedBy?: string } | { kind: 'continue' };

/** The one-off browser agent: the shared loop with browser tools. */
export async function agentWorkflow(input: AgentWorkflowInput): Promise<JobOutcome> {
  return runAgentLoop(input, (next) => continueAsNew<typeof agentWorkflow>(next));
}

/**
 * The one agent loop, for every agent run (browser, social, and tool-only custom agents): observe (a page or a feed;
 * a tool-only run has nothing to observe) → the model decides up to N actions (one LLM activity) → each runs as its
 * own activity, until done or a bound stops it. Decided here, for every toolbox: the step and deadline bounds, the
 * loop guard, max_tool_calls (calls sent, counted in the job's state; workflows/agent-selection-tools.ts), continue-
 * as-new past a history threshold through `continueAs` with the whole state (same session, same counters, same
 * conversation position), and settlement: the charge, the job's end and the webhook happen once, in the last run,
 * even when the run is cancelled. What acts is the toolbox (workflows/agent-toolbox.ts), chosen once.
 */
export async function runAgentLoop(
  input: AgentWorkflowInput,
  continueAs: (next: AgentWorkflowInput) => Promise<never>,
): Promise<JobOutcome> {
  const { jobId } = input;
  const oneLoop = patched(ONE_AGENT_LOOP);
  const state = input.resume ?? freshState(input);
  const toolbox = chooseToolbox(input, state);
  const run: LoopRun = { input, state, toolbox, selection: null, stepsThisRun: 0 };

  let error: string | null = null;
  /** Why a run without an accepted final answer completed anyway (a tool-only run past max_tool_calls). */
  let stoppedBy: string | null = null;
  let cancellation: unknown = null;
  let continuing = false;
  try {
    if (!input.resume) await jobs.beginJob(jobId);
    if (input.selectionTools)
      run.selection = await prepareSelectionTools(input, state, { oneLoop, conversation: toolbox.conversation });
    for (; state.taskIndex < input.taskCount; state.taskIndex++) {
      const end = await runTask(run, state.taskIndex);
      if (end.kind === 'continue') {
        continuing = true;
        break;
      }
      if (end.stoppedBy) stoppedBy = end.stoppedBy;
      if (end.result && !toolbox.conversation)
        await brain.saveTaskResult({ jobId, taskIndex: state.taskIndex, result: end.result });
      Object.assign(state, { step: 1, seen: {}, notes: [], finalAttempts: 0 });
    }
  } catch (err) {
    if (isCancellation(err)) cancellation = err;
    error = err instanceof AgentStop ? err.message : describeFailure(err);
  }

  if (continuing) {
    const session = toolbox.handOver();
    return continueAs({ ...input, resume: { ...state, session, generation: state.generation + 1 } });
  }

  // Cleanup runs even when the run was cancelled: close the browser, charge what was used, end the job, tell the webhook.
  const outcome = await CancellationScope.nonCancellable(async () => {
    await toolbox.close();
    await billing.settleJobUsage({
      jobId,
      agentName: input.agentName,
      outcome: error === null ? 'completed' : 'failed',
    });
    const finished = await brain.finishAgentJob({ jobId, error, ...(stoppedBy && { stoppedBy }) });
    await deliverWebhook(jobId, input.hasWebhook);
    return finished;
  });
  if (cancellation) throw cancellation;
  return outcome;
}

/** One task, step by step: observe → decide → act (unless the loop guard skips) → tell the model → record the step. */
async function runTask(run: LoopRun, taskIndex: number): Promise<TaskEnd> {
  const { input, state, toolbox } = run;
  const conversation = toolbox.conversation;
  for (; ; state.step++) {
    if (run.stepsThisRun > 0 && historyIsFull(input)) return { kind: 'continue' };
    checkBounds(input, state, conversation);
    const at: StepAt = { jobId: input.jobId, taskIndex, step: state.step };
    state.stepsTaken++;
    run.stepsThisRun++;

    const observation = await toolbox.observe(at);
    const left = run.selection?.left();
    const decision: Decision = await brain.decideNextActions({
      ...at,
      notes: state.notes,
      ...(left !== undefined && { toolsLeft: left }),
      ...(conversation && { seq: state.seq ?? 0 }),
    });
    const notes: string[] = [];
    state.notes = notes;
    if (decision.kind === 'stop') throw new AgentStop(decision.reason);
    if (conversation) state.seq = decision.nextSeq;

    if (decision.actions.length === 0) {
      // Told that max_tool_calls is spent, the model answered in words: the run finishes with what it has.
      if (state.toldToolsSpent) return { kind: 'done', result: null, stoppedBy: 'max_tool_calls' };
      notes.push(
        `Your last answer called no tool. ${conversation ? 'Call a tool, or done when finished.' : 'Every answer must call at least one tool; call done when finished.'}`,
      );
    }
    const outcomes: AgentOutcome[] = [];
    if (passesLoopGuard(state.seen, observation, decision.actions, notes, outcomes)) {
      const result = await runActions(run, at, decision, outcomes, notes);
      if (result) return { kind: 'done', result };
    }
    // The model is told once that max_tool_calls is spent; the selection tools are no longer offered.
    const spent = left !== undefined ? run.selection!.spentNote(left) : null;
    if (spent) notes.push(spent);
    // A step run keeps the step's outcomes; a conversation already holds each call's answer.
    if (!conversation) await brain.recordStep({ ...at, outcomes, goal: decision.goal });
  }
}

/** The actions of one decision, in order, until `done` is accepted (its result), or one fails or changes the page. */
async function runActions(
  run: LoopRun,
  at: StepAt,
  decision: Extract<Decision, { kind: 'actions' }>,
  outcomes: AgentOutcome[],
  notes: string[],
): Promise<(AgentTaskResult & { valid?: boolean }) | null> {
  const { state, toolbox, selection } = run;
  const conversation = toolbox.conversation;
  for (const [actionIndex, action] of decision.actions.entries()) {
    // A conversation answers each call of the answer at its own position.
    const reply = conversation ? { seq: takeSeq(state), callId: action.id ?? '' } : undefined;
    if (action.name === 'done') {
      const verdict = await brain.acceptFinalAnswer({
        jobId: at.jobId,
        taskIndex: at.taskIndex,
        args: action.args,
        attempt: state.finalAttempts++,
        ...(reply && { reply }),
      });
      outcomes.push({ action: 'done', ok: verdict.accepted, message: verdict.message });
      if (verdict.accepted) {
        if (!conversation) await brain.recordStep({ ...at, outcomes, goal: decision.goal });
        return { ...verdict.result, steps: at.step };
      }
      // A conversation's answer to the call says why; the next calls are answered too.
      if (conversation) continue;
      notes.push(verdict.message);
      break;
    }
    const selected = selection?.get(action.name);
    const result =
      selected || conversation
        ? await selection!.call(selected, action, reply)
        : await toolbox.act({ ...at, actionIndex }, action);
    outcomes.push({ action: describeAction(action), ok: result.ok, message: result.message });
    // The rest was chosen for a page or feed that changed or an action that failed (a conversation's calls stand alone).
    if (!conversation && (!result.ok || result.navigated)) {
      if (actionIndex < decision.actions.length - 1)
        notes.push(
          'The remaining actions of your last step were not executed because the page changed or an action failed.',
        );
      break;
    }
  }
  return null;
}

/** The step bound (every task's steps; a tool-only run's model decisions) and the deadline stop the run. */
function checkBounds(input: AgentWorkflowInput, state: AgentLoopState, conversation: boolean): void {
  if (state.stepsTaken >= input.maxSteps) {
    throw new AgentStop(
      `stopped: reached the ${conversation ? `bound of ${input.maxSteps} model decisions` : `step bound of ${input.maxSteps} steps`} without finishing`,
    );
  }
  if (Date.now() > state.deadline)
    throw new AgentStop(`stopped: reached the deadline of ${Math.round(input.deadlineMs / 1000)}s`);
}

/** The run continues as new once its history is this long or large, or the server suggests it. */
function historyIsFull(input: AgentWorkflowInput): boolean {
  const info = workflowInfo();
  const limit = input.historyEventsLimit ?? DEFAULT_HISTORY_EVENTS_LIMIT;
  return info.continueAsNewSuggested || info.historyLength >= limit || info.historySize >= HISTORY_BYTES_LIMIT;
}
