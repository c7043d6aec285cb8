import type { AuthenticatedUser } from '../../../db/repos/users';
import type { Job } from '../../../db/schema';
import { sealRequestSecrets } from '../../../lib/request-secrets';
import type { CustomAgentBody } from '../../../lib/schemas/custom-agents';
import type { CustomAgentWorkflowInput } from '../../../workflows/custom-agent';
import type { ApiDeps } from '../../deps';
import { splitSecrets } from '../automations/create-and-schedule';
import { idempotencyKeyOf, startMeteredJob } from '../jobs/start-metered-job';
import { agentRunBounds, checkCustomAgent } from './custom-agent-config';

/**
 * POST /agents/run: a custom agent run once (no schedule): checked, its job admitted and its workflow started
 * (startMeteredJob), the tool parameters sealed apart from the stored request. `idempotencyHeader` is the
 * request's Idempotency-Key ('' for none).
 */
export async function startCustomAgentRun(
  deps: ApiDeps,
  user: AuthenticatedUser,
  body: CustomAgentBody,
  idempotencyHeader: string,
): Promise<Job> {
  await checkCustomAgent(deps, body);
  const { cron: _cron, timezone: _timezone, ...runBody } = body;
  const { payload } = splitSecrets(runBody);
  return startMeteredJob(deps, {
    user,
    kind: 'custom-agent',
    request: payload,
    webhookUrl: body.webhook_url ?? null,
    idempotencyKey: idempotencyKeyOf(idempotencyHeader),
    sealSecrets: (jobId) =>
      sealRequestSecrets(deps.config.masterKey, jobId, {
        custom_mcps_params: body.custom_mcps.map((c) => c.params),
        market_mcps_params: body.market_mcps.map((m) => m.params),
      }),
    workflowType: 'customAgentWorkflow',
    workflowArgs: (j) => [
      { jobId: j.id, hasWebhook: !!body.webhook_url, ...agentRunBounds(deps) } satisfies CustomAgentWorkflowInput,
    ],
  });
}
