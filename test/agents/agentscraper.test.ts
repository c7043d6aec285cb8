import assert from 'node:assert/strict';
import { useHarness, type Harness } from '../support/stack/harness';
import { stoppedAfter } from '../support/stack/stopped-after';
import { startWebhookReceiver } from '../support/fakes/webhook-receiver';
import {
  AGENT_GOLDEN_TICKET,
  AGENT_LOGIN,
  AGENT_SPA_REVEALED,
  AGENT_TAB_TARGET_TEXT,
} from '../support/fakes/fixture-site';
import { act, actMany, elementIndex, isAgentDecision, onPage, toolNames } from '../support/agent-script';

describe('POST /agentscraper: the one-off browser agent', function () {
  const stacks = stoppedAfter();
  let h: Harness;
  let apiKey: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey } = await h.createUser({ creditUsd: 20 }));
  });

  async function runAgent(
    body: Record<string, unknown>,
    options: { key?: string; base?: string; timeoutMs?: number } = {},
  ) {
    const key = options.key ?? apiKey;
    const base = options.base ?? '';
    const accepted = await h.http('POST', `${base}/api/v1/agentscraper`, {
      apiKey: key,
      body: { headless: true, ...body },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal(accepted.body.status, 'pending');
    return h.waitForJob(
      key,
      `${base}/api/v1/agentscraper/status/${accepted.body.jobId}`,
      undefined,
      options.timeoutMs ?? 90_000,
    );
  }

  function decisionsSince(index: number) {
    return h.llm.requests.slice(index).filter(isAgentDecision);
  }

  it('pages through a list to page 3, logging goal, actions and outcome of every step', async function () {
    const list = `${h.site.url}/agent/list?page=1`;
    h.llm.enqueue(
      act('navigate', { url: list }, 'Open the list'),
      onPage((o) => act('click', { index: elementIndex(o, /Next page/) }, 'Go to page 2')),
      onPage((o) => act('click', { index: elementIndex(o, /Next page/) }, 'Go to page 3')),
      onPage((o) =>
        act(
          'done',
          { success: true, answer: o.includes(AGENT_GOLDEN_TICKET) ? 'item 13' : 'not found' },
          'Report the ticket',
        ),
      ),
    );
    const job = await runAgent({ task: 'Find the golden ticket in the list', max_actions_per_step: 3 });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'item 13');
    assert.equal(job.result.steps.length, 4);
    assert.match(job.result.steps[2].url, /page=2/);
    assert.ok(
      job.logs.some((l: string) => /task 1 step 2: goal: Go to page 2 \| click\(index=\d+\) → clicked/.test(l)),
      job.logs.join('\n'),
    );
    const summary = job.result.summary;
    assert.equal(summary.steps, 4);
    assert.equal(summary.llmCalls, 4);
    assert.ok(summary.promptTokens > 0 && summary.completionTokens > 0);
    assert.ok(summary.costUsd > 0);
    assert.ok(summary.browserSeconds > 0);
    assert.equal(job.request.llm_model, 'router/auto');
    assert.equal(job.request.vision_mode, 'auto');
    const tx = (await h.http('GET', '/api/v1/transactions', { apiKey })).body.transactions.find(
      (t: any) => t.jobId === job.id,
    );
    assert.equal(tx.agentName, 'browser-agent');
    assert.equal(tx.cost, summary.costUsd);
  });

  it('types sensitive data only on matching domains and never shows its value to the model, logs or results', async function () {
    const seen = h.llm.requests.length;
    const secret = { id: 'pw', value: AGENT_LOGIN.password, domain_pattern: '127.0.0.1' };
    const localhostLogin = h.site.url.replace('127.0.0.1', 'localhost') + '/agent/login';
    h.llm.enqueue(
      act('navigate', { url: localhostLogin }, 'Try the other host first'),
      onPage((o) =>
        act(
          'type',
          { index: elementIndex(o, /password/), text: '<secret>pw</secret>' },
          'Type the password on localhost',
        ),
      ),
      act('navigate', { url: `${h.site.url}/agent/login` }, 'Open the real login page'),
      onPage((o) =>
        actMany(
          [
            ['type', { index: elementIndex(o, /name="username"/), text: AGENT_LOGIN.username }],
            ['type', { index: elementIndex(o, /password/), text: '<secret>pw</secret>' }],
            ['click', { index: elementIndex(o, /<button|type="submit"/) }],
          ],
          'Log in',
        ),
      ),
      onPage((o) =>
        act('done', { success: true, answer: /Welcome back, alice/.test(o) ? 'logged in' : 'login failed' }),
      ),
    );
    const job = await runAgent({ task: 'Log in as alice', sensitive_data: [secret], max_actions_per_step: 5 });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'logged in');
    const refused = job.result.steps[1].outcomes[0];
    assert.equal(refused.ok, false);
    assert.match(refused.message, /pw/);
    const requests = JSON.stringify(h.llm.requests.slice(seen).map((r) => r.body));
    assert.ok(requests.includes('<secret>pw</secret>'));
    assert.ok(!requests.includes(AGENT_LOGIN.password), 'the password reached the model');
    assert.ok(!JSON.stringify(job).includes(AGENT_LOGIN.password), 'the password is in the job record');
    assert.deepEqual(job.request.sensitive_data, [{ id: 'pw', value: '[redacted]', domain_pattern: '127.0.0.1' }]);
    const rows = JSON.stringify(
      await h.db.selectFrom('agent_steps').selectAll().where('job_id', '=', job.id).execute(),
    );
    assert.ok(!rows.includes(AGENT_LOGIN.password));
  });

  it('runs follow-up tasks in the same browser session (cookies carry over) and reports each outcome', async function () {
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/login` }),
      onPage((o) =>
        actMany([
          ['type', { index: elementIndex(o, /name="username"/), text: AGENT_LOGIN.username }],
          ['type', { index: elementIndex(o, /password/), text: '<secret>pw</secret>' }],
          ['click', { index: elementIndex(o, /<button|type="submit"/) }],
        ]),
      ),
      act('done', { success: true, answer: 'logged in' }),
      onPage((o) => act('navigate', { url: `${h.site.url}/agent/account` }, `still on ${o.split('\n')[0]}`)),
      onPage((o) =>
        act('done', { success: true, answer: /Welcome back, alice/.test(o) ? 'session kept' : 'session lost' }),
      ),
    );
    const job = await runAgent({
      task: 'Log in',
      follow_up_tasks: ['Open the account page and say whether you are still logged in'],
      sensitive_data: [{ id: 'pw', value: AGENT_LOGIN.password }],
    });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.tasks.length, 2);
    assert.deepEqual(
      job.result.tasks.map((t: any) => t.answer),
      ['logged in', 'session kept'],
    );
    assert.equal(job.result.answer, 'session kept');
    assert.ok(job.result.steps.some((s: any) => s.task === 2));
  });

  it('sets request cookies before the first navigation', async function () {
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/account` }),
      onPage((o) => act('done', { success: true, answer: /Welcome back, alice/.test(o) ? 'welcomed' : 'refused' })),
    );
    const job = await runAgent({ task: 'Check the account page', cookies: 'agent_session=ok' });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'welcomed');
    assert.equal(job.request.cookies, 'agent_session=[redacted]');
  });

  it('returns structured output, re-asking until valid in consistency mode (temperature 0)', async function () {
    const seen = h.llm.requests.length;
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/form` }),
      onPage((o) =>
        actMany([
          ['select_option', { index: elementIndex(o, /<select/), value: 'pro' }],
          ['type', { index: elementIndex(o, /name="name"/), text: 'Ada' }],
          ['click', { index: elementIndex(o, /<button|type="submit"/) }],
        ]),
      ),
      act('done', { success: true, data: { plan: 'pro', confirmed: 'yes' } }),
      onPage((o) =>
        act('done', { success: true, data: { plan: /plan=pro/.test(o) ? 'pro' : 'other', confirmed: true } }),
      ),
    );
    const job = await runAgent({
      task: 'Order the pro plan for Ada and report it',
      optimization_mode: 'consistency',
      structured_output: [
        { id: 'plan', type: 'string' },
        { id: 'confirmed', type: 'boolean' },
      ],
    });
    assert.equal(job.status, 'completed', job.error);
    assert.deepEqual(job.result.data, { plan: 'pro', confirmed: true });
    const decisions = decisionsSince(seen);
    assert.ok(decisions.length > 0 && decisions.every((d) => d.body.temperature === 0));
    const done = (decisions[0].body.tools as any[]).find((t) => t.function.name === 'done');
    assert.deepEqual(Object.keys(done.function.parameters.properties.data.properties), ['plan', 'confirmed']);
    assert.ok(
      job.result.steps.some((s: any) =>
        s.outcomes.some((o: any) => o.action === 'done' && !o.ok && /does not match structured_output/.test(o.message)),
      ),
    );
  });

  it('follows a link that opens a new tab', async function () {
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/tabs` }),
      onPage((o) => act('click', { index: elementIndex(o, /target="_blank"|Open in a new tab/i) })),
      onPage((o) => act('done', { success: true, answer: o.includes(AGENT_TAB_TARGET_TEXT) ? 'found' : 'missing' })),
    );
    const job = await runAgent({ task: 'Open the other tab' });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'found');
  });

  it('offers no screenshot tool and sends no image in text_only mode; visual mode attaches screenshots', async function () {
    let seen = h.llm.requests.length;
    h.llm.enqueue(act('navigate', { url: `${h.site.url}/agent/form` }), act('done', { success: true, answer: 'ok' }));
    const textOnly = await runAgent({ task: 'Look at the form', vision_mode: 'text_only' });
    assert.equal(textOnly.status, 'completed', textOnly.error);
    for (const decision of decisionsSince(seen)) {
      assert.ok(!toolNames(decision).includes('screenshot'));
      assert.ok(!JSON.stringify(decision.body.messages).includes('image_url'));
    }
    seen = h.llm.requests.length;
    h.llm.enqueue(act('navigate', { url: `${h.site.url}/agent/form` }), act('done', { success: true, answer: 'ok' }));
    const visual = await runAgent({ task: 'Look at the form', vision_mode: 'visual', vision_detail_level: 'low' });
    assert.equal(visual.status, 'completed', visual.error);
    const decisions = decisionsSince(seen);
    assert.ok(
      decisions.length > 0 && decisions.every((d) => JSON.stringify(d.body.messages).includes('"detail":"low"')),
    );
    seen = h.llm.requests.length;
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/form` }),
      act('screenshot'),
      act('done', { success: true, answer: 'ok' }),
    );
    const auto = await runAgent({ task: 'Look at the form' });
    assert.equal(auto.status, 'completed', auto.error);
    const autoDecisions = decisionsSince(seen);
    assert.ok(toolNames(autoDecisions[0]).includes('screenshot'));
    assert.ok(!JSON.stringify(autoDecisions[1].body.messages).includes('image_url'));
    assert.ok(
      JSON.stringify(autoDecisions[2].body.messages).includes('image_url'),
      'the requested screenshot is attached to the next observation',
    );
  });

  it('executes at most max_actions_per_step actions of one answer', async function () {
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/form` }),
      actMany([
        ['scroll', { direction: 'down' }],
        ['scroll', { direction: 'up' }],
        ['wait', { seconds: 0 }],
        ['wait', { seconds: 0 }],
      ]),
      act('done', { success: true, answer: 'ok' }),
    );
    const job = await runAgent({ task: 'Scroll around', max_actions_per_step: 2 });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.steps[1].actions.length, 2);
    assert.equal(job.result.steps[1].outcomes.length, 2);
    assert.ok(job.logs.some((l: string) => /proposed 4 actions; only the first 2/.test(l)));
  });

  it('detects repeated actions on an unchanged page, warns the model, then stops with a clear error', async function () {
    const seen = h.llm.requests.length;
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/form` }),
      ...Array.from({ length: 8 }, () => act('wait', { seconds: 0 })),
    );
    const job = await runAgent({ task: 'Wait forever' });
    assert.equal(job.status, 'failed');
    assert.match(job.error, /repeated wait\(seconds=0\) 5 times on an unchanged page without progress/);
    const notes = decisionsSince(seen).map((d) => JSON.stringify(d.body.messages));
    assert.ok(notes.some((n) => n.includes('Loop detected')));
    while (h.llm.pendingReplies() > 0) h.llm.reset();
  });

  it('stops at the step bound', async function () {
    const stack = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'platform-steps', browser: 'browser-steps' },
        overrides: { agent: { maxSteps: 3, deadlineMs: 600_000 } },
      }),
    );
    h.llm.enqueue(...[1, 2, 3, 1, 2].map((n) => act('navigate', { url: `${h.site.url}/agent/list?page=${n}` })));
    const job = await runAgent({ task: 'Browse without end' }, { base: stack.baseUrl });
    assert.equal(job.status, 'failed');
    assert.match(job.error, /reached the step bound of 3 steps/);
    assert.equal(job.result.steps.length, 3);
    h.llm.reset();
  });

  it('stops at the wall-clock deadline', async function () {
    const stack = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'platform-deadline', browser: 'browser-deadline' },
        overrides: { agent: { maxSteps: 30, deadlineMs: 4_000 } },
      }),
    );
    h.llm.enqueue(
      ...[1, 2, 3, 1].map((n) =>
        actMany([
          ['wait', { seconds: 3 }],
          ['navigate', { url: `${h.site.url}/agent/list?page=${n}` }],
        ]),
      ),
    );
    const job = await runAgent({ task: 'Dawdle' }, { base: stack.baseUrl });
    assert.equal(job.status, 'failed');
    assert.match(job.error, /reached the deadline of 4s/);
    h.llm.reset();
  });

  it('browses through the proxy and solves captchas through the solver when asked, billing both', async function () {
    const before = h.proxy.requests.length;
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/captcha` }),
      onPage((o) => act('done', { success: true, answer: /hidden price list/.test(o) ? 'passed' : 'blocked' })),
    );
    const job = await runAgent({
      task: 'Read the protected page',
      proxy_enabled: true,
      proxy_country: 'fr',
      captcha_solver_enabled: true,
    });
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.result.answer, 'passed');
    assert.equal(job.request.proxy_country, 'FR');
    assert.ok(h.proxy.requests.slice(before).some((r) => r.target.startsWith(`${h.site.url}/captcha`)));
    assert.ok(job.logs.some((l: string) => /captcha solved/.test(l)));
    const tx = (await h.http('GET', '/api/v1/transactions?pageSize=100', { apiKey })).body.transactions.find(
      (t: any) => t.jobId === job.id,
    );
    assert.equal(tx.payload.captchaSolves, 1);
    assert.equal(tx.payload.proxyRequests, 1);
  });

  it('fails clearly when the proxy or captcha solver it asks for is not configured', async function () {
    const stack = stacks.add(
      await h.startIsolatedStack({
        taskQueues: { platform: 'platform-agent-bare', browser: 'browser-agent-bare' },
        overrides: { proxyUrlTemplate: null, captcha: null },
      }),
    );
    const proxied = await runAgent({ task: 'x', proxy_enabled: true, proxy_country: 'US' }, { base: stack.baseUrl });
    assert.equal(proxied.status, 'failed');
    assert.match(proxied.error, /proxy_enabled was requested but this service has no proxy configured/);
    const solved = await runAgent({ task: 'x', captcha_solver_enabled: true }, { base: stack.baseUrl });
    assert.equal(solved.status, 'failed');
    assert.match(solved.error, /no captcha solver configured/);
  });

  it('stops when the wallet cannot pay for more steps, and still charges what was used', async function () {
    const poor = await h.createUser({ creditUsd: 0.00002 });
    h.llm.enqueue(...[1, 2, 3, 1, 2, 3].map((n) => act('navigate', { url: `${h.site.url}/agent/list?page=${n}` })));
    const job = await runAgent({ task: 'Browse' }, { key: poor.apiKey });
    assert.equal(job.status, 'failed');
    assert.match(job.error, /wallet cannot pay/);
    const tx = (await h.http('GET', '/api/v1/transactions', { apiKey: poor.apiKey })).body.transactions;
    assert.equal(tx.length, 1);
    assert.equal(tx[0].result, 'failed');
    assert.ok(tx[0].cost > 0);
    h.llm.reset();
  });

  it('delivers the completion webhook', async function () {
    const receiver = await startWebhookReceiver();
    try {
      h.llm.enqueue(act('done', { success: true, answer: 'done at once' }));
      const accepted = await h.http('POST', '/api/v1/agentscraper', {
        apiKey,
        body: { task: 'Finish', headless: true, webhook_url: receiver.url('/agent-hook') },
      });
      const job = await h.waitForJob(apiKey, `/api/v1/agentscraper/status/${accepted.body.jobId}`, (j) =>
        j.logs.some((l: string) => /webhook delivered/.test(l)),
      );
      assert.equal(job.status, 'completed', job.error);
      const payload = JSON.parse(receiver.bodies()[0]);
      assert.equal(payload.event, 'job.completed');
      assert.equal(payload.kind, 'agentic');
      assert.equal(payload.job.result.answer, 'done at once');
    } finally {
      await receiver.close();
    }
  });

  it('runs headed by default (under a virtual display) and works a script-rendered page', async function () {
    h.llm.enqueue(
      act('navigate', { url: `${h.site.url}/agent/spa` }),
      onPage((o) => act('click', { index: elementIndex(o, /Show details/) })),
      onPage((o) =>
        act('done', { success: true, answer: o.includes(AGENT_SPA_REVEALED) ? 'treasure found' : 'nothing' }),
      ),
    );
    const accepted = await h.http('POST', '/api/v1/agentscraper', { apiKey, body: { task: 'Look at the page' } });
    const job = await h.waitForJob(apiKey, `/api/v1/agentscraper/status/${accepted.body.jobId}`);
    assert.equal(job.status, 'completed', job.error);
    assert.equal(job.request.headless, false);
    assert.equal(job.result.answer, 'treasure found');
    assert.ok(job.logs.some((l: string) => /browser session opened \(headed\)/.test(l)));
  });
});

