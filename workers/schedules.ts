import {
  Client,
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type ConnectionLike,
  type ScheduleOptionsAction,
  type ScheduleSpec,
} from '@temporalio/client';
import type { Config } from '../lib/config';
import type { SkillsRefreshInput } from '../workflows/skills-refresh';

export const SKILLS_REFRESH_SCHEDULE_ID = 'skills-directory-refresh';
export const SKILLS_REFRESH_WORKFLOW_ID = 'skills-directory-refresh-run';

function skillsRefreshSchedule(config: Config) {
  const action: ScheduleOptionsAction = {
    type: 'startWorkflow',
    workflowType: 'skillsRefreshWorkflow',
    workflowId: SKILLS_REFRESH_WORKFLOW_ID,
    taskQueue: config.taskQueues.platform,
    args: [{} satisfies SkillsRefreshInput],
    workflowExecutionTimeout: '2h',
  };
  const spec: ScheduleSpec = { intervals: [{ every: config.skills.refreshIntervalMinutes * 60_000 }] };
  return { spec, action };
}

/**
 * The Temporal Schedule that keeps the skills directory current (every SKILLS_REFRESH_INTERVAL_MINUTES,
 * default 6 h), created when SKILLS_GITHUB_REPOS is set. Idempotent: an existing schedule gets the
 * current interval and task queue. Returns what it did.
 */
export async function ensureSkillsRefreshSchedule(
  connection: ConnectionLike,
  namespace: string,
  config: Config,
): Promise<'created' | 'updated' | 'skipped'> {
  if (config.skills.githubRepos.length === 0) return 'skipped';
  const client = new Client({ connection, namespace });
  const { spec, action } = skillsRefreshSchedule(config);
  try {
    await client.schedule.create({
      scheduleId: SKILLS_REFRESH_SCHEDULE_ID,
      spec,
      action,
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1h' },
      memo: { purpose: 'skills directory refresh from GitHub' },
    });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(SKILLS_REFRESH_SCHEDULE_ID).update((previous) => ({ ...previous, spec, action }));
    return 'updated';
  }
}
