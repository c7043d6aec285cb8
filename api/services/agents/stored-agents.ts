import type { Selectable } from 'kysely';
import { findUserAutomation } from '../../../db/repos/automations';
import type { AuthenticatedUser } from '../../../db/repos/users';
import type { AutomationsTable } from '../../../db/schema';
import type { CustomAgentBody } from '../../../lib/schemas/custom-agents';
import type { ApiDeps } from '../../deps';
import { badRequest, notFound } from '../../errors';
import {
  checkSchedule,
  createScheduledAutomation,
  splitSecrets,
  updateScheduledAutomation,
} from '../automations/create-and-schedule';
import { checkCustomAgent, scheduledRunInput } from './custom-agent-config';

/** What a stored custom agent answers with (POST /agents, PATCH /agents/{id}). */
const agentView = (row: Selectable<AutomationsTable>) => ({
  agent: { id: row.id, name: row.name, payload: row.payload },
});

function agentName(body: CustomAgentBody): string {
  return body.name ?? (body.task.length > 60 ? `${body.task.slice(0, 59)}…` : body.task);
}

function requireCron(body: CustomAgentBody): { cron: string; timezone?: string } {
  if (!body.cron)
    throw badRequest('A stored custom agent needs cron (use POST /agents/run for a single run)', [
      { path: 'body/cron', message: 'is required' },
    ]);
  return { cron: body.cron, timezone: body.timezone };
}

/** POST /agents: a stored agent that runs on its schedule (checked, its secrets sealed, its schedule created). */
export async function createCustomAgent(deps: ApiDeps, user: AuthenticatedUser, body: CustomAgentBody) {
  const schedule = requireCron(body);
  const temporalCron = checkSchedule(schedule, deps.config.automations.minIntervalMinutes);
  await checkCustomAgent(deps, body);
  const { payload, secrets } = splitSecrets(body);
  const row = await createScheduledAutomation(deps, user, {
    name: agentName(body),
    cron: schedule.cron,
    timezone: schedule.timezone ?? null,
    automationType: 'custom-agent',
    payload,
    secrets,
    temporalCron,
    workflowType: 'customAgentWorkflow',
    jobKind: 'custom-agent',
    args: (id) => [scheduledRunInput(deps, id)],
  });
  return agentView(row);
}

/** The caller's own stored custom agent, or 404. */
export async function findOwnCustomAgent(
  deps: Pick<ApiDeps, 'db'>,
  userId: string,
  id: string,
): Promise<Selectable<AutomationsTable>> {
  const row = await findUserAutomation(deps.db, { userId, id, type: 'custom-agent' });
  if (!row) throw notFound('Custom agent');
  return row;
}

/** PATCH /agents/{id}: the stored agent replaced by `merged` (its patch applied and validated), its schedule updated. */
export async function updateCustomAgent(deps: ApiDeps, row: Selectable<AutomationsTable>, merged: CustomAgentBody) {
  const schedule = requireCron(merged);
  const temporalCron = checkSchedule(schedule, deps.config.automations.minIntervalMinutes);
  await checkCustomAgent(deps, merged);
  const { payload, secrets } = splitSecrets(merged);
  const updated = await updateScheduledAutomation(deps, row, {
    name: agentName(merged),
    cron: schedule.cron,
    timezone: schedule.timezone ?? null,
    payload,
    secrets,
    temporalCron,
  });
  return agentView(updated);
}
