import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import { unseal } from '../../lib/crypto';
import { sealRequestSecrets } from '../../lib/request-secrets';
import { writeSystemLog } from '../../db/repos/system-logs';
import { findAutomation } from '../../db/repos/automations';
import { admitJob, findJobByIdempotencyKey, recordSkippedRun, transitionJob } from '../../db/repos/jobs';
import { listAccountsOf } from '../../db/repos/social-accounts';
import { findSubscriptionStatus } from '../../db/repos/users';
import { getWalletSummary } from '../../db/repos/ledger';
import type { AccountRef, SocialRunRequest } from '../agent/social';
import type { AutomationCreateBody, SavedSelection } from '../../lib/schemas/automations';
import type { FinishOutcome } from '../jobs';
import type { PriceTable } from '../../lib/billing/pricing';
import type { SourceParamValues } from '../../lib/tools/types';

export type AutomationRunStart =
  | {
      kind: 'ready';
      jobId: string;
      taskCount: number;
      hasWebhook: boolean;
      agentName: string;
      selectionTools?: boolean;
    }
  | { kind: 'unusable'; jobId: string; hasWebhook: boolean; agentName: string; outcome: FinishOutcome }
  /** Not run at all (no job, no LLM call, no charge): the account cannot pay for it now. */
  | { kind: 'skipped'; reason: string };

/** Why the account of an automation may not run it now, or null when it may. */
export async function accountCannotRun(db: Db, userId: string): Promise<string | null> {
  if ((await findSubscriptionStatus(db, userId)) !== 'active') return 'the subscription is not active';
  if ((await getWalletSummary(db, userId)).availableMicros <= 0) return 'the wallet has no available balance';
  return null;
}

