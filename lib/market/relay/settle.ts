import type { ToolCallResult } from '../../tools/types';
import type { MarketRelayedOutcome } from '../tool-call';
import { giveBack, type HeldRun } from './acquire';
import type { RelayedCall } from './call';

/**
 * Settles an answered call and records it: a fixed price is charged for every answered call (an isError result
 * included), in one transaction with the consumer's debit, the provider's revenue and the run given back; a run
 * closed or expired by the time the answer came is not charged (the platform absorbs the call). Free and
 * provider_event calls cost nothing here (the provider charges through the charge endpoint): the run is given back
 * and the call recorded.
 */
export async function settle(call: RelayedCall, held: HeldRun, result: ToolCallResult): Promise<MarketRelayedOutcome> {
  const { deps } = call;
  const { run, fixed } = held;
  const answered = call.record({ outcome: 'answered', isError: result.isError, runId: run.id, costMicros: fixed });
  if (fixed > 0) {
    const settled = await deps.store.settleFixedCall({
      record: answered,
      runId: run.id,
      priceMicros: fixed,
      commissionRate: deps.commissionRate,
      closeRun: held.endsWithCall,
    });
    if (settled.charged)
      return {
        status: 'answered',
        result,
        runId: run.id,
        costMicros: fixed,
        durationMs: answered.durationMs,
        billed: true,
      };
    // The run was closed or had expired when the answer came (its hold no longer reserved): the platform absorbs this call.
    await deps.store.recordCall({ ...answered, costMicros: 0, code: settled.reason });
    return { status: 'answered', result, runId: run.id, costMicros: 0, durationMs: answered.durationMs, billed: false };
  }
  await giveBack(call, held, 0);
  await deps.store.recordCall({ ...answered, costMicros: 0 });
  return { status: 'answered', result, runId: run.id, costMicros: 0, durationMs: answered.durationMs, billed: false };
}
