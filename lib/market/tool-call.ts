import { createHash, randomUUID } from 'node:crypto';
import { BoundedCache } from '../bounded-cache';
import { mcpHeaders } from '../tools/consumer-params';
import { ToolCallError, ToolSourceError } from '../tools/errors';
import {
  connectAndList,
  openToolSource,
  type CallRelay,
  type RelayedAnswer,
  type ToolRuntimeDeps,
  type ToolSource,
} from '../tools/source';
import { DEFAULT_MAX_RESPONSE_BYTES, parseSourceUrl, preflightSourceUrl } from '../tools/network';
import { DEFAULT_MAX_BINARY_BYTES, DEFAULT_MAX_RESULT_BYTES } from '../tools/result';
import type { SourceParamValues, ToolCallResult, ToolDefinition, ToolSelection } from '../tools/types';
import type { MarketConfig } from '../config';
import { log } from '../log';
import { microsToUsd } from '../money';
import { confineConsumerParams } from './call-params';
import { consumerText, failurePhrase } from './consumer-errors';
import type { MonetizationStrategy, StoredMarketTool, StoredPricingEvent } from './listing';
import { compareToolLists, type DriftReport } from './tool-drift';

/**
 * One call of an approved market tool, served in-process: the hosted endpoint (/mcp/{entryId}) and
 * agents' `market_mcps` selections both call through here, so they are authorised, gated, billed and
 * recorded alike. Storage and workflow starts are injected (db/repos/market-tool-calls.ts, the API
 * or the worker), so this module stays free of them.
 *
 *   1. the tool must be an approved, enabled tool of the entry          → else refused, nothing charged
      and the consumer's params may only name what the entry declares, within its enums, and (remote MCP)
 *      no header a consumer may not set (call-params.ts, lib/tools/consumer-params.ts)
 *                                                                        → else refused, nothing charged
 *   2. rug-pull gate (remote MCP): the upstream list, fetched with the provider's staticConfig only
 *      (cached briefly; a caller whose credential check is deferred is checked before it is fetched),
 *      is compared with the approved one; a changed or missing tool is refused and
 *      the entry flagged. An upstream that lists its tools only to a consumer's own credentials is
 *      listed with that consumer's params (cached per params) and only refuses that consumer's call:
 *      a consumer's values never flag the entry or fail another consumer's calls
 *                                                                        → refused, nothing charged
 *   3. the market run: acquired by `acquireRun` — a run of the call's own, or the consumer's shared
 *      run of the selection — holding what the call can cost (a fixed price: exactly that price; a
 *      provider_event run: min(available, cap, limit)); a price over the cap or the available
 *      balance is refused                                                → refused, nothing charged
 *   4. forwarded with the provider's staticConfig, the consumer's params kept apart from it (the
 *      runtime confines them: lib/tools/consumer-params.ts) and for provider_event entries the five
 *      x-service-charge-* headers, through the tool runtime (SSRF guard, timeout, output cap, no
 *      cross-origin redirect), over an upstream connection of this consumer's selection only
 *   5. settled: tool_call_fixed charges clientPriceUsd for every answered call (an isError result
 *      included); a call that got no answer is not charged; provider_event entries are charged by the
 *      provider through the charge endpoint; free costs nothing. Recorded in the consumer's
 *      transactions and logs. The call then gives the run back (an unused reservation is released;
 *      a provider_event run takes the provider's charges for MARKET_RUN_IDLE_GRACE_SECONDS more).
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

/**
 * The market's x-service-charge-* headers of a provider_event call. The most the run may be charged is the
 * run's own limit (the run charge limit, the consumer's cap and budgets), never its hold: the hold is
 * min(available balance, that limit), so it would tell the provider the consumer's balance whenever the
 * balance is lower. Charges beyond the hold are cut as always (eventChargeLimitReached).
 */
export function chargeHeaders(run: MarketRunHandle, entryId: string, selectionId: string): Record<string, string> {
  return {
    'x-service-charge-token': run.chargeToken,
    'x-service-charge-run-id': run.id,
    'x-service-charge-mcp-id': entryId,
    'x-service-charge-selection-id': selectionId,
    'x-service-charge-max-total-usd': String(microsToUsd(run.limitMicros ?? run.holdMicros)),
  };
}

/**
 * The tool-runtime selection of an entry: the provider's staticConfig as the source's own params, the
 * consumer's (confined) values apart from them, the platform's headers on top.
 */
