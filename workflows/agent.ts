import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentBrainActivities, AgentToolbox, Decision, FinalAnswerVerdict } from '../activities/agent/brain';
import type { ToolActivities } from '../activities/tools';
import type { SessionActivities, SessionHandle, SessionOpenerActivities } from '../activities/agent/session';
import type { SocialToolActivities } from '../activities/agent/social';
import type { AgentAction, AgentOutcome, AgentTaskResult } from '../db/schema';
import { describeFailure } from './failures';
import { billing, deliverWebhook, jobs } from './job-lifecycle';
import type { JobOutcome } from './scrape';

export interface AgentWorkflowInput {
  jobId: string;
  /** Which tools act: a browser session on a browser worker, or the forum/microblog platform clients. */
  toolbox?: 'browser' | 'social';
  browserTaskQueue: string;
  hasWebhook: boolean;
  taskCount: number;
  maxSteps: number;
  deadlineMs: number;
  agentName: string;
  /** The run continues as new once its history has this many events (or the server suggests it); default 5,000. */
  historyEventsLimit?: number;
  /** How long one forum/microblog tool call may take before it is retried; default 2 minutes. */
  socialToolTimeoutMs?: number;
  /** The job has tool selections (custom_mcps / market_mcps / an agent-market listing's): its MCP/OpenAPI tools join the loop's. */
  selectionTools?: boolean;
  /** How long one MCP/OpenAPI tool call may take (default 2 minutes). */
  toolCallTimeoutMs?: number;
  /** Where an earlier run of this job stopped when it continued as new. */
  resume?: AgentLoopState;
}

/** Everything the loop needs to go on in a fresh run (continue-as-new) exactly where it stopped. */
export interface AgentLoopState {
  taskIndex: number;
  /** The next step of the current task. */
  step: number;
  /** Steps of all tasks so far (the step bound counts them all). */
  stepsTaken: number;
  /** Absolute deadline on the workflow clock. */
  deadline: number;
  /** Loop detection of the current task: page state + actions → times seen. */
  seen: Record<string, number>;
  /** Notes for the model's next decision. */
  notes: string[];
  finalAttempts: number;
  /** The open browser session, handed from run to run (never reopened for continue-as-new). */
  session: SessionHandle | null;
  /** Runs of this job before this one. */
  generation: number;
  /** Selection-tool calls sent so far (max_tool_calls counts them across the whole job). */
  toolCallsSent?: number;
  /** Selection-tool calls recorded so far (sent or not): the index of the next agent_tool_calls row. */
  toolCallsRecorded?: number;
}

/** The type names of activities/tools (not imported: workflows stay free of activity code). */
const TOOL_CALL_FAILED = 'ToolCallFailed';
const TOOL_CALL_MAY_HAVE_RUN = 'ToolCallMayHaveRun';
/** What the model reads of one tool result at most (the runtime already bounds it; the step history is kept small). */
const TOOL_RESULT_CHARS = 8_000;

/** Same page state and same actions this many times: warn the model and skip; then give up. */
export const LOOP_WARN_REPEATS = 2;
export const LOOP_STOP_REPEATS = 4;

const DEFAULT_HISTORY_EVENTS_LIMIT = 5_000;
/** Well below Temporal's 50 MB history limit, leaving room for the step that runs when it is reached. */
const HISTORY_BYTES_LIMIT = 8 * 1024 * 1024;
const DEFAULT_SOCIAL_TOOL_TIMEOUT_MS = 120_000;
/** How long the session's keeper may go without a heartbeat before its worker counts as gone. */
const KEEPER_HEARTBEAT_TIMEOUT_MS = 20_000;
const MIN_OPEN_WAIT_MS = 60_000;

