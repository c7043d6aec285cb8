import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { discoverTools } from '../../lib/tools/discovery';
import {
  unsealDiscoveryParams,
  type DiscoverToolsInput,
  type DiscoveryOutcome,
} from '../../lib/tools/discovery-request';
import { ToolCallError, ToolSourceError, type ToolCallFailureKind } from '../../lib/tools/errors';
import {
  describeToolImage,
  imagesOf,
  textWithImagesDescribed,
  type KeptToolImage,
  type ToolImageKeeper,
  type ToolImageRef,
} from '../../lib/tools/images';
import { openToolSourceForCall, type ToolRuntimeDeps } from '../../lib/tools/source';
import type { ToolCallResult, ToolSelection } from '../../lib/tools/types';
import type { MarketSelectionCaller } from './market';
import type { RunConnections } from './run-connections';

/** Which selection of a run a tool belongs to: the n-th of its `custom_mcps` or `market_mcps`. */
export interface ToolSelectionRef {
  kind: 'custom_mcps' | 'market_mcps';
  index: number;
}

export type { DiscoverToolsInput, DiscoveryOutcome };

export type SelectionLoader = (jobId: string, ref: ToolSelectionRef) => Promise<ToolSelection>;

export interface ToolActivityDeps extends ToolRuntimeDeps {
  masterKey: Buffer;
  /** Reads the selection (with its unsealed params) a run refers to. */
  loadSelection: SelectionLoader;
  /** Calls a tool of a `market_mcps` selection through the market's in-process path (activities/tools/market.ts). */
  callMarketSelection?: MarketSelectionCaller;
  /** Keeps the images of answers for the run's model (activities/agent/tool-images.ts); without it they are described only. */
  images?: ToolImageKeeper;
  /** Keeps a run's sources open between its calls (without it, every call opens and closes its own). */
  connections?: RunConnections;
}

export interface ToolCallInput {
  jobId: string;
  selection: ToolSelectionRef;
  tool: string;
  args: unknown;
  /** Bound of this call (default: the runtime's call timeout). */
  timeoutMs?: number;
}

export interface ToolCallOutput {
  isError: boolean;
  /** The answer as text for the model: each image described (`[image: image/png, 12345 bytes, returned by tool x]`). */
  text: string;
  truncated: boolean;
  durationMs: number;
  /** What the call charged the run's owner (a fixed-price market tool); absent for free tools. Provider-event charges arrive later, on the market run. */
  costMicros?: number;
  /** The answer's images kept for the run's model (their bytes are in Postgres, never in the workflow's history). */
  images?: ToolImageRef[];
}

/** What an attempt leaves behind for the next one (Temporal keeps the last heartbeat details across attempts). */
interface CallProgress {
  /** This attempt failed before anything reached the upstream: the next attempt may send the call. */
  notDeliveredAttempt?: number;
  /** This attempt has the call in flight (or sent it). */
  inFlightAttempt?: number;
}

/** Non-retryable failure types a workflow reports to the model as error results. */
export const TOOL_CALL_FAILED = 'ToolCallFailed';
/** A retry of a call that may already have run, for a tool that is neither read-only nor idempotent: not sent again. */
export const TOOL_CALL_MAY_HAVE_RUN = 'ToolCallMayHaveRun';
/** Retryable: the call provably did not reach the upstream, or the tool is safe to repeat. */
export const TOOL_CALL_RETRYABLE = 'ToolCallRetryable';

const HEARTBEAT_EVERY_MS = 10_000;

