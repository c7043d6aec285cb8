import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { BrowserContextOptions } from 'playwright-core';
import { abortReason, type BrowserPool } from '../browser/pool';
import { GUARDED_CONTEXT_OPTIONS, guardContext } from '../browser/guarded-routing';
import { BrowserSession, contextOptionsFromCheckpoint, type SessionCheckpoint } from './browser/session';
import type { SensitiveItem } from './sensitive-data';
import type { NetworkPolicy } from '../../lib/net/ssrf';
import type { ProxyConfig } from '../../lib/net/proxy';
import type { PageCookie } from '../../lib/page/cookies';

interface LiveSession {
  session: BrowserSession;
  /** Cookies from the request, added just before the first navigation (their domain comes from its URL). */
  pendingCookies: unknown;
  screenshotRequested: boolean;
  /** Lets go of the browser context; `released` settles once its slot is free again. */
  release: () => void;
  released: Promise<unknown>;
  lastUsedAt: number;
  /** The run's keeper currently holding the session; null while nobody does. */
  keeper: string | null;
  /** Closes the session unless a keeper claims it in time. */
  unclaimedTimer: NodeJS.Timeout | null;
  closed: Promise<void>;
  markClosed: () => void;
}

/** A session nobody used for this long belongs to a run that ended without closing it (e.g. terminated). */
const IDLE_SESSION_MS = 30 * 60_000;
/**
 * A session no run holds (its open timed out after it was created, the run was terminated, or the
 * worker of the run's keeper lost it) is closed after this long, so it cannot keep a browser slot.
 */
const DEFAULT_UNCLAIMED_SESSION_MS = 2 * 60_000;
const KEEPER_HEARTBEAT_MS = 2_000;

export interface OpenSessionOptions {
  headless: boolean;
  policy: NetworkPolicy;
  proxy: ProxyConfig | null;
  sensitiveData: SensitiveItem[];
  cookies: unknown;
  checkpoint: SessionCheckpoint | null;
}

export interface OpenControl {
  /** The opening activity's cancellation: stops waiting for a browser slot and never leaves a session behind. */
  signal?: AbortSignal;
  /** Told once when every browser slot is in use and the open has to wait. */
  onWait?: (slotsInUse: number) => void;
}

export interface HoldControl {
  /** The keeper activity's cancellation (its run asked, ended, or continued as new). */
  signal: AbortSignal;
  heartbeat: () => void;
}

/**
 * The browser sessions this worker process holds. Each session's steps are routed to this
 * worker's own task queue (`taskQueue`), so the browser context stays in one place for a whole run.
 * A run holds its session through a keeper (a long heartbeating activity, see `hold`): its heartbeats
 * tell the run this worker is alive however busy it is, and a session no keeper claims is closed.
 */
