import type { Db } from '../../db/connect';
import { getJob } from '../../db/repos/jobs';
import { selectionFromCustomMcp } from '../../lib/tools/selection';
import type { SelectionLoader } from './index';
import { readJobSelections } from './job-selections';

/**
 * Reads a run's tool selection from its job row (activities/tools/job-selections.ts: the request's
 * `custom_mcps[i]` with the sealed `custom_mcps_params[i]`, or an agent-market run's sealed
 * `agent_selections`). Market selections (`market_mcps`) never come here: callTool serves them
 * through the market path (activities/tools/market.ts), which bills them.
 */
export function jobSelectionLoader(db: Db, masterKey: Buffer): SelectionLoader {
  return async (jobId, ref) => {
    if (ref.kind === 'market_mcps')
      throw new Error('market_mcps selections are called through the market path, not opened as tool sources');
    const job = await getJob(db, jobId);
    const selection = readJobSelections(masterKey, job).custom[ref.index];
    if (!selection) throw new Error(`the run has no custom_mcps[${ref.index}]`);
    return selectionFromCustomMcp(selection.stored, selection.params);
  };
}
