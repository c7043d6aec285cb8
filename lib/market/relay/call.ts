import { randomUUID } from 'node:crypto';
import { consumerText } from '../consumer-errors';
import type {
  MarketCallRecord,
  MarketCallRefusal,
  MarketRelayedOutcome,
  MarketRunHandle,
  MarketToolCallDeps,
  MarketToolCallRequest,
  WaitingCall,
} from '../tool-call';

/**
 * The caller may no longer call (its credential was revoked, or the API key it was made with rotated), found by
 * acquireRun or confirmPrincipal: nothing was acquired, recorded or forwarded; the caller refuses the request as
 * unauthenticated.
 */
export class PrincipalRefusedError extends Error {
  constructor(readonly problem: string) {
    super(problem);
    this.name = 'PrincipalRefusedError';
  }
}

/** A step that ended the call (refused it, or the call failed): what the consumer is answered. */
export interface Ended {
  ended: MarketRelayedOutcome;
}

/**
 * One relayed call as its steps share it (relay.ts): the request, the call's id and start (a continued
 * call's own, see input-required.ts), its record, and its refusals.
 */
export class RelayedCall {
  readonly now: () => number;
  started: number;
  callId: string = randomUUID();
  /** A continued call already holds its run: a refusal of its next round gives the run back. */
  continued: { waiting: WaitingCall; run: MarketRunHandle } | null = null;
  /** The upstream's requestState of the round a continued call answers. */
  upstreamState: string | undefined;
  private readonly shown: ReturnType<typeof consumerText>;

  constructor(
    readonly deps: MarketToolCallDeps,
    readonly request: MarketToolCallRequest,
  ) {
    this.now = deps.now ?? Date.now;
    this.started = this.now();
    this.shown = consumerText(request.entry);
  }

  /** A line of the consumer's record of this call (transactions and logs). */
  record(fields: Partial<MarketCallRecord> & Pick<MarketCallRecord, 'outcome'>): MarketCallRecord {
    const { request } = this;
    return {
      callId: this.callId,
      consumerId: request.consumerId,
      jobId: request.jobId ?? null,
      entry: request.entry,
      runId: null,
      selectionId: request.selectionId,
      toolName: request.toolName,
      durationMs: this.now() - this.started,
      isError: false,
      code: null,
      costMicros: 0,
      ...fields,
    };
  }

  /**
   * Refuses the call, nothing charged: after the caller's credential is confirmed (a refusal is recorded only
   * for a caller that may still call), a continued call's run given back, the refusal recorded.
   */
  async refuse(code: MarketCallRefusal, message: string, runId: string | null = null): Promise<Ended> {
    const { deps, request, continued } = this;
    await request.confirmPrincipal?.();
    if (continued)
      await deps.store.endCall({
        runId: continued.run.id,
        releaseMicros: continued.waiting.releaseMicros,
        close: continued.waiting.closeRun,
      });
    await deps.store.recordCall(this.record({ outcome: 'refused', code, runId: runId ?? continued?.run.id ?? null }));
    return {
      ended: { status: 'refused', code, message: this.shown.error(message), runId: runId ?? continued?.run.id ?? null },
    };
  }
}