/** A cancelled run waits for the activity in flight to stop (and record what it used) before it settles. */
const brain = proxyActivities<AgentBrainActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '15s',
  retry: { initialInterval: '2s', maximumAttempts: 4, nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError'] },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

class AgentStop extends Error {}

/** A session whose worker stopped answering (its keeper's heartbeats ended) or no longer holds it. */
interface LiveSession {
  handle: SessionHandle;
  /** Why the session is gone; null while its worker holds it. */
  lost: string | null;
  /** Set once this run lets go of the session itself (closing it, or handing it to the next run). */
  released: boolean;
  keeper: CancellationScope;
}

function describeAction(action: AgentAction): string {
  const args = Object.entries(action.args)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v.length > 80 ? v.slice(0, 80) + '…' : v) : JSON.stringify(v)}`)
    .join(', ');
  return `${action.name}(${args})`;
}

function describeActions(actions: AgentAction[]): string {
  return actions.length ? actions.map(describeAction).join(', ') : 'no action';
}

/** A short deterministic digest (two FNV-1a passes), so loop-detection state stays small across runs. */
function digest(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0');
}

function isSessionLost(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'SessionLost';
}

function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

function isTimeout(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure;
}

function freshState(input: AgentWorkflowInput): AgentLoopState {
  return { taskIndex: 0, step: 1, stepsTaken: 0, deadline: Date.now() + input.deadlineMs, seen: {}, notes: [], finalAttempts: 0, session: null, generation: 0 };
}

/** The one-off browser agent: the shared loop with browser tools. */
export async function agentWorkflow(input: AgentWorkflowInput): Promise<JobOutcome> {
  return runAgentLoop(input, (next) => continueAsNew<typeof agentWorkflow>(next));
}

/**
 * The one agent loop: observe → the model decides up to N actions → tools execute them, until done or a bound stops it.
 * Past a history threshold the run continues as new through `continueAs` with its whole state (same session, same
 * counters); settlement, the job's end and the webhook happen once, in the last run, even when the run is cancelled.
 */
export async function runAgentLoop(input: AgentWorkflowInput, continueAs: (next: AgentWorkflowInput) => Promise<never>): Promise<JobOutcome> {
  const { jobId } = input;
  const social = input.toolbox === 'social';
  const state = input.resume ?? freshState(input);
  const historyEventsLimit = input.historyEventsLimit ?? DEFAULT_HISTORY_EVENTS_LIMIT;
  let stepsThisRun = 0;
  let session: LiveSession | null = null;

  const socialTools = proxyActivities<SocialToolActivities>({
    startToCloseTimeout: input.socialToolTimeoutMs ?? DEFAULT_SOCIAL_TOOL_TIMEOUT_MS,
    retry: { initialInterval: '2s', maximumAttempts: 3 },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });

  const selectionTools = proxyActivities<ToolActivities>({
    startToCloseTimeout: (input.toolCallTimeoutMs ?? 120_000) + 15_000,
    heartbeatTimeout: '30s',
    retry: { initialInterval: '1s', maximumAttempts: 3, nonRetryableErrorTypes: [TOOL_CALL_FAILED, TOOL_CALL_MAY_HAVE_RUN] },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
  /** The job's MCP/OpenAPI tools, by model-facing name (null: a job without tool selections). */
  let toolbox: (AgentToolbox & { byName: Map<string, AgentToolbox['tools'][number]> }) | null = null;
  const toolsLeft = () => (toolbox ? Math.max(0, toolbox.maxToolCalls - (state.toolCallsSent ?? 0)) : undefined);

  /**
   * One call of a selection tool: the callTool activity (it classifies retries; a call that may have
   * run is never sent twice), its agent_tool_calls row, and the (size-capped) result as the outcome.
   */
  const callSelectionTool = async (entry: AgentToolbox['tools'][number], action: AgentAction): Promise<{ ok: boolean; navigated: boolean; message: string }> => {
    const max = toolbox!.maxToolCalls;
    const startedAt = Date.now();
    const index = (state.toolCallsRecorded = (state.toolCallsRecorded ?? 0) + 1);
    const record = { jobId, index, source: entry.source, tool: entry.tool, startedAt };
    if ((state.toolCallsSent ?? 0) >= max) {
      await brain.recordAgentToolCall({ ...record, status: 'not_sent', durationMs: 0, error: `max_tool_calls (${max}) reached` });
      return { ok: false, navigated: false, message: `not sent: this run may make at most ${max} tool call(s) (max_tool_calls) and has made them all` };
    }
    state.toolCallsSent = (state.toolCallsSent ?? 0) + 1;
    try {
      const output = await selectionTools.callTool({ jobId, selection: entry.ref, tool: entry.tool, args: action.args, timeoutMs: input.toolCallTimeoutMs });
      await brain.recordAgentToolCall({ ...record, status: output.isError ? 'error' : 'completed', durationMs: output.durationMs, costMicros: output.costMicros, error: output.isError ? output.text.slice(0, 500) : null });
      const text = output.text.length > TOOL_RESULT_CHARS ? `${output.text.slice(0, TOOL_RESULT_CHARS)}… (cut)` : output.text;
      return { ok: !output.isError, navigated: false, message: output.isError ? `error from the tool: ${text}` : `result: ${text}` };
    } catch (err) {
      if (isCancellation(err)) throw err;
      const reason = describeFailure(err);
      const mayHaveRun = failureType(err) === TOOL_CALL_MAY_HAVE_RUN;
      await brain.recordAgentToolCall({ ...record, status: 'failed', durationMs: Date.now() - startedAt, error: reason });
      return { ok: false, navigated: false, message: `the tool call failed${mayHaveRun ? ' and was not sent again (it may have run)' : ''}: ${reason}` };
    }
  };

  const historyIsFull = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= historyEventsLimit || info.historySize >= HISTORY_BYTES_LIMIT;
  };

  /** Holds the session through a keeper on its worker; the keeper ending means the worker is gone, not busy. */
  const keep = (handle: SessionHandle): LiveSession => {
    const live: LiveSession = { handle, lost: null, released: false, keeper: new CancellationScope() };
    const keeper = proxyActivities<SessionActivities>({
      taskQueue: handle.taskQueue,
      scheduleToStartTimeout: '30s',
      startToCloseTimeout: Math.max(state.deadline - Date.now(), 0) + 10 * 60_000,
      heartbeatTimeout: KEEPER_HEARTBEAT_TIMEOUT_MS,
      retry: { maximumAttempts: 1 },
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    });
    const lose = (why: string) => {
      if (!live.released) live.lost = why;
    };
    live.keeper
      .run(() => keeper.holdBrowserSession({ jobId, sessionId: handle.sessionId }))
      .then(
        () => lose('its browser session was closed'),
        (err) => {
          // Cancelled by this run (or with it) is not a lost worker; any other end of the keeper is.
          if (!live.keeper.consideredCancelled) lose(isTimeout(err) ? 'no heartbeat from it' : describeFailure(err));
        },
      );
    return live;
  };

  const release = (live: LiveSession) => {
    live.released = true;
    live.keeper.cancel();
  };

  const openSession = async (): Promise<SessionHandle> => {
    // Waiting for a browser slot on a busy worker heartbeats; only the deadline bounds it.
    const wait = Math.max(state.deadline - Date.now(), MIN_OPEN_WAIT_MS);
    const opener = proxyActivities<SessionOpenerActivities>({
      taskQueue: input.browserTaskQueue,
      scheduleToCloseTimeout: wait,
      startToCloseTimeout: wait,
      heartbeatTimeout: '30s',
      retry: { initialInterval: '2s', maximumAttempts: 5, nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError'] },
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
    try {
      return await opener.openBrowserSession({ jobId });
    } catch (err) {
      const timeout = isTimeout(err) ? ((err as ActivityFailure).cause as TimeoutFailure).timeoutType : null;
      if (timeout === 'SCHEDULE_TO_CLOSE' || timeout === 'START_TO_CLOSE') {
        throw new AgentStop(`stopped: no browser became free within ${Math.round(wait / 1000)}s`);
      }
      throw err;
    }
  };

  const inSession = async <T>(call: (activities: SessionActivities, handle: SessionHandle) => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      const live: LiveSession = (session ??= keep(await openSession()));
      const activities = proxyActivities<SessionActivities>({
        taskQueue: live.handle.taskQueue,
        // A backstop only: a gone worker is told by its keeper, and a busy one is waited for.
        scheduleToStartTimeout: '10m',
        startToCloseTimeout: '2m',
        heartbeatTimeout: '15s',
        retry: { maximumAttempts: 1 },
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      });
      const callScope = new CancellationScope();
      const result = callScope.run(() => call(activities, live.handle));
      const watch = new CancellationScope();
      const gone = watch.run(() => condition(() => live.lost !== null)).then(
        () => true,
        () => false,
      );
      let failure: unknown;
      try {
        const first = await Promise.race([result.then((value) => ({ value })), gone]);
        if (typeof first === 'object') return first.value;
        if (!first) return await result; // this run was cancelled: the call's own outcome decides
        callScope.cancel();
        result.catch(() => undefined);
      } catch (err) {
        failure = err;
        if (isTimeout(err)) await condition(() => live.lost !== null, KEEPER_HEARTBEAT_TIMEOUT_MS + 10_000);
        if (!isSessionLost(err) && live.lost === null) throw err;
      } finally {
        watch.cancel();
      }
      if (attempt >= 2) throw failure ?? new Error(`browser worker lost (${live.lost})`);
      const why = live.lost ?? describeFailure(failure);
      release(live);
      session = null;
      await jobs.logJobProgress(jobId, `browser worker lost (${why}); reopening the session from the last checkpoint`);
    }
  };

  type TaskEnd = { kind: 'done'; result: AgentTaskResult & { valid?: boolean } } | { kind: 'continue' };

  const runTask = async (taskIndex: number): Promise<TaskEnd> => {
    for (; ; state.step++) {
      if (stepsThisRun > 0 && historyIsFull()) return { kind: 'continue' };
      if (state.stepsTaken >= input.maxSteps) throw new AgentStop(`stopped: reached the step bound of ${input.maxSteps} steps without finishing`);
      if (Date.now() > state.deadline) throw new AgentStop(`stopped: reached the deadline of ${Math.round(input.deadlineMs / 1000)}s`);
      const step = state.step;
      state.stepsTaken++;
      stepsThisRun++;
      const observation = social
        ? await socialTools.observeSocial({ jobId, taskIndex, step })
        : await inSession((s, h) => s.observePage({ jobId, sessionId: h.sessionId, taskIndex, step }));
      const left = toolsLeft();
      const decision: Decision = await brain.decideNextActions({ jobId, taskIndex, step, notes: state.notes, ...(left !== undefined && { toolsLeft: left }) });
      const notes: string[] = [];
      state.notes = notes;
      if (decision.kind === 'stop') throw new AgentStop(decision.reason);

      if (decision.actions.length === 0) notes.push('Your last answer called no tool. Every answer must call at least one tool; call done when finished.');
      const signature = `${observation.stateHash}|${digest(JSON.stringify(decision.actions))}`;
      const repeats = (state.seen[signature] ?? 0) + 1;
      state.seen[signature] = repeats;
      const outcomes: AgentOutcome[] = [];
      if (repeats > LOOP_STOP_REPEATS) {
        throw new AgentStop(`stopped: repeated ${describeActions(decision.actions)} ${repeats} times on an unchanged page without progress`);
      }
      if (repeats > LOOP_WARN_REPEATS) {
        notes.push(
          `Loop detected: you chose ${describeActions(decision.actions)} ${repeats} times on this unchanged page and it did not help. ` +
            'Those actions were NOT executed this time. Choose a different approach (another element, navigation, scrolling) or finish with done.',
        );
        outcomes.push({ action: 'loop-guard', ok: false, message: 'skipped: repeated actions without progress' });
      } else {
        for (const [actionIndex, action] of decision.actions.entries()) {
          if (action.name === 'done') {
            const verdict: FinalAnswerVerdict = await brain.acceptFinalAnswer({ jobId, taskIndex, args: action.args, attempt: state.finalAttempts++ });
            outcomes.push({ action: 'done', ok: verdict.accepted, message: verdict.message });
            if (verdict.accepted) {
              await brain.recordStep({ jobId, taskIndex, step, outcomes, goal: decision.goal });
              return { kind: 'done', result: { ...verdict.result, steps: step } };
            }
            notes.push(verdict.message);
            break;
          }
          const selected = toolbox?.byName.get(action.name);
          const result = selected
            ? await callSelectionTool(selected, action)
            : action.name === 'extract'
              ? await brain.runExtractTool({ jobId, taskIndex, step, question: String(action.args.question ?? '') })
              : social
                ? await socialTools.executeSocialTool({ jobId, taskIndex, step, actionIndex, action })
                : await inSession((s, h) => s.executeAction({ jobId, sessionId: h.sessionId, taskIndex, step, actionIndex, action }));
          outcomes.push({ action: describeAction(action), ok: result.ok, message: result.message });
          if (!result.ok || result.navigated) {
            if (actionIndex < decision.actions.length - 1) notes.push('The remaining actions of your last step were not executed because the page changed or an action failed.');
            break;
          }
        }
      }
      if (left !== undefined && left > 0 && toolsLeft() === 0) {
        notes.push(`You have used all ${toolbox!.maxToolCalls} tool call(s) of your connected tool sources this run may make (max_tool_calls); those tools are no longer offered.`);
      }
      await brain.recordStep({ jobId, taskIndex, step, outcomes, goal: decision.goal });
    }
  };

  let error: string | null = null;
  let cancellation: unknown = null;
  let continuing = false;
  try {
    if (state.session) session = keep(state.session);
    if (!input.resume) await jobs.beginJob(jobId);
    if (input.selectionTools) {
      const prepared = await brain.prepareAgentToolbox({ jobId });
      toolbox = { ...prepared, byName: new Map(prepared.tools.map((t) => [t.name, t])) };
    }
    for (; state.taskIndex < input.taskCount; state.taskIndex++) {
      const end = await runTask(state.taskIndex);
      if (end.kind === 'continue') {
        continuing = true;
        break;
      }
      await brain.saveTaskResult({ jobId, taskIndex: state.taskIndex, result: end.result });
      Object.assign(state, { step: 1, seen: {}, notes: [], finalAttempts: 0 });
    }
  } catch (err) {
    if (isCancellation(err)) cancellation = err;
    error = err instanceof AgentStop ? err.message : describeFailure(err);
  }

  if (continuing) {
    const live = session as LiveSession | null;
    if (live) release(live);
    const carried = live && live.lost === null ? live.handle : null;
    return continueAs({ ...input, resume: { ...state, session: carried, generation: state.generation + 1 } });
  }

  // Cleanup runs even when the run was cancelled: close the browser, charge what was used, end the job, tell the webhook.
  const outcome = await CancellationScope.nonCancellable(async () => {
    const live = session as LiveSession | null;
    if (live) {
      release(live);
      if (live.lost === null) {
        const closer = proxyActivities<SessionActivities>({
          taskQueue: live.handle.taskQueue,
          scheduleToStartTimeout: '30s',
          startToCloseTimeout: '30s',
          retry: { maximumAttempts: 1 },
        });
        await closer.closeBrowserSession({ jobId, sessionId: live.handle.sessionId }).catch(() => undefined);
      }
    }
    await billing.settleJobUsage({ jobId, agentName: input.agentName, outcome: error === null ? 'completed' : 'failed' });
    const finished = await brain.finishAgentJob({ jobId, error });
    await deliverWebhook(jobId, input.hasWebhook);
    return finished;
  });
  if (cancellation) throw cancellation;
  return outcome;
}