export function entrySelection(
  entry: MarketCallEntry,
  consumer: { values: SourceParamValues; choices?: Record<string, string[]> },
  headers?: Record<string, string>,
  knownTools?: ToolDefinition[],
): ToolSelection {
  const base = {
    params: entry.staticConfig,
    consumerParams: consumer.values,
    consumerChoices: consumer.choices,
    headers,
  };
  if (entry.type === 'remote_mcp')
    return { type: 'remote_mcp', url: entry.remoteMcpUrl ?? undefined, ...base, knownTools };
  return { type: 'openapi', spec: entry.openapiSpec ?? undefined, baseUrl: entry.openapiBaseUrl ?? undefined, ...base };
}

/** The approved, enabled tools of an entry (what tools/list shows and what may be called). */
export function callableTools(entry: Pick<MarketCallEntry, 'approvedTools'>): StoredMarketTool[] {
  return entry.approvedTools.filter((tool) => tool.isEnabled);
}

/**
 * The upstream's current tool list (cached), and whether it is the provider's view (fetched with staticConfig only).
 * `confirmPrincipal` (a caller whose credential check is deferred to the run's acquire) is awaited before the
 * provider's server is asked: a revoked credential causes no upstream request at all.
 */
async function upstreamTools(
  deps: MarketToolCallDeps,
  entry: MarketCallEntry,
  consumerParams: SourceParamValues,
  confirmPrincipal: (() => Promise<void>) | undefined,
): Promise<{ tools: ToolDefinition[]; providerView: boolean }> {
  const consumerOnly = `${entry.submissionId}#lists-to-consumers-only`;
  const cached = deps.toolLists.get(entry.submissionId);
  if (cached) return { tools: cached, providerView: true };
  const url = parseSourceUrl(entry.remoteMcpUrl ?? '', 'The MCP server URL');
  preflightSourceUrl(url, deps.runtime.policy);
  const list = async (headers: Record<string, string>) => {
    await confirmPrincipal?.();
    const { session, tools } = await connectAndList(url, headers, deps.runtime);
    await session.close();
    return tools;
  };
  if (!deps.toolLists.get(consumerOnly) || Object.keys(consumerParams).length === 0) {
    try {
      const tools = await list(mcpHeaders({ params: entry.staticConfig }));
      deps.toolLists.set(entry.submissionId, tools);
      return { tools, providerView: true };
    } catch (error) {
      if (
        !(error instanceof ToolSourceError && error.code === 'auth_required') ||
        Object.keys(consumerParams).length === 0
      )
        throw error;
      deps.toolLists.set(consumerOnly, []);
    }
  }
  const key = `${entry.submissionId}#${createHash('sha256')
    .update(JSON.stringify(Object.entries(consumerParams).sort(([a], [b]) => a.localeCompare(b))))
    .digest('hex')}`;
  const hit = deps.toolLists.get(key);
  if (hit) return { tools: hit, providerView: false };
  const tools = await list(mcpHeaders({ params: entry.staticConfig, consumerParams }));
  deps.toolLists.set(key, tools);
  return { tools, providerView: false };
}

/**
 * compareToolLists of an entry version's approved tools and an upstream list, once per pair of lists:
 * both are held as the same objects while they are remembered (the entry cache, deps.toolLists) and
 * never changed, so every call in between gets the same report without comparing the schemas again.
 */
function comparedToolLists(approved: readonly StoredMarketTool[], upstream: readonly ToolDefinition[]): DriftReport {
  let byUpstream = comparedLists.get(approved);
  if (!byUpstream) {
    byUpstream = new WeakMap();
    comparedLists.set(approved, byUpstream);
  }
  let report = byUpstream.get(upstream);
  if (!report) {
    report = compareToolLists(approved, upstream);
    byUpstream.set(upstream, report);
  }
  return report;
}
const comparedLists = new WeakMap<readonly StoredMarketTool[], WeakMap<readonly ToolDefinition[], DriftReport>>();

/** A call without a client behind it (an agent's): the tool's requests for input are failures, as they get no answer. */
export async function callMarketTool(
  deps: MarketToolCallDeps,
  request: Omit<MarketToolCallRequest, 'relay' | 'resume' | 'inputResponses'>,
): Promise<MarketToolCallOutcome> {
  const outcome = await relayMarketToolCall(deps, request);
  if (outcome.status === 'input_required') throw new Error('a call without a relay waits for input');
  return outcome;
}

