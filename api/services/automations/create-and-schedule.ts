import { randomUUID } from 'node:crypto';
import { ScheduleAlreadyRunning, ScheduleNotFoundError } from '@temporalio/client';
import type { Selectable } from 'kysely';
import type { AutomationsTable, AutomationType, SocialPlatform } from '../../../db/schema';
import { seal } from '../../../lib/crypto';
import { redactFields } from '../../../lib/request-secrets';
import {
  assertCronInterval,
  CronError,
  CronTooFrequentError,
  isValidTimezone,
  toTemporalCron,
} from '../../../lib/cron';
import { JobKindSearchAttribute, UserIdSearchAttribute } from '../../../lib/temporal/client';
import { countAutomations, insertAutomation, updateAutomation } from '../../../db/repos/automations';
import { listAccountIds } from '../../../db/repos/social-accounts';
import { writeSystemLog } from '../../../db/repos/system-logs';
import { lockAutomationLimit, type AuthenticatedUser } from '../../../db/repos/users';
import type { AutomationRunInput } from '../../../workflows/automation-run';
import type { ApiDeps } from '../../deps';
import { ApiError, badRequest } from '../../errors';
import type { AutomationCreateBody, InlineForumSelection, SavedSelection } from '../../../lib/schemas/automations';
import { log } from '../../../lib/log';

const FORUM_SECRET_FIELDS = ['forumClientSecret', 'forumPassword'];

export function scheduleIdFor(automationId: string): string {
  return `automation-${automationId}`;
}

function maskParams<T extends { params?: Record<string, unknown> }>(items: T[]): T[] {
  return items.map((item) => ({ ...item, params: redactFields(item.params ?? {}) }));
}

/** The payload as stored and shown: credentials and tool parameters masked. Their values are sealed separately. */
export function splitSecrets<
  T extends {
    market_mcps: { params?: Record<string, unknown> }[];
    custom_mcps: { params?: Record<string, unknown> }[];
    forum?: AutomationCreateBody['forum'];
  },
>(body: T): { payload: Record<string, unknown>; secrets: Record<string, unknown> } {
  const payload: Record<string, unknown> = {
    ...body,
    market_mcps: maskParams(body.market_mcps),
    custom_mcps: maskParams(body.custom_mcps),
  };
  const secrets: Record<string, unknown> = {
    marketMcpParams: body.market_mcps.map((m) => m.params),
    customMcpParams: body.custom_mcps.map((m) => m.params),
  };
  if (body.forum?.mode === 'inline') {
    const credentials = body.forum.credentials;
    payload.forum = { mode: 'inline', credentials: redactFields(credentials, FORUM_SECRET_FIELDS) };
    secrets.forumCredentials = credentials;
  }
  return { payload, secrets };
}

export function platformOf(type: AutomationCreateBody['automation_type']): SocialPlatform {
  return type === 'forum-agent' ? 'forum' : 'microblog';
}

/** Every rule of POST /automations that needs the database or the platform, before anything is stored. */
export async function checkAccountSelection(
  deps: ApiDeps,
  user: AuthenticatedUser,
  body: AutomationCreateBody,
): Promise<void> {
  const platform = platformOf(body.automation_type);
  const selection = platform === 'forum' ? body.forum : body.microblog;
  if (!selection)
    throw badRequest(`A ${platform}-agent automation needs a "${platform}" account selection`, [
      { path: `body/${platform}`, message: 'is required' },
    ]);
  if (selection.mode === 'inline') {
    const check = await deps.social.validate('forum', (selection as InlineForumSelection).credentials as never);
    if (!check.ok)
      throw new ApiError(400, 'credentials_invalid', `The inline forum credentials were refused: ${check.message}`, [
        { path: 'body/forum/credentials', message: check.message },
      ]);
    return;
  }
  const saved = selection as SavedSelection;
  if (!saved.useAll && !saved.accountIds?.length) {
    throw badRequest('A saved selection needs accountIds or useAll: true', [
      { path: `body/${platform}`, message: 'give accountIds or useAll' },
    ]);
  }
  const owned = await listAccountIds(deps.db, user.userId, platform);
  if (saved.useAll && owned.length === 0) {
    throw badRequest(`useAll selects every saved ${platform} account, and there is none`, [
      { path: `body/${platform}/useAll`, message: `no saved ${platform} account` },
    ]);
  }
  const missing = (saved.accountIds ?? []).filter((id) => !owned.some((a) => a.id === id));
  if (missing.length) {
    throw badRequest(
      `Unknown ${platform} account ids: ${missing.join(', ')}`,
      missing.map((id) => ({
        path: `body/${platform}/accountIds`,
        message: `${id} is not one of your ${platform} accounts`,
      })),
    );
  }
}

