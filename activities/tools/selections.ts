import type { Db } from '../../db/connect';
import { getJob } from '../../db/repos/jobs';
import { unsealRequestSecrets } from '../../lib/request-secrets';
import { selectionFromCustomMcp, type CustomMcpSelection } from '../../lib/tools/selection';
import type { SourceParamValues } from '../../lib/tools/types';
import type { SelectionLoader } from './index';

/**
 * Reads a run's tool selection from its job row: the selection from `request.custom_mcps[i]` (stored
 * with its params redacted) and the params from the job's sealed secrets (`custom_mcps_params[i]`).
 * Market selections (`market_mcps`) never come here: callTool serves them through the market path
 * (activities/tools/market.ts), which bills them.
 */
export function jobSelectionLoader(db: Db, masterKey: Buffer): SelectionLoader {
  return async (jobId, ref) => {
    if (ref.kind === 'market_mcps') throw new Error('market_mcps selections are called through the market path, not opened as tool sources');
    const job = await getJob(db, jobId);
    const stored = (job.request as { custom_mcps?: CustomMcpSelection[] }).custom_mcps?.[ref.index];
    if (!stored) throw new Error(`the run has no custom_mcps[${ref.index}]`);
    const secrets = unsealRequestSecrets(masterKey, jobId, job.sealed_secrets) as { custom_mcps_params?: SourceParamValues[] };
    return selectionFromCustomMcp(stored, secrets.custom_mcps_params?.[ref.index] ?? {});
  };
}