/** A call with a client behind it (the hosted endpoint), relaying what the tool sends back: see MarketToolCallRequest.relay. */
export async function relayMarketToolCall(
  deps: MarketToolCallDeps,
  request: MarketToolCallRequest,
): Promise<MarketRelayedOutcome> {
  const now = deps.now ?? Date.now;
  let started = now();
  const { entry } = request;
  let callId: string = randomUUID();
  const record = (fields: Partial<MarketCallRecord> & Pick<MarketCallRecord, 'outcome'>): MarketCallRecord => ({
    callId,
    consumerId: request.consumerId,
    jobId: request.jobId ?? null,
    entry,
    runId: null,
    selectionId: request.selectionId,
    toolName: request.toolName,
    durationMs: now() - started,
    isError: false,
    code: null,
    costMicros: 0,
    ...fields,
  });
  const shown = consumerText(entry);
  // A continued call already holds its run: a refusal of its next round gives the run back.
  let continued: { waiting: WaitingCall; run: MarketRunHandle } | null = null;
  let upstreamState: string | undefined;
  const refuse = async (
    code: MarketCallRefusal,
    message: string,
    runId: string | null = null,
  ): Promise<MarketRelayedOutcome> => {
    await request.confirmPrincipal?.();
    if (continued)
      await deps.store.endCall({
        runId: continued.run.id,
        releaseMicros: continued.waiting.releaseMicros,
        close: continued.waiting.closeRun,
      });
    await deps.store.recordCall(record({ outcome: 'refused', code, runId: runId ?? continued?.run.id ?? null }));
    return { status: 'refused', code, message: shown.error(message), runId: runId ?? continued?.run.id ?? null };
  };

  // 0. The next round of a call waiting for input continues that call (once), on its run.
  if (request.resume) {
    await request.confirmPrincipal?.();
    const resumed = await deps.store.continueCall?.({
      id: request.resume.waitingId,
      consumerId: request.consumerId,
      entryId: entry.entryId,
      selectionId: request.selectionId,
      toolName: request.toolName,
    });
    if (!resumed)
      return refuse(
        'input_expired',
        'This input request was answered already, or it expired: call the tool again (nothing was charged for it)',
      );
    callId = resumed.waiting.callId;
    started = resumed.waiting.startedAt.getTime();
    if (!resumed.run)
      return refuse(
        'input_expired',
        "The call's market run ended while it waited for input: call the tool again (nothing was charged for it)",
        resumed.waiting.runId,
      );
    continued = { waiting: resumed.waiting, run: resumed.run };
    // A round that could still be running when its run expires would be answered and never billed: refused,
    // the call given back (its reservation released), so the consumer calls again on a run of its own.
    if (resumed.run.expiresAt.getTime() - now() < (deps.roundMinLifeMs ?? 0))
      return refuse(
        'input_expired',
        "The call's market run ends before this round could finish: call the tool again (nothing was charged for it)",
      );
    upstreamState = resumed.waiting.upstreamState ?? undefined;
  }

  // 1. An approved, enabled tool of the entry, and params the consumer may give.
  const tool = callableTools(entry).find((t) => t.toolName === request.toolName);
  if (!tool) return refuse('unknown_tool', `"${request.toolName}" is not an approved tool of this market entry`);
  const consumer = confineConsumerParams(entry.requiredUserParamsSchema, request.consumerParams);
  if (!consumer.ok) return refuse('invalid_params', consumer.message);
  if (entry.type === 'remote_mcp') {
    try {
      mcpHeaders({ consumerParams: consumer.values });
    } catch (error) {
      if (error instanceof ToolSourceError && error.code === 'invalid_params')
        return refuse('invalid_params', `${error.message}. Nothing was sent or charged.`);
      throw error;
    }
  }

  // 2. The rug-pull gate.
  let known: ToolDefinition[] | undefined;
  if (entry.type === 'remote_mcp') {
    let view: Awaited<ReturnType<typeof upstreamTools>>;
    try {
      // A cold list is fetched from the provider's server: only for a caller that may still call.
      view = await upstreamTools(deps, entry, consumer.values, request.confirmPrincipal);
    } catch (error) {
      if (error instanceof PrincipalRefusedError) throw error;
      const why =
        error instanceof ToolSourceError ? failurePhrase(error) : "the provider's server could not be reached";
      return refuse(
        'upstream_unavailable',
        `The provider's server could not be reached to check its tools (nothing was charged): ${why}`,
      );
    }
    known = view.tools;
    const report = comparedToolLists(entry.approvedTools, known);
    // Only the provider's own view flags the entry: a list fetched with a consumer's values refuses that consumer's call alone.
    if (report.drifted.length && view.providerView) await deps.store.flagDrift(entry, report);
    const drift = report.drifted.find((d) => d.toolName === tool.toolName);
    if (drift) {
      const what =
        drift.change === 'missing'
          ? 'is no longer offered by the provider'
          : `changed since it was approved (${drift.fields.map((f) => f.field).join(', ')})`;
      return refuse(
        'tool_changed',
        `"${tool.toolName}" ${what}; it is refused until the market reviews the change. Nothing was charged.`,
      );
    }
  }

  // 3. The market run, holding what this call can cost (a continued call keeps the run and the price of its first round).
  let run: MarketRunHandle;
  let fixed: number;
  let endsWithCall: boolean;
  if (continued) {
    ({ run } = continued);
    fixed = continued.waiting.releaseMicros;
    endsWithCall = continued.waiting.closeRun;
    continued = null;
  } else {
    fixed = entry.monetizationStrategy === 'tool_call_fixed' ? (tool.clientPriceMicros ?? 0) : 0;
    const acquired = await request.acquireRun(entry.monetizationStrategy === 'tool_call_fixed' ? fixed : null);
    if (!acquired.ok) {
      if (acquired.code === 'budget_reached') {
        const which =
          acquired.budget === 'monthly'
            ? `monthly budget (${microsToUsd(acquired.budgetMicros)} USD per calendar month, UTC)`
            : `total budget (${microsToUsd(acquired.budgetMicros)} USD)`;
        const room = microsToUsd(acquired.roomMicros);
        // The account's own calls made with an API key (selection api-key:<id>) are bounded by the key's budgets.
        const [whose, where] = request.selectionId.startsWith('api-key:')
          ? ['This API key', 'API key']
          : ['This credential', 'Market credentials'];
        return refuse(
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
        return refuse(
          'run_limit_reached',
          `${message} (your cap, or MARKET_RUN_CHARGE_LIMIT_USD; nothing was charged)`,
        );
      }
      const messages = {
        insufficient_funds: `The wallet's available balance does not cover this paid tool${fixed > 0 ? ` (${microsToUsd(fixed)} USD)` : ''} (nothing was charged)`,
        subscription_inactive: 'The subscription is not active',
        entry_not_found: 'The market entry is no longer approved',
      } as const;
      return refuse(acquired.code, messages[acquired.code]);
    }
    run = acquired.run;
    endsWithCall = request.runPerCall;
  }
  // Every path below gives the run back exactly once: endCall, the fixed-price settlement, or the
  // wait for input (the next round, or abandonCall, gives it back).
  const endCall = (releaseMicros: number) => deps.store.endCall({ runId: run.id, releaseMicros, close: endsWithCall });

  // 4. Forward.
  const headers =
    entry.monetizationStrategy === 'provider_event'
      ? chargeHeaders(run, entry.entryId, request.selectionId)
      : undefined;
  // The run's charge token leaves the platform only in a provider_event call's headers: only then can an answer echo it.
  const text = consumerText(entry, headers ? [run.chargeToken] : []);
  const capabilities =
    request.relay?.capabilities && Object.keys(request.relay.capabilities).length
      ? request.relay.capabilities
      : undefined;
  const selection: ToolSelection = {
    ...entrySelection(entry, consumer, headers, known),
    ...(capabilities && { clientCapabilities: capabilities }),
  };
  const runtime = { ...deps.runtime, callTimeoutMs: deps.callTimeoutMs };
  const pooled = headers === undefined ? deps.sources : undefined;
  // One upstream connection (and MCP session) per consumer and selection: never shared with another
  // consumer; one per set of capabilities its client declared (a 2025 server learns them once).
  const poolKey = pooled
    ? createHash('sha256')
        .update(
          JSON.stringify([
            entry.submissionId,
            request.consumerId,
            request.selectionId,
            selection.consumerParams ?? {},
            capabilities ?? null,
          ]),
        )
        .digest('hex')
    : '';
  const relay = relayFor(request, text, upstreamState);
  let answer: RelayedAnswer;
  let source: ToolSource | undefined;
  try {
    source = pooled
      ? await pooled.open(poolKey, () => openToolSource({ ...selection, knownTools: undefined }, runtime))
      : await openToolSource(selection, runtime);
    try {
      const options = { signal: request.signal, timeoutMs: deps.callTimeoutMs };
      answer = relay
        ? await source.relayCall(tool.toolName, request.args ?? {}, relay, options)
        : { kind: 'result', result: await source.call(tool.toolName, request.args ?? {}, options) };
    } finally {
      if (!pooled) await source.close();
    }
  } catch (error) {
    if (pooled && source) pooled.drop(poolKey, source);
    // No answer: nothing is charged and the call's reservation is released.
    await endCall(fixed);
    if (!(error instanceof ToolCallError) && !(error instanceof ToolSourceError)) throw error;
    if (error instanceof ToolSourceError && error.code === 'invalid_params') {
      // A consumer's value the runtime would not send (e.g. a server URL variable outside its enum): nothing left the platform.
      return refuse('invalid_params', `${error.message}. Nothing was sent or charged.`, run.id);
    }
    const code = error instanceof ToolCallError ? error.kind : error.code;
    const failed = record({ outcome: 'failed', code, runId: run.id });
    await deps.store.recordCall(failed);
    const rpc =
      error instanceof ToolCallError && error.rpc
        ? { rpc: { code: error.rpc.code, ...(error.rpc.data !== undefined && { data: text.value(error.rpc.data) }) } }
        : {};
    return {
      status: 'failed',
      code,
      message: text.error(`The tool call got no answer (nothing was charged): ${failurePhrase(error)}`),
      runId: run.id,
      durationMs: failed.durationMs,
      ...rpc,
    };
  }

  // 4b. The tool asks the consumer for input: the call waits, holding its run, for the next round.
  if (answer.kind === 'input_required') {
    if (!deps.store.awaitInput) {
      await endCall(fixed);
      const failed = record({ outcome: 'failed', code: 'protocol_error', runId: run.id });
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
      callId,
      runId: run.id,
      consumerId: request.consumerId,
      entryId: entry.entryId,
      selectionId: request.selectionId,
      toolName: tool.toolName,
      upstreamState: answer.requestState ?? null,
      releaseMicros: fixed,
      closeRun: endsWithCall,
      startedAt: new Date(started),
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
  const result = text.answer(answer.result);

  // 5. Settle and record.
  const answered = record({ outcome: 'answered', isError: result.isError, runId: run.id, costMicros: fixed });
  if (fixed > 0) {
    const settled = await deps.store.settleFixedCall({
      record: answered,
      runId: run.id,
      priceMicros: fixed,
      commissionRate: deps.commissionRate,
      closeRun: endsWithCall,
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
  await endCall(0);
  await deps.store.recordCall({ ...answered, costMicros: 0 });
  return { status: 'answered', result, runId: run.id, costMicros: 0, durationMs: answered.durationMs, billed: false };
}

/** How long a call waiting for the consumer's input can be continued, by default (MARKET_INPUT_REQUIRED_TTL_SECONDS). */
export const DEFAULT_INPUT_REQUIRED_TTL_MS = 600_000;

/**
 * What the tool runtime relays for a call with a client behind it: progress, log messages and the
 * tool's requests to the client, scrubbed like any answer on their way to the consumer (the
 * consumer's answers go to the tool as they are), and the consumer's answers to the last round.
 */
function relayFor(
  request: MarketToolCallRequest,
  text: ReturnType<typeof consumerText>,
  requestState: string | undefined,
): CallRelay | null {
  const relay = request.relay;
  if (!relay && !request.resume && !request.inputResponses) return null;
  const onProgress = relay?.onProgress;
  const log = relay?.log;
  const ask = relay?.request;
  return {
    ...(onProgress && {
      onProgress: (progress) =>
        onProgress(progress.message === undefined ? progress : { ...progress, message: text.result(progress.message) }),
    }),
    ...(log && {
      log: { level: log.level, onMessage: (message) => log.onMessage(text.value(message) as typeof message) },
    }),
    ...(ask && { request: (method, params, signal) => ask(method, text.value(params) as typeof params, signal) }),
    ...(request.inputResponses && { inputResponses: request.inputResponses }),
    ...(requestState !== undefined && { requestState }),
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
