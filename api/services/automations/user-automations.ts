import type { Selectable } from 'kysely';
import { listAutomations } from '../../../db/repos/automations';
import { paginationMeta, type PageRequest } from '../../../lib/pagination';
import type { AuthenticatedUser } from '../../../db/repos/users';
import type { AutomationsTable } from '../../../db/schema';
import type { AutomationCreateBody } from '../../../lib/schemas/automations';
import type { ApiDeps } from '../../deps';
import { badRequest } from '../../errors';
import { checkMarketMcps } from '../market-selections';
import { assertLlmModel } from '../shared/assert-llm-model';
import { assertStructuredOutput } from '../shared/assert-structured-output';
import { preflightUrl } from '../shared/url-preflight';
import { checkAccountSelection, checkSchedule, createAutomation, scheduleState } from './create-and-schedule';

/** An automation as the API shows it, with its schedule's state. */
function toAutomation(row: Selectable<AutomationsTable>, state: { isPaused: boolean }) {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    cron: row.cron,
    timezone: row.timezone,
    payload: row.payload,
    status: state.isPaused ? 'paused' : 'active',
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
    isPaused: state.isPaused,
  };
}

/** GET /automations: a page of the caller's automations, each with its schedule's state. */
export async function listUserAutomations(deps: ApiDeps, userId: string, page: PageRequest) {
  const { rows, total } = await listAutomations(deps.db, userId, page);
  const states = await Promise.all(rows.map((row) => scheduleState(deps, row.schedule_id)));
  return { automations: rows.map((row, i) => toAutomation(row, states[i])), meta: paginationMeta(page, total) };
}

/**
 * POST /automations: what a schema cannot say checked (the selection matching the type, the structured output,
 * the model, the webhook's address, the schedule, the accounts and market tools chosen), then the automation
 * stored and scheduled.
 */
export async function createUserAutomation(deps: ApiDeps, user: AuthenticatedUser, body: AutomationCreateBody) {
  if (body.automation_type === 'microblog-agent' && body.forum) {
    throw badRequest('A microblog-agent automation takes a "microblog" selection, not "forum"', [
      { path: 'body/forum', message: 'not allowed here' },
    ]);
  }
  if (body.automation_type === 'forum-agent' && body.microblog) {
    throw badRequest('A forum-agent automation takes a "forum" selection, not "microblog"', [
      { path: 'body/microblog', message: 'not allowed here' },
    ]);
  }
  assertStructuredOutput(body.structured_output);
  assertLlmModel(deps.config.modelPrices, body);
  if (body.webhook_url) preflightUrl('webhook_url', body.webhook_url, deps.policy);
  if (body.proxy_country) body.proxy_country = body.proxy_country.toUpperCase();
  const temporalCron = checkSchedule(body, deps.config.automations.minIntervalMinutes);
  await checkAccountSelection(deps, user, body);
  await checkMarketMcps(deps, body.market_mcps);
  const row = await createAutomation(deps, user, body, temporalCron);
  return { automation: toAutomation(row, await scheduleState(deps, row.schedule_id)) };
}
