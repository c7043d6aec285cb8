import { listAutomations, listLatestAutomationRuns } from '../../../db/repos/automations';
import type { PageRequest } from '../../../lib/pagination';
import type { ApiDeps } from '../../deps';
import { scheduleView } from './create-and-schedule';

/**
 * The console's automations page: the rows and Schedule states GET /automations reads (with the next fire
 * times), plus each one's latest `lastRuns` runs.
 */
export async function automationsOverview(
  deps: Pick<ApiDeps, 'db' | 'temporal'>,
  userId: string,
  page: PageRequest,
  lastRuns: number,
) {
  const { rows, total } = await listAutomations(deps.db, userId, page);
  const [states, runs] = await Promise.all([
    Promise.all(rows.map((row) => scheduleView(deps, row.schedule_id))),
    listLatestAutomationRuns(
      deps.db,
      userId,
      rows.map((row) => row.id),
      lastRuns,
    ),
  ]);
  return {
    items: rows.map((row, i) => ({
      id: row.id,
      name: row.name,
      type: row.automation_type,
      cron: row.cron,
      timezone: row.timezone,
      isPaused: states[i].isPaused,
      nextFireTimes: states[i].nextFireTimes,
      lastRuns: runs.get(row.id) ?? [],
      createdAt: row.created_at,
    })),
    total,
  };
}
