import type { ModelAction } from '../activities/agent/brain';
import type { AgentOutcome } from '../db/schema';
import type { ObservationSummary } from '../activities/agent/session';
import { AgentStop } from './agent-brain';

/** Same page state and same actions this many times: warn the model and skip; then give up. */
export const LOOP_WARN_REPEATS = 2;
export const LOOP_STOP_REPEATS = 4;

export function describeAction(action: ModelAction): string {
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

/**
 * The loop guard: the same actions on an unchanged page or feed (counted in `seen`, the task's state).
 * Past LOOP_STOP_REPEATS the run stops; past LOOP_WARN_REPEATS the actions are skipped and the model is
 * told why (a note and the step's outcome). Whether the actions run; always, with nothing observed.
 */
export function passesLoopGuard(
  seen: Record<string, number>,
  observation: ObservationSummary | null,
  actions: ModelAction[],
  notes: string[],
  outcomes: AgentOutcome[],
): boolean {
  const signature = observation && `${observation.stateHash}|${digest(JSON.stringify(actions))}`;
  const repeats = signature ? (seen[signature] ?? 0) + 1 : 0;
  if (signature) seen[signature] = repeats;
  if (repeats > LOOP_STOP_REPEATS) {
    throw new AgentStop(
      `stopped: repeated ${describeActions(actions)} ${repeats} times on an unchanged page without progress`,
    );
  }
  if (repeats <= LOOP_WARN_REPEATS) return true;
  notes.push(
    `Loop detected: you chose ${describeActions(actions)} ${repeats} times on this unchanged page and it did not help. ` +
      'Those actions were NOT executed this time. Choose a different approach (another element, navigation, scrolling) or finish with done.',
  );
  outcomes.push({ action: 'loop-guard', ok: false, message: 'skipped: repeated actions without progress' });
  return false;
}
