import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { Client } from '@temporalio/client';
import { useHarness, type Harness } from '../support/stack/harness';
import { startWebhookReceiver } from '../support/fakes/webhook-receiver';
import { act, actMany } from '../support/agent-script';
import { listen } from '../../api/server';
import { readinessProbe } from '../../api/readiness';
import { socialPlatformsFromConfig } from '../../lib/social/platforms';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { assertCronInterval, CronError, CronTooFrequentError, minimumIntervalSeconds } from '../../lib/cron';

describe('cron frequency', function () {
  it('finds the shortest gap between firings for 5/6/7-field expressions, descriptors and @every', function () {
    const cases: [string, number][] = [
      ['*/30 * * * * *', 30],
      ['* * * * *', 60],
      ['*/5 * * * *', 300],
      ['0,2 * * * *', 120],
      ['0 */2 * * *', 7200],
      ['0 9 * * 1', 7 * 86_400],
      ['0 9 * * MON-FRI', 86_400],
      ['58 23 * * *', 86_400],
      ['0,58 0,23 * * *', 120], // 23:58 then 00:00 the next day
      ['0 0 9 * * ? 2031', 86_400],
      ['15 0 0 1 JAN,JUL ?', 181 * 86_400],
      ['0 0 L * ?', 86_400], // Quartz day rules count as every day (never longer than the truth)
      ['@hourly', 3600],
      ['@daily', 86_400],
      ['@weekly', 7 * 86_400],
      ['@every 90s', 90],
      ['@every 1h30m', 5400],
      ['0 0 30 2 *', Infinity],
    ];
    for (const [expression, seconds] of cases) assert.equal(minimumIntervalSeconds(expression), seconds, expression);
  });

  it('refuses what fires more often than the minimum, names the minimum, and lets the boundary through', function () {
    assert.doesNotThrow(() => assertCronInterval('*/5 * * * *', 5));
    assert.doesNotThrow(() => assertCronInterval('@every 5m', 5));
    for (const expression of ['*/30 * * * * *', '* * * * *', '*/4 * * * *', '@every 299s', '0,3 * * * *']) {
      assert.throws(
        () => assertCronInterval(expression, 5),
        (err: unknown) => err instanceof CronTooFrequentError && /at most once every 5 minutes/.test(err.message),
        expression,
      );
    }
    assert.throws(
      () => assertCronInterval('*/2 * * * * *', 0.05),
      /fires every 2 seconds .* at most once every 3 seconds/,
    );
    for (const bad of ['99 * * * *', '*/0 * * * *', '5-1 * * * *', '* * * 13 *', '* * * * FUNDAY']) {
      assert.throws(
        () => minimumIntervalSeconds(bad),
        (err: unknown) => err instanceof CronError && !(err instanceof CronTooFrequentError),
        bad,
      );
    }
  });
});

