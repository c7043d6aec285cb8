import type { MarketRelayedOutcome, MarketToolCallDeps, MarketToolCallRequest } from '../tool-call';
import { acquire } from './acquire';
import { RelayedCall } from './call';
import { forward } from './forward';
import { passGate } from './gate';
import { awaitInput, continueWaitingCall } from './input-required';
import { settle } from './settle';

/**
 * A call with a client behind it (the hosted endpoint), relaying what the tool sends back: see
 * MarketToolCallRequest.relay. Its steps, each a file: the next round of a call waiting for input takes
 * that call over (input-required.ts) → the gate: approved tool, consumer params, rug-pull check (gate.ts)
 * → the market run holding what the call can cost (acquire.ts) → the upstream call (forward.ts) → the
 * tool asks for input: the call waits (input-required.ts), or it answered: charge and record (settle.ts).
 * A step that refuses the call or sees it fail ends it there, its run given back, nothing charged.
 */
export async function relayMarketToolCall(
  deps: MarketToolCallDeps,
  request: MarketToolCallRequest,
): Promise<MarketRelayedOutcome> {
  const call = new RelayedCall(deps, request);

  if (request.resume) {
    const refused = await continueWaitingCall(call, request.resume.waitingId);
    if (refused) return refused.ended;
  }

  const passed = await passGate(call);
  if ('ended' in passed) return passed.ended;

  const held = await acquire(call, passed.tool);
  if ('ended' in held) return held.ended;

  const forwarded = await forward(call, passed, held);
  if ('ended' in forwarded) return forwarded.ended;

  const { answer, text } = forwarded;
  if (answer.kind === 'input_required') return awaitInput(call, passed.tool, held, answer, text);
  return settle(call, held, text.answer(answer.result));
}