export function createSessionRegistry(
  pools: { headless: BrowserPool; headed: () => Promise<BrowserPool> },
  options: { unclaimedSessionMs?: number } = {},
) {
  const unclaimedMs = options.unclaimedSessionMs ?? DEFAULT_UNCLAIMED_SESSION_MS;
  const taskQueue = `browser-session-${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const sessions = new Map<string, LiveSession>();
  const sweeper = setInterval(() => {
    for (const [id, live] of sessions) if (Date.now() - live.lastUsedAt > IDLE_SESSION_MS) void registry.close(id);
  }, 60_000);
  sweeper.unref();

  function closeUnlessClaimed(sessionId: string, live: LiveSession) {
    if (live.unclaimedTimer) clearTimeout(live.unclaimedTimer);
    live.unclaimedTimer = setTimeout(() => {
      if (sessions.get(sessionId) === live && live.keeper === null) void registry.close(sessionId);
    }, unclaimedMs);
    live.unclaimedTimer.unref();
  }

  const registry = {
    taskQueue,

    async open(options: OpenSessionOptions, control: OpenControl = {}): Promise<string> {
      const callerSignal = control.signal;
      if (callerSignal?.aborted) throw abortReason(callerSignal);
      const pool = options.headless ? pools.headless : await pools.headed();
      const contextOptions: BrowserContextOptions = {
        ...GUARDED_CONTEXT_OPTIONS,
        viewport: { width: 1280, height: 800 },
        ...(options.checkpoint && contextOptionsFromCheckpoint(options.checkpoint)),
      };
      const sessionId = randomUUID();
      // The caller's cancellation applies until the session exists; after that the session outlives the call.
      const opening = new AbortController();
      const forward = () => opening.abort(callerSignal!.reason);
      callerSignal?.addEventListener('abort', forward, { once: true });
      try {
        const live = await new Promise<LiveSession>((resolve, reject) => {
          let release!: () => void;
          const held = new Promise<void>((r) => (release = r));
          const released: Promise<unknown> = pool
            .withContext(
              contextOptions,
              async (context) => {
                let session: BrowserSession;
                try {
                  const guard = await guardContext(context, { policy: options.policy, proxy: options.proxy });
                  session = options.checkpoint
                    ? await BrowserSession.restore(context, options.checkpoint, {
                        sensitiveData: options.sensitiveData,
                        guard,
                      })
                    : await BrowserSession.open(context, { sensitiveData: options.sensitiveData, guard });
                } catch (err) {
                  reject(opening.signal.aborted ? abortReason(opening.signal) : err);
                  return;
                }
                callerSignal?.removeEventListener('abort', forward);
                if (opening.signal.aborted) {
                  await session.close().catch(() => undefined);
                  reject(abortReason(opening.signal));
                  return;
                }
                let markClosed!: () => void;
                const closed = new Promise<void>((r) => (markClosed = r));
                resolve({
                  session,
                  pendingCookies: options.checkpoint ? undefined : options.cookies,
                  screenshotRequested: false,
                  release,
                  released,
                  lastUsedAt: Date.now(),
                  keeper: null,
                  unclaimedTimer: null,
                  closed,
                  markClosed,
                });
                await held;
              },
              { signal: opening.signal, onWait: control.onWait },
            )
            .catch(reject);
        });
        sessions.set(sessionId, live);
        // Until its run's keeper claims it: if the opening call's answer never reaches the run, nobody will.
        closeUnlessClaimed(sessionId, live);
        return sessionId;
      } finally {
        callerSignal?.removeEventListener('abort', forward);
      }
    },

    get(sessionId: string): LiveSession | undefined {
      const live = sessions.get(sessionId);
      if (live) live.lastUsedAt = Date.now();
      return live;
    },

    /**
     * Holds the session for one keeper of its run until the session closes (resolves) or the keeper is
     * cancelled (rejects with the reason). Heartbeats all the while. A later keeper of the same run (after
     * continue-as-new) takes over; a session left without a keeper is closed after a grace period.
     */
    async hold(sessionId: string, keeperId: string, control: HoldControl): Promise<boolean> {
      const live = sessions.get(sessionId);
      if (!live) return false;
      live.keeper = keeperId;
      if (live.unclaimedTimer) clearTimeout(live.unclaimedTimer);
      live.unclaimedTimer = null;
      control.heartbeat();
      const beat = setInterval(() => control.heartbeat(), KEEPER_HEARTBEAT_MS);
      let onAbort!: () => void;
      const cancelled = new Promise<never>((_, reject) => {
        onAbort = () => reject(abortReason(control.signal));
        if (control.signal.aborted) onAbort();
        else control.signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        await Promise.race([live.closed, cancelled]);
        return true;
      } finally {
        clearInterval(beat);
        control.signal.removeEventListener('abort', onAbort);
        if (live.keeper === keeperId && sessions.get(sessionId) === live) {
          live.keeper = null;
          closeUnlessClaimed(sessionId, live);
        }
      }
    },

    async close(sessionId: string): Promise<void> {
      const live = sessions.get(sessionId);
      if (!live) return;
      sessions.delete(sessionId);
      if (live.unclaimedTimer) clearTimeout(live.unclaimedTimer);
      await live.session.close().catch(() => undefined);
      live.release();
      await live.released;
      live.markClosed();
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
