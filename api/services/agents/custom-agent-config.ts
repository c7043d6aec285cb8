import type { Selectable } from 'kysely';
import type { AutomationsTable } from '../../../db/schema';
import { unseal } from '../../../lib/crypto';
import { sourceErrorStatus, ToolSourceError } from '../../../lib/tools/errors';
import { parseSourceUrl, preflightSourceUrl } from '../../../lib/tools/network';
import type { CustomAgentBody, CustomAgentUpdateBody } from '../../../lib/schemas/custom-agents';
import { DEFAULT_MAX_TOOL_CALLS } from '../../../lib/schemas/custom-agents';
import type { CustomAgentWorkflowInput } from '../../../workflows/custom-agent';
import type { ApiDeps } from '../../deps';
import { ApiError, badRequest } from '../../errors';
import { assertLlmModel } from '../shared/assert-llm-model';
import { checkMarketMcps } from '../market-selections';
import { assertStructuredOutput } from '../shared/assert-structured-output';
import { preflightUrl } from '../shared/url-preflight';

/**
 * Every rule of a custom-agent body beyond its JSON Schema, before anything is stored or queued:
 * structured_output, the model, the webhook URL, each custom source (its URL through the SSRF
 * guard) and each market selection (an approved entry, its tools, its params).
 */
export async function checkCustomAgent(deps: ApiDeps, body: CustomAgentBody): Promise<void> {
  assertStructuredOutput(body.structured_output);
  assertLlmModel(deps.config.modelPrices, body);
  if (body.webhook_url) preflightUrl('webhook_url', body.webhook_url, deps.policy);
  for (const [i, custom] of body.custom_mcps.entries()) {
    const at = `body/custom_mcps/${i}`;
    if (custom.type === 'remote_mcp' && !custom.source_url)
      throw badRequest('A remote_mcp selection needs source_url', [
        { path: `${at}/source_url`, message: 'is required for type remote_mcp' },
      ]);
    if (
      custom.type === 'openapi' &&
      !custom.source_url &&
      (custom.openapi_spec === undefined || custom.openapi_spec === null)
    ) {
      throw badRequest(
        'An openapi selection needs openapi_spec (the document) or source_url (the URL of the document)',
        [{ path: at, message: 'give openapi_spec or source_url' }],
      );
    }
    if (custom.source_url) {
      try {
        preflightSourceUrl(parseSourceUrl(custom.source_url, 'source_url'), deps.policy);
      } catch (error) {
        if (error instanceof ToolSourceError)
          throw new ApiError(sourceErrorStatus(error.code), error.code, error.message, [
            { path: `${at}/source_url`, message: error.message },
          ]);
        throw error;
      }
    }
  }
  await checkMarketMcps(deps, body.market_mcps);
}

/** The stored custom agent behind an automation row, with its params unsealed (for an update only; never shown). */
export function unsealedAgent(deps: ApiDeps, row: Selectable<AutomationsTable>): CustomAgentBody {
  const payload = row.payload as unknown as CustomAgentBody;
  const secrets = row.secrets_sealed
    ? (JSON.parse(unseal(deps.config.masterKey, row.secrets_sealed, `automation:${row.id}`)) as {
        customMcpParams?: CustomAgentBody['custom_mcps'][number]['params'][];
        marketMcpParams?: CustomAgentBody['market_mcps'][number]['params'][];
      })
    : {};
  return {
    ...payload,
    custom_mcps: (payload.custom_mcps ?? []).map((c, i) => ({ ...c, params: secrets.customMcpParams?.[i] ?? {} })),
    market_mcps: (payload.market_mcps ?? []).map((m, i) => ({ ...m, params: secrets.marketMcpParams?.[i] ?? {} })),
  };
}

/** Defaults a field cleared with null goes back to (fields without one are removed). */
const CLEARED_DEFAULTS: Partial<Record<keyof CustomAgentBody, unknown>> = {
  llm_provider: 'service',
  llm_model: 'router/auto',
  max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
  skills: [],
  market_mcps: [],
  custom_mcps: [],
};

/** PATCH semantics: given fields replace the stored ones (a list replaces the whole list, params included); null clears. */
export function mergeCustomAgent(current: CustomAgentBody, patch: CustomAgentUpdateBody): CustomAgentBody {
  const merged: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (value === null) {
      if (key in CLEARED_DEFAULTS) merged[key] = CLEARED_DEFAULTS[key as keyof CustomAgentBody];
      else delete merged[key];
    } else merged[key] = value;
  }
  return merged as unknown as CustomAgentBody;
}

/** The bounds of a custom-agent run (the agent loop's: AGENT_MAX_STEPS, AGENT_DEADLINE_MS, AGENT_HISTORY_EVENTS). */
export function agentRunBounds(
  deps: ApiDeps,
): Pick<CustomAgentWorkflowInput, 'maxSteps' | 'deadlineMs' | 'historyEventsLimit'> {
  return {
    maxSteps: deps.config.agent.maxSteps,
    deadlineMs: deps.config.agent.deadlineMs,
    historyEventsLimit: deps.config.agent.historyEventsLimit,
  };
}

export function scheduledRunInput(deps: ApiDeps, automationId: string): CustomAgentWorkflowInput {
  return { automationId, ...agentRunBounds(deps) };
}
