import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createSocialToolActivities } from '../../activities/agent/social';
import { BoundedCache } from '../../lib/bounded-cache';
import { socialPlatformsFromConfig } from '../../lib/social/platforms';
import { useHarness, type Harness } from '../support/stack/harness';

describe('per-worker social clients', function () {
  describe('BoundedCache', function () {
    it('drops the least recently used entry beyond maxEntries', function () {
      const cache = new BoundedCache<number>({ maxEntries: 2, idleMs: 60_000 });
      cache.set('a', 1);
      cache.set('b', 2);
      assert.equal(cache.get('a'), 1);
      cache.set('c', 3);
      assert.equal(cache.size, 2);
      assert.equal(cache.get('b'), undefined);
      assert.equal(cache.get('a'), 1);
      assert.equal(cache.get('c'), 3);
    });

    it('drops entries left unused for longer than idleMs', function () {
      let now = 0;
      const cache = new BoundedCache<string>({ maxEntries: 10, idleMs: 1_000, now: () => now });
      cache.set('kept', 'k');
      cache.set('idle', 'i');
      now = 900;
      assert.equal(cache.get('kept'), 'k');
      now = 1_500;
      assert.equal(cache.get('idle'), undefined);
      assert.equal(cache.get('kept'), 'k');
      now = 10_000;
      cache.set('new', 'n');
      assert.equal(cache.size, 1);
    });

    it('stays bounded however many one-off keys arrive (one per inline-credential run)', function () {
      const cache = new BoundedCache<object>({ maxEntries: 50, idleMs: 60_000 });
      for (let run = 0; run < 10_000; run++) cache.set(`inline-run-${run}`, {});
      assert.equal(cache.size, 50);
    });
  });

  describe('forum client of a saved account', function () {
    let h: Harness;

    before(async function () {
      this.timeout(180_000);
      h = await useHarness();
    });

    function forumUser() {
      const n = randomBytes(4).toString('hex');
      const creds = {
        forumClientId: `cache-client-${n}`,
        forumClientSecret: `cache-secret-${n}`,
        forumUsername: `cache_user_${n}`,
        forumPassword: `cache-pass-${n}`,
      };
      h.forum.addApp({ clientId: creds.forumClientId, clientSecret: creds.forumClientSecret });
      h.forum.addUser({ username: creds.forumUsername, password: creds.forumPassword });
      return creds;
    }

    it('acts with the new credentials after a credentials PATCH', async function () {
      this.timeout(60_000);
      const { apiKey, userId } = await h.createUser();
      const community = `cache_${randomBytes(4).toString('hex')}`;
      h.forum.addCommunity(community);
      const first = forumUser();
      const created = await h.http('POST', '/api/v1/social-accounts', {
        apiKey,
        body: { platform: 'forum', name: 'Cache test', credentials: first },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const accountId = created.body.account.id;
      const jobId = randomUUID();
      await h.db
        .insertInto('jobs')
        .values({
          id: jobId,
          user_id: userId,
          kind: 'automation',
          status: 'processing',
          request: JSON.stringify({ platform: 'forum', accounts: [{ kind: 'saved', accountId, label: 'Cache test' }] }),
          workflow_id: `automation-${jobId}`,
        })
        .execute();
      const activities = createSocialToolActivities({
        db: h.db,
        masterKey: h.config.masterKey,
        platforms: socialPlatformsFromConfig(h.config),
      });
      // The tool runs as the worker runs it: inside an activity context (first attempt, scheduled now).
      const env = new MockActivityEnvironment(
        { attempt: 1, scheduledTimestampMs: Date.now() },
        { logger: new DefaultLogger('ERROR') },
      );
      const post = async (step: number) => {
        const outcome: Awaited<ReturnType<typeof activities.executeSocialTool>> = await env.run(
          activities.executeSocialTool,
          {
            jobId,
            taskIndex: 0,
            step,
            actionIndex: 0,
            action: { name: 'submit_post', args: { community, title: `post ${step}`, text: 'hello' } },
          },
        );
        assert.ok(outcome.ok, outcome.message);
        return h.forum.posts().find((p) => p.community === community && p.title === `post ${step}`)!.author;
      };

      assert.equal(await post(1), first.forumUsername);
      const second = forumUser();
      const patched = await h.http('PATCH', `/api/v1/social-accounts/${accountId}`, {
        apiKey,
        body: { credentials: second },
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.equal(await post(2), second.forumUsername);
    });
  });
});
