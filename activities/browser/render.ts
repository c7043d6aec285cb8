import type { Page, Request, Response } from 'playwright-core';

import type { ProxyConfig } from '../../lib/net/proxy';
import { SsrfBlockedError, type NetworkPolicy } from '../../lib/net/ssrf';
import type { PageCookie } from '../../lib/page/cookies';
import {
  GUARDED_CONTEXT_OPTIONS,
  guardContext,
  waitPastRedirectInterstitials,
  type ContextGuard,
} from './guarded-routing';
import type { BrowserPool } from './pool';

export type RenderOptions = {
  url: string;
  cookies?: PageCookie[];
  policy: NetworkPolicy;
  proxy?: ProxyConfig | null;
  timeoutMs?: number;
  waitFor?: 'load' | 'networkidle';
  /** Runs once the page has settled, before its HTML is captured; anything it triggers is waited for again. */
  onLoaded?: (page: Page) => Promise<void>;
  /** Aborting it stops waiting for a browser slot or closes the page's context (the render rejects). */
  signal?: AbortSignal;
};

export type RenderedPage = {
  finalUrl: string;
  status: number;
  html: string;
  title: string;
  browserMs: number;
};

const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_LOAD_WAIT_MS = 10_000;
const MAX_NETWORK_IDLE_WAIT_MS = 5_000;
/** How long capturing may wait for navigations the page starts on its own (or onLoaded starts). */
const MAX_CAPTURE_WAIT_MS = 15_000;
const MAX_CAPTURE_ATTEMPTS = 6;
const VIEWPORT = { width: 1366, height: 768 };

function desktopUserAgent(browserVersion: string): string {
  const major = browserVersion.split('.')[0] || '130';
  return `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Safari/537.36`;
}

function trackMainDocumentResponses(page: Page): () => Response | null {
  let latest: Response | null = null;
  page.on('response', (response) => {
    const request = response.request();
    if (request.isNavigationRequest() && response.frame() === page.mainFrame()) latest = response;
  });
  return () => latest;
}

function blockedNavigationError(guard: ContextGuard): SsrfBlockedError | null {
  const block = guard.mainFrameNavigationBlock();
  return block ? new SsrfBlockedError(block.host, `navigation blocked by SSRF guard: ${block.reason}`) : null;
}

async function reachDocument(
  page: Page,
  guard: ContextGuard,
  requestedUrl: string,
  navigate: () => Promise<unknown>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  try {
    await navigate();
    await waitPastRedirectInterstitials(page, Math.max(1, deadline - Date.now()));
  } catch (error) {
    throw blockedNavigationError(guard) ?? guard.mainFrameProxyFailure() ?? error;
  }
  assertNotErrorPage(page, guard, requestedUrl);
}

function assertNotErrorPage(page: Page, guard: ContextGuard, requestedUrl: string): void {
  if (!page.url().startsWith('chrome-error:')) return;
  throw (
    blockedNavigationError(guard) ?? guard.mainFrameProxyFailure() ?? new Error(`Navigation to ${requestedUrl} failed`)
  );
}

async function settle(page: Page, waitFor: 'load' | 'networkidle', deadline: number): Promise<void> {
  const bounded = (limit: number) => Math.max(1, Math.min(limit, deadline - Date.now()));
  await page.waitForLoadState('load', { timeout: bounded(MAX_LOAD_WAIT_MS) }).catch(() => undefined);
  if (waitFor === 'networkidle') {
    await page.waitForLoadState('networkidle', { timeout: bounded(MAX_NETWORK_IDLE_WAIT_MS) }).catch(() => undefined);
  }
}

/** Counts main-frame navigation requests in flight (each redirect hop is one), so capturing can wait for them. */
interface NavigationTracker {
  inFlight(): boolean;
  /** Resolves once no main-frame navigation request is in flight, or after `timeoutMs`. */
  idle(timeoutMs: number): Promise<void>;
}

