import type { SessionHandle } from '../activities/agent/session';

export interface AgentWorkflowInput {
  jobId: string;
  /**
   * Which tools act: a browser session on a browser worker, the forum/microblog platform clients, or
   * only the job's tool selections (a custom agent: its model keeps one conversation, see LoopJob in
   * activities/agent/job.ts). Every toolbox may add the job's tool selections. Chosen once per run
   * (workflows/agent-toolbox.ts).
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

/** The state of a job's first run. */
export function freshState(input: AgentWorkflowInput): AgentLoopState {
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

/** A conversation's next position (a tool-only run answers each call of an answer at its own). */
export function takeSeq(state: AgentLoopState): number {
  const at = state.seq ?? 0;
  state.seq = at + 1;
  return at;
}

/** Where in the job a step is: what every step's activities are told. */
export interface StepAt {
  jobId: string;
  taskIndex: number;
  step: number;
}
