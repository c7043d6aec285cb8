import { microsToUsd } from '../../money';
import type { StoredMarketTool } from '../listing';
import type { AcquiredRun, MarketRunHandle } from '../tool-call';
import type { Ended, RelayedCall } from './call';

/** The market run a call is billed to, and what the call holds of it. */
export interface HeldRun {
  run: MarketRunHandle;
  /** A fixed-price call's price (its reservation on the run); 0 for free and provider_event entries. */
  fixed: number;
  /** The run is the call's own and closes when the call gives it back. */
  endsWithCall: boolean;
}

/**
 * The market run, holding what this call can cost: a continued call keeps the run and the price of its first
 * round; any other call acquires one (request.acquireRun: a run of its own, or the consumer's shared run of the
 * selection) holding a fixed price exactly, a provider_event run min(available, cap, limit). A price over the
 * cap, a budget or the available balance is refused, nothing charged.
 */
export async function acquire(call: RelayedCall, tool: StoredMarketTool): Promise<HeldRun | Ended> {
  const { request, continued } = call;
  if (continued) {
    call.continued = null;
    return { run: continued.run, fixed: continued.waiting.releaseMicros, endsWithCall: continued.waiting.closeRun };
  }
  const { entry } = request;
  const fixed = entry.monetizationStrategy === 'tool_call_fixed' ? (tool.clientPriceMicros ?? 0) : 0;
  const acquired = await request.acquireRun(entry.monetizationStrategy === 'tool_call_fixed' ? fixed : null);
  if (!acquired.ok) return refuseUnacquired(call, acquired, fixed);
  return { run: acquired.run, fixed, endsWithCall: request.runPerCall };
}

/**
 * Gives the run back without a fixed-price charge, `releaseMicros` of the reservation released (a run of the
 * call's own closes). Every path after `acquire` gives the run back exactly once: this, the fixed-price
 * settlement, or the wait for input (the next round, or its abandonment, gives it back).
 */
export function giveBack(call: RelayedCall, held: HeldRun, releaseMicros: number): Promise<void> {
  return call.deps.store.endCall({ runId: held.run.id, releaseMicros, close: held.endsWithCall });
}

/** Why no run was acquired, in the consumer's words (what would fit, and how to make room). */
function refuseUnacquired(
  call: RelayedCall,
  acquired: Extract<AcquiredRun, { ok: false }>,
  fixed: number,
): Promise<Ended> {
  if (acquired.code === 'budget_reached') {
    const which =
      acquired.budget === 'monthly'
        ? `monthly budget (${microsToUsd(acquired.budgetMicros)} USD per calendar month, UTC)`
        : `total budget (${microsToUsd(acquired.budgetMicros)} USD)`;
    const room = microsToUsd(acquired.roomMicros);
    // The account's own calls made with an API key (selection api-key:<id>) are bounded by the key's budgets.
    const [whose, where] = call.request.selectionId.startsWith('api-key:')
      ? ['This API key', 'API key']
      : ['This credential', 'Market credentials'];
    return call.refuse(
      'budget_reached',
      `${whose}'s ${which} is used up: it can spend at most ${room} USD more${acquired.budget === 'monthly' ? ' this month' : ''}` +
        `${fixed > 0 ? ` and this call costs ${microsToUsd(fixed)} USD` : ''}. Raise it in the console (${where})` +
        `${acquired.budget === 'monthly' ? ' or wait for the next month' : ''}; nothing was charged`,
    );
  }
  if (acquired.code === 'run_limit_reached') {
    const room = microsToUsd(acquired.roomMicros);
    const message =
      fixed > 0
        ? `This call costs ${microsToUsd(fixed)} USD and the run can pay at most ${room} USD more`
        : `The run's charge limit is used up: it can pay at most ${room} USD more`;
    return call.refuse(
      'run_limit_reached',
      `${message} (your cap, or MARKET_RUN_CHARGE_LIMIT_USD; nothing was charged)`,
    );
  }
  const messages = {
    insufficient_funds: `The wallet's available balance does not cover this paid tool${fixed > 0 ? ` (${microsToUsd(fixed)} USD)` : ''} (nothing was charged)`,
    subscription_inactive: 'The subscription is not active',
    entry_not_found: 'The market entry is no longer approved',
  } as const;
  return call.refuse(acquired.code, messages[acquired.code]);
}
