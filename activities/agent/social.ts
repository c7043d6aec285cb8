import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { BoundedCache } from '../../lib/bounded-cache';
import type { Db } from '../../db/connect';
import type { AgentAction, SocialPlatform } from '../../db/schema';
import { saveObservedStep, findStepOutcomes } from '../../db/repos/agent-steps';
import {
  getAccount,
  saveAccountSession,
  unsealCredentials,
  unsealSession,
  sealSession,
} from '../../db/repos/social-accounts';
import { createForumClient, ForumError, type ForumClient, type ForumCredentials } from '../../lib/social/forum';
import {
  createMicroblogClient,
  loginMicroblog,
  MicroblogError,
  type MicroblogClient,
  type MicroblogCredentials,
  type MicroblogSession,
} from '../../lib/social/microblog';
import type { SocialPlatforms } from '../../lib/social/platforms';
import { appendJobLog, getJob } from '../../db/repos/jobs';
import { unsealRequestSecrets } from '../../lib/request-secrets';
import type { ObservationSummary } from './session';

/** Which account a social task acts with: a saved account id, or inline forum credentials. */
export type AccountRef = { kind: 'saved'; accountId: string; label: string } | { kind: 'inline'; label: string };

export interface SocialRunRequest {
  platform: SocialPlatform;
  accounts: AccountRef[];
  proxy_enabled?: boolean;
  proxy_country?: string;
}

const MAX_RESULT_CHARS = 6_000;
/** Clients are cached per worker so write pacing holds across a run's steps; bounded, so one-off runs do not pile up. */
const CLIENT_CACHE = { maxEntries: 200, idleMs: 30 * 60_000 };

/** Cache key of a client: the sealed credentials it was built from (a credentials change re-seals, so it gets a new client). */
function clientKey(sealedCredentials: string, proxy: string): string {
  return `${createHash('sha256').update(sealedCredentials).digest('hex').slice(0, 32)}|${proxy}`;
}

/** Tool calls that change something upstream, by platform. */
const WRITES: Record<SocialPlatform, ReadonlySet<string>> = {
  forum: new Set(['submit_post', 'comment', 'reply', 'vote']),
  microblog: new Set(['post', 'reply', 'like', 'repost']),
};
/** An earlier attempt's write is looked for among posts created this long before the call was first scheduled. */
const CLOCK_SKEW_MS = 2 * 60_000;
const OWN_POSTS_SEARCHED = 50;

/** One write of a run: job + task + step + action, the same across every retry of the call. */
export function socialWriteKey(input: {
  jobId: string;
  taskIndex: number;
  step: number;
  actionIndex: number;
  action: AgentAction;
}): string {
  return `${input.jobId}:${input.taskIndex}:${input.step}:${input.actionIndex}:${input.action.name}`;
}

function createdSince(createdAt: string | null, since: number): boolean {
  if (!createdAt) return true;
  const at = Date.parse(createdAt);
  return Number.isNaN(at) || at >= since;
}

function forumParent(id: unknown, prefix: 't1_' | 't3_'): string {
  const value = String(id);
  return value.startsWith(prefix) ? value : `${prefix}${value}`;
}

/** A failure after which the platform may still have made the write (no answer, or a server error). */
function outcomeUnknown(err: unknown): boolean {
  if (err instanceof ForumError) return err.code === 'upstream' && (err.status === undefined || err.status >= 500);
  if (err instanceof MicroblogError) return err.code === 'upstream';
  return true;
}

function shorten(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length > MAX_RESULT_CHARS ? text.slice(0, MAX_RESULT_CHARS) + '…(truncated)' : text;
}

export interface SocialToolDeps {
  db: Db;
  masterKey: Buffer;
  platforms: SocialPlatforms;
}