describe('automations on Temporal Schedules with the forum and microblog agents', function () {
  let h: Harness;
  let n = 0;
  let startedAt: Date;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    startedAt = new Date();
    h.forum.addCommunity('rooftop_bees');
  });

  // The Schedules this file created stop with it: none fires into a later file of the lane (a daily one would
  // at its hour, whatever file runs then).
  after(async function () {
    this.timeout(60_000);
    const created = await h.db
      .selectFrom('automations')
      .select('schedule_id')
      .where('created_at', '>=', startedAt)
      .execute();
    for (const { schedule_id } of created)
      await h.client.schedule
        .getHandle(schedule_id)
        .delete()
        .catch(() => undefined);
  });

  /** Deletes an automation's Schedule and shows it is gone. */
  async function deleteSchedule(automationId: string) {
    const handle = h.client.schedule.getHandle(`automation-${automationId}`);
    await handle.delete();
    await assert.rejects(handle.describe(), /not found/i, `the Schedule of automation ${automationId} is gone`);
  }

  function forumCredentials() {
    n += 1;
    const creds = {
      forumClientId: `auto-client-${n}`,
      forumClientSecret: `auto-secret-${n}-zzz`,
      forumUsername: `auto_poster${n}`,
      forumPassword: `auto-pass-${n}-yyy`,
    };
    h.forum.addApp({ clientId: creds.forumClientId, clientSecret: creds.forumClientSecret });
    h.forum.addUser({ username: creds.forumUsername, password: creds.forumPassword });
    return creds;
  }

  async function savedForumAccount(apiKey: string, name = 'Forum account') {
    const response = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: { platform: 'forum', name, credentials: forumCredentials() },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    return response.body.account;
  }

  async function runsOf(automationId: string) {
    return h.db
      .selectFrom('jobs')
      .selectAll()
      .where('kind', '=', 'automation')
      .where(sql`request->>'automationId'`, '=', automationId)
      .orderBy('created_at')
      .execute();
  }

  async function waitForRuns(automationId: string, count: number, timeoutMs = 60_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const runs = await runsOf(automationId);
      const finished = runs.filter((r) => r.status === 'completed' || r.status === 'failed');
      if (finished.length >= count) return finished;
      if (Date.now() > deadline)
        throw new Error(
          `only ${finished.length}/${count} runs finished: ${JSON.stringify(runs.map((r) => [r.status, r.error]))}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  const forumTask = {
    name: 'Daily bee post',
    cron: '0 9 * * 1',
    timezone: 'Europe/Berlin',
    task: 'Post a short tip about rooftop beekeeping to r/rooftop_bees',
    automation_type: 'forum-agent',
  };

  it('stores the automation, creates its Schedule, and runs the first execution at once (its post reaches the forum)', async function () {
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });
    const account = await savedForumAccount(apiKey);
    h.llm.enqueue(
      act(
        'submit_post',
        { community: 'rooftop_bees', title: 'Tip: give your bees water', text: 'A shallow dish with stones works.' },
        'Post the tip',
      ),
      act('done', { success: true, answer: 'posted' }),
    );
    const response = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: { ...forumTask, forum: { mode: 'saved', accountIds: [account.id] } },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const { automation } = response.body;
    assert.deepEqual(Object.keys(automation).sort(), [
      'createdAt',
      'cron',
      'id',
      'isPaused',
      'name',
      'payload',
      'status',
      'timezone',
      'updatedAt',
      'userId',
    ]);
    assert.equal(automation.status, 'active');
    assert.equal(automation.isPaused, false);
    assert.equal(automation.userId, userId);

    const [run] = await waitForRuns(automation.id, 1);
    assert.equal(run.status, 'completed', run.error ?? '');
    const post = h.forum.posts().find((p) => p.title === 'Tip: give your bees water');
    assert.ok(post, 'the first run posted to the fake forum');
    assert.equal(post!.community, 'rooftop_bees');
    assert.equal(post!.author, account.meta.username);
    assert.ok(
      run.logs.some((l) => /submit_post/.test(l)),
      run.logs.join('\n'),
    );
    const tx = (await h.http('GET', '/api/v1/transactions', { apiKey })).body.transactions.find(
      (t: any) => t.jobId === run.id,
    );
    assert.equal(tx.agentName, 'forum-agent');
    assert.ok(tx.cost > 0);
    const logs = (await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey })).body.logs
      .map((l: any) => l.logMessage)
      .join('\n');
    assert.match(logs, /automation "Daily bee post" .* created; first run queued/);

    const description = await h.client.schedule.getHandle(`automation-${automation.id}`).describe();
    assert.equal(description.spec.timezone, 'Europe/Berlin');
    const next = description.info.nextActionTimes[0];
    const berlin = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hour12: false,
    }).format(next);
    assert.equal(berlin, 'Mon 09:00');
  });

  it('fires a seconds-level cron again within the test', async function () {
    this.timeout(60_000);
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const account = await savedForumAccount(apiKey);
    h.llm.enqueue(...Array.from({ length: 6 }, () => act('done', { success: true, answer: 'nothing new today' })));
    const response = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: {
        ...forumTask,
        name: 'Every 3 seconds',
        cron: '*/3 * * * * *',
        timezone: undefined,
        forum: { mode: 'saved', accountIds: [account.id] },
      },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    try {
      const runs = await waitForRuns(response.body.automation.id, 3, 30_000);
      assert.ok(runs.length >= 3);
      assert.ok(
        runs.every((r) => r.status === 'completed'),
        JSON.stringify(runs.map((r) => r.error)),
      );
    } finally {
      await h.client.schedule.getHandle(`automation-${response.body.automation.id}`).delete();
    }
    h.llm.reset();
  });

  it('refuses a cron that fires more often than AUTOMATION_MIN_INTERVAL_MINUTES with a 400 naming the minimum, storing nothing', async function () {
    const stack = await h.startIsolatedStack({
      taskQueues: { platform: 'automations-min-interval-platform', browser: 'automations-min-interval-browser' },
      overrides: { automations: { minIntervalMinutes: 5 } },
      queues: [],
    });
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });
    const account = await savedForumAccount(apiKey);
    for (const cron of ['*/30 * * * * *', '* * * * *', '*/2 * * * *', '@every 1m', '0 0,3 * * * * *']) {
      const response = await h.http('POST', `${stack.baseUrl}/api/v1/automations`, {
        apiKey,
        body: { ...forumTask, cron, forum: { mode: 'saved', accountIds: [account.id] } },
      });
      assert.equal(response.status, 400, `${cron}: ${response.status} ${JSON.stringify(response.body)}`);
      assert.equal(response.body.error.code, 'cron_too_frequent');
      assert.match(response.body.error.message, /at most once every 5 minutes/);
      assert.equal(response.body.error.details[0].path, 'body/cron');
    }
    assert.equal((await h.db.selectFrom('automations').select('id').where('user_id', '=', userId).execute()).length, 0);
  });

  async function logLines(apiKey: string): Promise<string[]> {
    return (await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey })).body.logs.map((l: any) => l.logMessage);
  }

  async function waitFor<T>(
    what: string,
    probe: () => Promise<T | null | undefined | false>,
    timeoutMs = 30_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('skips the scheduled runs of a deactivated account: a system log line each, no job, no LLM call, no charge', async function () {
    this.timeout(90_000);
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });
    const account = await savedForumAccount(apiKey);
    h.llm.enqueue(act('done', { success: true, answer: 'first run' }));
    const response = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: {
        ...forumTask,
        name: 'Deactivated later',
        task: 'Deactivation probe: say done',
        cron: '*/3 * * * * *',
        timezone: undefined,
        forum: { mode: 'saved', accountIds: [account.id] },
      },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const automationId = response.body.automation.id;
    try {
      const [first] = await waitForRuns(automationId, 1);
      assert.equal(first.status, 'completed', first.error ?? '');
      const deactivated = await h.http('PATCH', `/admin/users/${userId}/subscription`, {
        headers: { authorization: `Bearer ${h.config.adminToken}` },
        body: { status: 'inactive' },
      });
      assert.equal(deactivated.status, 200, JSON.stringify(deactivated.body));
      // Wait out a run that may have been admitted just before the switch.
      await waitFor('in-flight runs to end', async () =>
        (await runsOf(automationId)).every((r) => r.status === 'completed' || r.status === 'failed'),
      );
      const jobsBefore = (await runsOf(automationId)).length;
      const debitsBefore = await h.db
        .selectFrom('ledger_entries')
        .select('id')
        .where('user_id', '=', userId)
        .where('kind', '=', 'usage')
        .execute();
      const probeChats = () =>
        h.llm.requests.filter(
          (r) => r.kind === 'chat' && JSON.stringify(r.body.messages).includes('Deactivation probe'),
        ).length;
      const chatsBefore = probeChats();

      const skipped = await waitFor('two skipped runs', async () => {
        const lines = (await logLines(apiKey)).filter((l) =>
          /scheduled run of automation "Deactivated later" skipped: the subscription is not active/.test(l),
        );
        return lines.length >= 2 && lines;
      });
      assert.ok(skipped.length >= 2);
      assert.equal((await runsOf(automationId)).length, jobsBefore, 'no job was created for a skipped run');
      assert.equal(probeChats(), chatsBefore, 'no LLM call was made');
      const debitsAfter = await h.db
        .selectFrom('ledger_entries')
        .select('id')
        .where('user_id', '=', userId)
        .where('kind', '=', 'usage')
        .execute();
      assert.equal(debitsAfter.length, debitsBefore.length, 'nothing was charged');
    } finally {
      await h.client.schedule.getHandle(`automation-${automationId}`).delete();
    }
  });

  it('skips the runs of an account whose wallet has no available balance', async function () {
    const { apiKey, userId } = await h.createUser({ creditUsd: 0 });
    const account = await savedForumAccount(apiKey);
    const response = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: {
        ...forumTask,
        name: 'Unfunded',
        task: 'Unfunded probe: say done',
        forum: { mode: 'saved', accountIds: [account.id] },
      },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const line = await waitFor('the skipped first run', async () =>
      (await logLines(apiKey)).find((l) =>
        /automation "Unfunded" skipped: the wallet has no available balance/.test(l),
      ),
    );
    assert.ok(line);
    assert.equal((await runsOf(response.body.automation.id)).length, 0);
    assert.ok(
      !h.llm.requests.some((r) => JSON.stringify(r.body.messages ?? []).includes('Unfunded probe')),
      'no LLM call was made',
    );
    assert.equal(
      (await h.db.selectFrom('agent_transactions').select('id').where('user_id', '=', userId).execute()).length,
      0,
    );
    await h.client.schedule.getHandle(`automation-${response.body.automation.id}`).delete();
  });

  it('validates inline forum credentials upstream before storing, and masks them in every response', async function () {
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });
    const bad = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: {
        ...forumTask,
        forum: { mode: 'inline', credentials: { forumClientId: 'who', forumClientSecret: 'nope' } },
      },
    });
    assert.equal(bad.status, 400);
    assert.equal((await h.db.selectFrom('automations').select('id').where('user_id', '=', userId).execute()).length, 0);

    const credentials = forumCredentials();
    h.llm.enqueue(
      act('comment', { post_id: h.forum.posts()[0].id, text: 'Great tip!' }),
      act('done', { success: true, answer: 'commented' }),
    );
    const good = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: { ...forumTask, forum: { mode: 'inline', credentials } },
    });
    assert.equal(good.status, 201, JSON.stringify(good.body));
    assert.equal(good.body.automation.payload.forum.credentials.forumClientSecret, '[redacted]');
    assert.equal(good.body.automation.payload.forum.credentials.forumPassword, '[redacted]');
    assert.equal(good.body.automation.payload.forum.credentials.forumClientId, credentials.forumClientId);
    const [run] = await waitForRuns(good.body.automation.id, 1);
    assert.equal(run.status, 'completed', run.error ?? '');
    assert.ok(h.forum.comments().some((c) => c.text === 'Great tip!' && c.author === credentials.forumUsername));
    const listed = await h.http('GET', '/api/v1/automations', { apiKey });
    const everything =
      JSON.stringify(listed.body) +
      JSON.stringify(await h.db.selectFrom('automations').selectAll().execute()) +
      JSON.stringify(run);
    assert.ok(!everything.includes(credentials.forumClientSecret));
    assert.ok(!everything.includes(credentials.forumPassword));
  });

  it('applies every selection rule with 400', async function () {
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const other = await h.createUser();
    const foreign = await savedForumAccount(other.apiKey);
    const cases: [string, Record<string, unknown>][] = [
      ['unknown account id', { forum: { mode: 'saved', accountIds: ['7f1c9c3e-7c49-4d36-9d54-2d1a3a3f9a11'] } }],
      ["another user's account", { forum: { mode: 'saved', accountIds: [foreign.id] } }],
      ['useAll without saved accounts', { forum: { mode: 'saved', useAll: true } }],
      ['a saved selection with neither ids nor useAll', { forum: { mode: 'saved' } }],
      ['no selection at all', {}],
      [
        'microblog inline credentials',
        {
          automation_type: 'microblog-agent',
          microblog: { mode: 'inline', credentials: { username: 'a', email: 'a@example.com', password: 'b' } },
        },
      ],
      ['an invalid cron', { cron: 'every monday', forum: { mode: 'saved', useAll: true } }],
      ['an out-of-range cron', { cron: '99 * * * *', forum: { mode: 'inline', credentials: forumCredentials() } }],
      [
        'an unknown time zone',
        { timezone: 'Mars/Olympus', forum: { mode: 'inline', credentials: forumCredentials() } },
      ],
      ['an unknown automation_type', { automation_type: 'blog-agent' }],
      [
        'a market_mcps item without a uuid',
        { market_mcps: [{ mcp_id: 'x' }], forum: { mode: 'inline', credentials: forumCredentials() } },
      ],
      [
        'proxy_enabled without proxy_country',
        { proxy_enabled: true, forum: { mode: 'inline', credentials: forumCredentials() } },
      ],
    ];
    for (const [what, override] of cases) {
      const response = await h.http('POST', '/api/v1/automations', { apiKey, body: { ...forumTask, ...override } });
      assert.equal(response.status, 400, `${what}: ${response.status} ${JSON.stringify(response.body)}`);
      assert.equal(typeof response.body.error.message, 'string');
    }
    const listed = await h.http('GET', '/api/v1/automations', { apiKey });
    assert.equal(listed.body.meta.total, 0);
  });

  it('refuses with 403 beyond the plan automation limit', async function () {
    const admin = { authorization: `Bearer ${h.config.adminToken}` };
    const created = await h.http('POST', '/admin/users', {
      headers: admin,
      body: { email: `limit-${Date.now()}@example.com`, creditUsd: 5, automationLimit: 1 },
    });
    const { apiKey } = created.body;
    const account = await savedForumAccount(apiKey);
    h.llm.enqueue(act('done', { success: true, answer: 'ok' }));
    const body = { ...forumTask, forum: { mode: 'saved', accountIds: [account.id] } };
    assert.equal((await h.http('POST', '/api/v1/automations', { apiKey, body })).status, 201);
    const refused = await h.http('POST', '/api/v1/automations', { apiKey, body });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'automation_limit_reached');
  });

  it('stores nothing when the Schedule cannot be created', async function () {
    const { apiKey, userId } = await h.createUser({ creditUsd: 5 });
    const account = await savedForumAccount(apiKey);
    const brokenTemporal = new Client({ connection: h.client.connection, namespace: 'no-such-namespace' });
    const server = await listen(
      {
        db: h.db,
        temporal: brokenTemporal,
        config: h.config,
        policy: parseNetworkAllowlist(h.config.networkAllowlist),
        social: socialPlatformsFromConfig(h.config),
        readiness: readinessProbe(h.db, brokenTemporal, () => true),
      },
      0,
      '127.0.0.1',
    );
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const response = await h.http('POST', `${base}/api/v1/automations`, {
        apiKey,
        body: { ...forumTask, forum: { mode: 'saved', accountIds: [account.id] } },
      });
      assert.ok(
        response.status === 503 || response.status === 400,
        `${response.status} ${JSON.stringify(response.body)}`,
      );
      assert.equal(
        (await h.db.selectFrom('automations').select('id').where('user_id', '=', userId).execute()).length,
        0,
      );
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('lists automations with pagination and the pause state read from the Schedule', async function () {
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const account = await savedForumAccount(apiKey);
    h.llm.enqueue(...Array.from({ length: 3 }, () => act('done', { success: true, answer: 'ok' })));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await h.http('POST', '/api/v1/automations', {
        apiKey,
        body: { ...forumTask, name: `Automation ${i}`, forum: { mode: 'saved', accountIds: [account.id] } },
      });
      assert.equal(response.status, 201, JSON.stringify(response.body));
      ids.push(response.body.automation.id);
    }
    await h.client.schedule.getHandle(`automation-${ids[1]}`).pause('operator pause');
    const page1 = await h.http('GET', '/api/v1/automations?pageSize=2', { apiKey });
    assert.deepEqual(page1.body.meta, { page: 1, pageSize: 2, total: 3, totalPages: 2 });
    const page2 = await h.http('GET', '/api/v1/automations?page=2&pageSize=2', { apiKey });
    const all = [...page1.body.automations, ...page2.body.automations];
    assert.equal(new Set(all.map((a: any) => a.id)).size, 3);
    const paused = all.find((a: any) => a.id === ids[1]);
    assert.equal(paused.isPaused, true);
    assert.equal(paused.status, 'paused');
    assert.ok(all.filter((a: any) => a.id !== ids[1]).every((a: any) => a.status === 'active' && a.isPaused === false));
    assert.equal((await h.http('GET', '/api/v1/automations?pageSize=101', { apiKey })).status, 400);
    const other = await h.createUser();
    assert.equal((await h.http('GET', '/api/v1/automations', { apiKey: other.apiKey })).body.meta.total, 0);
    await waitForRuns(ids[2], 1);
  });

  it('records a run with no usable account as a failed job, and reports it to the webhook', async function () {
    const receiver = await startWebhookReceiver();
    try {
      const { apiKey } = await h.createUser({ creditUsd: 5 });
      const account = await savedForumAccount(apiKey, 'Sleeping');
      await h.http('PATCH', `/api/v1/social-accounts/${account.id}`, { apiKey, body: { isActive: false } });
      const webhook_url = receiver.url('/runs');
      const response = await h.http('POST', '/api/v1/automations', {
        apiKey,
        body: { ...forumTask, webhook_url, forum: { mode: 'saved', useAll: true } },
      });
      assert.equal(response.status, 201, JSON.stringify(response.body));
      const [run] = await waitForRuns(response.body.automation.id, 1);
      assert.equal(run.status, 'failed');
      assert.match(run.error ?? '', /no usable forum account for this run: skipped "Sleeping" \(inactive\)/);
      const deadline = Date.now() + 15_000;
      while (receiver.deliveries.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const payload = JSON.parse(receiver.bodies()[0]);
      assert.equal(payload.event, 'job.failed');
      assert.equal(payload.kind, 'automation');
      const tx = (await h.http('GET', '/api/v1/transactions', { apiKey })).body.transactions;
      assert.equal(tx[0].jobId, run.id);
      assert.equal(tx[0].result, 'failed');
    } finally {
      await receiver.close();
    }
  });

  it('acts with each selected account in turn', async function () {
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const first = await savedForumAccount(apiKey, 'First');
    const second = await savedForumAccount(apiKey, 'Second');
    h.llm.enqueue(
      act('submit_post', { community: 'rooftop_bees', title: 'Turn one', text: 'from the first account' }),
      act('done', { success: true, answer: 'first done' }),
      act('submit_post', { community: 'rooftop_bees', title: 'Turn two', text: 'from the second account' }),
      act('done', { success: true, answer: 'second done' }),
    );
    const response = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: { ...forumTask, forum: { mode: 'saved', accountIds: [second.id, first.id] } },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const [run] = await waitForRuns(response.body.automation.id, 1);
    assert.equal(run.status, 'completed', run.error ?? '');
    assert.equal(h.forum.posts().find((p) => p.title === 'Turn one')!.author, second.meta.username);
    assert.equal(h.forum.posts().find((p) => p.title === 'Turn two')!.author, first.meta.username);
    assert.deepEqual(
      (run.result as any).tasks.map((t: any) => t.answer),
      ['first done', 'second done'],
    );
  });

  it('sends the platform traffic of a run through the proxy when proxy_enabled', async function () {
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    const account = await savedForumAccount(apiKey);
    const before = h.proxy.requests.length;
    h.llm.enqueue(
      act('list_community', { community: 'rooftop_bees', sort: 'new', limit: 3 }),
      act('done', { success: true, answer: 'read' }),
    );
    const response = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: {
        ...forumTask,
        proxy_enabled: true,
        proxy_country: 'nl',
        forum: { mode: 'saved', accountIds: [account.id] },
      },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const [run] = await waitForRuns(response.body.automation.id, 1);
    assert.equal(run.status, 'completed', run.error ?? '');
    const through = h.proxy.requests.slice(before);
    assert.ok(
      through.some((r) => r.target.startsWith(`${h.forum.apiBase}/r/rooftop_bees/new`)),
      JSON.stringify(through),
    );
    assert.match(Buffer.from(through[0].authorization!.replace(/^Basic /, ''), 'base64').toString(), /^user-NL:/i);
  });

  it('runs the microblog agent with the saved session and the skills text in its instructions', async function () {
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    h.microblog.addAccount({
      username: 'beekeeper',
      email: 'bee@example.com',
      password: 'hive-pass-123',
      totpSecret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
    });
    const created = await h.http('POST', '/api/v1/social-accounts', {
      apiKey,
      body: {
        platform: 'microblog',
        name: 'Bee',
        credentials: {
          username: 'beekeeper',
          email: 'bee@example.com',
          password: 'hive-pass-123',
          totp_secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
        },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const seen = h.llm.requests.length;
    const loginsBefore = h.microblog.requests.filter((r) => r.path === '/login' && r.method === 'POST').length;
    h.llm.enqueue(
      actMany([
        ['read_timeline', { limit: 5 }],
        ['post', { text: 'Bees are busy today 🐝' }],
      ]),
      act('done', { success: true, answer: 'posted' }),
    );
    const response = await h.http('POST', '/api/v1/automations', {
      apiKey,
      body: {
        name: 'Bee tweets',
        cron: '0 8 * * *',
        task: 'Post about the bees',
        automation_type: 'microblog-agent',
        microblog: { mode: 'saved', useAll: true },
        skills: {
          mode: 'selected',
          selected: [
            {
              provider: 'github',
              externalId: 'x/y/bee-voice',
              name: 'bee-voice',
              skillMdContent: 'Always write like a cheerful beekeeper.',
            },
          ],
        },
      },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const [run] = await waitForRuns(response.body.automation.id, 1);
    assert.equal(run.status, 'completed', run.error ?? '');
    assert.ok(h.microblog.posts().some((p) => p.author === 'beekeeper' && p.text === 'Bees are busy today 🐝'));
    const loginsAfter = h.microblog.requests.filter((r) => r.path === '/login' && r.method === 'POST').length;
    assert.equal(loginsAfter, loginsBefore, 'the saved session was reused, no new login');
    const decision = h.llm.requests.slice(seen).find((r) => Array.isArray(r.body.tools));
    assert.match(JSON.stringify(decision!.body.messages), /Always write like a cheerful beekeeper/);
    // A daily Schedule (08:00 UTC): it would fire during any later run of the day. Deleted here, and shown gone.
    await deleteSchedule(response.body.automation.id);
    assert.deepEqual((decision!.body.tools as any[]).map((t) => t.function.name).sort(), [
      'done',
      'like',
      'post',
      'read_post',
      'read_timeline',
      'reply',
      'repost',
      'search',
    ]);
  });
});
