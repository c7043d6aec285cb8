import type { BrowserContext, BrowserContextOptions, Page, Request, Route } from 'playwright-core';

import type { ProxyConfig } from '../../lib/net/proxy';
import { createByteBudget, fetchBuffered, type ByteBudget, type BufferedResponse } from '../../lib/net/buffered-fetch';
import type { NetworkPolicy, Resolver } from '../../lib/net/ssrf';
import { findFetchError, ssrfRefusal, type FetchError } from '../../lib/net/transport';

/**
 * Options every guarded context must be created with. Service workers fetch outside page routing, so a page could
 * register one and reach the network around the guard; downloads are saved by the browser itself.
 */
export const GUARDED_CONTEXT_OPTIONS = {
  serviceWorkers: 'block',
  acceptDownloads: false,
} as const satisfies BrowserContextOptions;

export type GuardOptions = {
  policy: NetworkPolicy;
  proxy?: ProxyConfig | null;
  /** Name resolution for the guard's checks; the system resolver unless given. */
  resolver?: Resolver;
  /** Budget for each request the page makes, including its redirects. */
  timeoutMs?: number;
  maxBytesPerResponse?: number;
  /**
   * Bytes all the subresources of one page (its images, scripts, fetches and frames, after decoding) may buffer
   * between them; a main-frame navigation starts a fresh budget. Requests beyond it fail.
   */
  maxSubresourceBytesPerPage?: number;
};

export type BlockedRequest = {
  url: string;
  host: string;
  reason: string;
  resourceType: string;
  isMainFrameNavigation: boolean;
};

export type ContextGuard = {
  readonly blocked: BlockedRequest[];
  mainFrameNavigationBlock(): BlockedRequest | undefined;
  /** The latest main-frame navigation the operator's proxy failed (unreachable, or refused it), if any. */
  mainFrameProxyFailure(): FetchError | undefined;
};

type RouteAbortCode = Parameters<Route['abort']>[0];

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_SUBRESOURCE_BYTES_PER_PAGE = 64 * 1024 * 1024;
const SUBRESOURCE_MAX_REDIRECTS = 10;
const MAX_NAVIGATION_REDIRECTS = 10;
const INTERSTITIAL_MARKER = 'data-guarded-redirect';
const STRIPPED_REQUEST_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'accept-encoding',
  'proxy-authorization',
  'proxy-connection',
]);
const STRIPPED_RESPONSE_HEADERS = new Set([
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'trailer',
  'upgrade',
]);

function isMainFrameNavigation(request: Request): boolean {
  if (!request.isNavigationRequest()) return false;
  try {
    return request.frame().parentFrame() === null;
  } catch {
    return false;
  }
}

function pageOf(request: Request): Page | null {
  try {
    return request.frame().page();
  } catch {
    return null;
  }
}

function isRedirect(response: BufferedResponse): boolean {
  return response.status >= 300 && response.status < 400 && !!response.headers.location;
}

function forwardedHeaders(headers: Record<string, string>): Record<string, string> {
  const forwarded: Record<string, string> = { 'accept-encoding': 'gzip, deflate, br' };
  for (const [name, value] of Object.entries(headers)) {
    if (!STRIPPED_REQUEST_HEADERS.has(name.toLowerCase())) forwarded[name.toLowerCase()] = value;
  }
  return forwarded;
}

function fulfilledHeaders(response: BufferedResponse): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (!STRIPPED_RESPONSE_HEADERS.has(name)) headers[name] = value;
  }
  if (response.status >= 300 && response.status < 400) delete headers.location;
  if (response.setCookies.length > 0) headers['set-cookie'] = response.setCookies.join('\n');
  return headers;
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * Playwright continues the hops of a fulfilled 3xx without offering them to the route handler, so a 3xx is
 * never handed to Chromium. A main-frame redirect is answered with a page that navigates to the Location
 * instead: that navigation is a new request and comes back through the route, and the page ends up with the
 * right URL and origin.
 */
function redirectInterstitial(
  response: BufferedResponse,
  requestUrl: string,
): { status: number; headers: Record<string, string>; body: string } {
  const target = new URL(response.headers.location, requestUrl);
  const headers: Record<string, string> = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' };
  if (response.setCookies.length > 0) headers['set-cookie'] = response.setCookies.join('\n');
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    return { status: 502, headers, body: `Redirect to unsupported URL scheme ${escapeAttribute(target.protocol)}` };
  }
  const body =
    `<!doctype html><html ${INTERSTITIAL_MARKER}><head>` +
    `<meta http-equiv="refresh" content="0;url=${escapeAttribute(target.href)}"></head></html>`;
  return { status: 200, headers, body };
}

