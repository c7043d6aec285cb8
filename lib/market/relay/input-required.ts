import { randomUUID } from 'node:crypto';
import type { RelayedAnswer } from '../../tools/source';
import { log } from '../../log';
import type { consumerText } from '../consumer-errors';
import type { StoredMarketTool } from '../listing';
import type { MarketRelayedOutcome, MarketToolCallDeps } from '../tool-call';
import type { HeldRun } from './acquire';
import { giveBack } from './acquire';
import type { Ended, RelayedCall } from './call';

/** How long a call waiting for the consumer's input can be continued, by default (MARKET_INPUT_REQUIRED_TTL_SECONDS). */
export const DEFAULT_INPUT_REQUIRED_TTL_MS = 600_000;

/**
 * The next round of a call waiting for input continues that call (once), on its run: the call takes the
 * waiting call's id, start and run (`call.continued`, which a refusal gives back) and the upstream's
 * requestState. Refused when the round was continued before, expired, or is not this consumer's, when
 * its run has ended, or when the run ends before this round could finish.
 */
export async function continueWaitingCall(call: RelayedCall, waitingId: string): Promise<Ended | null> {
  const { deps, request } = call;
  await request.confirmPrincipal?.();
  const resumed = await deps.store.continueCall?.({
    id: waitingId,
    consumerId: request.consumerId,
    entryId: request.entry.entryId,
    selectionId: request.selectionId,
    toolName: request.toolName,
  });
  if (!resumed)
    return call.refuse(
      'input_expired',
      'This input request was answered already, or it expired: call the tool again (nothing was charged for it)',
    );
  call.callId = resumed.waiting.callId;
  call.started = resumed.waiting.startedAt.getTime();
  if (!resumed.run)
    return call.refuse(
      'input_expired',
      "The call's market run ended while it waited for input: call the tool again (nothing was charged for it)",
      resumed.waiting.runId,
    );
  call.continued = { waiting: resumed.waiting, run: resumed.run };
  // A round that could still be running when its run expires would be answered and never billed: refused,
  // the call given back (its reservation released), so the consumer calls again on a run of its own.
  if (resumed.run.expiresAt.getTime() - call.now() < (deps.roundMinLifeMs ?? 0))
    return call.refuse(
      'input_expired',
      "The call's market run ends before this round could finish: call the tool again (nothing was charged for it)",
    );
  call.upstreamState = resumed.waiting.upstreamState ?? undefined;
  return null;
}

/**
 * The tool asks the consumer for input: the call waits under a new round id, holding its run, for the next
 * round (continueWaitingCall) until the round expires, when it is given back. A store without waiting calls
 * answers it as a failure, nothing charged.
 */
export async function awaitInput(
  call: RelayedCall,
  tool: StoredMarketTool,
  held: HeldRun,
  answer: Extract<RelayedAnswer, { kind: 'input_required' }>,
  text: ReturnType<typeof consumerText>,
): Promise<MarketRelayedOutcome> {
  const { deps, request } = call;
  const { run } = held;
  if (!deps.store.awaitInput) {
    await giveBack(call, held, held.fixed);
    const failed = call.record({ outcome: 'failed', code: 'protocol_error', runId: run.id });
    await deps.store.recordCall(failed);
    return {
      status: 'failed',
      code: 'protocol_error',
      message: 'The tool asked for input, which this caller cannot give (nothing was charged)',
      runId: run.id,
      durationMs: failed.durationMs,
    };
  }
  const waitingId = randomUUID();
  const now = call.now;
  // Continued only while its run lives long enough for the next round (roundMinLifeMs).
  const expiresAt = new Date(
    Math.max(
      now(),
      Math.min(
        now() + (deps.inputRequiredTtlMs ?? DEFAULT_INPUT_REQUIRED_TTL_MS),
        run.expiresAt.getTime() - (deps.roundMinLifeMs ?? 0),
      ),
    ),
  );
  await deps.store.awaitInput({
    id: waitingId,
    callId: call.callId,
    runId: run.id,
    consumerId: request.consumerId,
    entryId: request.entry.entryId,
    selectionId: request.selectionId,
    toolName: tool.toolName,
    upstreamState: answer.requestState ?? null,
    releaseMicros: held.fixed,
    closeRun: held.endsWithCall,
    startedAt: new Date(call.started),
    expiresAt,
  });
  abandonWhenExpired(deps, waitingId, expiresAt.getTime() - now());
  return {
    status: 'input_required',
    inputRequests: text.value(answer.inputRequests) as Record<string, unknown>,
    waitingId,
    expiresAt,
    runId: run.id,
  };
}

/**
 * A round that waits for input and is not continued in time gives its call back (nothing charged),
 * from this process; if the process is gone by then, the call's run ends it when the run expires.
 */
function abandonWhenExpired(deps: MarketToolCallDeps, waitingId: string, delayMs: number): void {
  setTimeout(
    () => {
      deps.store
        .abandonCall?.(waitingId)
        .catch((err: unknown) =>
          log().warn({ err, waitingId }, 'a market call waiting for input could not be given back'),
        );
    },
    Math.max(0, delayMs),
  ).unref();
}
