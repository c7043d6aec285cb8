import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  ActionOutcome,
  AgentBrainActivities,
  AgentToolbox,
  Decision,
  FinalAnswerVerdict,
  ModelAction,
} from '../activities/agent/brain';
import type { SessionActivities, SessionHandle, SessionOpenerActivities } from '../activities/agent/session';
import type { AgentToolCallOutcome } from '../activities/agent/tool-call';
import type { SocialToolActivities } from '../activities/agent/social';
import type { AgentOutcome, AgentTaskResult } from '../db/schema';
import { describeFailure } from './failures';
import { billing, deliverWebhook, jobs } from './job-lifecycle';
import type { JobOutcome } from './scrape';
import { mayHaveRun, toolCallActivities } from './tool-calls';

export interface AgentWorkflowInput {
  jobId: string;
  /**
   * Which tools act: a browser session on a browser worker, the forum/microblog platform clients, or
   * only the job's tool selections (a custom agent: its model keeps one conversation, see LoopJob in
   * activities/agent/job.ts). Every toolbox may add the job's tool selections.
   */
  toolbox?: 'browser' | 'social' | 'tools';
  /** Where browser sessions open (the browser toolbox). */
  browserTaskQueue?: string;
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
  /**
   * The browser session's waits (AGENT_BROWSER_*, lib/config.ts BrowserSessionWaits); each absent one is
   * the default: 60 s at least for a free browser, 30 s without a heartbeat from a waiting open, 20 s from
   * the session's keeper.
   */
  browserSession?: { openWaitMinMs?: number; openHeartbeatTimeoutMs?: number; keeperHeartbeatTimeoutMs?: number };
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
  /** A tool-only run: the position of the next message of its conversation. */
  seq?: number;
  /** A tool-only run: the model was told that max_tool_calls is spent (a later answer without a tool call ends the run). */
  toldToolsSpent?: boolean;
}

/**
 * The patch of the one agent loop: custom agents run it (before, customAgentWorkflow was a loop of
 * its own, workflows/custom-agent-v1.ts), and a tool call's record says what the model reads of it.
 * Runs begun before it replay what they recorded (see docs/operations.md, "Workflow versions").
 */
export const ONE_AGENT_LOOP = 'one-agent-loop';

/**
 * The patch of a selection-tool call recorded with the call (one callAgentTool activity, where the
 * call was callTool and then recordAgentToolCall). Asked at each call sent: the calls a run sent before
 * it replay the two activities they recorded, and its calls from then on take the one (its marker is
 * in the history before the first of them). See docs/operations.md, "Workflow versions".
 */
export const TOOL_CALL_RECORDED_WITH_CALL = 'tool-call-recorded-with-call';

/** activities/agent/brain.ts UNKNOWN_TOOL_ERROR: the record of a call to a tool the run does not have. */
const UNKNOWN_TOOL_ERROR = 'no such tool';
/** Before ONE_AGENT_LOOP: what a step showed of one tool result at most (now the record activity decides). */
const LEGACY_TOOL_RESULT_CHARS = 8_000;

/** Same page state and same actions this many times: warn the model and skip; then give up. */
export const LOOP_WARN_REPEATS = 2;
export const LOOP_STOP_REPEATS = 4;

const DEFAULT_HISTORY_EVENTS_LIMIT = 5_000;
/** Well below Temporal's 50 MB history limit, leaving room for the step that runs when it is reached. */
const HISTORY_BYTES_LIMIT = 8 * 1024 * 1024;
const DEFAULT_SOCIAL_TOOL_TIMEOUT_MS = 120_000;
/** How long the session's keeper may go without a heartbeat before its worker counts as gone (by default). */
const KEEPER_HEARTBEAT_TIMEOUT_MS = 20_000;
/** The least a run waits for a free browser (by default; else until its deadline). */
const MIN_OPEN_WAIT_MS = 60_000;
/** How long an open waiting for a browser slot may go without a heartbeat (by default). */
const OPEN_HEARTBEAT_TIMEOUT_MS = 30_000;

/** A cancelled run waits for the activity in flight to stop (and record what it used) before it settles. */
const brain = proxyActivities<AgentBrainActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '15s',
  retry: {
    initialInterval: '2s',
    maximumAttempts: 4,
    nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError', 'ModelNotSupported'],
  },
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

