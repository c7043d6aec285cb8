import { BoundedCache } from '../bounded-cache';
import type { CallRelay, ToolRuntimeDeps, ToolSource } from '../tools/source';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../tools/network';
import { DEFAULT_MAX_BINARY_BYTES, DEFAULT_MAX_RESULT_BYTES } from '../tools/result';
import type { SourceParamValues, ToolCallResult, ToolDefinition, ToolSelection } from '../tools/types';
import type { MarketConfig } from '../config';
import type { MonetizationStrategy, StoredMarketTool, StoredPricingEvent } from './listing';
import { relayMarketToolCall } from './relay/relay';
import type { DriftReport } from './tool-drift';

// The call's steps live in relay/ (relay.ts reads them top-down); these names are this module's as they were.
export { relayMarketToolCall } from './relay/relay';
export { PrincipalRefusedError } from './relay/call';
export { callableTools } from './relay/gate';
export { chargeHeaders, entrySelection } from './relay/forward';
export { DEFAULT_INPUT_REQUIRED_TTL_MS } from './relay/input-required';

/**
 * One call of an approved market tool, served in-process: the hosted endpoint (/mcp/{entryId}) and
 * agents' `market_mcps` selections both call through here, so they are authorised, gated, billed and
 * recorded alike. Storage and workflow starts are injected (db/repos/market-tool-calls.ts, the API
 * or the worker), so this module stays free of them.
 *
 *   0. the next round of a call waiting for input takes that call over, once, on its run
 *                                                        (relay/input-required.ts continueWaitingCall)
 *   1. the gate (relay/gate.ts): the tool must be an approved, enabled tool of the entry, and the
 *      consumer's params may only name what the entry declares, within its enums, and (remote MCP)
 *      no header a consumer may not set (call-params.ts, lib/tools/consumer-params.ts)
 *                                                                        → else refused, nothing charged
 *   2. the rug-pull gate (relay/gate.ts, remote MCP): the upstream list, fetched with the provider's
 *      staticConfig only (cached briefly; a caller whose credential check is deferred is checked before
 *      it is fetched), is compared with the approved one; a changed or missing tool is refused and
 *      the entry flagged. An upstream that lists its tools only to a consumer's own credentials is
 *      listed with that consumer's params (cached per params) and only refuses that consumer's call:
 *      a consumer's values never flag the entry or fail another consumer's calls
 *                                                                        → refused, nothing charged
 *   3. the market run (relay/acquire.ts): acquired by `acquireRun` — a run of the call's own, or the
 *      consumer's shared run of the selection — holding what the call can cost (a fixed price: exactly
 *      that price; a provider_event run: min(available, cap, limit)); a price over the cap or the
 *      available balance is refused                                      → refused, nothing charged
 *   4. forwarded (relay/forward.ts) with the provider's staticConfig, the consumer's params kept apart
 *      from it (the runtime confines them: lib/tools/consumer-params.ts) and for provider_event entries
 *      the five x-service-charge-* headers, through the tool runtime (SSRF guard, timeout, output cap,
 *      no cross-origin redirect), over an upstream connection of this consumer's selection only
 *   4b. a tool that asks for input: the call waits, holding its run (relay/input-required.ts awaitInput)
 *   5. settled (relay/settle.ts): tool_call_fixed charges clientPriceUsd for every answered call (an
 *      isError result included); a call that got no answer is not charged; provider_event entries are
 *      charged by the provider through the charge endpoint; free costs nothing. Recorded in the
 *      consumer's transactions and logs. The call then gives the run back (an unused reservation is
 *      released; a provider_event run takes the provider's charges for MARKET_RUN_IDLE_GRACE_SECONDS more).
 *
 * What the consumer reads (results, refusals, failures) never shows a staticConfig value or the run's
 * charge token, and failures and error results never name the provider's hosts (consumer-errors.ts).
 */

/** What a call needs to know about the live entry (db/repos/market-tool-calls.ts loads it). */
export interface MarketCallEntry {
  entryId: string;
  submissionId: string;
  slug: string;
  name: string;
  providerId: string;
  type: 'remote_mcp' | 'openapi';
  remoteMcpUrl: string | null;
  openapiBaseUrl: string | null;
  openapiSpec: Record<string, unknown> | null;
  /** Unsealed, for the upstream request only. */
  staticConfig: SourceParamValues;
  requiredUserParamsSchema: Record<string, unknown>;
  monetizationStrategy: MonetizationStrategy;
  pricingEvents: StoredPricingEvent[];
  approvedTools: StoredMarketTool[];
}

