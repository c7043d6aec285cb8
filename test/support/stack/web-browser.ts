import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { headlessChromiumPath } from '../../../lib/config';

/**
 * Where the page tests leave their screenshots for a reviewer (not in the repository). Screenshots are
 * taken only when asked for: WEB_SCREENSHOT_DIR set (npm run docs:screenshots sets it) or
 * WEB_SCREENSHOTS=1 (then in `scrape-platform-web-screenshots` in the system's temporary directory).
 * No test asserts on them, so a plain test run takes none.
 */
export const SCREENSHOT_DIR =
  process.env.WEB_SCREENSHOT_DIR ?? path.join(os.tmpdir(), 'scrape-platform-web-screenshots');
const SCREENSHOTS_WANTED = Boolean(process.env.WEB_SCREENSHOT_DIR) || process.env.WEB_SCREENSHOTS === '1';

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

/** Headless, in the binary the platform's headless browser pool uses (the headless shell when installed). */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: headlessChromiumPath(), args: ['--no-sandbox'] });
}

let shared: Promise<Browser> | undefined;

/**
 * The test process's one Chromium: launched by the first file that asks for it and reused by every later
 * file of the process (a lane of `npm test` runs many), each test in a browser context of its own
 * (watchedContext), so nothing but the process is shared. A file must not close it; Playwright ends it
 * when the process exits. Launched again if it went away (a crash).
 */
export function sharedBrowser(): Promise<Browser> {
  if (!shared) {
    const launching = launchBrowser();
    shared = launching;
    launching.then(
      (browser) =>
        browser.on('disconnected', () => {
          if (shared === launching) shared = undefined;
        }),
      () => {
        if (shared === launching) shared = undefined;
      },
    );
  }
  return shared;
}

/**
 * Sends a sign-in form's POST from here, as the browser would (with the form's token and the cookie
 * that pairs it with the form), and gives `context` the cookie the sign-in sets.
 */
