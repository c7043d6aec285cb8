import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from 'playwright-core';

export type BrowserPoolOptions = {
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

export interface BrowserPool {
  withContext<T>(options: BrowserContextOptions, fn: (context: BrowserContext) => Promise<T>): Promise<T>;
  browserVersion(): Promise<string>;
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

class Semaphore {
  private available: number;
  private readonly waiters: Array<() => void> = [];

  constructor(size: number) {
    this.available = size;
  }

  async acquire(): Promise<void> {
    if (this.available > 0) {
      this.available--;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.available++;
  }
}

export function createBrowserPool(options: BrowserPoolOptions): BrowserPool {
  if (!Number.isInteger(options.maxContexts) || options.maxContexts < 1) {
    throw new Error(`maxContexts must be a positive integer, got ${options.maxContexts}`);
  }
  const executablePath = options.executablePath ?? process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  const args = options.isolateNetwork === false ? BASE_ARGS : [...BASE_ARGS, ...NETWORK_ISOLATION_ARGS];
  const slots = new Semaphore(options.maxContexts);
  let launching: Promise<Browser> | null = null;
  let closed = false;

  function launch(): Promise<Browser> {
    const attempt = chromium
      .launch({ executablePath, headless: options.headless ?? true, args })
      .then((browser) => {
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
    async withContext(contextOptions, fn) {
      await slots.acquire();
      try {
        const context = await newContext(contextOptions);
        try {
          return await fn(context);
        } finally {
          await context.close().catch(() => undefined);
        }
      } finally {
        slots.release();
      }
    },

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
