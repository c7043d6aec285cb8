import {
  approvedToolLookup,
  purchaseAgent,
  recordAgentRun,
  unsealAgentSecrets,
  type AgentPurchase,
  type AgentSubmission,
} from '../../../db/repos/market-agents';
import type { AuthenticatedUser } from '../../../db/repos/users';
import type { Job } from '../../../db/schema';
import { checkMarketSelections, checkRunInputs, fillTemplate } from '../../../lib/market/agent-submission';
import { commissionOf, ratePpm } from '../../../lib/market/commission';
import { MarketRuleError } from '../../../lib/market/errors';
import { microsToUsd, usdToWholeMicros } from '../../../lib/money';
import { sealRequestSecrets } from '../../../lib/request-secrets';
import type { MarketAgentRunBody } from '../../../lib/schemas/agent-market';
import type { AgentWorkflowInput } from '../../../workflows/agent';
import type { ApiDeps } from '../../deps';
import { ApiError } from '../../errors';
import { startMeteredJob } from '../jobs/start-metered-job';
import { assertLlmModel } from '../shared/assert-llm-model';
import { mayRunAgent } from './catalog';
import { preflightUrl } from '../shared/url-preflight';

type OrderDeps = Pick<ApiDeps, 'db' | 'config' | 'temporal' | 'policy'>;

/**
 * Buys a live agent for a consumer (POST /agent-market/agents/{id}/purchase and the agent listing
 * page): idempotent — a second purchase finds the first and charges nothing.
 */
export async function buyMarketAgent(
  deps: OrderDeps,
  user: AuthenticatedUser,
  agent: AgentSubmission,
): Promise<{ outcome: 'created' | 'existing'; purchase: AgentPurchase }> {
  if (agent.ownerId === user.userId)
    throw new MarketRuleError(409, 'own_agent', 'This is your own agent: you run it without buying it');
  if (agent.priceMicros === 0)
    throw new MarketRuleError(409, 'free_agent', 'This agent is free: run it without buying it');
  const result = await purchaseAgent(deps.db, {
    agent,
    consumerId: user.userId,
    commissionMicros: commissionOf(agent.priceMicros, ratePpm(deps.config.market.commissionRate)),
    agentName: `agent-market:${agent.slug}`,
  });
  if (result.outcome === 'insufficient_funds') {
    throw new ApiError(
      402,
      'insufficient_funds',
      `The available balance (balance minus the amounts held for running work) does not cover the price of ${microsToUsd(agent.priceMicros)} USD`,
    );
  }
  return result;
}

/**
 * Runs a live agent for a consumer who may run it (bought, free or their own): POST
 * /agent-market/agents/{id}/run and the agent listing page's run form. Returns the run's job.
 */
export async function runMarketAgent(
  deps: OrderDeps,
  user: AuthenticatedUser,
  agent: AgentSubmission,
  body: MarketAgentRunBody,
  idempotencyKey: string | null,
): Promise<Job> {
  if (!(await mayRunAgent(deps.db, agent, user.userId))) {
    throw new ApiError(
      402,
      'purchase_required',
      `This agent costs ${microsToUsd(agent.priceMicros)} USD: buy it first (POST /agent-market/agents/${agent.listingId}/purchase)`,
    );
  }
  const inputs = body.inputs ?? {};
  if (agent.runMode === 'task') {
    if (!body.task)
      throw new ApiError(400, 'task_required', 'This agent runs a task you give: send task', [
        { path: 'body/task', message: 'is required for a task agent' },
      ]);
    if (Object.keys(inputs).length) checkRunInputs(agent.inputSchema, inputs);
  } else {
    if (body.task !== undefined && !agent.allowTaskOverride) {
      throw new ApiError(400, 'task_not_allowed', 'This template agent does not accept a task; send inputs only', [
        { path: 'body/task', message: 'not accepted by this agent' },
      ]);
    }
    checkRunInputs(agent.inputSchema, inputs);
  }
  if (body.max_total_usd !== undefined && usdToWholeMicros(body.max_total_usd) === null) {
    throw new ApiError(400, 'validation_failed', 'max_total_usd must be an amount in whole micro-USD', [
      { path: 'body/max_total_usd', message: 'is not a whole number of micro-USD' },
    ]);
  }
  const llm = {
    llm_provider: body.llm_provider ?? agent.suggestedLlmProvider,
    llm_model: body.llm_model ?? agent.suggestedLlmModel,
  };
  assertLlmModel(deps.config.modelPrices, llm);
  if (body.webhook_url)
    preflightUrl('webhook_url', body.webhook_url, deps.policy, { requireHttps: true }, 'insecure_webhook_url');
  await checkMarketSelections(agent.mcpSelections, approvedToolLookup(deps.db), 'mcpSelections', 409);

  const secrets = unsealAgentSecrets(deps.config.masterKey, agent);
  const task =
    agent.runMode === 'task'
      ? body.task!
      : [fillTemplate(secrets.promptTemplate ?? '', inputs), body.task].filter(Boolean).join('\n\n');
  // What the run record shows: the consumer's own request and the listing's public settings. The
  // task the model sees, the provider's prompt, skills and selections are sealed into the job and
  // unsealed only by the activities that call the model or the tools.
  const request = {
    agentId: agent.listingId,
    ...(body.inputs !== undefined && { inputs }),
    ...(body.task !== undefined && { task: body.task }),
    ...llm,
    headless: body.headless,
    ...(body.webhook_url && { webhook_url: body.webhook_url }),
    // The consumer's cap on each market tool of the run (activities/tools/market.ts selectionCapMicros).
    ...(body.max_total_usd !== undefined && { max_total_usd: body.max_total_usd }),
    ...(agent.structuredOutput && { structured_output: agent.structuredOutput }),
    vision_mode: 'auto',
    vision_detail_level: 'auto',
    optimization_mode: 'balanced',
    max_actions_per_step: 5,
  };
  const agentName = `agent-market:${agent.slug}`;
  const job = await startMeteredJob(deps, {
    user,
    kind: 'agent-market',
    request,
    webhookUrl: body.webhook_url ?? null,
    idempotencyKey,
    sealSecrets: (jobId) =>
      sealRequestSecrets(deps.config.masterKey, jobId, {
        task,
        agent_instructions: secrets.systemPrompt,
        ...(secrets.promptTemplate && { agent_template: secrets.promptTemplate }),
        ...(agent.skills && { skills: agent.skills }),
        agent_selections: {
          market: agent.mcpSelections.map((s, i) => ({ ...s, params: secrets.selectionParams.market[i] ?? {} })),
          custom: agent.customMcpSelections.map((s, i) => ({
            ...s,
            params: secrets.selectionParams.custom[i] ?? {},
          })),
        },
      }),
    workflowType: 'agentWorkflow',
    workflowArgs: (j) => [
      {
        jobId: j.id,
        browserTaskQueue: deps.config.taskQueues.browser,
        hasWebhook: !!body.webhook_url,
        taskCount: 1,
        maxSteps: deps.config.agent.maxSteps,
        deadlineMs: deps.config.agent.deadlineMs,
        historyEventsLimit: deps.config.agent.historyEventsLimit,
        agentName,
        selectionTools: agent.mcpSelections.length + agent.customMcpSelections.length > 0,
      } satisfies AgentWorkflowInput,
    ],
  });
  await recordAgentRun(deps.db, { jobId: job.id, agent, consumerId: user.userId });
  return job;
}