export interface MarketRunHandle {
  id: string;
  chargeToken: string;
  holdMicros: number;
  chargedMicros: number;
  /**
   * The most the run may be charged whatever the wallet holds (run charge limit, the consumer's cap and budgets):
   * what x-service-charge-max-total-usd tells the provider. Null for a run opened before it was recorded.
   */
  limitMicros: number | null;
  expiresAt: Date;
}

export type AcquiredRun =
  | { ok: true; run: MarketRunHandle; opened: boolean }
  | { ok: false; code: 'insufficient_funds' | 'subscription_inactive' | 'entry_not_found' }
  /** The call would take the run past its cap or the run charge limit: it can take `roomMicros` more. */
  | { ok: false; code: 'run_limit_reached'; roomMicros: number }
  /** The call would take its credential past a budget (its total, or its calendar month's): `roomMicros` more fit. */
  | { ok: false; code: 'budget_reached'; budget: 'total' | 'monthly'; budgetMicros: number; roomMicros: number };

/** One line of the consumer's record of a call (transactions and logs). */
export interface MarketCallRecord {
  callId: string;
  consumerId: string;
  jobId: string | null;
  entry: Pick<MarketCallEntry, 'entryId' | 'slug' | 'providerId'>;
  runId: string | null;
  selectionId: string;
  toolName: string;
  durationMs: number;
  /** answered (the upstream gave a tool result, isError or not), failed (no answer), or refused (not sent). */
  outcome: 'answered' | 'failed' | 'refused';
  isError: boolean;
  /** Why a call failed or was refused. */
  code: string | null;
  costMicros: number;
}

export type SettleOutcome =
  | { charged: true; costMicros: number }
  | { charged: false; reason: 'run_closed' | 'run_expired' | 'run_limit_reached' };

export interface MarketCallStore {
  /**
   * tool_call_fixed: in ONE transaction, the call's charge against the run (its reservation; the run
   * still open and unexpired), the consumer's debit and the provider's revenue, the call's
   * transaction line, and the end of the call's use of the run; `closeRun` also closes the run (a
   * run of the call's own). Refused: the reservation is released and the call's use ended.
   */
  settleFixedCall(input: {
    record: MarketCallRecord;
    runId: string;
    priceMicros: number;
    commissionRate: number;
    closeRun: boolean;
  }): Promise<SettleOutcome>;
  /**
   * The call gives its run back without a fixed-price charge: `releaseMicros` of its reservation
   * released; `closeRun` closes a run of its own (its hold released).
   */
  endCall(input: { runId: string; releaseMicros: number; close: boolean }): Promise<void>;
  /** Records a call that moved no money: a zero-cost transaction line (answered or failed calls) and a log line. */
  recordCall(record: MarketCallRecord): Promise<void>;
  /** Flags the live submission for re-review with the per-tool diff. */
  flagDrift(entry: Pick<MarketCallEntry, 'entryId' | 'submissionId'>, report: DriftReport): Promise<void>;
  /**
   * A round of a call ended waiting for the consumer's input: the call keeps its run until it is
   * continued or abandoned. (A store without the three waiting-call methods serves no multi-round
   * calls: a tool that asks for input is answered as a failure, nothing charged.)
   */
  awaitInput?(waiting: WaitingCall): Promise<void>;
  /**
   * Continues a waiting call, at most once: the round `id` of this consumer, entry, selection and tool,
   * not expired and not continued before. Returns the round and its run (null when the run has ended
   * since), or null when there is no such round.
   */
  continueCall?(
    key: Pick<WaitingCall, 'id' | 'consumerId' | 'entryId' | 'selectionId' | 'toolName'>,
  ): Promise<{ waiting: WaitingCall; run: MarketRunHandle | null } | null>;
  /** Ends a waiting round that was not continued (its call given back without a charge); false when it was continued. */
  abandonCall?(id: string): Promise<boolean>;
}

/** A round of a market tool call that ended waiting for the consumer's input (store: market_call_continuations). */
export interface WaitingCall {
  /** The round: what the consumer's requestState names. */
  id: string;
  callId: string;
  runId: string;
  consumerId: string;
  entryId: string;
  selectionId: string;
  toolName: string;
  /** The upstream's requestState of the round (never shown to the consumer). */
  upstreamState: string | null;
  /** What giving the call back releases (a fixed-price call's reservation), and whether it closes the run (a run of its own). */
  releaseMicros: number;
  closeRun: boolean;
  startedAt: Date;
  expiresAt: Date;
}

/**
 * The upstream tool lists the gate compares, reused for `ttlMs`: per live submission (the list the
 * provider's staticConfig gets), or per submission and consumer params for an upstream that lists its
 * tools only to a consumer's credentials.
 */
export interface UpstreamToolLists {
  get(submissionId: string): ToolDefinition[] | null;
  set(submissionId: string, tools: ToolDefinition[]): void;
}

