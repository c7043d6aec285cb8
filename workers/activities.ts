import type { Db } from '../db/connect';
import type { Config } from '../lib/config';
import type { NetworkPolicy } from '../lib/net/ssrf';
import type { BrowserPool } from '../activities/browser/pool';
import { createLlmProviders } from '../lib/llm/providers';
import { createJobActivities } from '../activities/jobs';
import { createPageActivities } from '../activities/page';
import { createExtractionActivities } from '../activities/llm';
import { createFastPathActivities } from '../activities/page/fast-path';
import { createBillingActivities } from '../activities/billing';
import { createWebhookActivities } from '../activities/webhooks';
import { createBrowserActivities } from '../activities/browser';
import { createAgentBrainActivities } from '../activities/agent/brain';
import { createAgentToolCallActivities } from '../activities/agent/tool-call';
import { createSessionActivities, createSessionOpenerActivities } from '../activities/agent/session';
import type { SessionRegistry } from '../activities/agent/session-registry';
import { createSocialToolActivities } from '../activities/agent/social';
import { createAutomationActivities } from '../activities/automations';
import { createCustomAgentRunActivities } from '../activities/automations/custom-agent-run';
import { createLegacyCustomAgentActivities } from '../activities/agent/legacy-custom-agent';
import { socialPlatformsFromConfig } from '../lib/social/platforms';
import { createSkillsActivities } from '../activities/skills';
import { createToolActivities } from '../activities/tools';
import { toolImageKeeper } from '../activities/agent/tool-images';
import { jobSelectionLoader } from '../activities/tools/selections';
import { RunConnections } from '../activities/tools/run-connections';
import { createMarketSelectionCaller } from '../activities/tools/market';
import { marketCallPath } from '../api/services/market/call-path';
import { createMarketRunActivities } from '../activities/market/runs';
import { createMarketActivities } from '../activities/market';
import { runtimeDiscover } from '../lib/market/runtime-discover';

export interface ActivityDeps {
  db: Db;
  config: Config;
  policy: NetworkPolicy;
}

/** Activities of the `platform` task queue: database, HTTP, LLM, billing, webhooks. */
export function platformActivities({ db, config, policy }: ActivityDeps) {
  const adapters = { proxyUrlTemplate: config.proxyUrlTemplate, captcha: config.captcha };
  const llm = createLlmProviders({
    service: config.openai,
    routerBaseURL: config.routerBaseURL,
    prices: config.modelPrices,
  });
  const page = createPageActivities({ db, policy, masterKey: config.masterKey, ...adapters });
  const extraction = createExtractionActivities({ db, llm, masterKey: config.masterKey });
  // Upstream connections of agent runs kept between their calls on this worker (one per run and selection).
  const connections = new RunConnections();
  const brain = createAgentBrainActivities({
    db,
    llm,
    masterKey: config.masterKey,
    selections: { tools: { policy }, loadSelection: jobSelectionLoader(db, config.masterKey) },
    connections,
  });
  const tools = createToolActivities({
    policy,
    masterKey: config.masterKey,
    loadSelection: jobSelectionLoader(db, config.masterKey),
    callMarketSelection: createMarketSelectionCaller({
      db,
      config,
      callPath: marketCallPath(db, config.market, policy),
    }),
    images: toolImageKeeper({ db, prices: config.modelPrices, limits: config.agent.toolImages }),
    connections,
  });
  return {
    ...createJobActivities({ db }),
    ...page,
    ...extraction,
    ...createFastPathActivities({ db, page, extraction }),
    ...createBillingActivities({ db, marketRunGraceMs: config.market.runIdleGraceMs }),
    ...createWebhookActivities({ db, masterKey: config.masterKey, policy }),
    ...brain,
    // Custom-agent runs begun before the one agent loop call these old names until they end (workflows/custom-agent-v1.ts).
    ...createLegacyCustomAgentActivities(db, brain),
    ...createSocialToolActivities({ db, masterKey: config.masterKey, platforms: socialPlatformsFromConfig(config) }),
    ...createAutomationActivities({
      db,
      masterKey: config.masterKey,
      holdMaxMicros: config.holds.automation,
      prices: config.modelPrices,
    }),
    ...createSkillsActivities({ db, config }),
    ...tools,
    // A selection-tool call of an agent run with its record, in one activity (workflows/agent.ts).
    ...createAgentToolCallActivities({ callTool: tools.callTool, recordAgentToolCall: brain.recordAgentToolCall }),
    ...createMarketRunActivities({ db }),
    ...createMarketActivities({ db, config, discover: runtimeDiscover({ policy }) }),
    ...createCustomAgentRunActivities({
      db,
      masterKey: config.masterKey,
      holdMaxMicros: config.holds['custom-agent'],
      prices: config.modelPrices,
    }),
  };
}

function sessionDeps({ db, config, policy }: ActivityDeps, registry: SessionRegistry) {
  return {
    db,
    policy,
    registry,
    masterKey: config.masterKey,
    proxyUrlTemplate: config.proxyUrlTemplate,
    captcha: config.captcha,
  };
}

/** Activities of the shared `browser` task queue: one-shot rendering, and opening agent sessions on this worker. */
export function browserActivities(deps: ActivityDeps, pool: BrowserPool, registry: SessionRegistry) {
  const { db, config, policy } = deps;
  return {
    ...createBrowserActivities({
      db,
      policy,
      pool,
      masterKey: config.masterKey,
      proxyUrlTemplate: config.proxyUrlTemplate,
      captcha: config.captcha,
    }),
    ...createSessionOpenerActivities(sessionDeps(deps, registry)),
  };
}

/** Activities of this worker's own session queue: steps of the agent sessions it holds. */
export function sessionActivities(deps: ActivityDeps, registry: SessionRegistry) {
  return createSessionActivities(sessionDeps(deps, registry));
}