async function signInWithoutTheForm(
  context: WatchedContext,
  baseUrl: string,
  formPath: string,
  field: string,
  value: string,
  cookieName: string,
): Promise<void> {
  const form = await fetch(`${baseUrl}${formPath}`, { redirect: 'manual' });
  assert.equal(form.status, 200, `the form of ${formPath}`);
  const pairing = form.headers.getSetCookie().map((c) => c.split(';')[0]!);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  assert.ok(csrf, `the form of ${formPath} has its token`);
  const signedIn = await fetch(`${baseUrl}${formPath}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: baseUrl,
      'sec-fetch-site': 'same-origin',
      cookie: pairing.join('; '),
    },
    body: new URLSearchParams({ csrf, [field]: value }).toString(),
  });
  assert.equal(signedIn.status, 303, `signed in at ${formPath}`);
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith(`${cookieName}=`) && c.length > cookieName.length + 1);
  assert.ok(cookie, `the sign-in set ${cookieName}`);
  await context.context.addCookies([
    // By domain and path, as the server set it: a cookie given by `url` on http:// cannot be Secure, which `__Host-` needs.
    {
      name: cookieName,
      value: cookie.slice(cookieName.length + 1),
      domain: new URL(baseUrl).hostname,
      path: '/',
      httpOnly: true,
      secure: true,
      sameSite: 'Lax',
    },
  ]);
}

/**
 * Signs `context` in to the console as the owner of `apiKey` without the browser filling the form (see
 * signInWithoutTheForm). For tests whose subject is not signing in: the tests of sign-in itself use the
 * form, with the keyboard, as a person does.
 */
export const signInContext = (context: WatchedContext, baseUrl: string, apiKey: string) =>
  signInWithoutTheForm(context, baseUrl, '/console/sign-in', 'api_key', apiKey, '__Host-console-session');

/**
 * A page of `context` at `start` (path and query), signed in with `apiKey` without the form (signInContext): for
 * the tests that are not about signing in.
 */
export async function signedInPage(context: WatchedContext, baseUrl: string, apiKey: string, start: string) {
  await signInContext(context, baseUrl, apiKey);
  const page = await context.newPage();
  await page.goto(`${baseUrl}${start}`);
  assert.equal(new URL(page.url()).pathname, new URL(start, baseUrl).pathname, 'signed in');
  return page;
}

/** Signs `context` in to the review queue with the admin token, without the browser filling the form. */
export const operatorSignInContext = (context: WatchedContext, baseUrl: string, adminToken: string) =>
  signInWithoutTheForm(
    context,
    baseUrl,
    '/console/review/sign-in',
    'admin_token',
    adminToken,
    '__Host-console-operator',
  );

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

/**
 * Every page template and state axe checks (assertAccessible), each once, by the test named beside it.
 * A state is a template with something that changes its markup: empty or filled, a problem shown, a
 * decision made. A page a test reaches again in a state listed here is not checked again.
 */
export const AXE_CHECKED = [
  // test/web/market.test.ts
  '/market', // the search form, no query
  '/market with results', // cards of both markets
  'tool listing',
  'agent listing',
  '404 page',
  // test/web/console.test.ts
  'sign-in page',
  'sign-in page with an error',
  'console home', // also the state after the CSRF refusals (same page, same account kind)
  'run page while the run goes on',
  'run page after the run ended', // updated in place by the live events
  'usage page',
  'usage page with a hold',
  // test/web/console-pages.test.ts
  'runs list',
  'runs list with nothing matching',
  'run page with its Temporal link', // an ended run's page as the server renders it
  'automations page',
  'credentials page',
  'credential chooser: listings in use',
  'credential chooser: listings found', // the results swapped in by htmx
  'credential form',
  'credential form with a problem',
  'credential issued',
  'credentials list',
  'credential revoked',
  'credential budgets',
  'api key page with a problem',
  // test/web/try-and-buy.test.ts
  'try page',
  'try page with a new credential',
  'try page with a result',
  'try page refusing a credential',
  'try page with a form error',
  'buy page',
  'run form',
  'agent run page',
  // test/web/provider.test.ts
  'provider page',
  'provider page without submissions',
  'operator sign-in',
  'review queue',
  'review queue after a decision', // the one run with colour contrast
  'review queue with an agent submission',
  'review queue with a revision',
  'review queue with an LLM review',
  'wizard: source',
  'wizard: report, tools and prices',
  'wizard: a problem with the listing',
  'wizard: the source needs credentials',
  'wizard: OpenAPI report, tools and prices',
  'wizard: an unmarked secret parameter',
  'wizard: events to verify',
  'wizard: verification started',
  'wizard: verification complete',
  'wizard: tools and event prices',
  'wizard in revision mode: source',
  'wizard in revision mode: report, tools and prices',
  'wizard in revision mode: a problem with the revision',
  // test/web/oauth.test.ts
  'consent page',
  'connected apps', // also the page test/web/oauth-sdk-client.test.ts revokes from
  // test/web/oauth-clients.test.ts
  'choose a listing',
  'consent beside an earlier grant',
] as const;
export type AxeCheckedState = (typeof AXE_CHECKED)[number];
const axeChecked = new Set<AxeCheckedState>();

/**
 * Runs axe (WCAG 2.x A and AA and best practices) and fails with the violations, readably.
 *
 * Each page template is checked once per state (empty, filled, with a problem, after a decision, ...):
 * the list of what is checked, and by which test, is AXE_CHECKED above; a test checks a state with
 * `assertAccessible(page, 'that state')`, and a state checked a second time in the same process fails
 * (a new state gets a new name in the list). Colour contrast depends on the one stylesheet all pages
 * share, so it is checked in one run only (`colorContrast: true`, on the review queue after a decision:
 * badges, findings, buttons, a status message); the other runs leave that rule out. axe runs in the
 * page itself (legacy mode: no second page opened for its last step; the pages have no frames).
 */
export async function assertAccessible(
  page: Page,
  where: AxeCheckedState,
  options: { colorContrast?: boolean } = {},
): Promise<void> {
  assert.ok(!axeChecked.has(where), `${where}: already checked by axe in this process (AXE_CHECKED: once per state)`);
  axeChecked.add(where);
  const builder = new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'])
    .setLegacyMode(true);
  if (!options.colorContrast) builder.disableRules(['color-contrast']);
  const results = await builder.analyze();
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
  if (!SCREENSHOTS_WANTED) return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  if (!DOCS_SHOTS) return void (await page.screenshot({ path: file, fullPage: true }));
  const viewport = page.viewportSize();
  await page.setViewportSize({ width: 1100, height: 800 });
  await page.screenshot({ path: file, type: 'png', fullPage: false, animations: 'disabled' });
  if (viewport) await page.setViewportSize(viewport);
}
