import { ActivityFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { AgentBrainActivities, Decision, FinalAnswerVerdict } from '../activities/agent/brain';
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
}

/** Same page state and same actions this many times: warn the model and skip; then give up. */
export const LOOP_WARN_REPEATS = 2;
export const LOOP_STOP_REPEATS = 4;

const brain = proxyActivities<AgentBrainActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '15s',
  retry: { initialInterval: '2s', maximumAttempts: 4, nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError'] },
});

const socialTools = proxyActivities<SocialToolActivities>({
  startToCloseTimeout: '2m',
  retry: { initialInterval: '2s', maximumAttempts: 3 },
});

class AgentStop extends Error {}

function isLostWorker(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure;
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

/** The one-off browser agent: the shared loop with browser tools. */
export async function agentWorkflow(input: AgentWorkflowInput): Promise<JobOutcome> {
  return runAgentLoop(input);
}

/** The one agent loop: observe → the model decides up to N actions → tools execute them, until done or a bound stops it. */
export async function runAgentLoop(input: AgentWorkflowInput): Promise<JobOutcome> {
  const { jobId } = input;
  const social = input.toolbox === 'social';
  const opener = proxyActivities<SessionOpenerActivities>({
    taskQueue: input.browserTaskQueue,
    startToCloseTimeout: '2m',
    retry: { initialInterval: '2s', maximumAttempts: 5, nonRetryableErrorTypes: ['AgentStopped', 'HoldExhaustedError'] },
  });
  const deadline = Date.now() + input.deadlineMs;
  let session: SessionHandle | null = null;
  let stepsTaken = 0;

  const inSession = async <T>(call: (activities: SessionActivities, handle: SessionHandle) => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      session ??= await opener.openBrowserSession({ jobId });
      const activities = proxyActivities<SessionActivities>({
        taskQueue: session.taskQueue,
        scheduleToStartTimeout: '20s',
        startToCloseTimeout: '2m',
        heartbeatTimeout: '15s',
        retry: { maximumAttempts: 1 },
      });
      try {
        return await call(activities, session);
      } catch (err) {
        if (!isLostWorker(err) || attempt >= 2) throw err;
        await jobs.logJobProgress(jobId, `browser worker lost (${describeFailure(err)}); reopening the session from the last checkpoint`);
        session = null;
      }
    }
  };

  const runTask = async (taskIndex: number): Promise<AgentTaskResult & { valid?: boolean }> => {
    const seen = new Map<string, number>();
    let notes: string[] = [];
    let finalAttempts = 0;
    for (let step = 1; ; step++) {
      if (stepsTaken >= input.maxSteps) throw new AgentStop(`stopped: reached the step bound of ${input.maxSteps} steps without finishing`);
      if (Date.now() > deadline) throw new AgentStop(`stopped: reached the deadline of ${Math.round(input.deadlineMs / 1000)}s`);
      stepsTaken++;
      const observation = social
        ? await socialTools.observeSocial({ jobId, taskIndex, step })
        : await inSession((s, h) => s.observePage({ jobId, sessionId: h.sessionId, taskIndex, step }));
      const decision: Decision = await brain.decideNextActions({ jobId, taskIndex, step, notes });
      notes = [];
      if (decision.kind === 'stop') throw new AgentStop(decision.reason);

      if (decision.actions.length === 0) notes.push('Your last answer called no tool. Every answer must call at least one tool; call done when finished.');
      const signature = `${observation.stateHash}|${JSON.stringify(decision.actions)}`;
      const repeats = (seen.get(signature) ?? 0) + 1;
      seen.set(signature, repeats);
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
            const verdict: FinalAnswerVerdict = await brain.acceptFinalAnswer({ jobId, taskIndex, args: action.args, attempt: finalAttempts++ });
            outcomes.push({ action: 'done', ok: verdict.accepted, message: verdict.message });
            if (verdict.accepted) {
              await brain.recordStep({ jobId, taskIndex, step, outcomes, goal: decision.goal });
              return { ...verdict.result, steps: step };
            }
            notes.push(verdict.message);
            break;
          }
          const result =
            action.name === 'extract'
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
      await brain.recordStep({ jobId, taskIndex, step, outcomes, goal: decision.goal });
    }
  };

  await jobs.beginJob(jobId);
  let error: string | null = null;
  try {
    for (let taskIndex = 0; taskIndex < input.taskCount; taskIndex++) {
      const result = await runTask(taskIndex);
      await brain.saveTaskResult({ jobId, taskIndex, result });
    }
  } catch (err) {
    error = err instanceof AgentStop ? err.message : describeFailure(err);
  }
  const open = session as SessionHandle | null;
  if (open) {
    const closer = proxyActivities<SessionActivities>({ taskQueue: open.taskQueue, scheduleToStartTimeout: '20s', startToCloseTimeout: '30s', retry: { maximumAttempts: 1 } });
    await closer.closeBrowserSession({ jobId, sessionId: open.sessionId }).catch(() => undefined);
  }
  await billing.settleJobUsage({ jobId, agentName: input.agentName, outcome: error === null ? 'completed' : 'failed' });
  const outcome = await brain.finishAgentJob({ jobId, error });
  await deliverWebhook(jobId, input.hasWebhook);
  return outcome;
}