function trackMainFrameNavigations(page: Page): NavigationTracker {
  const pending = new Set<Request>();
  let waiters: (() => void)[] = [];
  const isMainFrameNavigation = (request: Request) => {
    try {
      return request.isNavigationRequest() && request.frame() === page.mainFrame();
    } catch {
      return false; // a service-worker request has no frame
    }
  };
  const done = (request: Request) => {
    if (!pending.delete(request) || pending.size > 0) return;
    const ready = waiters;
    waiters = [];
    for (const wake of ready) wake();
  };
  page.on('request', (request) => {
    if (isMainFrameNavigation(request)) pending.add(request);
  });
  page.on('requestfinished', done);
  page.on('requestfailed', done);
  page.on('close', () => [...pending].forEach(done));
  return {
    inFlight: () => pending.size > 0,
    idle(timeoutMs) {
      if (pending.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(finish, Math.max(1, timeoutMs));
        function finish() {
          clearTimeout(timer);
          waiters = waiters.filter((w) => w !== finish);
          resolve();
        }
        waiters.push(finish);
      });
    },
  };
}

const NAVIGATING = /page is navigating|execution context was destroyed|navigation/i;

/**
 * Reads the page's HTML once the navigations it started have settled. A page (or onLoaded) that
 * navigates by script can still commit a new document while the HTML is read; then Playwright
 * refuses ("the page is navigating and changing the content"), and the read is retried on the
 * document the navigation brings, within MAX_CAPTURE_ATTEMPTS and the deadline.
 */
async function captureContent(
  page: Page,
  guard: ContextGuard,
  tracker: NavigationTracker,
  waitFor: 'load' | 'networkidle',
  requestedUrl: string,
  deadline: number,
): Promise<string> {
  const remaining = () => Math.max(1, deadline - Date.now());
  for (let attempt = 1; ; attempt++) {
    // Navigations in flight first (each redirect hop is a request), then whatever document they brought.
    for (let round = 0; tracker.inFlight() && round < MAX_CAPTURE_ATTEMPTS && Date.now() < deadline; round++) {
      await tracker.idle(remaining());
      await waitPastRedirectInterstitials(page, remaining()).catch(() => undefined);
      await settle(page, waitFor, deadline);
    }
    assertNotErrorPage(page, guard, requestedUrl);
    try {
      return await page.content();
    } catch (error) {
      if (
        attempt >= MAX_CAPTURE_ATTEMPTS ||
        Date.now() >= deadline ||
        !NAVIGATING.test(String((error as Error)?.message))
      )
        throw error;
      // A document was committed while reading: wait for it to load (and past any redirect interstitial), then read again.
      await waitPastRedirectInterstitials(page, remaining()).catch(() => undefined);
      await settle(page, waitFor, deadline);
    }
  }
}

export async function renderPage(pool: BrowserPool, options: RenderOptions): Promise<RenderedPage> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const userAgent = desktopUserAgent(await pool.browserVersion());
  return pool.withContext(
    { ...GUARDED_CONTEXT_OPTIONS, userAgent, viewport: VIEWPORT, locale: 'en-US' },
    async (context) => {
      const started = performance.now();
      if (options.cookies?.length) await context.addCookies(options.cookies);
      const guard = await guardContext(context, { policy: options.policy, proxy: options.proxy, timeoutMs });
      const page = await context.newPage();
      const mainDocumentResponse = trackMainDocumentResponses(page);
      const navigations = trackMainFrameNavigations(page);
      const waitFor = options.waitFor ?? 'networkidle';
      const navigationStarted = Date.now();
      await reachDocument(
        page,
        guard,
        options.url,
        () => page.goto(options.url, { waitUntil: 'commit', timeout: timeoutMs }),
        timeoutMs,
      );
      await settle(page, waitFor, navigationStarted + timeoutMs + MAX_NETWORK_IDLE_WAIT_MS);
      assertNotErrorPage(page, guard, options.url);
      if (options.onLoaded) {
        const hook = options.onLoaded;
        await reachDocument(page, guard, options.url, () => hook(page), timeoutMs);
        await settle(page, waitFor, Date.now() + MAX_NETWORK_IDLE_WAIT_MS);
        assertNotErrorPage(page, guard, options.url);
      }
      const html = await captureContent(
        page,
        guard,
        navigations,
        waitFor,
        options.url,
        Date.now() + MAX_CAPTURE_WAIT_MS,
      );
      return {
        finalUrl: page.url(),
        status: mainDocumentResponse()?.status() ?? 0,
        html,
        title: await page.title().catch(() => ''),
        browserMs: Math.round(performance.now() - started),
      };
    },
    { signal: options.signal },
  );
}