export function createToolActivities(deps: ToolActivityDeps) {
  return {
    /** Discovers a source; failures the caller should see (refusals, unreachable upstream, bad documents) come back as a value, not retried. */
    async discoverTools(input: DiscoverToolsInput): Promise<DiscoveryOutcome> {
      const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
      const params = input.sealedParams
        ? unsealDiscoveryParams(deps.masterKey, workflowId, input.sealedParams)
        : undefined;
      try {
        const discovery = await discoverTools(
          {
            type: input.type,
            url: input.url,
            spec: input.spec,
            specText: input.specText,
            baseUrl: input.baseUrl,
            params,
          },
          deps,
        );
        return { ok: true, discovery };
      } catch (error) {
        if (error instanceof ToolSourceError) return { ok: false, code: error.code, message: error.message };
        throw error;
      }
    },

    /**
     * Calls one tool of a run's selection. Retries only what is safe: a failure that provably never
     * reached the upstream, or any transient failure of a read-only/idempotent tool, is thrown
     * retryable; everything else is non-retryable (ToolCallFailed), for the workflow to report to the
     * model as an error result. An attempt after one that may have sent a non-idempotent call (a
     * crashed worker, a timed-out attempt) is refused (ToolCallMayHaveRun) instead of sending it again.
     */
    async callTool(input: ToolCallInput): Promise<ToolCallOutput> {
      const context = Context.current();
      const { attempt } = context.info;
      const previous = (context.info.heartbeatDetails ?? {}) as CallProgress;
      const started = Date.now();
      if (input.selection.kind === 'market_mcps') return marketToolCall(deps, input, context, previous);
      const open = async () => {
        let selection: ToolSelection;
        try {
          selection = await deps.loadSelection(input.jobId, input.selection);
        } catch (error) {
          throw ApplicationFailure.nonRetryable(
            `The tool selection could not be loaded: ${(error as Error).message}`,
            TOOL_CALL_FAILED,
            { kind: 'source_unavailable', reached: false },
          );
        }
        return openToolSourceForCall(selection, deps);
      };
      // The run's source kept open since its last call (deps.connections), else a new one.
      let source = deps.connections?.take(input.jobId, input.selection);
      const kept = source !== undefined;
      let answered = false;
      try {
        source ??= await open();
        const repeatable = source.isRepeatable(input.tool);
        if (attempt > 1 && !repeatable && previous.notDeliveredAttempt !== attempt - 1) {
          throw ApplicationFailure.nonRetryable(
            `Not sent again: an earlier attempt of this call to "${input.tool}" may have reached the tool, which is neither read-only nor idempotent. Check its effect before calling it again.`,
            TOOL_CALL_MAY_HAVE_RUN,
            { kind: 'connection_lost', reached: true },
          );
        }
        context.heartbeat({ inFlightAttempt: attempt } satisfies CallProgress);
        const beat = setInterval(
          () => context.heartbeat({ inFlightAttempt: attempt } satisfies CallProgress),
          HEARTBEAT_EVERY_MS,
        );
        try {
          const options = { signal: context.cancellationSignal, timeoutMs: input.timeoutMs };
          let result: ToolCallResult;
          try {
            result = await source.call(input.tool, input.args, options);
          } catch (error) {
            // A kept connection that broke: the call goes once over a new one, where sending it again is safe.
            if (!kept || !brokenConnection(error) || context.cancellationSignal.aborted) throw error;
            const broken = source;
            source = undefined;
            await broken.close();
            source = await open();
            result = await source.call(input.tool, input.args, options);
          }
          answered = true;
          return await modelAnswer(deps, input, result, { durationMs: Date.now() - started });
        } finally {
          clearInterval(beat);
        }
      } catch (error) {
        if (!(error instanceof ToolCallError)) throw error;
        if (error.retryable) {
          if (!error.reached) context.heartbeat({ notDeliveredAttempt: attempt } satisfies CallProgress);
          throw ApplicationFailure.retryable(
            error.message,
            TOOL_CALL_RETRYABLE,
            failureDetails(error.kind, error.reached),
          );
        }
        throw ApplicationFailure.nonRetryable(
          error.message,
          TOOL_CALL_FAILED,
          failureDetails(error.kind, error.reached),
        );
      } finally {
        // A source that answered stays open for the run's next call; any other is closed.
        if (source && answered && deps.connections) deps.connections.give(input.jobId, input.selection, source);
        else await source?.close();
      }
    },
  };
}