export function createAutomationActivities({
  db,
  masterKey,
  holdMaxMicros,
  prices,
}: {
  db: Db;
  masterKey: Buffer;
  holdMaxMicros: number;
  prices: PriceTable;
}) {
  return {
    /**
     * Records one execution as a job and picks its accounts: each selected account that is active and
     * not invalid, in the order selected; the task runs once per account, in turn. With none usable the
     * job fails at once (and is still recorded, charged and reported). A run of an account whose
     * subscription is inactive or whose wallet has no available balance is skipped: a system log line, no job.
     */
    async startAutomationRun(input: { automationId: string; runId: string }): Promise<AutomationRunStart> {
      const automation = await findAutomation(db, input.automationId);
      if (!automation)
        throw ApplicationFailure.nonRetryable(`automation ${input.automationId} no longer exists`, 'AutomationGone');
      const existing = await findJobByIdempotencyKey(db, {
        userId: automation.user_id,
        kind: 'automation',
        idempotencyKey: input.runId,
      });
      const payload = automation.payload as unknown as AutomationCreateBody;
      if (!existing) {
        const refusal =
          (await accountCannotRun(db, automation.user_id)) ??
          (payload.llm_provider === 'service' && !prices.accepts(payload.llm_model)
            ? `llm_model "${payload.llm_model}" is no longer offered with llm_provider "service"`
            : null);
        if (refusal) {
          const reason = `scheduled run of automation "${automation.name}" skipped: ${refusal}`;
          await writeSystemLog(db, { userId: automation.user_id, message: `${reason} (run ${input.runId})` });
          return { kind: 'skipped', reason };
        }
      }
      const platform = automation.automation_type === 'forum-agent' ? 'forum' : 'microblog';
      const agentName = automation.automation_type;
      const hasWebhook = !!payload.webhook_url;
      const secrets = automation.secrets_sealed
        ? (JSON.parse(unseal(masterKey, automation.secrets_sealed, `automation:${automation.id}`)) as {
            forumCredentials?: unknown;
            customMcpParams?: SourceParamValues[];
            marketMcpParams?: SourceParamValues[];
          })
        : {};
      const selectionTools = (payload.custom_mcps?.length ?? 0) + (payload.market_mcps?.length ?? 0) > 0;
      // The run job gets what POST /agents/run seals: the selections' params by index (the request keeps them redacted).
      const runSecrets = {
        ...(secrets.forumCredentials !== undefined && { forumCredentials: secrets.forumCredentials }),
        ...(selectionTools && {
          custom_mcps_params: secrets.customMcpParams ?? [],
          market_mcps_params: secrets.marketMcpParams ?? [],
        }),
      };

      const selection = (platform === 'forum' ? payload.forum : payload.microblog) as
        SavedSelection | { mode: 'inline' } | undefined;
      let accounts: AccountRef[] = [];
      let skipped: string[] = [];
      if (selection?.mode === 'inline') {
        accounts = [{ kind: 'inline', label: 'inline forum credentials' }];
      } else if (selection) {
        const rows = await listAccountsOf(
          db,
          automation.user_id,
          platform,
          selection.useAll ? 'all' : (selection.accountIds ?? []),
        );
        const ordered = selection.useAll
          ? rows
          : (selection.accountIds ?? []).map((id) => rows.find((r) => r.id === id)).filter((r) => r !== undefined);
        const usable = ordered.filter((r) => r.is_active && r.validation_status !== 'invalid');
        skipped = ordered
          .filter((r) => !usable.includes(r))
          .map((r) => `"${r.name}" (${r.is_active ? 'invalid credentials' : 'inactive'})`);
        accounts = usable.map((r) => ({
          kind: 'saved',
          accountId: r.id,
          label: `"${r.name}"${r.meta.username ? ` (${String(r.meta.username)})` : ''}`,
        }));
      }

      const request: SocialRunRequest & Record<string, unknown> = {
        automationId: automation.id,
        automationName: automation.name,
        automation_type: automation.automation_type,
        task: payload.task,
        follow_up_tasks: accounts.slice(1).map(() => payload.task),
        llm_provider: payload.llm_provider,
        llm_model: payload.llm_model,
        structured_output: payload.structured_output,
        skills: payload.skills,
        market_mcps: payload.market_mcps,
        custom_mcps: payload.custom_mcps,
        optimization_mode: 'balanced',
        vision_mode: 'text_only',
        vision_detail_level: 'auto',
        max_actions_per_step: 5,
        headless: true,
        proxy_enabled: payload.proxy_enabled,
        proxy_country: payload.proxy_country,
        captcha_solver_enabled: payload.captcha_solver_enabled,
        webhook_url: payload.webhook_url,
        platform,
        accounts,
      };
      let job = existing;
      if (job && (job.status === 'completed' || job.status === 'failed')) {
        return {
          kind: 'unusable',
          jobId: job.id,
          hasWebhook,
          agentName,
          outcome: { jobId: job.id, status: job.status, error: job.error },
        };
      }
      if (!job) {
        const admission = await admitJob(db, {
          userId: automation.user_id,
          kind: 'automation',
          request,
          webhookUrl: payload.webhook_url ?? null,
          idempotencyKey: input.runId,
          workflowId: input.runId,
          countsOperation: false,
          holdMaxMicros,
          sealSecrets:
            Object.keys(runSecrets).length > 0 ? (id) => sealRequestSecrets(masterKey, id, runSecrets) : undefined,
          acceptedLog: `run of automation "${automation.name}" started by its schedule`,
        });
        if (admission.outcome === 'created' || admission.outcome === 'existing') {
          job = admission.job;
          if (admission.outcome === 'created') {
            await writeSystemLog(db, {
              userId: automation.user_id,
              jobId: job.id,
              message: `automation "${automation.name}" run ${job.id} started`,
            });
          }
        } else {
          // Not admitted (no hold could be placed): recorded as a failed run that is not executed.
          const reason = {
            insufficient_funds: 'the wallet has no available balance',
            subscription_inactive: 'the subscription is not active',
            monthly_limit_reached: 'the monthly operation limit is reached',
          }[admission.outcome];
          job = await recordSkippedRun(db, {
            userId: automation.user_id,
            runId: input.runId,
            request,
            webhookUrl: payload.webhook_url ?? null,
            error: `skipped: ${reason}`,
          });
          await writeSystemLog(db, {
            userId: automation.user_id,
            jobId: job.id,
            message: `automation "${automation.name}" run ${job.id} skipped: ${reason}`,
          });
          return {
            kind: 'unusable',
            jobId: job.id,
            hasWebhook,
            agentName,
            outcome: { jobId: job.id, status: 'failed', error: job.error },
          };
        }
      }
      if (accounts.length === 0) {
        const error = `no usable ${platform} account for this run${skipped.length ? `: skipped ${skipped.join(', ')}` : ''}`;
        await transitionJob(db, job.id, 'failed', { error, result: null, log: `failed: ${error}` });
        await writeSystemLog(db, {
          userId: automation.user_id,
          jobId: job.id,
          message: `automation "${automation.name}" run ${job.id} failed: ${error}`,
        });
        return {
          kind: 'unusable',
          jobId: job.id,
          hasWebhook,
          agentName,
          outcome: { jobId: job.id, status: 'failed', error },
        };
      }
      return { kind: 'ready', jobId: job.id, taskCount: accounts.length, hasWebhook, agentName, selectionTools };
    },
  };
}

export type AutomationActivities = ReturnType<typeof createAutomationActivities>;