export function createUpstreamToolLists(ttlMs: number, now: () => number = Date.now): UpstreamToolLists {
  const lists = new BoundedCache<ToolDefinition[]>({ maxEntries: 10_000, ttlMs, now });
  return {
    get: (id) => lists.get(id) ?? null,
    set: (id, tools) => lists.set(id, tools),
  };
}

/**
 * Opened upstream sources reused across calls (one SDK client per entry, consumer, selection and
 * parameter values: an upstream session is never shared between consumers), for calls that carry no
 * per-run headers (free and fixed-price entries): a call then costs one upstream request instead of a
 * handshake and a request. A source is dropped when it expires (`ttlMs` after it opened) or when a call
 * through it fails without an answer.
 */
export interface UpstreamSources {
  open(key: string, opener: () => Promise<ToolSource>): Promise<ToolSource>;
  drop(key: string, source: ToolSource): void;
}

export function createUpstreamSources(ttlMs: number, graceMs = 120_000, now: () => number = Date.now): UpstreamSources {
  const sources = new Map<string, { source: Promise<ToolSource>; at: number }>();
  const retire = (source: Promise<ToolSource>) =>
    setTimeout(() => void source.then((s) => s.close()).catch(() => {}), graceMs).unref();
  return {
    async open(key, opener) {
      const hit = sources.get(key);
      if (hit && now() - hit.at <= ttlMs) return hit.source;
      if (hit) {
        sources.delete(key);
        retire(hit.source);
      }
      if (sources.size > 1_000) {
        for (const [k, v] of sources) {
          retire(v.source);
          sources.delete(k);
        }
      }
      const source = opener();
      sources.set(key, { source, at: now() });
      source.catch(() => sources.get(key)?.source === source && sources.delete(key));
      return source;
    },
    drop(key, source) {
      const hit = sources.get(key);
      if (!hit) return;
      void hit.source.then((s) => {
        if (s === source && sources.get(key) === hit) {
          sources.delete(key);
          retire(hit.source);
        }
      });
    },
  };
}

export interface MarketToolCallDeps {
  store: MarketCallStore;
  runtime: ToolRuntimeDeps;
  toolLists: UpstreamToolLists;
  /** Reused upstream connections (see UpstreamSources); omitted: every call opens its own. */
  sources?: UpstreamSources;
  commissionRate: number;
  callTimeoutMs: number;
  /** How long a call waiting for the consumer's input can be continued (default DEFAULT_INPUT_REQUIRED_TTL_MS). */
  inputRequiredTtlMs?: number;
  /**
   * How long a waiting call's run must still live for its next round to be forwarded: a round (the call timeout)
   * and the grace for the provider's charges after it, with a margin, as a shared run is joined (runSettings).
   * A round that could end after its run does would be answered and never billed: it is refused instead.
   */
  roundMinLifeMs?: number;
  now?: () => number;
}

/**
 * The call dependencies from the market configuration, as the hosted endpoint and agents' market
 * selections use them: `store` (db/repos/market-tool-calls.ts), upstream tool lists and sources
 * cached for toolListCacheMs, the commission rate and the call timeout.
 */
export function marketToolCallDeps(input: {
  store: MarketCallStore;
  market: Pick<MarketConfig, 'toolListCacheMs' | 'commissionRate' | 'toolCallTimeoutMs'> &
    Partial<
      Pick<MarketConfig, 'toolResultMaxBytes' | 'toolResultMaxBinaryBytes' | 'inputRequiredTtlMs' | 'runIdleGraceMs'>
    >;
  policy: ToolRuntimeDeps['policy'];
}): MarketToolCallDeps {
  const market = {
    toolResultMaxBytes: DEFAULT_MAX_RESULT_BYTES,
    toolResultMaxBinaryBytes: DEFAULT_MAX_BINARY_BYTES,
    ...input.market,
  };
  return {
    store: input.store,
    runtime: {
      policy: input.policy,
      maxResultBytes: market.toolResultMaxBytes,
      maxBinaryBytes: market.toolResultMaxBinaryBytes,
      // An answer may carry a binary block of the largest size allowed (base64: 4/3 of it) besides its text.
      maxResponseBytes: Math.max(
        DEFAULT_MAX_RESPONSE_BYTES,
        Math.ceil((market.toolResultMaxBinaryBytes * 4) / 3) + 4 * market.toolResultMaxBytes + 1024 * 1024,
      ),
    },
    toolLists: createUpstreamToolLists(market.toolListCacheMs),
    sources: createUpstreamSources(market.toolListCacheMs),
    commissionRate: market.commissionRate,
    callTimeoutMs: market.toolCallTimeoutMs,
    inputRequiredTtlMs: market.inputRequiredTtlMs,
    roundMinLifeMs: roundMinLifeMs(market),
  };
}