type ToolCallRecord = Parameters<AgentBrainActivities['recordAgentToolCall']>[0];

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

function describeAction(action: ModelAction): string {
  const args = Object.entries(action.args)
    .map(
      ([k, v]) =>
        `${k}=${typeof v === 'string' ? JSON.stringify(v.length > 80 ? v.slice(0, 80) + '…' : v) : JSON.stringify(v)}`,
    )
    .join(', ');
  return `${action.name}(${args})`;
}

function describeActions(actions: ModelAction[]): string {
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

function isTimeout(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure;
}

function freshState(input: AgentWorkflowInput): AgentLoopState {
  return {
    taskIndex: 0,
    step: 1,
    stepsTaken: 0,
    deadline: Date.now() + input.deadlineMs,
    seen: {},
    notes: [],
    finalAttempts: 0,
    session: null,
    generation: 0,
  };
}

/** The one-off browser agent: the shared loop with browser tools. */
export async function agentWorkflow(input: AgentWorkflowInput): Promise<JobOutcome> {
  return runAgentLoop(input, (next) => continueAsNew<typeof agentWorkflow>(next));
}

/**
 * The one agent loop, for every agent run (browser, social, and tool-only custom agents): observe (a page or a feed;
 * a tool-only run has nothing to observe) → the model decides up to N actions (one LLM activity) → each runs as its
 * own activity, until done or a bound stops it. Decided here, for every toolbox: the step and deadline bounds, the
 * loop guard, max_tool_calls (calls sent, counted in the job's state), the "may have run" rule of tool calls
 * (callTool's failure types), continue-as-new past a history threshold through `continueAs` with the whole state
 * (same session, same counters, same conversation position), and settlement: the charge, the job's end and the
 * webhook happen once, in the last run, even when the run is cancelled.
 */
export async function runAgentLoop(
  input: AgentWorkflowInput,
  continueAs: (next: AgentWorkflowInput) => Promise<never>,
): Promise<JobOutcome> {
  const { jobId } = input;
  const social = input.toolbox === 'social';
  /** A tool-only run: its model keeps one conversation, so every call of an answer is answered, in order. */
  const conversation = input.toolbox === 'tools';
  const oneLoop = patched(ONE_AGENT_LOOP);
  const state = input.resume ?? freshState(input);
  const historyEventsLimit = input.historyEventsLimit ?? DEFAULT_HISTORY_EVENTS_LIMIT;
  const keeperHeartbeatTimeoutMs = input.browserSession?.keeperHeartbeatTimeoutMs ?? KEEPER_HEARTBEAT_TIMEOUT_MS;
  const minOpenWaitMs = input.browserSession?.openWaitMinMs ?? MIN_OPEN_WAIT_MS;
  const openHeartbeatTimeoutMs = input.browserSession?.openHeartbeatTimeoutMs ?? OPEN_HEARTBEAT_TIMEOUT_MS;
  let stepsThisRun = 0;
  let session: LiveSession | null = null;

  const socialTools = proxyActivities<SocialToolActivities>({
    startToCloseTimeout: input.socialToolTimeoutMs ?? DEFAULT_SOCIAL_TOOL_TIMEOUT_MS,
    retry: { initialInterval: '2s', maximumAttempts: 3 },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });

  const selectionTools = toolCallActivities(input.toolCallTimeoutMs);
  /** The job's MCP/OpenAPI tools, by model-facing name (null: a job without tool selections). */
  let toolbox: (AgentToolbox & { byName: Map<string, AgentToolbox['tools'][number]> }) | null = null;
  const toolsLeft = () => (toolbox ? Math.max(0, toolbox.maxToolCalls - (state.toolCallsSent ?? 0)) : undefined);

  /**
   * One call of a selection tool: the callAgentTool activity, which calls the tool (it classifies
   * retries; a call that may have run is never sent twice) and writes its agent_tool_calls row, and
   * says what the model reads of it; when the tool answered but the row could not be written, the
   * record activity writes it (the call is not sent again). Runs begun before TOOL_CALL_RECORDED_WITH_CALL:
   * callTool, then the record activity. A call that got no answer is recorded failed by the record
   * activity. max_tool_calls counts the calls sent in the whole job: the call past it is recorded not_sent.
   * A tool-only run also records a call of a tool it does not have (other toolboxes' tools answer those).
   */
  const callSelectionTool = async (
    entry: AgentToolbox['tools'][number] | undefined,
    action: ModelAction,
    reply: ToolCallRecord['reply'],
  ): Promise<ActionOutcome> => {
    const max = toolbox!.maxToolCalls;
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
    const call = {
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
        done = await selectionTools.callAgentTool({ call, record });
      } catch (err) {
        return recordFailure(err);
      }
      if ('recorded' in done) return done.recorded;
      // The tool answered but its row was not written: written now, without sending the call again.
      return recordToolCall(done.call);
    }
    try {
      const output = await selectionTools.callTool(call);
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

  /**
   * The record is a regular activity, as the agent loop's always were (custom agents' were local): it
   * turns the tool's answer into model input, which may outgrow a local activity's (an image result to
   * store), and runs begun before ONE_AGENT_LOOP keep the history shape they recorded.
   */
  const recordToolCall = async (call: ToolCallRecord): Promise<ActionOutcome> => {
    const told = await brain.recordAgentToolCall(call);
    return oneLoop ? told : legacyToolCallOutcome(call, toolbox!.maxToolCalls);
  };

  const historyIsFull = () => {
    const info = workflowInfo();
    return (
      info.continueAsNewSuggested || info.historyLength >= historyEventsLimit || info.historySize >= HISTORY_BYTES_LIMIT
    );
  };

  /** Holds the session through a keeper on its worker; the keeper ending means the worker is gone, not busy. */
  const keep = (handle: SessionHandle): LiveSession => {
    const live: LiveSession = { handle, lost: null, released: false, keeper: new CancellationScope() };
    const keeper = proxyActivities<SessionActivities>({
      taskQueue: handle.taskQueue,
      scheduleToStartTimeout: '30s',
      startToCloseTimeout: Math.max(state.deadline - Date.now(), 0) + 10 * 60_000,
      heartbeatTimeout: keeperHeartbeatTimeoutMs,
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
    const wait = Math.max(state.deadline - Date.now(), minOpenWaitMs);
    const opener = proxyActivities<SessionOpenerActivities>({
      taskQueue: input.browserTaskQueue!,
      scheduleToCloseTimeout: wait,
      startToCloseTimeout: wait,
      heartbeatTimeout: openHeartbeatTimeoutMs,
      retry: {
        initialInterval: '2s',
        maximumAttempts: 5,
        nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError'],
      },
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

  const inSession = async <T>(
    call: (activities: SessionActivities, handle: SessionHandle) => Promise<T>,
  ): Promise<T> => {
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
      const gone = watch
        .run(() => condition(() => live.lost !== null))
        .then(
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
        if (isTimeout(err)) await condition(() => live.lost !== null, keeperHeartbeatTimeoutMs + 10_000);
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

  /** How a task ends: its accepted final answer (null: a tool-only run that ended on max_tool_calls), or the run continues as new. */
  type TaskEnd = { kind: 'done'; result: (AgentTaskResult & { valid?: boolean }) | null } | { kind: 'continue' };

  /** A conversation's next position. */
  const takeSeq = () => {
    const at = state.seq ?? 0;
    state.seq = at + 1;
    return at;
  };

  const runTask = async (taskIndex: number): Promise<TaskEnd> => {
    for (; ; state.step++) {
      if (stepsThisRun > 0 && historyIsFull()) return { kind: 'continue' };
      if (state.stepsTaken >= input.maxSteps) {
        throw new AgentStop(
          `stopped: reached the ${conversation ? `bound of ${input.maxSteps} model decisions` : `step bound of ${input.maxSteps} steps`} without finishing`,
        );
      }
      if (Date.now() > state.deadline)
        throw new AgentStop(`stopped: reached the deadline of ${Math.round(input.deadlineMs / 1000)}s`);
      const step = state.step;
      state.stepsTaken++;
      stepsThisRun++;
      // What the acting tools show now (a tool-only run has no page or feed to observe).
      const observation = conversation
        ? null
        : social
          ? await socialTools.observeSocial({ jobId, taskIndex, step })
          : await inSession((s, h) => s.observePage({ jobId, sessionId: h.sessionId, taskIndex, step }));
      const left = toolsLeft();
      const decision: Decision = await brain.decideNextActions({
        jobId,
        taskIndex,
        step,
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
        if (state.toldToolsSpent) {
          stoppedBy = 'max_tool_calls';
          return { kind: 'done', result: null };
        }
        notes.push(
          `Your last answer called no tool. ${conversation ? 'Call a tool, or done when finished.' : 'Every answer must call at least one tool; call done when finished.'}`,
        );
      }
      const outcomes: AgentOutcome[] = [];
      // The loop guard: the same actions on an unchanged page or feed.
      const signature = observation && `${observation.stateHash}|${digest(JSON.stringify(decision.actions))}`;
      const repeats = signature ? (state.seen[signature] ?? 0) + 1 : 0;
      if (signature) state.seen[signature] = repeats;
      if (repeats > LOOP_STOP_REPEATS) {
        throw new AgentStop(
          `stopped: repeated ${describeActions(decision.actions)} ${repeats} times on an unchanged page without progress`,
        );
      }
      if (repeats > LOOP_WARN_REPEATS) {
        notes.push(
          `Loop detected: you chose ${describeActions(decision.actions)} ${repeats} times on this unchanged page and it did not help. ` +
            'Those actions were NOT executed this time. Choose a different approach (another element, navigation, scrolling) or finish with done.',
        );
        outcomes.push({ action: 'loop-guard', ok: false, message: 'skipped: repeated actions without progress' });
      } else {
        for (const [actionIndex, action] of decision.actions.entries()) {
          // A conversation answers each call of the answer at its own position.
          const reply = conversation ? { seq: takeSeq(), callId: action.id ?? '' } : undefined;
          if (action.name === 'done') {
            const verdict: FinalAnswerVerdict = await brain.acceptFinalAnswer({
              jobId,
              taskIndex,
              args: action.args,
              attempt: state.finalAttempts++,
              ...(reply && { reply }),
            });
            outcomes.push({ action: 'done', ok: verdict.accepted, message: verdict.message });
            if (verdict.accepted) {
              if (!conversation) await brain.recordStep({ jobId, taskIndex, step, outcomes, goal: decision.goal });
              return { kind: 'done', result: { ...verdict.result, steps: step } };
            }
            // A conversation's answer to the call says why; the next calls are answered too.
            if (conversation) continue;
            notes.push(verdict.message);
            break;
          }
          const selected = toolbox?.byName.get(action.name);
          const result =
            selected || conversation
              ? await callSelectionTool(selected, action, reply)
              : action.name === 'extract'
                ? await brain.runExtractTool({ jobId, taskIndex, step, question: String(action.args.question ?? '') })
                : social
                  ? await socialTools.executeSocialTool({ jobId, taskIndex, step, actionIndex, action })
                  : await inSession((s, h) =>
                      s.executeAction({ jobId, sessionId: h.sessionId, taskIndex, step, actionIndex, action }),
                    );
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
      }
      // The model is told once that max_tool_calls is spent; the selection tools are no longer offered.
      if (left !== undefined && toolsLeft() === 0 && (conversation ? !state.toldToolsSpent : left > 0)) {
        if (conversation) {
          state.toldToolsSpent = true;
          notes.push(
            `You have used all ${toolbox!.maxToolCalls} tool call(s) this run may make (max_tool_calls). Call done now with what you have.`,
          );
        } else {
          notes.push(
            `You have used all ${toolbox!.maxToolCalls} tool call(s) of your connected tool sources this run may make (max_tool_calls); those tools are no longer offered.`,
          );
        }
      }
      // A step run keeps the step's outcomes; a conversation already holds each call's answer.
      if (!conversation) await brain.recordStep({ jobId, taskIndex, step, outcomes, goal: decision.goal });
    }
  };

  let error: string | null = null;
  /** Why a run without an accepted final answer completed anyway (a tool-only run past max_tool_calls). */
  let stoppedBy: string | null = null;
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
      if (end.result && !conversation)
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
