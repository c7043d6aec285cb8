import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { useHarness, type IsolatedStack } from '../support/stack/harness';

/**
 * Realistic questions and the section that answers each (`path#anchor`), which search_docs must
 * rank in its top 3. Adding a guide adds rows here.
 */
const QUESTIONS: [question: string, answer: string][] = [
  ['how do I verify a webhook signature', 'docs/webhooks.md#verifying-the-signature'],
  [
    'what happens when the monthly limit is reached',
    'docs/authentication-and-errors.md#when-the-monthly-limit-is-reached',
  ],
  [
    "how do I keep a password out of the model's view",
    'docs/browser-agent.md#keep-passwords-out-of-the-models-view-sensitive-data',
  ],
  ['how often are failed webhook deliveries retried', 'docs/webhooks.md#delivery-and-retries'],
  ['what is in the webhook payload', 'docs/webhooks.md#the-payload'],
  [
    'how do I get only the fields I want from a page',
    'docs/scraping.md#choosing-the-fields-you-get-back-structured-output',
  ],
  ['can I wait for the scrape result in the same request', 'docs/scraping.md#waiting-for-the-result-in-one-request'],
  ['send cookies with a scrape', 'docs/scraping.md#cookies-logins-and-captchas'],
  ['does the service fetch private network addresses', 'docs/scraping.md#how-a-page-is-fetched'],
  ['what does error code insufficient_funds mean', 'docs/authentication-and-errors.md#error-codes'],
  ['where do I find the request id for a support ticket', 'docs/authentication-and-errors.md#the-error-body'],
  ['how do I retry a request without starting a second job', 'docs/authentication-and-errors.md#retrying-safely'],
  ['am I charged when a job fails', 'docs/jobs-and-polling.md#failed-jobs'],
  ['what does a job record contain', 'docs/jobs-and-polling.md#the-job-record'],
  ['how can I see how much each job cost', 'docs/billing.md#seeing-what-each-run-cost'],
  ['how do I give the agent more tasks in the same browser session', 'docs/browser-agent.md#follow-up-tasks'],
  ['when does the agent take screenshots', 'docs/browser-agent.md#vision-screenshots-and-what-the-model-sees'],
  ['how do I run a task every 30 seconds', 'docs/automations.md#cron-rules'],
  ['which time zone is my cron schedule in', 'docs/automations.md#cron-rules'],
  ['my microblog account uses two-factor authentication', 'docs/social-accounts.md#microblog-accounts'],
  [
    'how do I stop an automation from using one of my accounts',
    'docs/social-accounts.md#changing-an-account-or-switching-it-off-so-automations-skip-it',
  ],
  ['how do I attach a skill to an automation', 'docs/skills-directory.md#attach-skills-to-an-agent'],
  ['how do I find skills by describing what I need', 'docs/skills-directory.md#describe-what-you-need-ai-search'],
  ['how do I start the service locally', 'docs/getting-started.md#the-two-commands'],
  ['how do I connect my IDE to the docs', 'docs/docs-search.md#connect-a-client'],
  ['which endpoint lists my saved social accounts', 'openapi.json#operation/listSocialAccounts'],
  ['what does a failed run cost', 'docs/billing.md#what-a-failed-or-cancelled-run-costs'],
  [
    'why is my available balance lower than my balance',
    'docs/billing.md#holds-why-the-available-balance-is-lower-than-the-balance',
  ],
  ['how much does browser time cost', 'docs/billing.md#prices-models-browser-time-captchas-and-proxies'],
  ['which models can I use and what do they cost', 'docs/billing.md#prices-models-browser-time-captchas-and-proxies'],
  ['what is the platform commission on market charges', 'docs/billing.md#market-charges-and-commission'],
  ['how do I see a run in the Temporal UI', 'docs/operations.md#seeing-runs-in-the-temporal-ui'],
  ['how do I scrape metrics', 'docs/operations.md#metrics'],
  ['how do I check the service is healthy', 'docs/operations.md#health-and-readiness'],
  ['are secrets written to the logs', 'docs/operations.md#logs'],
  ['what happens to a job stuck in pending', 'docs/operations.md#jobs-stuck-in-pending-the-reconciler'],
  ['how do providers report a billable event', 'docs/selling-tools.md#report-a-billable-event-the-charge-endpoint'],
  ['what happens if my charge request is retried', 'docs/selling-tools.md#retries-and-idempotency-of-charges'],
  ['how is the source fingerprint computed', 'docs/selling-tools.md#the-source-fingerprint'],
  ['how do I verify the events I will charge for', 'docs/selling-tools.md#verify-your-billable-events'],
  [
    'does the hosted MCP endpoint pass images and progress through',
    'docs/mcp-conformance.md#how-the-hosted-endpoint-passes-them',
  ],
  ['how do I run the MCP conformance suite', 'docs/mcp-conformance.md#running-it-yourself'],
  ['how do I configure the service', 'docs/configuration.md#'],
  ['how do I add a model to the price table', 'docs/configuration.md#llm-models-and-prices'],
  ['how are secrets encrypted at rest', 'docs/security.md#secrets-at-rest-and-masking'],
  ['does the service resolve DNS names itself', 'docs/security.md#name-resolution'],
  ['how do I put the Temporal UI behind a login', 'docs/security.md#the-temporal-ui'],
  ['how do I replay a failing fuzz case', 'docs/testing.md#the-reliability-suite'],
  ['how fast are hosted MCP tool calls', 'docs/benchmarks.md#hosted-mcp-tool-calls-benchmcp'],
];

describe('docs search relevance', function () {
  let client: Client;
  let stack: IsolatedStack;

  before(async function () {
    this.timeout(180_000);
    const h = await useHarness();
    stack = await h.startIsolatedStack({
      taskQueues: { platform: 'docs-relevance-unused', browser: 'docs-relevance-unused-browser' },
      overrides: { docsMcp: { url: null, rateLimitPerMinute: 100_000 } },
      queues: [],
    });
    client = new Client({ name: 'docs-relevance', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/docs-mcp`)));
  });

  after(async function () {
    await client?.close();
    await stack?.stop();
  });

  it(`ranks the answering section in the top 3 for ${QUESTIONS.length} realistic questions`, async function () {
    assert.ok(QUESTIONS.length >= 15);
    const misses: string[] = [];
    for (const [question, answer] of QUESTIONS) {
      const result = await client.callTool({ name: 'search_docs', arguments: { query: question, limit: 3 } });
      const hits = (result.structuredContent as { hits: { path: string; anchor: string }[] }).hits.map(
        (h) => `${h.path}#${h.anchor}`,
      );
      if (!hits.includes(answer)) misses.push(`"${question}": expected ${answer}, got ${hits.join(', ')}`);
    }
    assert.deepEqual(misses, []);
  });
});