describe('POST /agentscraper validation and limits', function () {
  let h: Harness;
  let apiKey: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey } = await h.createUser());
  });

  const cases: [string, Record<string, unknown>, string][] = [
    ['a missing task', {}, 'body/task'],
    ['an unknown llm_provider', { task: 't', llm_provider: 'openai' }, 'body/llm_provider'],
    ['an unknown vision_mode', { task: 't', vision_mode: 'pixels' }, 'body/vision_mode'],
    ['an unknown vision_detail_level', { task: 't', vision_detail_level: 'ultra' }, 'body/vision_detail_level'],
    ['an unknown optimization_mode', { task: 't', optimization_mode: 'cheap' }, 'body/optimization_mode'],
    ['max_actions_per_step 0', { task: 't', max_actions_per_step: 0 }, 'body/max_actions_per_step'],
    ['max_actions_per_step 21', { task: 't', max_actions_per_step: 21 }, 'body/max_actions_per_step'],
    [
      'a sensitive_data item without value',
      { task: 't', sensitive_data: [{ id: 'pw' }] },
      'body/sensitive_data/0/value',
    ],
    [
      'duplicate sensitive_data ids',
      {
        task: 't',
        sensitive_data: [
          { id: 'a', value: 'x' },
          { id: 'a', value: 'y' },
        ],
      },
      'body/sensitive_data',
    ],
    [
      'a structured_output item without type',
      { task: 't', structured_output: [{ id: 'a' }] },
      'body/structured_output/0/type',
    ],
    ['proxy_enabled without proxy_country', { task: 't', proxy_enabled: true }, 'body/proxy_country'],
    ['array cookies (only string or object)', { task: 't', cookies: [{ name: 'a', value: 'b' }] }, 'body/cookies'],
  ];
  for (const [what, body, path] of cases) {
    it(`refuses ${what} with 400`, async function () {
      const response = await h.http('POST', '/api/v1/agentscraper', { apiKey, body });
      assert.equal(response.status, 400, JSON.stringify(response.body));
      assert.ok(
        response.body.error.details.some((d: any) => d.path.startsWith(path)),
        JSON.stringify(response.body.error.details),
      );
    });
  }

  it('shares the monthly operation limit with /scrape (429)', async function () {
    const { apiKey: key } = await h.createUser({ monthlyOperationLimit: 1 });
    const scrape = await h.http('POST', '/api/v1/scrape', { apiKey: key, body: { url: `${h.site.url}/static` } });
    assert.equal(scrape.status, 202);
    const refused = await h.http('POST', '/api/v1/agentscraper', { apiKey: key, body: { task: 'anything' } });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'monthly_limit_reached');
    await h.waitForJob(key, `/api/v1/scrape/status/${scrape.body.jobId}`);
  });

  it('keeps agent jobs apart from scrape jobs and other users', async function () {
    h.llm.enqueue(act('done', { success: true, answer: 'nothing to do' }));
    const accepted = await h.http('POST', '/api/v1/agentscraper', {
      apiKey,
      body: { task: 'Say done', headless: true },
    });
    assert.equal(accepted.status, 202);
    assert.equal((await h.http('GET', `/api/v1/scrape/status/${accepted.body.jobId}`, { apiKey })).status, 404);
    const other = await h.createUser();
    assert.equal(
      (await h.http('GET', `/api/v1/agentscraper/status/${accepted.body.jobId}`, { apiKey: other.apiKey })).status,
      404,
    );
    const job = await h.waitForJob(apiKey, `/api/v1/agentscraper/status/${accepted.body.jobId}`);
    assert.equal(job.status, 'completed', job.error);
  });
});
