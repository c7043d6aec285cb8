import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { useHarness, type Harness, type IsolatedStack } from '../support/stack/harness';
import { act } from '../support/agent-script';

/**
 * A forum or microblog write whose answer arrives after the tool call timed out has still been made
 * upstream; the retry must find it there instead of posting again.
 */
describe('social writes are made once even when their answer is lost to a timeout', function () {
  let h: Harness;
  let base: string;
  let stack: IsolatedStack;
  let n = 0;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    // Tool calls time out after 3 s here, so an answer 7 s late is lost and the call is retried.
    stack = await h.startIsolatedStack({
      taskQueues: { platform: 'social-once-platform', browser: 'social-once-browser' },
      overrides: { agent: { maxSteps: 10, deadlineMs: 600_000, socialToolTimeoutMs: 3_000 } },
      queues: ['platform'],
    });
    base = stack.baseUrl;
    h.forum.addCommunity('slow_answers', [{ title: 'A thread to answer', text: 'Comments welcome.' }]);
  });

  after(() => stack?.stop());

  async function runOnce(apiKey: string, body: Record<string, unknown>) {
    const response = await h.http('POST', `${base}/api/v1/automations`, {
      apiKey,
      body: { cron: '0 9 * * 1', ...body },
    });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const automationId = response.body.automation.id;
    try {
      const deadline = Date.now() + 90_000;
      for (;;) {
        const [run] = await h.db
          .selectFrom('jobs')
          .selectAll()
          .where('kind', '=', 'automation')
          .where(sql`request->>'automationId'`, '=', automationId)
          .execute();
        if (run && (run.status === 'completed' || run.status === 'failed')) return run;
        if (Date.now() > deadline) throw new Error(`the run did not finish: ${JSON.stringify(run ?? null)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      await h.client.schedule.getHandle(`automation-${automationId}`).delete();
    }
  }

  it('posts and comments on the forum once', async function () {
    this.timeout(120_000);
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    n += 1;
    const credentials = {
      forumClientId: `once-client-${n}`,
      forumClientSecret: `once-secret-${n}-zzz`,
      forumUsername: `once_poster${n}`,
      forumPassword: `once-pass-${n}-yyy`,
    };
    h.forum.addApp({ clientId: credentials.forumClientId, clientSecret: credentials.forumClientSecret });
    h.forum.addUser({ username: credentials.forumUsername, password: credentials.forumPassword });
    const account = await h.http('POST', `${base}/api/v1/social-accounts`, {
      apiKey,
      body: { platform: 'forum', name: 'Slow forum', credentials },
    });
    assert.equal(account.status, 201, JSON.stringify(account.body));
    const thread = h.forum.posts().find((p) => p.title === 'A thread to answer')!;

    h.forum.delayAnswers({ path: '/api/submit', ms: 7_000 });
    h.forum.delayAnswers({ path: '/api/comment', ms: 7_000 });
    h.llm.enqueue(
      act('submit_post', {
        community: 'slow_answers',
        title: 'Posted exactly once',
        text: 'The first answer to this post is slow.',
      }),
      act('comment', { post_id: thread.id, text: 'A comment made exactly once.' }),
      act('done', { success: true, answer: 'posted and commented' }),
    );
    const run = await runOnce(apiKey, {
      name: 'Slow forum',
      task: 'Post and comment',
      automation_type: 'forum-agent',
      forum: { mode: 'saved', accountIds: [account.body.account.id] },
    });
    assert.equal(run.status, 'completed', run.error ?? '');
    assert.equal(h.forum.posts().filter((p) => p.title === 'Posted exactly once').length, 1, 'one post');
    assert.equal(h.forum.comments().filter((c) => c.text === 'A comment made exactly once.').length, 1, 'one comment');
    const logs = run.logs.join('\n');
    assert.match(
      logs,
      /forum submit_post of task 1 step 1 was already done \(an earlier attempt wrote it\); not repeated/,
    );
    assert.match(logs, /forum comment of task 1 step 2 was already done \(an earlier attempt wrote it\); not repeated/);
    const steps = (run.result as any).steps;
    assert.ok(steps[0].outcomes[0].ok, 'the model was told the post succeeded');
    assert.match(steps[0].outcomes[0].message, /"name":"t3_/);
  });

  it('posts on the microblog once', async function () {
    this.timeout(120_000);
    const { apiKey } = await h.createUser({ creditUsd: 5 });
    h.microblog.addAccount({ username: 'slow_poster', email: 'slow@example.com', password: 'slow-pass-123' });
    const account = await h.http('POST', `${base}/api/v1/social-accounts`, {
      apiKey,
      body: {
        platform: 'microblog',
        name: 'Slow microblog',
        credentials: { username: 'slow_poster', email: 'slow@example.com', password: 'slow-pass-123' },
      },
    });
    assert.equal(account.status, 201, JSON.stringify(account.body));

    h.microblog.delayAnswers({ path: '/api/posts', ms: 7_000 });
    h.llm.enqueue(act('post', { text: 'Said exactly once 🐝' }), act('done', { success: true, answer: 'posted' }));
    const run = await runOnce(apiKey, {
      name: 'Slow microblog',
      task: 'Post about the bees',
      automation_type: 'microblog-agent',
      microblog: { mode: 'saved', useAll: true },
    });
    assert.equal(run.status, 'completed', run.error ?? '');
    assert.equal(h.microblog.posts().filter((p) => p.text === 'Said exactly once 🐝').length, 1, 'one post');
    assert.match(
      run.logs.join('\n'),
      /microblog post of task 1 step 1 was already done \(an earlier attempt wrote it\); not repeated/,
    );
  });
});
