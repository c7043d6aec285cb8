import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  proxyActivities,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { ActionOutcome, ModelAction } from '../activities/agent/brain';
import type {
  ObservationSummary,
  SessionActivities,
  SessionHandle,
  SessionOpenerActivities,
} from '../activities/agent/session';
import { AgentStop, extract } from './agent-brain';
import type { AgentLoopState, AgentWorkflowInput, StepAt } from './agent-state';
import type { Toolbox } from './agent-toolbox';
import { describeFailure } from './failures';
import { jobs } from './job-lifecycle';

/** How long the session's keeper may go without a heartbeat before its worker counts as gone (by default). */
const KEEPER_HEARTBEAT_TIMEOUT_MS = 20_000;
/** The least a run waits for a free browser (by default; else until its deadline). */
const MIN_OPEN_WAIT_MS = 60_000;
/** How long an open waiting for a browser slot may go without a heartbeat (by default). */
const OPEN_HEARTBEAT_TIMEOUT_MS = 30_000;

/** A session whose worker stopped answering (its keeper's heartbeats ended) or no longer holds it. */
interface LiveSession {
  handle: SessionHandle;
  /** Why the session is gone; null while its worker holds it. */
  lost: string | null;
  /** Set once this run lets go of the session itself (closing it, or handing it to the next run). */
  released: boolean;
  keeper: CancellationScope;
}

function isSessionLost(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'SessionLost';
}

function isTimeout(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure;
}

/**
 * The browser toolbox: a session on a browser worker, opened at the first step (or handed over from the
 * run before), held by a keeper activity on its worker, and reopened from the last checkpoint when that
 * worker is lost. Every observation and action runs on the session's worker.
 */
export function browserToolbox(input: AgentWorkflowInput, state: AgentLoopState): Toolbox {
  return new BrowserToolbox(input, state);
}

class BrowserToolbox implements Toolbox {
  readonly conversation = false;
  private readonly jobId: string;
  private readonly keeperHeartbeatTimeoutMs: number;
  private readonly minOpenWaitMs: number;
  private readonly openHeartbeatTimeoutMs: number;
  private session: LiveSession | null = null;

  constructor(
    private readonly input: AgentWorkflowInput,
    private readonly state: AgentLoopState,
  ) {
    this.jobId = input.jobId;
    this.keeperHeartbeatTimeoutMs = input.browserSession?.keeperHeartbeatTimeoutMs ?? KEEPER_HEARTBEAT_TIMEOUT_MS;
    this.minOpenWaitMs = input.browserSession?.openWaitMinMs ?? MIN_OPEN_WAIT_MS;
    this.openHeartbeatTimeoutMs = input.browserSession?.openHeartbeatTimeoutMs ?? OPEN_HEARTBEAT_TIMEOUT_MS;
    // The session handed over by the run before (never reopened for continue-as-new).
    if (state.session) this.session = this.keep(state.session);
  }

  observe({ jobId, taskIndex, step }: StepAt): Promise<ObservationSummary> {
    return this.inSession((s, h) => s.observePage({ jobId, sessionId: h.sessionId, taskIndex, step }));
  }

  act({ jobId, taskIndex, step, actionIndex }: StepAt & { actionIndex: number }, action: ModelAction) {
    if (action.name === 'extract') return extract({ jobId, taskIndex, step }, action);
    return this.inSession((s, h): Promise<ActionOutcome> =>
      s.executeAction({ jobId, sessionId: h.sessionId, taskIndex, step, actionIndex, action }),
    );
  }

  handOver(): SessionHandle | null {
    const live = this.session;
    if (live) this.release(live);
    return live && live.lost === null ? live.handle : null;
  }

  async close(): Promise<void> {
    const live = this.session;
    if (!live) return;
    this.release(live);
    if (live.lost === null) {
      const closer = proxyActivities<SessionActivities>({
        taskQueue: live.handle.taskQueue,
        scheduleToStartTimeout: '30s',
        startToCloseTimeout: '30s',
        retry: { maximumAttempts: 1 },
      });
      await closer.closeBrowserSession({ jobId: this.jobId, sessionId: live.handle.sessionId }).catch(() => undefined);
    }
  }

  /** Holds the session through a keeper on its worker; the keeper ending means the worker is gone, not busy. */
  private keep(handle: SessionHandle): LiveSession {
    const live: LiveSession = { handle, lost: null, released: false, keeper: new CancellationScope() };
    const keeper = proxyActivities<SessionActivities>({
      taskQueue: handle.taskQueue,
      scheduleToStartTimeout: '30s',
      startToCloseTimeout: Math.max(this.state.deadline - Date.now(), 0) + 10 * 60_000,
      heartbeatTimeout: this.keeperHeartbeatTimeoutMs,
      retry: { maximumAttempts: 1 },
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    });
    const lose = (why: string) => {
      if (!live.released) live.lost = why;
    };
    live.keeper
      .run(() => keeper.holdBrowserSession({ jobId: this.jobId, sessionId: handle.sessionId }))
      .then(
        () => lose('its browser session was closed'),
        (err) => {
          // Cancelled by this run (or with it) is not a lost worker; any other end of the keeper is.
          if (!live.keeper.consideredCancelled) lose(isTimeout(err) ? 'no heartbeat from it' : describeFailure(err));
        },
      );
    return live;
  }

  private release(live: LiveSession): void {
    live.released = true;
    live.keeper.cancel();
  }

  private async openSession(): Promise<SessionHandle> {
    // Waiting for a browser slot on a busy worker heartbeats; only the deadline bounds it.
    const wait = Math.max(this.state.deadline - Date.now(), this.minOpenWaitMs);
    const opener = proxyActivities<SessionOpenerActivities>({
      taskQueue: this.input.browserTaskQueue!,
      scheduleToCloseTimeout: wait,
      startToCloseTimeout: wait,
      heartbeatTimeout: this.openHeartbeatTimeoutMs,
      retry: {
        initialInterval: '2s',
        maximumAttempts: 5,
        nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError'],
      },
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
    try {
      return await opener.openBrowserSession({ jobId: this.jobId });
    } catch (err) {
      const timeout = isTimeout(err) ? ((err as ActivityFailure).cause as TimeoutFailure).timeoutType : null;
      if (timeout === 'SCHEDULE_TO_CLOSE' || timeout === 'START_TO_CLOSE') {
        throw new AgentStop(`stopped: no browser became free within ${Math.round(wait / 1000)}s`);
      }
      throw err;
    }
  }

  /**
   * One call on the session's worker, opening the session first if need be. When the worker is lost during
   * the call (its keeper ended, or the call says so), the session is reopened and the call tried again, up
   * to three times.
   */
  private async inSession<T>(call: (activities: SessionActivities, handle: SessionHandle) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const live: LiveSession = (this.session ??= this.keep(await this.openSession()));
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
        if (isTimeout(err)) await condition(() => live.lost !== null, this.keeperHeartbeatTimeoutMs + 10_000);
        if (!isSessionLost(err) && live.lost === null) throw err;
      } finally {
        watch.cancel();
      }
      if (attempt >= 2) throw failure ?? new Error(`browser worker lost (${live.lost})`);
      const why = live.lost ?? describeFailure(failure);
      this.release(live);
      this.session = null;
      await jobs.logJobProgress(
        this.jobId,
        `browser worker lost (${why}); reopening the session from the last checkpoint`,
      );
    }
  }
}