function abortCodeFor(error: unknown): RouteAbortCode {
  switch (findFetchError(error)?.code) {
    case 'blocked':
    case 'bad_scheme':
      return 'blockedbyclient';
    // The guard's resolver (the policy's, DNS_SERVERS when set) found no such host: the page sees ERR_NAME_NOT_RESOLVED.
    case 'host_not_found':
      return 'namenotresolved';
    case 'timeout':
      return 'timedout';
    default:
      return 'failed';
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

export async function guardContext(context: BrowserContext, options: GuardOptions): Promise<ContextGuard> {
  const blocked: BlockedRequest[] = [];
  const lifetime = new AbortController();
  let consecutiveNavigationRedirects = 0;
  let proxyFailure: FetchError | undefined;
  context.once('close', () => lifetime.abort(new Error('Browser context closed')));
  const subresourceLimit = options.maxSubresourceBytesPerPage ?? DEFAULT_SUBRESOURCE_BYTES_PER_PAGE;
  const pageBudgets = new WeakMap<Page, ByteBudget>();
  const framelessBudget = createByteBudget(subresourceLimit);
  /** A main-frame navigation gets no shared budget (it has its own per-response limit) and starts its page's next one. */
  const budgetFor = (request: Request, mainFrameNavigation: boolean): ByteBudget | undefined => {
    const page = pageOf(request);
    if (!page) return framelessBudget;
    if (mainFrameNavigation) {
      pageBudgets.set(page, createByteBudget(subresourceLimit));
      return undefined;
    }
    let budget = pageBudgets.get(page);
    if (!budget) pageBudgets.set(page, (budget = createByteBudget(subresourceLimit)));
    return budget;
  };

  const record = (request: Request, reason: string, host: string) => {
    blocked.push({
      url: request.url(),
      host,
      reason,
      resourceType: request.resourceType(),
      isMainFrameNavigation: isMainFrameNavigation(request),
    });
  };

  const handle = async (route: Route, request: Request): Promise<void> => {
    const url = request.url();
    if (!/^https?:/i.test(url)) {
      record(request, 'only http: and https: requests are allowed', hostOf(url));
      await route.abort('blockedbyclient');
      return;
    }
    const mainFrameNavigation = isMainFrameNavigation(request);
    try {
      const response = await fetchBuffered(url, {
        policy: options.policy,
        proxy: options.proxy ?? null,
        resolver: options.resolver,
        method: request.method(),
        headers: forwardedHeaders(await request.allHeaders()),
        body: request.postDataBuffer() ?? undefined,
        timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxBytes: options.maxBytesPerResponse,
        budget: budgetFor(request, mainFrameNavigation),
        maxRedirects: mainFrameNavigation ? 0 : SUBRESOURCE_MAX_REDIRECTS,
        signal: lifetime.signal,
      });
      if (mainFrameNavigation && isRedirect(response)) {
        consecutiveNavigationRedirects++;
        if (consecutiveNavigationRedirects > MAX_NAVIGATION_REDIRECTS) {
          await route.fulfill({ status: 508, contentType: 'text/plain', body: 'Too many redirects' });
          return;
        }
        await route.fulfill(redirectInterstitial(response, url));
        return;
      }
      if (mainFrameNavigation) consecutiveNavigationRedirects = 0;
      await route.fulfill({ status: response.status, headers: fulfilledHeaders(response), body: response.body });
    } catch (error) {
      if (lifetime.signal.aborted) return;
      const refusal = ssrfRefusal(error);
      if (refusal) record(request, refusal.reason, refusal.host);
      const failure = findFetchError(error);
      if (mainFrameNavigation && failure?.code === 'proxy') proxyFailure = failure;
      await route.abort(abortCodeFor(error));
    }
  };

  await context.route('**/*', (route, request) => handle(route, request).catch(() => undefined));
  await context.routeWebSocket(/.*/, (socket) => {
    blocked.push({
      url: socket.url(),
      host: hostOf(socket.url()),
      reason: 'WebSockets are not allowed',
      resourceType: 'websocket',
      isMainFrameNavigation: false,
    });
    void socket.close({ code: 1008, reason: 'WebSockets are not allowed' }).catch(() => undefined);
  });

  return {
    blocked,
    mainFrameNavigationBlock: () => [...blocked].reverse().find((entry) => entry.isMainFrameNavigation),
    mainFrameProxyFailure: () => proxyFailure,
  };
}

async function showsRedirectInterstitial(page: Page): Promise<boolean> {
  try {
    return await page.evaluate((marker) => document.documentElement.hasAttribute(marker), INTERSTITIAL_MARKER);
  } catch {
    return true;
  }
}

/** Waits until the main frame holds a real document rather than one of the guard's redirect interstitials. */
export async function waitPastRedirectInterstitials(page: Page, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const remaining = () => Math.max(1, deadline - Date.now());
  for (let hop = 0; hop <= MAX_NAVIGATION_REDIRECTS + 1; hop++) {
    const nextCommit = page
      .waitForEvent('framenavigated', { predicate: (frame) => frame === page.mainFrame(), timeout: remaining() })
      .then(
        () => true,
        () => false,
      );
    await page.waitForLoadState('domcontentloaded', { timeout: remaining() });
    if (!(await showsRedirectInterstitial(page))) return;
    if (!(await nextCommit)) throw new Error(`Redirect from ${page.url()} did not complete within ${timeoutMs} ms`);
  }
  throw new Error(`Too many redirects starting at ${page.url()}`);
}
