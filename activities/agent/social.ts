import { createHash } from 'node:crypto';
import { BoundedCache } from '../../lib/bounded-cache';
import type { Db } from '../../db/connect';
import type { AgentAction, SocialPlatform } from '../../db/schema';
import { unsealCredentials, unsealSession, sealSession } from '../../db/repos/social-accounts';
import { createForumClient, ForumError, type ForumClient, type ForumCredentials } from '../../lib/social/forum';
import { createMicroblogClient, loginMicroblog, MicroblogError, type MicroblogClient, type MicroblogCredentials, type MicroblogSession } from '../../lib/social/microblog';
import type { SocialPlatforms } from '../../lib/social/platforms';
import { getJob } from '../../db/repos/jobs';
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
    if (!proxy) throw new ForumError('upstream', 'proxy_enabled was requested but this service has no proxy configured (operator: set PROXY_URL)');
    return proxy;
  }

  async function forumClient(jobId: string, ref: AccountRef, userId: string, request: SocialRunRequest): Promise<ForumClient> {
    const proxyKey = request.proxy_enabled ? `proxy:${request.proxy_country}` : 'direct';
    let unsealCurrent: () => ForumCredentials;
    let key: string;
    if (ref.kind === 'saved') {
      const row = await db.selectFrom('social_accounts').selectAll().where('id', '=', ref.accountId).where('user_id', '=', userId).executeTakeFirstOrThrow();
      key = clientKey(row.credentials_sealed, proxyKey);
      unsealCurrent = () => unsealCredentials<ForumCredentials>(masterKey, row);
    } else {
      const job = await getJob(db, jobId);
      key = clientKey(job.sealed_secrets ?? '', proxyKey);
      unsealCurrent = () => (unsealRequestSecrets(masterKey, jobId, job.sealed_secrets) as { forumCredentials: ForumCredentials }).forumCredentials;
    }
    let client = forumClients.get(key);
    if (!client) {
      client = createForumClient(platforms.forum, unsealCurrent(), { policy: platforms.policy, proxy: runProxy(request) ?? null });
      forumClients.set(key, client);
    }
    return client;
  }

  async function microblogClient(ref: AccountRef, userId: string, request: SocialRunRequest): Promise<MicroblogClient> {
    if (ref.kind !== 'saved') throw new Error('The microblog agent acts with saved accounts only');
    const row = await db.selectFrom('social_accounts').selectAll().where('id', '=', ref.accountId).where('user_id', '=', userId).executeTakeFirstOrThrow();
    const key = clientKey(row.credentials_sealed, request.proxy_enabled ? `proxy:${request.proxy_country}` : 'direct');
    let client = microblogClients.get(key);
    if (client) return client;
    if (!platforms.microblogBase) throw new MicroblogError('upstream', 'The microblog platform is not configured on this service');
    const credentials = unsealCredentials<MicroblogCredentials>(masterKey, row);
    const override = runProxy(request);
    const transport = override ? { policy: platforms.policy, proxy: override } : platforms.microblogTransport(credentials);
    const base = platforms.microblogBase;
    const relogin = async (): Promise<MicroblogSession> => {
      const session = await loginMicroblog(base, credentials, transport);
      await db.updateTable('social_accounts').set({ session_sealed: sealSession(masterKey, row.id, session), updated_at: new Date() }).where('id', '=', row.id).execute();
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
        return client.comment({ parentId: String(a.post_id).startsWith('t3_') ? String(a.post_id) : `t3_${a.post_id}`, text: String(a.text) });
      case 'reply':
        return client.comment({ parentId: String(a.comment_id).startsWith('t1_') ? String(a.comment_id) : `t1_${a.comment_id}`, text: String(a.text) });
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

  return {
    /** The social agent's observation: who it acts as, and the full results of its previous step. */
    async observeSocial(input: { jobId: string; taskIndex: number; step: number }): Promise<ObservationSummary> {
      const { request, ref } = await accountFor(input.jobId, input.taskIndex);
      const previous = await db
        .selectFrom('agent_steps')
        .select('outcomes')
        .where('job_id', '=', input.jobId)
        .where('task_index', '=', input.taskIndex)
        .where('step', '=', input.step - 1)
        .executeTakeFirst();
      const results = previous?.outcomes.length ? previous.outcomes.map((o) => `${o.action}: ${o.ok ? 'ok' : 'FAILED'}\n${o.message}`).join('\n\n') : '(nothing yet)';
      const observation = `Platform: ${request.platform}\nActing as account: ${ref.label}\nResults of your previous step:\n${results}`;
      const values = { url: `${request.platform}:`, observation, screenshot: null, goal: null, actions: '[]', outcomes: '[]' };
      await db
        .insertInto('agent_steps')
        .values({ job_id: input.jobId, task_index: input.taskIndex, step: input.step, ...values })
        .onConflict((oc) => oc.columns(['job_id', 'task_index', 'step']).doUpdateSet(values))
        .execute();
      return { url: values.url, stateHash: createHash('sha256').update(results).digest('hex').slice(0, 16), readable: true, screenshot: false };
    },

    /** One platform tool call; upstream errors come back as a failed outcome the model can react to. */
    async executeSocialTool(input: { jobId: string; taskIndex: number; step: number; actionIndex: number; action: AgentAction }) {
      const { job, request, ref } = await accountFor(input.jobId, input.taskIndex);
      try {
        const result =
          request.platform === 'forum'
            ? await runForumTool(await forumClient(input.jobId, ref, job.user_id, request), input.action)
            : await runMicroblogTool(await microblogClient(ref, job.user_id, request), input.action);
        return { ok: true, navigated: false, message: shorten(result) };
      } catch (err) {
        if (err instanceof ForumError || err instanceof MicroblogError) {
          return { ok: false, navigated: false, message: `${request.platform} refused: ${err.message}` };
        }
        throw err;
      }
    },
  };
}

export type SocialToolActivities = ReturnType<typeof createSocialToolActivities>;
