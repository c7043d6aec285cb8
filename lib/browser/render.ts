import type { Page, Response } from 'playwright-core';

import type { ProxyConfig } from '../net/proxy';
import { SsrfBlockedError, type NetworkPolicy } from '../net/ssrf';
import type { PageCookie } from '../page/cookies';
import { GUARDED_CONTEXT_OPTIONS, guardContext, waitPastRedirectInterstitials, type ContextGuard } from './guarded-routing';
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

async function reachDocument(page: Page, guard: ContextGuard, requestedUrl: string, navigate: () => Promise<unknown>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  try {
    await navigate();
    await waitPastRedirectInterstitials(page, Math.max(1, deadline - Date.now()));
  } catch (error) {
    throw blockedNavigationError(guard) ?? error;
  }
  assertNotErrorPage(page, guard, requestedUrl);
}

function assertNotErrorPage(page: Page, guard: ContextGuard, requestedUrl: string): void {
  if (!page.url().startsWith('chrome-error:')) return;
  throw blockedNavigationError(guard) ?? new Error(`Navigation to ${requestedUrl} failed`);
}

async function settle(page: Page, waitFor: 'load' | 'networkidle', deadline: number): Promise<void> {
  const bounded = (limit: number) => Math.max(1, Math.min(limit, deadline - Date.now()));
  await page.waitForLoadState('load', { timeout: bounded(MAX_LOAD_WAIT_MS) }).catch(() => undefined);
  if (waitFor === 'networkidle') {
    await page.waitForLoadState('networkidle', { timeout: bounded(MAX_NETWORK_IDLE_WAIT_MS) }).catch(() => undefined);
  }
}

async function contentWithRetry(page: Page): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await page.content();
    } catch (error) {
      if (attempt >= 2) throw error;
      await page.waitForLoadState('domcontentloaded', { timeout: 2_000 }).catch(() => undefined);
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
      const waitFor = options.waitFor ?? 'networkidle';
      const navigationStarted = Date.now();
      await reachDocument(page, guard, options.url, () => page.goto(options.url, { waitUntil: 'commit', timeout: timeoutMs }), timeoutMs);
      await settle(page, waitFor, navigationStarted + timeoutMs + MAX_NETWORK_IDLE_WAIT_MS);
      assertNotErrorPage(page, guard, options.url);
      if (options.onLoaded) {
        const hook = options.onLoaded;
        await reachDocument(page, guard, options.url, () => hook(page), timeoutMs);
        await settle(page, waitFor, Date.now() + MAX_NETWORK_IDLE_WAIT_MS);
        assertNotErrorPage(page, guard, options.url);
      }
      const html = await contentWithRetry(page);
      return {
        finalUrl: page.url(),
        status: mainDocumentResponse()?.status() ?? 0,
        html,
        title: await page.title().catch(() => ''),
        browserMs: Math.round(performance.now() - started),
      };
    },
  );
}
