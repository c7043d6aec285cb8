import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import { findAutomation } from '../../db/repos/automations';
import { admitJob, findJobByIdempotencyKey } from '../../db/repos/jobs';
import { writeSystemLog } from '../../db/repos/system-logs';
import type { PriceTable } from '../../lib/billing/pricing';
import { unseal } from '../../lib/crypto';
import { sealRequestSecrets } from '../../lib/request-secrets';
import type { CustomAgentBody } from '../../lib/schemas/custom-agents';
import type { CustomAgentRunRequest } from '../agent/job';
import { accountCannotRun } from './index';

export type CustomAgentRunStart =
  | { kind: 'ready'; jobId: string; hasWebhook: boolean; maxToolCalls: number }
  | { kind: 'unusable'; jobId: string; hasWebhook: boolean; error: string }
  | { kind: 'skipped'; reason: string };

export interface CustomAgentRunDeps {
  db: Db;
  masterKey: Buffer;
  holdMaxMicros: number;
  prices: PriceTable;
}

/** The start of a stored custom agent's scheduled execution (its Schedule starts customAgentWorkflow with the agent's id). */
export function createCustomAgentRunActivities(deps: CustomAgentRunDeps) {
  const { db } = deps;
  return {
    /**
     * A scheduled execution of a stored custom agent: records it as a job (with its hold, and the
     * agent's params sealed to the job), or skips it when the account cannot pay for it now.
     */
    async startCustomAgentRun(input: { automationId: string; runId: string }): Promise<CustomAgentRunStart> {
      const automation = await findAutomation(db, input.automationId);
      if (!automation)
        throw ApplicationFailure.nonRetryable(`custom agent ${input.automationId} no longer exists`, 'AutomationGone');
      const payload = automation.payload as unknown as CustomAgentBody;
      const hasWebhook = !!payload.webhook_url;
      const existing = await findJobByIdempotencyKey(db, {
        userId: automation.user_id,
        kind: 'custom-agent',
        idempotencyKey: input.runId,
      });
      if (existing) {
        if (existing.status === 'completed' || existing.status === 'failed')
          return { kind: 'unusable', jobId: existing.id, hasWebhook, error: existing.error ?? existing.status };
        return { kind: 'ready', jobId: existing.id, hasWebhook, maxToolCalls: payload.max_tool_calls };
      }
      const refusal =
        (await accountCannotRun(db, automation.user_id)) ??
        (payload.llm_provider === 'service' && !deps.prices.accepts(payload.llm_model)
          ? `llm_model "${payload.llm_model}" is no longer offered with llm_provider "service"`
          : null);
      if (refusal) {
        const reason = `scheduled run of custom agent "${automation.name}" skipped: ${refusal}`;
        await writeSystemLog(db, { userId: automation.user_id, message: `${reason} (run ${input.runId})` });
        return { kind: 'skipped', reason };
      }
      const secrets = automation.secrets_sealed
        ? (JSON.parse(unseal(deps.masterKey, automation.secrets_sealed, `automation:${automation.id}`)) as {
            customMcpParams?: Record<string, string>[];
            marketMcpParams?: Record<string, string>[];
          })
        : {};
      const { cron: _cron, timezone: _timezone, ...rest } = payload;
      const request: CustomAgentRunRequest = { ...rest, automationId: automation.id };
      const admission = await admitJob(db, {
        userId: automation.user_id,
        kind: 'custom-agent',
        request: request as unknown as Record<string, unknown>,
        webhookUrl: payload.webhook_url ?? null,
        idempotencyKey: input.runId,
        workflowId: input.runId,
        countsOperation: false,
        holdMaxMicros: deps.holdMaxMicros,
        sealSecrets: (id) =>
          sealRequestSecrets(deps.masterKey, id, {
            custom_mcps_params: secrets.customMcpParams ?? [],
            market_mcps_params: secrets.marketMcpParams ?? [],
          }),
        acceptedLog: `run of custom agent "${automation.name}" started by its schedule`,
      });
      if (admission.outcome === 'created' || admission.outcome === 'existing') {
        return { kind: 'ready', jobId: admission.job.id, hasWebhook, maxToolCalls: payload.max_tool_calls };
      }
      const reason = `scheduled run of custom agent "${automation.name}" skipped: ${admission.outcome.replace(/_/g, ' ')}`;
      await writeSystemLog(db, { userId: automation.user_id, message: `${reason} (run ${input.runId})` });
      return { kind: 'skipped', reason };
    },
  };
}

export type CustomAgentRunActivities = ReturnType<typeof createCustomAgentRunActivities>;