/**
 * The cron expression as Temporal reads it, after checking it, its time zone and that it does not
 * fire more often than AUTOMATION_MIN_INTERVAL_MINUTES (400 `cron_too_frequent` naming the minimum).
 */
export function checkSchedule(body: { cron: string; timezone?: string }, minIntervalMinutes: number): string {
  if (body.timezone && !isValidTimezone(body.timezone)) {
    const message = `"${body.timezone}" is not an IANA time zone`;
    throw badRequest(message, [{ path: 'body/timezone', message }]);
  }
  try {
    const temporalCron = toTemporalCron(body.cron);
    assertCronInterval(body.cron, minIntervalMinutes);
    return temporalCron;
  } catch (err) {
    if (err instanceof CronTooFrequentError)
      throw new ApiError(400, 'cron_too_frequent', err.message, [{ path: 'body/cron', message: err.message }]);
    if (err instanceof CronError) throw badRequest(err.message, [{ path: 'body/cron', message: err.message }]);
    throw err;
  }
}

/** POST /automations: a forum or microblog automation and its Schedule (see createScheduledAutomation). */
export async function createAutomation(
  deps: ApiDeps,
  user: AuthenticatedUser,
  body: AutomationCreateBody,
  temporalCron: string,
): Promise<Selectable<AutomationsTable>> {
  const { payload, secrets } = splitSecrets(body);
  return createScheduledAutomation(deps, user, {
    name: body.name,
    cron: body.cron,
    timezone: body.timezone ?? null,
    automationType: body.automation_type,
    payload,
    secrets,
    temporalCron,
    workflowType: 'automationRunWorkflow',
    jobKind: 'automation',
    args: (id) => [
      {
        automationId: id,
        browserTaskQueue: deps.config.taskQueues.browser,
        maxSteps: deps.config.agent.maxSteps,
        deadlineMs: deps.config.agent.deadlineMs,
        historyEventsLimit: deps.config.agent.historyEventsLimit,
        socialToolTimeoutMs: deps.config.agent.socialToolTimeoutMs,
      } satisfies AutomationRunInput,
    ],
  });
}

/** What a scheduled automation is: its row (payload masked, secrets sealed apart) and the workflow its Schedule starts. */
export interface ScheduledAutomationSpec {
  name: string;
  cron: string;
  timezone: string | null;
  automationType: AutomationType;
  payload: Record<string, unknown>;
  secrets: Record<string, unknown>;
  temporalCron: string;
  workflowType: string;
  /** The JobKind search attribute of its runs. */
  jobKind: string;
  args: (automationId: string) => unknown[];
}

/**
 * Stores an automation and creates its Temporal Schedule in one step: the row is inserted in a
 * transaction that commits only after the Schedule exists (triggered at once for the first run);
 * if the Schedule cannot be created the row is rolled back, and if the commit fails the Schedule
 * is deleted again. The package automation limit is checked under a lock on the subscription.
 */
export async function createScheduledAutomation(
  deps: ApiDeps,
  user: AuthenticatedUser,
  spec: ScheduledAutomationSpec,
): Promise<Selectable<AutomationsTable>> {
  const id = randomUUID();
  const scheduleId = scheduleIdFor(id);
  let scheduleCreated = false;
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const automationLimit = await lockAutomationLimit(trx, user.userId);
      const n = await countAutomations(trx, user.userId);
      if (n >= automationLimit) {
        throw new ApiError(
          403,
          'automation_limit_reached',
          `The plan allows ${automationLimit} automation(s); this account has ${n}`,
        );
      }
      const row = await insertAutomation(trx, {
        id,
        user_id: user.userId,
        name: spec.name,
        cron: spec.cron,
        timezone: spec.timezone,
        automation_type: spec.automationType,
        payload: JSON.stringify(spec.payload),
        secrets_sealed: seal(deps.config.masterKey, JSON.stringify(spec.secrets), `automation:${id}`),
        schedule_id: scheduleId,
      });
      try {
        await deps.temporal.schedule.create({
          scheduleId,
          spec: { cronExpressions: [spec.temporalCron], timezone: spec.timezone ?? 'UTC' },
          action: {
            type: 'startWorkflow',
            workflowType: spec.workflowType,
            workflowId: `${spec.jobKind}-run-${id}`,
            taskQueue: deps.config.taskQueues.platform,
            args: spec.args(id),
            typedSearchAttributes: [
              { key: UserIdSearchAttribute, value: user.userId },
              { key: JobKindSearchAttribute, value: spec.jobKind },
            ],
          },
          state: { triggerImmediately: true, note: `${spec.automationType} "${spec.name}"` },
        });
        scheduleCreated = true;
      } catch (err) {
        throw scheduleFailure(err);
      }
      await writeSystemLog(trx, {
        userId: user.userId,
        message: `automation "${spec.name}" (${id}) created; first run queued`,
      });
      return row;
    });
  } catch (err) {
    if (scheduleCreated)
      await deps.temporal.schedule
        .getHandle(scheduleId)
        .delete()
        .catch(() => undefined);
    throw err;
  }
}

