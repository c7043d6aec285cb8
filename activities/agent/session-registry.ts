import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { BrowserContextOptions } from 'playwright-core';
import type { BrowserPool } from '../../lib/browser/pool';
import { GUARDED_CONTEXT_OPTIONS, guardContext } from '../../lib/browser/guarded-routing';
import { BrowserSession, contextOptionsFromCheckpoint, type SessionCheckpoint } from '../../lib/agent/browser-session';
import type { SensitiveItem } from '../../lib/agent/sensitive-data';
import type { NetworkPolicy } from '../../lib/net/ssrf';
import type { ProxyConfig } from '../../lib/net/proxy';
import type { PageCookie } from '../../lib/page/cookies';

interface LiveSession {
  session: BrowserSession;
  /** Cookies from the request, added just before the first navigation (their domain comes from its URL). */
  pendingCookies: unknown;
  screenshotRequested: boolean;
  release: () => void;
  lastUsedAt: number;
}

/** A session nobody used for this long belongs to a run that ended without closing it (e.g. terminated). */
const IDLE_SESSION_MS = 30 * 60_000;

export interface OpenSessionOptions {
  headless: boolean;
  policy: NetworkPolicy;
  proxy: ProxyConfig | null;
  sensitiveData: SensitiveItem[];
  cookies: unknown;
  checkpoint: SessionCheckpoint | null;
}

/**
 * The browser sessions this worker process holds. Each session's steps are routed to this
 * worker's own task queue (`taskQueue`), so the browser context stays in one place for a whole run.
 */
export function createSessionRegistry(pools: { headless: BrowserPool; headed: () => Promise<BrowserPool> }) {
  const taskQueue = `browser-session-${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const sessions = new Map<string, LiveSession>();
  const sweeper = setInterval(() => {
    for (const [id, live] of sessions) if (Date.now() - live.lastUsedAt > IDLE_SESSION_MS) void registry.close(id);
  }, 60_000);
  sweeper.unref();

  const registry = {
    taskQueue,

    async open(options: OpenSessionOptions): Promise<string> {
      const pool = options.headless ? pools.headless : await pools.headed();
      const contextOptions: BrowserContextOptions = {
        ...GUARDED_CONTEXT_OPTIONS,
        viewport: { width: 1280, height: 800 },
        ...(options.checkpoint && contextOptionsFromCheckpoint(options.checkpoint)),
      };
      const sessionId = randomUUID();
      const opened = new Promise<LiveSession>((resolve, reject) => {
        let release!: () => void;
        const held = new Promise<void>((r) => (release = r));
        void pool
          .withContext(contextOptions, async (context) => {
            try {
              const guard = await guardContext(context, { policy: options.policy, proxy: options.proxy });
              const session = options.checkpoint
                ? await BrowserSession.restore(context, options.checkpoint, { sensitiveData: options.sensitiveData, guard })
                : await BrowserSession.open(context, { sensitiveData: options.sensitiveData, guard });
              resolve({ session, pendingCookies: options.checkpoint ? undefined : options.cookies, screenshotRequested: false, release, lastUsedAt: Date.now() });
            } catch (err) {
              reject(err);
              return;
            }
            await held;
          })
          .catch(reject);
      });
      const live = await opened;
      sessions.set(sessionId, live);
      return sessionId;
    },

    get(sessionId: string): LiveSession | undefined {
      const live = sessions.get(sessionId);
      if (live) live.lastUsedAt = Date.now();
      return live;
    },

    async close(sessionId: string): Promise<void> {
      const live = sessions.get(sessionId);
      if (!live) return;
      sessions.delete(sessionId);
      await live.session.close().catch(() => undefined);
      live.release();
    },

    async closeAll(): Promise<void> {
      clearInterval(sweeper);
      await Promise.all([...sessions.keys()].map((id) => registry.close(id)));
    },

    size: () => sessions.size,
  };
  return registry;
}

export type SessionRegistry = ReturnType<typeof createSessionRegistry>;
export type { PageCookie };
