import { createHash } from 'node:crypto';
import type { Db } from '../../db/connect';
import { getJob } from '../../db/repos/jobs';
import { loadCallEntry } from '../../db/repos/market-tool-calls';
import type { Config } from '../../lib/config';
import {
  callMarketTool,
  type AcquiredRun,
  type MarketToolCallDeps,
  type MarketToolCallOutcome,
} from '../../lib/market/tool-call';
import { usdCapToMicrosFloor } from '../../lib/money';
import { readJobSelections } from './job-selections';

/** A `market_mcps` item as stored in a run's request (params redacted; their values are sealed as `market_mcps_params[i]`). */
export interface StoredMarketSelection {
  mcp_id: string;
  tool_names?: string[];
  /** Extra property: the selection's cap per execution (USD). */
  max_total_usd?: number;
  /** The stored selection's id, when the run stored one; otherwise it is derived from (job, index). */
  id?: string;
}

export interface MarketSelectionCall {
  jobId: string;
  index: number;
  tool: string;
  args: unknown;
  signal?: AbortSignal;
}

/** The stored selection's id: its own `id`, else a stable UUID-shaped id of (execution, index). */
export function marketSelectionId(jobId: string, index: number, stored: StoredMarketSelection): string {
  if (stored.id) return stored.id;
  const hex = createHash('sha256').update(`${jobId}:market_mcps:${index}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * What one execution may spend through a selection, in micro-USD (null: no cap but the run charge
 * limit): the smaller of the selection's own max_total_usd (the agent provider's, or the consumer's
 * in a custom agent) and the run request's max_total_usd (the consumer's cap for each market tool of
 * an agent-market run). Caps are refused unless in whole micro-USD where they are given
 * (lib/market/caps.ts); one stored before that was checked is rounded down, never dropped.
 */
export function selectionCapMicros(
  stored: Pick<StoredMarketSelection, 'max_total_usd'>,
  request: unknown,
): number | null {
  const consumer = (request as { max_total_usd?: unknown } | null)?.max_total_usd;
  const caps = [stored.max_total_usd, typeof consumer === 'number' ? consumer : undefined]
    .filter((usd): usd is number => usd !== undefined)
    .map((usd) => usdCapToMicrosFloor(usd))
    .filter((micros): micros is number => micros !== null);
  return caps.length ? Math.min(...caps) : null;
}

/**
 * The market call path an agent's selection calls through, assembled by the composition (workers/activities.ts:
 * marketCallPath of api/services/market/call-path.ts): the call dependencies, and the acquire of a
 * selection's run under the market's run settings.
 */
export interface MarketSelectionCallPath {
  callDeps: MarketToolCallDeps;
  acquireRun(input: {
    consumerId: string;
    entryId: string;
    selectionId: string;
    jobId: string | null;
    capMicros: number | null;
    reserveMicros: number | null;
    shared: boolean;
  }): Promise<AcquiredRun>;
}

/**
 * Market tools of agents: a `market_mcps` selection of a run calls through the same in-process path
 * as the hosted endpoint (lib/market/tool-call.ts), with the selection's sealed params, one shared
 * market run per execution and selection at a time (cap: selectionCapMicros, for the whole
 * execution), and the stored selection's id as x-service-charge-selection-id. Calls of the execution
 * that run at once share that run; one that finds it too close to its expiry retires it (the calls
 * still using it finish on it) and opens the next.
 */
export function createMarketSelectionCaller(deps: { db: Db; config: Config; callPath: MarketSelectionCallPath }) {
  const { callDeps, acquireRun } = deps.callPath;

  return async (call: MarketSelectionCall): Promise<MarketToolCallOutcome> => {
    const job = await getJob(deps.db, call.jobId);
    const selection = readJobSelections(deps.config.masterKey, job).market[call.index];
    if (!selection) throw new Error(`the run has no market_mcps[${call.index}]`);
    const stored: StoredMarketSelection = selection.stored;
    const entry = await loadCallEntry(deps.db, deps.config.masterKey, stored.mcp_id);
    if (!entry)
      return {
        status: 'refused',
        code: 'entry_not_found',
        message: 'The market entry of this selection is no longer approved',
        runId: null,
      };
    const narrowed = stored.tool_names?.length
      ? { ...entry, approvedTools: entry.approvedTools.filter((t) => stored.tool_names!.includes(t.toolName)) }
      : entry;
    const selectionId = marketSelectionId(call.jobId, call.index, stored);
    const capMicros = selectionCapMicros(stored, job.request);
    return callMarketTool(callDeps, {
      consumerId: job.user_id,
      entry: narrowed,
      toolName: call.tool,
      args: call.args,
      // callMarketTool refuses names the entry does not declare, also from a selection stored before that was checked on entry.
      consumerParams: selection.params,
      selectionId,
      jobId: call.jobId,
      runPerCall: false,
      signal: call.signal,
      acquireRun: (reserveMicros) =>
        acquireRun({
          consumerId: job.user_id,
          entryId: entry.entryId,
          selectionId,
          jobId: call.jobId,
          capMicros,
          reserveMicros,
          shared: true,
        }),
    });
  };
}

export type MarketSelectionCaller = ReturnType<typeof createMarketSelectionCaller>;
