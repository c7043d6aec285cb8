import { createHash } from 'node:crypto';
import { ToolCallError, ToolSourceError } from '../../tools/errors';
import { openToolSource, type CallRelay, type RelayedAnswer, type ToolSource } from '../../tools/source';
import type { SourceParamValues, ToolDefinition, ToolSelection } from '../../tools/types';
import { microsToUsd } from '../../money';
import { consumerText, failurePhrase } from '../consumer-errors';
import type { MarketCallEntry, MarketRunHandle, MarketToolCallRequest } from '../tool-call';
import { giveBack, type HeldRun } from './acquire';
import type { Ended, RelayedCall } from './call';
import type { Passed } from './gate';

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

/** The tool's answer (a result, or its requests for input), and how what it says is scrubbed for the consumer. */
export interface Forwarded {
  answer: RelayedAnswer;
  text: ReturnType<typeof consumerText>;
}

/**
 * Forwards the call with the provider's staticConfig, the consumer's params kept apart from it (the runtime
 * confines them) and for provider_event entries the x-service-charge-* headers, through the tool runtime (SSRF
 * guard, timeout, output cap, no cross-origin redirect), over an upstream connection of this consumer's
 * selection only (reused for calls without per-run headers). A call that gets no answer gives its run back,
 * nothing charged, and ends failed (or refused, for a consumer's value the runtime would not send).
 */
export async function forward(call: RelayedCall, passed: Passed, held: HeldRun): Promise<Forwarded | Ended> {
  const { deps, request } = call;
  const { entry } = request;
  const { tool, consumer, known } = passed;
  const { run } = held;
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
  const relay = relayFor(request, text, call.upstreamState);
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
    await giveBack(call, held, held.fixed);
    if (!(error instanceof ToolCallError) && !(error instanceof ToolSourceError)) throw error;
    if (error instanceof ToolSourceError && error.code === 'invalid_params') {
      // A consumer's value the runtime would not send (e.g. a server URL variable outside its enum): nothing left the platform.
      return call.refuse('invalid_params', `${error.message}. Nothing was sent or charged.`, run.id);
    }
    const code = error instanceof ToolCallError ? error.kind : error.code;
    const failed = call.record({ outcome: 'failed', code, runId: run.id });
    await deps.store.recordCall(failed);
    const rpc =
      error instanceof ToolCallError && error.rpc
        ? { rpc: { code: error.rpc.code, ...(error.rpc.data !== undefined && { data: text.value(error.rpc.data) }) } }
        : {};
    return {
      ended: {
        status: 'failed',
        code,
        message: text.error(`The tool call got no answer (nothing was charged): ${failurePhrase(error)}`),
        runId: run.id,
        durationMs: failed.durationMs,
        ...rpc,
      },
    };
  }
  return { answer, text };
}

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
