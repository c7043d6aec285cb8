import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from 'playwright-core';
import { headlessChromiumPath } from '../../lib/config';

export type BrowserPoolOptions = {
  /** Default: headless, the headless shell when installed (headlessChromiumPath); headed, CHROMIUM_PATH. */
  executablePath?: string;
  headless?: boolean;
  maxContexts: number;
  /**
   * Points Chromium at an unreachable proxy and disables non-proxied WebRTC UDP, so traffic that escapes
   * request interception (preconnects, frameless requests, WebRTC) cannot reach any network. Only contexts
   * whose requests are all fulfilled by a route handler (see guardContext) work with this on.
   */
  isolateNetwork?: boolean;
};

/** How a caller of `withContext` can stop early and learn that it has to wait. */
export interface ContextControl {
  /**
   * Aborting it stops waiting for a free slot (the slot is never taken), or closes the context the
   * callback is using; either way `withContext` then rejects with the signal's reason.
   */
  signal?: AbortSignal;
  /** Called once, before waiting, when every slot is in use. */
  onWait?: (slotsInUse: number) => void;
}

export interface BrowserPool {
  withContext<T>(
    options: BrowserContextOptions,
    fn: (context: BrowserContext) => Promise<T>,
    control?: ContextControl,
  ): Promise<T>;
  browserVersion(): Promise<string>;
  /** Contexts open right now, and callers waiting for one. */
  usage(): { inUse: number; waiting: number };
  close(): Promise<void>;
}

const BASE_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

const NETWORK_ISOLATION_ARGS = [
  '--proxy-server=http://127.0.0.1:9',
  '--proxy-bypass-list=<-loopback>',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--dns-prefetch-disable',
];

export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error
    ? signal.reason
    : new Error(signal.reason === undefined ? 'aborted' : String(signal.reason));
}

/** Slots handed out first come, first served; a waiter whose signal aborts leaves the queue without taking one. */
class Semaphore {
  private available: number;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly size: number) {
    this.available = size;
  }

  tryAcquire(): boolean {
    if (this.available === 0) return false;
    this.available--;
    return true;
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const index = this.waiters.indexOf(grant);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(abortReason(signal!));
      };
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiters.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.available++;
  }

  inUse(): number {
    return this.size - this.available;
  }

  waiting(): number {
    return this.waiters.length;
  }
}

export function createBrowserPool(options: BrowserPoolOptions): BrowserPool {
  if (!Number.isInteger(options.maxContexts) || options.maxContexts < 1) {
    throw new Error(`maxContexts must be a positive integer, got ${options.maxContexts}`);
  }
  const headless = options.headless ?? true;
  const executablePath =
    options.executablePath ?? (headless ? headlessChromiumPath() : (process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'));
  const args = options.isolateNetwork === false ? BASE_ARGS : [...BASE_ARGS, ...NETWORK_ISOLATION_ARGS];
  const slots = new Semaphore(options.maxContexts);
  let launching: Promise<Browser> | null = null;
  let closed = false;

  function launch(): Promise<Browser> {
    const attempt = chromium.launch({ executablePath, headless, args }).then((browser) => {
      browser.on('disconnected', () => {
        if (launching === attempt) launching = null;
      });
      return browser;
    });
    attempt.catch(() => {
      if (launching === attempt) launching = null;
    });
    return attempt;
  }

  async function connectedBrowser(): Promise<Browser> {
    for (let attempt = 0; attempt < 3; attempt++) {
      if (closed) throw new Error('Browser pool is closed');
      const current = (launching ??= launch());
      const browser = await current;
      if (browser.isConnected()) return browser;
      if (launching === current) launching = null;
    }
    throw new Error('Chromium disconnected right after launch');
  }

  async function newContext(contextOptions: BrowserContextOptions): Promise<BrowserContext> {
    const browser = await connectedBrowser();
    try {
      return await browser.newContext(contextOptions);
    } catch (error) {
      if (browser.isConnected()) throw error;
      return (await connectedBrowser()).newContext(contextOptions);
    }
  }

  return {
    async withContext(contextOptions, fn, control = {}) {
      const { signal } = control;
      if (signal?.aborted) throw abortReason(signal);
      if (!slots.tryAcquire()) {
        control.onWait?.(slots.inUse());
        await slots.acquire(signal);
      }
      try {
        if (signal?.aborted) throw abortReason(signal);
        const context = await newContext(contextOptions);
        const closeOnAbort = () => void context.close().catch(() => undefined);
        signal?.addEventListener('abort', closeOnAbort, { once: true });
        try {
          if (signal?.aborted) throw abortReason(signal);
          return await fn(context);
        } catch (error) {
          // A context closed under the callback makes it fail with Playwright's "closed" errors; report why.
          throw signal?.aborted ? abortReason(signal) : error;
        } finally {
          signal?.removeEventListener('abort', closeOnAbort);
          await context.close().catch(() => undefined);
        }
      } finally {
        slots.release();
      }
    },

    usage: () => ({ inUse: slots.inUse(), waiting: slots.waiting() }),

    async browserVersion() {
      return (await connectedBrowser()).version();
    },

    async close() {
      closed = true;
      const current = launching;
      launching = null;
      const browser = await current?.catch(() => null);
      await browser?.close().catch(() => undefined);
    },
  };
}