/**
 * How long a run must still live for a call's round to be forwarded on it: the call timeout, the grace for
 * the provider's charges after it, and half a minute of margin (db/repos/market-tool-calls.ts runSettings
 * joins a shared run on the same terms).
 */
export function roundMinLifeMs(
  market: Pick<MarketConfig, 'toolCallTimeoutMs'> & Partial<Pick<MarketConfig, 'runIdleGraceMs'>>,
) {
  return market.toolCallTimeoutMs + (market.runIdleGraceMs ?? 0) + 30_000;
}

export interface MarketToolCallRequest {
  consumerId: string;
  entry: MarketCallEntry;
  toolName: string;
  args: unknown;
  /** The consumer's values for the entry's requiredUserParamsSchema. */
  consumerParams: SourceParamValues;
  /** The credential's id (direct call) or the stored selection's id (agent). */
  selectionId: string;
  jobId?: string | null;
  /**
   * Acquires the run the call is billed to, reserving `reserveMicros` (a fixed-price call's price;
   * null for provider_event: the run's full hold): a run of the call's own, or the consumer's shared
   * run of the selection (db/repos/market-tool-calls.ts acquireCallRun). A new run's workflow is
   * started by the platform workers' dispatcher (workers/market-run-dispatcher.ts), off the call.
   */
  acquireRun: (reserveMicros: number | null) => Promise<AcquiredRun>;
  /**
   * When the caller's credential is checked by acquireRun's own statement (the hosted endpoint: its key live,
   * the credential not revoked), the same check on its own for a call that does not get that far: awaited
   * before a refusal that precedes the run and before a waiting call is continued, so that nothing is recorded
   * or forwarded for a credential that may no longer call. Either throws PrincipalRefusedError.
   */
  confirmPrincipal?: () => Promise<void>;
  /** The run is the call's own and ends with it (a direct fixed-price or free call). */
  runPerCall: boolean;
  signal?: AbortSignal;
  /**
   * A client behind the call (the hosted endpoint): what the tool sends back while it runs is relayed
   * to it, and a tool that asks for input ends the round `input_required` (the call waits, holding its
   * run, for the next round). `capabilities`: what that client can answer (sampling, elicitation, roots).
   */
  relay?: { capabilities?: ToolSelection['clientCapabilities'] } & Pick<CallRelay, 'onProgress' | 'log' | 'request'>;
  /** The next round of a call that waits for input: the round its requestState named, and the consumer's answers. */
  resume?: { waitingId: string };
  /** The consumer's answers to the tool's input requests (relayed to the tool as they are). */
  inputResponses?: Record<string, unknown>;
}

export type MarketToolCallOutcome =
  | {
      status: 'answered';
      result: ToolCallResult;
      runId: string;
      costMicros: number;
      durationMs: number;
      billed: boolean;
    }
  | { status: 'refused'; code: MarketCallRefusal; message: string; runId: string | null }
  /** `rpc`: the tool's server answered with this JSON-RPC error (its code and data; the message is `message`). */
  | {
      status: 'failed';
      code: string;
      message: string;
      runId: string;
      durationMs: number;
      rpc?: { code: number; data?: unknown };
    };

/**
 * The outcome of a relayed call (relayMarketToolCall): also `input_required`, the tool asking the
 * consumer for input (its requests scrubbed like any answer): the call waits under `waitingId` until
 * `expiresAt`, holding its run; nothing is charged unless a later round is answered.
 */
export type MarketRelayedOutcome =
  | MarketToolCallOutcome
  | {
      status: 'input_required';
      inputRequests: Record<string, unknown>;
      waitingId: string;
      expiresAt: Date;
      runId: string;
    };

export type MarketCallRefusal =
  | 'unknown_tool'
  | 'invalid_params'
  | 'tool_changed'
  | 'insufficient_funds'
  | 'subscription_inactive'
  | 'entry_not_found'
  | 'run_limit_reached'
  /** The credential's total or monthly budget would be passed. */
  | 'budget_reached'
  | 'upstream_unavailable'
  /** The requestState of a multi-round call was continued already, has expired, or is not this consumer's. */
  | 'input_expired';

/** A call without a client behind it (an agent's): the tool's requests for input are failures, as they get no answer. */
export async function callMarketTool(
  deps: MarketToolCallDeps,
  request: Omit<MarketToolCallRequest, 'relay' | 'resume' | 'inputResponses'>,
): Promise<MarketToolCallOutcome> {
  const outcome = await relayMarketToolCall(deps, request);
  if (outcome.status === 'input_required') throw new Error('a call without a relay waits for input');
  return outcome;
}
