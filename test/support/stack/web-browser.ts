import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Where the page tests leave their screenshots for a reviewer (not in the repository). */
export const SCREENSHOT_DIR =
  process.env.WEB_SCREENSHOT_DIR ?? path.join(os.tmpdir(), 'scrape-platform-web-screenshots');

const isLoopback = (hostname: string) =>
  hostname === 'localhost' || hostname === '[::1]' || hostname === '::1' || /^127(\.\d{1,3}){3}$/.test(hostname);

/**
 * A browser context that records every request its pages make and lets only loopback ones through
 * (anything else is aborted and listed in `foreignRequests`), and every console error (a CSP
 * violation is one).
 */
export interface WatchedContext {
  context: BrowserContext;
  requests: string[];
  foreignRequests: string[];
  consoleErrors: string[];
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
}

export async function watchedContext(
  browser: Browser,
  options: { javaScriptEnabled?: boolean } = {},
): Promise<WatchedContext> {
  const context = await browser.newContext({ javaScriptEnabled: options.javaScriptEnabled ?? true });
  const watched: WatchedContext = {
    context,
    requests: [],
    foreignRequests: [],
    consoleErrors: [],
    async newPage() {
      const page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() !== 'error') return;
        // A page answered with an error status (a 404 page the test asked for) is not a failure of the page.
        if (
          /^Failed to load resource: the server responded with a status of \d+/.test(message.text()) &&
          message.location().url === page.url()
        )
          return;
        watched.consoleErrors.push(`${page.url()}: ${message.text()}`);
      });
      page.on('pageerror', (err) => watched.consoleErrors.push(`${page.url()}: ${err.message}`));
      return page;
    },
    close: () => context.close(),
  };
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    watched.requests.push(url);
    const { protocol, hostname } = new URL(url);
    if ((protocol === 'http:' || protocol === 'https:') && isLoopback(hostname)) return route.continue();
    watched.foreignRequests.push(url);
    return route.abort('blockedbyclient');
  });
  return watched;
}

/** Runs axe (WCAG 2.x A and AA and best practices) and fails with the violations, readably. */
export async function assertAccessible(page: Page, where: string): Promise<void> {
  const results = await new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'])
    .analyze();
  const violations = results.violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
  assert.deepEqual(violations, [], `${where}: accessibility violations`);
}

/**
 * WEB_SCREENSHOT_DOCS=1 (scripts/console-screenshots.sh, for docs/console): a 1100×800 view of the
 * page's top instead of the whole page, so each picture stays small.
 */
const DOCS_SHOTS = process.env.WEB_SCREENSHOT_DOCS === '1';

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  if (!DOCS_SHOTS) return void (await page.screenshot({ path: file, fullPage: true }));
  const viewport = page.viewportSize();
  await page.setViewportSize({ width: 1100, height: 800 });
  await page.screenshot({ path: file, type: 'png', fullPage: false, animations: 'disabled' });
  if (viewport) await page.setViewportSize(viewport);
}