/**
 * Changes a stored automation and, when its cron or time zone changed, its Schedule, as one
 * operation: the Schedule is updated inside the row's transaction (a refused update rolls the row
 * back), and put back as it was if the commit then fails.
 */
export async function updateScheduledAutomation(
  deps: ApiDeps,
  row: Selectable<AutomationsTable>,
  change: {
    name: string;
    cron: string;
    timezone: string | null;
    payload: Record<string, unknown>;
    secrets: Record<string, unknown>;
    temporalCron: string;
  },
): Promise<Selectable<AutomationsTable>> {
  const scheduleChanged = change.cron !== row.cron || change.timezone !== row.timezone;
  const handle = deps.temporal.schedule.getHandle(row.schedule_id);
  let previousSpec: { cronExpressions: string[]; timezone: string } | null = null;
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const updated = await updateAutomation(trx, row.id, {
        name: change.name,
        cron: change.cron,
        timezone: change.timezone,
        payload: JSON.stringify(change.payload),
        secrets_sealed: seal(deps.config.masterKey, JSON.stringify(change.secrets), `automation:${row.id}`),
        updated_at: new Date(),
      });
      if (scheduleChanged) {
        try {
          await handle.update((previous) => {
            previousSpec = { cronExpressions: [toTemporalCron(row.cron)], timezone: row.timezone ?? 'UTC' };
            return {
              ...previous,
              spec: { cronExpressions: [change.temporalCron], timezone: change.timezone ?? 'UTC' },
            };
          });
        } catch (err) {
          throw scheduleFailure(err);
        }
      }
      return updated;
    });
  } catch (err) {
    const restore = previousSpec;
    if (restore) await handle.update((previous) => ({ ...previous, spec: restore })).catch(() => undefined);
    throw err;
  }
}

function scheduleFailure(err: unknown): ApiError {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof ScheduleAlreadyRunning)
    return new ApiError(409, 'conflict', 'A schedule with this id already exists');
  if (err instanceof TypeError || /invalid|cron|time zone|parse/i.test(message)) {
    return badRequest(`The schedule was refused: ${message}`, [{ path: 'body/cron', message }]);
  }
  log().error({ err }, 'schedule creation failed');
  return new ApiError(503, 'service_unavailable', 'The scheduler is unavailable; nothing was stored', undefined, {
    'Retry-After': '5',
  });
}

/** What the Schedule itself says: paused or not, its next fire times (none while paused or gone). */
export interface ScheduleView {
  isPaused: boolean;
  nextFireTimes: Date[];
}

/** The Schedule's state; a schedule that no longer exists counts as paused, with no next fire time. */
export async function scheduleView(deps: Pick<ApiDeps, 'temporal'>, scheduleId: string): Promise<ScheduleView> {
  try {
    const description = await deps.temporal.schedule.getHandle(scheduleId).describe();
    return {
      isPaused: description.state.paused,
      nextFireTimes: description.state.paused ? [] : description.info.nextActionTimes,
    };
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return { isPaused: true, nextFireTimes: [] };
    throw err;
  }
}

/** isPaused and status come from the Schedule itself; a schedule that no longer exists counts as paused. */
export async function scheduleState(
  deps: Pick<ApiDeps, 'temporal'>,
  scheduleId: string,
): Promise<{ isPaused: boolean }> {
  const { isPaused } = await scheduleView(deps, scheduleId);
  return { isPaused };
}