/** Runs the forum and microblog tools with the run's account; one client per account per worker, so write pacing holds. */
export function createSocialToolActivities(deps: SocialToolDeps) {
  const { db, masterKey, platforms } = deps;
  const forumClients = new BoundedCache<ForumClient>(CLIENT_CACHE);
  const microblogClients = new BoundedCache<MicroblogClient>(CLIENT_CACHE);

  async function accountFor(jobId: string, taskIndex: number) {
    const job = await getJob(db, jobId);
    const request = job.request as unknown as SocialRunRequest;
    const ref = request.accounts[taskIndex];
    return { job, request, ref };
  }

  /** The automation's own proxy setting wins over an account's proxy_country. */
  function runProxy(request: SocialRunRequest) {
    if (!request.proxy_enabled) return undefined;
    const proxy = platforms.proxyFor(request.proxy_country ?? 'US');
    if (!proxy)
      throw new ForumError(
        'upstream',
        'proxy_enabled was requested but this service has no proxy configured (operator: set PROXY_URL)',
      );
    return proxy;
  }

  async function forumClient(
    jobId: string,
    ref: AccountRef,
    userId: string,
    request: SocialRunRequest,
  ): Promise<ForumClient> {
    const proxyKey = request.proxy_enabled ? `proxy:${request.proxy_country}` : 'direct';
    let unsealCurrent: () => ForumCredentials;
    let key: string;
    if (ref.kind === 'saved') {
      const row = await getAccount(db, userId, ref.accountId);
      key = clientKey(row.credentials_sealed, proxyKey);
      unsealCurrent = () => unsealCredentials<ForumCredentials>(masterKey, row);
    } else {
      const job = await getJob(db, jobId);
      key = clientKey(job.sealed_secrets ?? '', proxyKey);
      unsealCurrent = () =>
        (unsealRequestSecrets(masterKey, jobId, job.sealed_secrets) as { forumCredentials: ForumCredentials })
          .forumCredentials;
    }
    let client = forumClients.get(key);
    if (!client) {
      client = createForumClient(platforms.forum, unsealCurrent(), {
        policy: platforms.policy,
        proxy: runProxy(request) ?? null,
      });
      forumClients.set(key, client);
    }
    return client;
  }

  async function microblogClient(ref: AccountRef, userId: string, request: SocialRunRequest): Promise<MicroblogClient> {
    if (ref.kind !== 'saved') throw new Error('The microblog agent acts with saved accounts only');
    const row = await getAccount(db, userId, ref.accountId);
    const key = clientKey(row.credentials_sealed, request.proxy_enabled ? `proxy:${request.proxy_country}` : 'direct');
    let client = microblogClients.get(key);
    if (client) return client;
    if (!platforms.microblogBase)
      throw new MicroblogError('upstream', 'The microblog platform is not configured on this service');
    const credentials = unsealCredentials<MicroblogCredentials>(masterKey, row);
    const override = runProxy(request);
    const transport = override
      ? { policy: platforms.policy, proxy: override }
      : platforms.microblogTransport(credentials);
    const base = platforms.microblogBase;
    const relogin = async (): Promise<MicroblogSession> => {
      const session = await loginMicroblog(base, credentials, transport);
      await saveAccountSession(db, row.id, sealSession(masterKey, row.id, session));
      return session;
    };
    const session = unsealSession<MicroblogSession>(masterKey, row) ?? (await relogin());
    client = createMicroblogClient(base, session, transport, { relogin });
    microblogClients.set(key, client);
    return client;
  }

  async function runForumTool(client: ForumClient, action: AgentAction): Promise<unknown> {
    const a = action.args as Record<string, any>;
    switch (action.name) {
      case 'search_posts':
        return client.search(String(a.query), { community: a.community, limit: a.limit ?? 10 });
      case 'list_community':
        return client.listCommunity(String(a.community), a.sort === 'hot' ? 'hot' : 'new', a.limit ?? 10);
      case 'read_post':
        return client.getPost(String(a.post_id), { commentLimit: a.comment_limit ?? 20 });
      case 'submit_post':
        return client.submitPost({ community: String(a.community), title: String(a.title), text: a.text, url: a.url });
      case 'comment':
        return client.comment({ parentId: forumParent(a.post_id, 't3_'), text: String(a.text) });
      case 'reply':
        return client.comment({ parentId: forumParent(a.comment_id, 't1_'), text: String(a.text) });
      case 'vote':
        return client.vote({ id: String(a.id), direction: Number(a.direction) as 1 | 0 | -1 });
      default:
        throw new ForumError('bad_request', `unknown forum tool "${action.name}"`);
    }
  }

  async function runMicroblogTool(client: MicroblogClient, action: AgentAction): Promise<unknown> {
    const a = action.args as Record<string, any>;
    switch (action.name) {
      case 'search':
        return client.search(String(a.query), { limit: a.limit ?? 10 });
      case 'read_timeline':
        return client.timeline({ limit: a.limit ?? 10 });
      case 'read_post':
        return client.getPost(String(a.post_id));
      case 'post':
        return client.post(String(a.text));
      case 'reply':
        return client.reply(String(a.post_id), String(a.text));
      case 'like':
        await client.like(String(a.post_id));
        return { liked: a.post_id };
      case 'repost':
        await client.repost(String(a.post_id));
        return { reposted: a.post_id };
      default:
        throw new MicroblogError('bad_request', `unknown microblog tool "${action.name}"`);
    }
  }

  /**
   * Finds, among the account's own newest posts, the write an earlier attempt of this call made: same
   * content in the same place, created after the call was first scheduled. Votes and likes need no search
   * (doing them twice changes nothing).
   */
  async function findForumWrite(client: ForumClient, action: AgentAction, since: number): Promise<unknown> {
    const a = action.args as Record<string, any>;
    if (action.name === 'submit_post') {
      const community = String(a.community)
        .trim()
        .replace(/^\/?r\//i, '')
        .toLowerCase();
      const post = (await client.ownPosts(OWN_POSTS_SEARCHED)).find(
        (p) =>
          p.community.toLowerCase() === community &&
          p.title === String(a.title).trim() &&
          (a.url !== undefined ? p.url === String(a.url) : p.text === String(a.text ?? '')) &&
          createdSince(p.createdAt, since),
      );
      return post && { id: post.id, name: post.name, url: post.url };
    }
    if (action.name === 'comment' || action.name === 'reply') {
      const parentId = action.name === 'comment' ? forumParent(a.post_id, 't3_') : forumParent(a.comment_id, 't1_');
      const comment = (await client.ownComments(OWN_POSTS_SEARCHED)).find(
        (c) => c.parentId === parentId && c.text === String(a.text) && createdSince(c.createdAt, since),
      );
      return comment && { id: comment.id, name: comment.name, parentId: comment.parentId };
    }
    return undefined;
  }

  async function findMicroblogWrite(client: MicroblogClient, action: AgentAction, since: number): Promise<unknown> {
    const a = action.args as Record<string, any>;
    if (action.name !== 'post' && action.name !== 'reply') return undefined;
    const replyTo = action.name === 'reply' ? String(a.post_id) : undefined;
    const post = (await client.ownPosts({ limit: OWN_POSTS_SEARCHED })).find(
      (p) => p.text === String(a.text) && p.replyToId === replyTo && createdSince(p.createdAt || null, since),
    );
    return post && { id: post.id, url: post.url };
  }

  /** Writes whose first attempt has not answered yet, on this worker, by write key. */
  const writesInFlight = new Map<string, Promise<unknown>>();

  /**
   * A write is done at most once per key (job + task + step + action): a retry first looks upstream for what an
   * earlier attempt wrote and waits for an attempt still running here, and a write whose answer was lost is looked for
   * before it is reported as failed.
   */
  async function writeOnce(
    key: string,
    jobId: string,
    write: () => Promise<unknown>,
    find: (since: number) => Promise<unknown>,
    what: string,
  ): Promise<unknown> {
    const info = Context.current().info;
    const since = info.scheduledTimestampMs - CLOCK_SKEW_MS;
    const found = async (why: string) => {
      const earlier = await find(since);
      if (earlier !== undefined) await appendJobLog(db, jobId, `${what} was already done (${why}); not repeated`);
      return earlier;
    };
    if (info.attempt > 1) {
      let earlier = await found('an earlier attempt wrote it');
      const running = earlier === undefined ? writesInFlight.get(key) : undefined;
      if (running) earlier = (await running.catch(() => undefined)) ?? (await found('an earlier attempt wrote it'));
      if (earlier !== undefined) return earlier;
    }
    const attempt = write();
    writesInFlight.set(key, attempt);
    try {
      return await attempt;
    } catch (err) {
      if (outcomeUnknown(err)) {
        const earlier = await found('its answer was lost').catch(() => undefined);
        if (earlier !== undefined) return earlier;
      }
      throw err;
    } finally {
      if (writesInFlight.get(key) === attempt) writesInFlight.delete(key);
    }
  }

  return {
    /** The social agent's observation: who it acts as, and the full results of its previous step. */
    async observeSocial(input: { jobId: string; taskIndex: number; step: number }): Promise<ObservationSummary> {
      const { request, ref } = await accountFor(input.jobId, input.taskIndex);
      const previous = await findStepOutcomes(db, { ...input, step: input.step - 1 });
      const results = previous?.outcomes.length
        ? previous.outcomes.map((o) => `${o.action}: ${o.ok ? 'ok' : 'FAILED'}\n${o.message}`).join('\n\n')
        : '(nothing yet)';
      const observation = `Platform: ${request.platform}\nActing as account: ${ref.label}\nResults of your previous step:\n${results}`;
      const values = {
        url: `${request.platform}:`,
        observation,
        screenshot: null,
        goal: null,
        actions: '[]',
        outcomes: '[]',
      };
      await saveObservedStep(db, input, values);
      return {
        url: values.url,
        stateHash: createHash('sha256').update(results).digest('hex').slice(0, 16),
        readable: true,
        screenshot: false,
      };
    },

    /** One platform tool call; upstream errors come back as a failed outcome the model can react to. */
    async executeSocialTool(input: {
      jobId: string;
      taskIndex: number;
      step: number;
      actionIndex: number;
      action: AgentAction;
    }) {
      const { job, request, ref } = await accountFor(input.jobId, input.taskIndex);
      const { action } = input;
      const writes = WRITES[request.platform].has(action.name);
      const what = `${request.platform} ${action.name} of task ${input.taskIndex + 1} step ${input.step}`;
      try {
        let result: unknown;
        if (request.platform === 'forum') {
          const client = await forumClient(input.jobId, ref, job.user_id, request);
          result = writes
            ? await writeOnce(
                socialWriteKey(input),
                input.jobId,
                () => runForumTool(client, action),
                (since) => findForumWrite(client, action, since),
                what,
              )
            : await runForumTool(client, action);
        } else {
          const client = await microblogClient(ref, job.user_id, request);
          result = writes
            ? await writeOnce(
                socialWriteKey(input),
                input.jobId,
                () => runMicroblogTool(client, action),
                (since) => findMicroblogWrite(client, action, since),
                what,
              )
            : await runMicroblogTool(client, action);
        }
        return { ok: true, navigated: false, message: shorten(result) };
      } catch (err) {
        if (
          err instanceof MicroblogError &&
          err.upstreamCode === 'already_reposted' &&
          Context.current().info.attempt > 1
        ) {
          return { ok: true, navigated: false, message: shorten({ reposted: action.args.post_id }) };
        }
        if (err instanceof ForumError || err instanceof MicroblogError) {
          return { ok: false, navigated: false, message: `${request.platform} refused: ${err.message}` };
        }
        throw err;
      }
    },
  };
}

export type SocialToolActivities = ReturnType<typeof createSocialToolActivities>;
