import type { Db } from '../db/connect';
import type { Config } from '../lib/config';
import type { NetworkPolicy } from '../lib/net/ssrf';
import type { BrowserPool } from '../lib/browser/pool';
import { createLlmProviders } from '../lib/llm/providers';
import { createJobActivities } from '../activities/jobs';
import { createPageActivities } from '../activities/page';
import { createExtractionActivities } from '../activities/llm';
import { createBillingActivities } from '../activities/billing';
import { createWebhookActivities } from '../activities/webhooks';
import { createBrowserActivities } from '../activities/browser';

export interface ActivityDeps {
  db: Db;
  config: Config;
  policy: NetworkPolicy;
}

/** Activities of the `platform` task queue: database, HTTP, LLM, billing, webhooks. */
export function platformActivities({ db, config, policy }: ActivityDeps) {
  const adapters = { proxyUrlTemplate: config.proxyUrlTemplate, captcha: config.captcha };
  const llm = createLlmProviders({ service: config.openai, routerBaseURL: config.routerBaseURL });
  return {
    ...createJobActivities({ db }),
    ...createPageActivities({ db, policy, masterKey: config.masterKey, ...adapters }),
    ...createExtractionActivities({ db, llm, masterKey: config.masterKey }),
    ...createBillingActivities({ db }),
    ...createWebhookActivities({ db, masterKey: config.masterKey, policy }),
  };
}

/** Activities of the `browser` task queue: everything that needs Chromium. */
export function browserActivities({ db, config, policy }: ActivityDeps, pool: BrowserPool) {
  return createBrowserActivities({ db, policy, pool, masterKey: config.masterKey, proxyUrlTemplate: config.proxyUrlTemplate, captcha: config.captcha });
}
