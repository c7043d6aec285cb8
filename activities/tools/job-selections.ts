import type { Job } from '../../db/schema';
import { unsealRequestSecrets } from '../../lib/request-secrets';
import type { CustomMcpSelection } from '../../lib/tools/selection';
import type { SourceParamValues } from '../../lib/tools/types';

/** A `market_mcps` item as a run keeps it (params apart). */
export interface JobMarketSelection {
  mcp_id: string;
  tool_names?: string[];
  /** Extra property: the selection's cap per execution (USD). */
  max_total_usd?: number;
  /** The stored selection's id, when the run stored one. */
  id?: string;
}

/** A run's tool selections, each with its unsealed params, by index (the index of a ToolSelectionRef). */
export interface JobSelections {
  custom: { stored: CustomMcpSelection; params: SourceParamValues }[];
  market: { stored: JobMarketSelection; params: SourceParamValues }[];
}

type WithParams<T> = T & { params?: SourceParamValues };

/**
 * Where a job keeps its selections: an agent-market run has them (with their params) in its sealed
 * `agent_selections` (they are the provider's private configuration); every other run has them in
 * its request (`custom_mcps` / `market_mcps`, params redacted) with the params sealed as
 * `custom_mcps_params[i]` / `market_mcps_params[i]`.
 */
export function readJobSelections(
  masterKey: Buffer,
  job: Pick<Job, 'id' | 'kind' | 'request' | 'sealed_secrets'>,
): JobSelections {
  const secrets = unsealRequestSecrets(masterKey, job.id, job.sealed_secrets);
  if (job.kind === 'agent-market') {
    const sealed = (secrets.agent_selections ?? {}) as {
      market?: WithParams<JobMarketSelection>[];
      custom?: WithParams<CustomMcpSelection>[];
    };
    const split = <T>({ params, ...stored }: WithParams<T>) => ({ stored: stored as T, params: params ?? {} });
    return {
      custom: (sealed.custom ?? []).map(split<CustomMcpSelection>),
      market: (sealed.market ?? []).map(split<JobMarketSelection>),
    };
  }
  const request = job.request as { custom_mcps?: CustomMcpSelection[]; market_mcps?: JobMarketSelection[] };
  const customParams = (secrets.custom_mcps_params ?? []) as SourceParamValues[];
  const marketParams = (secrets.market_mcps_params ?? []) as SourceParamValues[];
  return {
    custom: (request.custom_mcps ?? []).map((stored, i) => ({ stored, params: customParams[i] ?? {} })),
    market: (request.market_mcps ?? []).map((stored, i) => ({ stored, params: marketParams[i] ?? {} })),
  };
}
