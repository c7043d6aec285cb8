import { createHash } from 'node:crypto';
import type { Db } from '../../db/connect';
import { getJob } from '../../db/repos/jobs';
import { agentRun, createMarketCallStore, loadCallEntry } from '../../db/repos/market-tool-calls';
import type { Config } from '../../lib/config';
import { callMarketTool, marketToolCallDeps, type MarketToolCallOutcome } from '../../lib/market/tool-call';
import { declaredParams } from '../../lib/market/user-params-schema';
import { usdToWholeMicros } from '../../lib/money';
import type { NetworkPolicy } from '../../lib/net/ssrf';
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
 * Market tools of agents: a `market_mcps` selection of a run calls through the same in-process path
 * as the hosted endpoint (lib/market/tool-call.ts), with the selection's sealed params, one market
 * run per execution and selection (cap: the selection's max_total_usd), and the stored selection's
 * id as x-service-charge-selection-id.
 */
export function createMarketSelectionCaller(deps: { db: Db; config: Config; policy: NetworkPolicy }) {
  const market = deps.config.market;
  const callDeps = marketToolCallDeps({
    store: createMarketCallStore(deps.db, market.callCommit),
    market,
    policy: deps.policy,
  });
  const settings = { ttlMs: market.runTtlMs, limitMicros: market.runChargeLimitMicros, chargeTokenKey: market.chargeTokenKey };

  return async (call: MarketSelectionCall): Promise<MarketToolCallOutcome> => {
    const job = await getJob(deps.db, call.jobId);
    const selection = readJobSelections(deps.config.masterKey, job).market[call.index];
    if (!selection) throw new Error(`the run has no market_mcps[${call.index}]`);
    const stored: StoredMarketSelection = selection.stored;
    const entry = await loadCallEntry(deps.db, deps.config.masterKey, stored.mcp_id);
    if (!entry) return { status: 'refused', code: 'entry_not_found', message: 'The market entry of this selection is no longer approved', runId: null };
    const narrowed = stored.tool_names?.length ? { ...entry, approvedTools: entry.approvedTools.filter((t) => stored.tool_names!.includes(t.toolName)) } : entry;
    const selectionId = marketSelectionId(call.jobId, call.index, stored);
    const capMicros = stored.max_total_usd === undefined ? null : usdToWholeMicros(stored.max_total_usd);
    return callMarketTool(callDeps, {
      consumerId: job.user_id,
      entry: narrowed,
      toolName: call.tool,
      args: call.args,
      // Only the parameters the entry declares, even from a selection stored before that was checked on entry.
      consumerParams: declaredParams(entry.requiredUserParamsSchema, selection.params),
      selectionId,
      jobId: call.jobId,
      runPerCall: false,
      signal: call.signal,
      acquireRun: () => agentRun(deps.db, settings, { consumerId: job.user_id, entryId: entry.entryId, selectionId, jobId: call.jobId, capMicros, minLifeMs: market.toolCallTimeoutMs + 30_000 }),
    });
  };
}

export type MarketSelectionCaller = ReturnType<typeof createMarketSelectionCaller>;