/** A call over a kept connection that failed because the connection did, and may be sent again (ToolCallError.retryable). */
function brokenConnection(error: unknown): boolean {
  return (
    error instanceof ToolCallError &&
    error.retryable &&
    (error.kind === 'not_delivered' || error.kind === 'connection_lost')
  );
}

/**
 * A market tool of the run (`market_mcps`): served in-process by the market path, which bills it.
 * A call is never sent twice: an attempt after one that may have sent it is refused, and refusals
 * (nothing charged) and unanswered calls come back as non-retryable failures for the model.
 */
async function marketToolCall(
  deps: ToolActivityDeps,
  input: ToolCallInput,
  context: Context,
  previous: CallProgress,
): Promise<ToolCallOutput> {
  const { attempt } = context.info;
  if (!deps.callMarketSelection)
    throw ApplicationFailure.nonRetryable('Market tools are not available on this worker', TOOL_CALL_FAILED, {
      kind: 'source_unavailable',
      reached: false,
    });
  if (attempt > 1 && previous.notDeliveredAttempt !== attempt - 1) {
    throw ApplicationFailure.nonRetryable(
      `Not sent again: an earlier attempt of this call to the market tool "${input.tool}" may have reached it (and been billed). Check its effect before calling it again.`,
      TOOL_CALL_MAY_HAVE_RUN,
      { kind: 'connection_lost', reached: true },
    );
  }
  context.heartbeat({ inFlightAttempt: attempt } satisfies CallProgress);
  const outcome = await deps.callMarketSelection({
    jobId: input.jobId,
    index: input.selection.index,
    tool: input.tool,
    args: input.args,
    signal: context.cancellationSignal,
  });
  if (outcome.status === 'answered')
    return modelAnswer(deps, input, outcome.result, { durationMs: outcome.durationMs, costMicros: outcome.costMicros });
  throw ApplicationFailure.nonRetryable(outcome.message, TOOL_CALL_FAILED, {
    kind: outcome.code,
    reached: outcome.status === 'failed',
  });
}

/**
 * A tool's answer as the workflow gets it: its text for the model, with each image described, and
 * references to the images kept for the model (deps.images). The answer's blocks, and image bytes,
 * stay out of the workflow's history.
 */
async function modelAnswer(
  deps: ToolActivityDeps,
  input: ToolCallInput,
  result: ToolCallResult,
  call: Pick<ToolCallOutput, 'durationMs' | 'costMicros'>,
): Promise<ToolCallOutput> {
  const answer = { isError: result.isError, ...call };
  const images = imagesOf(result);
  if (images.length === 0) return { ...answer, text: result.text, truncated: result.truncated };
  // The tool has run: a failure to store its images must not fail the call (a retry would send it again).
  const kept: KeptToolImage[] = deps.images
    ? await deps.images.keep(input.jobId, input.tool, images).catch((error: unknown) => {
        log.warn('the images of a tool answer could not be stored; they are described only', {
          tool: input.tool,
          reason: error instanceof Error ? error.message : String(error),
        });
        return images.map(() => ({ notShown: 'it could not be stored' }));
      })
    : images.map(() => ({ notShown: null }));
  const { text, truncated } = textWithImagesDescribed(
    result,
    (image, n) => describeToolImage(image, input.tool, 'notShown' in kept[n] ? kept[n].notShown : null),
    deps.maxResultBytes,
  );
  const refs = kept.flatMap((image) => ('ref' in image ? [image.ref] : []));
  return { ...answer, text, truncated, ...(refs.length > 0 && { images: refs }) };
}

function failureDetails(kind: ToolCallFailureKind, reached: boolean) {
  return { kind, reached };
}

export type ToolActivities = ReturnType<typeof createToolActivities>;
