import type { ActionOutcome, ModelAction } from '../activities/agent/brain';
import type { ObservationSummary, SessionHandle } from '../activities/agent/session';
import type { AgentLoopState, AgentWorkflowInput, StepAt } from './agent-state';
import { browserToolbox } from './agent-toolbox-browser';
import { socialToolbox } from './agent-toolbox-social';
import { toolsOnlyToolbox } from './agent-toolbox-tools';

/**
 * What acts for the agent loop (workflows/agent.ts), chosen once per run: a browser session, the
 * forum/microblog clients, or nothing but the job's tool selections (workflows/agent-selection-tools.ts,
 * which every toolbox may add).
 */
export interface Toolbox {
  /**
   * A tool-only run: its model keeps one conversation, so every call of an answer is answered, in order,
   * every action is a selection-tool call, there is nothing to observe and no step record.
   */
  readonly conversation: boolean;
  /** What the acting tools show now (a page, a feed); null when there is nothing to observe. */
  observe(at: StepAt): Promise<ObservationSummary | null>;
  /** Runs one of the model's actions that is neither `done` nor a selection tool. */
  act(at: StepAt & { actionIndex: number }, action: ModelAction): Promise<ActionOutcome>;
  /** The run continues as new: lets go of what it holds and returns what the next run takes over. */
  handOver(): SessionHandle | null;
  /** The run ends (even when cancelled): closes what it opened. */
  close(): Promise<void>;
}

/** The toolbox of `input.toolbox` (the browser when absent); a resumed browser run holds its session again. */
export function chooseToolbox(input: AgentWorkflowInput, state: AgentLoopState): Toolbox {
  switch (input.toolbox) {
    case 'social':
      return socialToolbox(input);
    case 'tools':
      return toolsOnlyToolbox();
    default:
      return browserToolbox(input, state);
  }
}
