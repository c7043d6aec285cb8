import type { ElementHandle, Frame, Page, Request } from 'playwright-core';

import {
  DETACHED_RETRY_SETTLE_MS,
  ELEMENT_INDEX_ATTRIBUTE,
  inPage,
  isDetachedDuringSwap,
  isWebUrl,
  settlePage,
  type BrowserSession,
} from './session';
import { resolvePlaceholders } from '../sensitive-data';

export type BrowserToolName =
  | 'navigate'
  | 'click'
  | 'type'
  | 'select_option'
  | 'press_key'
  | 'scroll'
  | 'go_back'
  | 'wait'
  | 'switch_tab'
  | 'open_tab'
  | 'screenshot'
  | 'extract'
  | 'done';

export type ToolDefinition = {
  type: 'function';
  function: { name: BrowserToolName; description: string; parameters: Record<string, unknown> };
};

export type VisionMode = 'auto' | 'visual' | 'text_only';

export type BrowserAction = { name: string; args: Record<string, unknown> };

export type ActionResult = {
  ok: boolean;
  /** What happened, or why it failed; never contains secret values. */
  message: string;
  navigated: boolean;
  newTab?: boolean;
  /** Set by `screenshot`: attach a screenshot to the next observation. */
  screenshotRequested?: boolean;
};

/** Tools the agent loop answers itself; `executeAction` refuses them. */
export const AGENT_LOOP_TOOLS: ReadonlySet<BrowserToolName> = new Set(['extract', 'done']);

const MAX_WAIT_SECONDS = 10;
const MAX_SCROLL_PAGES = 10;
const ELEMENT_ACTION_TIMEOUT_MS = 5_000;
const GO_BACK_TIMEOUT_MS = 10_000;
const MAX_ECHOED_TEXT = 100;
const QUIET_PERIOD_MS = 400;
const TYPING_QUIET_PERIOD_MS = 150;
/** The longest an action waits for a tab it is seen to open. */
const NEW_TAB_WAIT_MS = 10_000;

const indexProperty = {
  type: 'integer',
  minimum: 1,
  description: 'The [index] of an element in the latest observation',
};

function tool(
  name: BrowserToolName,
  description: string,
  properties: Record<string, unknown>,
  required: string[],
): ToolDefinition {
  return {
    type: 'function',
    function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
  };
}

export const BROWSER_TOOLS: readonly ToolDefinition[] = Object.freeze([
  tool('navigate', 'Load a URL in the current tab.', { url: { type: 'string', description: 'Absolute http(s) URL' } }, [
    'url',
  ]),
  tool(
    'click',
    'Click an interactive element. If it opens a new tab, that tab becomes the current one.',
    { index: indexProperty },
    ['index'],
  ),
  tool(
    'type',
    'Replace the content of an input, textarea or editable element with text. For a sensitive value write its placeholder <secret>ID</secret>; it is filled in only on the sites that secret is allowed for.',
    {
      index: indexProperty,
      text: { type: 'string' },
      submit: { type: 'boolean', description: 'Press Enter afterwards, e.g. to submit a search or login form' },
    },
    ['index', 'text'],
  ),
  tool(
    'select_option',
    'Choose an option of a <select> element by its value or its visible label.',
    { index: indexProperty, value: { type: 'string', description: 'Option value or label' } },
    ['index', 'value'],
  ),
  tool(
    'press_key',
    'Press a key or key combination in the focused element, using Playwright key names such as Enter, Escape, Tab, ArrowDown, PageDown, Backspace or Control+A.',
    { key: { type: 'string' } },
    ['key'],
  ),
  tool(
    'scroll',
    'Scroll the page to see more of it.',
    {
      direction: { type: 'string', enum: ['up', 'down'] },
      pages: {
        type: 'number',
        minimum: 0.1,
        maximum: MAX_SCROLL_PAGES,
        description: 'Viewport heights to scroll; default 1',
      },
    },
    ['direction'],
  ),
  tool('go_back', 'Go back to the previous page in the current tab.', {}, []),
  tool(
    'wait',
    'Wait for the page to change, e.g. for content that is still loading.',
    { seconds: { type: 'number', minimum: 0, maximum: MAX_WAIT_SECONDS } },
    ['seconds'],
  ),
  tool(
    'switch_tab',
    'Make another open tab the current one.',
    { index: { type: 'integer', minimum: 0, description: 'Tab index from the Tabs line' } },
    ['index'],
  ),
  tool(
    'open_tab',
    'Open a URL in a new tab and make it the current one.',
    { url: { type: 'string', description: 'Absolute http(s) URL' } },
    ['url'],
  ),
  tool(
    'screenshot',
    'Attach a screenshot of the visible part of the page to the next observation, e.g. when the page text is not enough to understand it.',
    {},
    [],
  ),
  tool(
    'extract',
    'Answer a question from the full content of the current page (more than the observation shows).',
    { question: { type: 'string', description: 'What to find or extract from the page' } },
    ['question'],
  ),
  tool(
    'done',
    'Finish the task: give the answer and/or structured data, and whether the task succeeded.',
    {
      answer: { type: 'string' },
      data: { type: 'object', description: 'Structured result, if the task asks for one' },
      success: { type: 'boolean' },
    },
    ['success'],
  ),
]);

export function toolsFor(options: { vision: VisionMode }): ToolDefinition[] {
  return BROWSER_TOOLS.filter((definition) => definition.function.name !== 'screenshot' || options.vision === 'auto');
}

class ActionFailure extends Error {}

type Outcome = { description: string; navigated?: boolean };

type ResolvedElement = { handle: ElementHandle<Element>; tag: string; summary: string };

function fail(message: string): never {
  throw new ActionFailure(message);
}

function integerArg(args: Record<string, unknown>, name: string, minimum: number): number {
  const raw = args[name];
  const value = typeof raw === 'string' && /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum)
    fail(`"${name}" must be an integer of at least ${minimum}`);
  return value;
}

function numberArg(args: Record<string, unknown>, name: string, fallback?: number): number {
  const raw = args[name] ?? fallback;
  const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(`"${name}" must be a number`);
  return value;
}

function stringArg(args: Record<string, unknown>, name: string): string {
  const value = args[name];
  if (typeof value !== 'string') fail(`"${name}" must be a string`);
  return value;
}

function booleanArg(args: Record<string, unknown>, name: string): boolean {
  const value = args[name];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') fail(`"${name}" must be true or false`);
  return value;
}

function quoted(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return `'${oneLine.length > MAX_ECHOED_TEXT ? `${oneLine.slice(0, MAX_ECHOED_TEXT - 1)}…` : oneLine}'`;
}

function targetUrl(raw: string, currentUrl: string): string {
  const trimmed = raw.trim();
  if (!trimmed) fail('"url" is empty');
  let url: URL;
  try {
    if (/^https?:\/\//i.test(trimmed)) url = new URL(trimmed);
    else if (/^[/?#.]/.test(trimmed) && isWebUrl(currentUrl)) url = new URL(trimmed, currentUrl);
    else if (/^[a-z][a-z0-9+.-]*:(?!\d)/i.test(trimmed))
      fail(`only http and https URLs can be opened, not ${quoted(trimmed.split(':')[0] + ':')}`);
    else url = new URL(`https://${trimmed}`);
  } catch (error) {
    if (error instanceof ActionFailure) throw error;
    fail(`${quoted(trimmed)} is not a valid URL`);
  }
  return url.href;
}

type ElementFacts = { tag: string; label: string };

function describeElement(element: Element): ElementFacts {
  const tag = element.tagName.toLowerCase();
  const input = element as HTMLInputElement;
  const isButtonInput = tag === 'input' && ['submit', 'button', 'reset'].includes(input.type);
  const candidates = [
    tag === 'input' || tag === 'select' || tag === 'textarea' ? '' : (element as HTMLElement).innerText,
    element.getAttribute('aria-label'),
    isButtonInput ? input.value : '',
    element.getAttribute('placeholder'),
    element.getAttribute('title'),
    element.getAttribute('name'),
  ];
  const label =
    candidates.map((value) => (value ?? '').replace(/\s+/g, ' ').trim()).find((value) => value.length > 0) ?? '';
  return { tag, label: label.slice(0, 80) };
}

async function elementByIndex(page: Page, index: number): Promise<ResolvedElement> {
  const locator = page.locator(`[${ELEMENT_INDEX_ATTRIBUTE}="${index}"]`);
  const count = await locator.count();
  if (count === 0)
    fail(`there is no element [${index}] on the current page; the page may have changed since the last observation`);
  if (count > 1) fail(`element [${index}] is ambiguous on the current page; observe the page again`);
  const handle = await locator.elementHandle({ timeout: ELEMENT_ACTION_TIMEOUT_MS });
  if (!handle) fail(`element [${index}] is gone`);
  const facts = await handle.evaluate(inPage(describeElement));
  return {
    handle,
    tag: facts.tag,
    summary: `[${index}] <${facts.tag}>${facts.label ? ` ${quoted(facts.label)}` : ''}`,
  };
}

function release(element: ResolvedElement): void {
  void element.handle.dispose().catch(() => undefined);
}

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const firstLine = message
    .split('\n')[0]
    .replace(/^[\w.]+: /, '')
    .trim();
  const blocker = message.split('\n').find((line) => line.includes('intercepts pointer events'));
  if (blocker)
    return `${firstLine} The element is covered by another element: ${blocker.replace(/^\s*-\s*/, '').trim()}`;
  if (/Target page, context or browser has been closed|Target closed/i.test(message)) return 'the tab was closed';
  return firstLine;
}

async function pageLocation(page: Page): Promise<string> {
  const title = page.isClosed() ? '' : await page.title().catch(() => '');
  return title ? `${page.url()} (${quoted(title)})` : page.url();
}

/** Resolves once the page starts a main-frame navigation or another tab opens, or after `ms`. */
function quietPeriod(page: Page, newPage: Promise<Page>, ms: number): Promise<void> {
  if (ms <= 0 || page.isClosed()) return Promise.resolve();
  const context = page.context();
  const tabsBefore = new Set(context.pages());
  return new Promise((resolve) => {
    let timer = setTimeout(() => finish(), ms);
    const finish = () => {
      clearTimeout(timer);
      page.off('request', onRequest);
      context.off('request', onContextRequest);
      resolve();
    };
    const onRequest = (request: Request) => {
      if (request.isNavigationRequest() && request.frame() === page.mainFrame()) finish();
    };
    // A tab being opened (a target=_blank link, window.open) shows first as a navigation request of a frame
    // that is not the page's, or of no frame yet; its page event comes only once that navigation is answered,
    // which on a busy machine is later than the quiet period. Then wait for the tab, not the clock.
    const onContextRequest = (request: Request) => {
      if (!request.isNavigationRequest() || !isNewTabNavigation(request, tabsBefore)) return;
      clearTimeout(timer);
      timer = setTimeout(() => finish(), NEW_TAB_WAIT_MS);
    };
    page.on('request', onRequest);
    context.on('request', onContextRequest);
    void newPage.then(finish);
  });
}

/** Whether a navigation request is a tab's that was not open before the action. */
function isNewTabNavigation(request: Request, tabsBefore: ReadonlySet<Page>): boolean {
  try {
    return !tabsBefore.has(request.frame().page());
  } catch {
    return true; // a navigation issued before its frame exists: a tab being opened
  }
}

/** Runs `act` on the current tab, waits for the page to settle and reports navigation and newly opened tabs. */
async function actOnCurrentPage(
  session: BrowserSession,
  act: (page: Page) => Promise<Outcome>,
  quietMs = QUIET_PERIOD_MS,
): Promise<ActionResult> {
  const page = await session.ensureCurrentPage();
  const urlBefore = page.url();
  let mainFrameNavigations = 0;
  const onNavigated = (frame: Frame) => {
    if (frame === page.mainFrame()) mainFrameNavigations++;
  };
  page.on('framenavigated', onNavigated);
  const newPages = session.watchNewPages();
  let outcome: Outcome;
  let opened: Page[] = [];
  try {
    outcome = await act(page);
    await quietPeriod(page, newPages.first, quietMs);
    if (!page.isClosed()) await settlePage(page);
  } finally {
    page.off('framenavigated', onNavigated);
    opened = newPages.stop();
  }
  const newTab = opened.filter((candidate) => !candidate.isClosed()).at(-1);
  if (newTab) {
    session.activate(newTab);
    await settlePage(newTab);
    return {
      ok: true,
      message: `${outcome.description}; it opened a new tab [${session.activeTabIndex()}], now the current tab, at ${await pageLocation(newTab)}`,
      navigated: true,
      newTab: true,
    };
  }
  if (page.isClosed()) {
    const current = await session.ensureCurrentPage();
    return {
      ok: true,
      message: `${outcome.description}; the tab closed, now on tab [${session.activeTabIndex()}] at ${await pageLocation(current)}`,
      navigated: true,
    };
  }
  const navigated = outcome.navigated ?? (mainFrameNavigations > 0 || page.url() !== urlBefore);
  const where = navigated ? `now at ${await pageLocation(page)}` : `the page stayed at ${page.url()}`;
  return { ok: true, message: `${outcome.description}; ${where}`, navigated };
}

async function navigateAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const page = await session.ensureCurrentPage();
  const urlBefore = page.url();
  const url = targetUrl(stringArg(args, 'url'), urlBefore);
  const outcome = await session.navigate(url);
  if (!outcome.ok)
    return { ok: false, message: `could not open ${url}: ${outcome.error}`, navigated: page.url() !== urlBefore };
  const status = outcome.status !== null && outcome.status >= 400 ? ` (HTTP ${outcome.status})` : '';
  return { ok: true, message: `opened ${await pageLocation(page)}${status}`, navigated: true };
}

async function openTabAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const url = targetUrl(stringArg(args, 'url'), session.currentPage().url());
  const page = await session.openTab();
  const outcome = await session.navigate(url);
  const tab = `tab [${session.activeTabIndex()}]`;
  if (!outcome.ok)
    return {
      ok: false,
      message: `opened ${tab} but could not load ${url}: ${outcome.error}`,
      navigated: true,
      newTab: true,
    };
  return {
    ok: true,
    message: `opened ${tab}, now the current tab, at ${await pageLocation(page)}`,
    navigated: true,
    newTab: true,
  };
}

function clickAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const index = integerArg(args, 'index', 1);
  return actOnCurrentPage(session, async (page) => {
    const element = await elementByIndex(page, index);
    if (element.tag === 'select')
      fail(`${element.summary} is a <select>; use select_option to choose one of its options`);
    await element.handle.click({ timeout: ELEMENT_ACTION_TIMEOUT_MS }).finally(() => release(element));
    return { description: `clicked ${element.summary}` };
  });
}

function typeAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const index = integerArg(args, 'index', 1);
  const text = stringArg(args, 'text');
  const submit = booleanArg(args, 'submit');
  return actOnCurrentPage(
    session,
    async (page) => {
      const element = await elementByIndex(page, index);
      if (element.tag === 'select') fail(`${element.summary} is a <select>; use select_option instead`);
      const documentUrl = (await element.handle.ownerFrame())?.url() ?? page.url();
      const resolution = resolvePlaceholders(text, session.sensitiveData, documentUrl);
      if ('error' in resolution) fail(`nothing was typed into ${element.summary}: ${resolution.error}`);
      const holdsSecret = resolution.secretIds.length > 0;
      if (holdsSecret) await session.markSecretFilled(page, element.handle, resolution.secretIds);
      else await session.clearSecretFilled(page, element.handle);
      try {
        await element.handle.fill(resolution.text, { timeout: ELEMENT_ACTION_TIMEOUT_MS });
        if (submit) await element.handle.press('Enter', { timeout: ELEMENT_ACTION_TIMEOUT_MS });
      } finally {
        if (!holdsSecret) release(element);
      }
      return { description: `typed ${quoted(text)} into ${element.summary}${submit ? ' and pressed Enter' : ''}` };
    },
    submit ? QUIET_PERIOD_MS : TYPING_QUIET_PERIOD_MS,
  );
}

function selectOptionAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const index = integerArg(args, 'index', 1);
  const wanted = stringArg(args, 'value');
  return actOnCurrentPage(session, async (page) => {
    const element = await elementByIndex(page, index);
    if (element.tag !== 'select') fail(`${element.summary} is not a <select>; click the option you want instead`);
    const options = await element.handle.evaluate((node) =>
      Array.from((node as HTMLSelectElement).options).map((option) => ({
        value: option.value,
        label: (option.label || option.text).replace(/\s+/g, ' ').trim(),
      })),
    );
    const folded = wanted.trim().toLowerCase();
    const match =
      options.find((option) => option.value === wanted) ??
      options.find((option) => option.label === wanted) ??
      options.find((option) => option.label.toLowerCase() === folded || option.value.toLowerCase() === folded);
    if (!match)
      fail(
        `${element.summary} has no option ${quoted(wanted)}; its options are ${options.map((option) => quoted(option.label)).join(', ')}`,
      );
    await element.handle
      .selectOption({ value: match.value }, { timeout: ELEMENT_ACTION_TIMEOUT_MS })
      .finally(() => release(element));
    return { description: `selected ${quoted(match.label)} in ${element.summary}` };
  });
}

function pressKeyAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const key = stringArg(args, 'key').trim();
  if (!key) fail('"key" is empty');
  return actOnCurrentPage(session, async (page) => {
    await page.keyboard.press(key);
    return { description: `pressed ${key}` };
  });
}

async function scrollAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const direction = args.direction;
  if (direction !== 'up' && direction !== 'down') fail('"direction" must be "up" or "down"');
  const pages = Math.min(MAX_SCROLL_PAGES, Math.max(0.1, numberArg(args, 'pages', 1)));
  const page = await session.ensureCurrentPage();
  const viewport = page.viewportSize() ?? (await page.evaluate(() => ({ width: innerWidth, height: innerHeight })));
  await page.mouse.move(viewport.width / 2, viewport.height / 2);
  await page.mouse.wheel(0, (direction === 'down' ? 1 : -1) * pages * viewport.height);
  await page.waitForTimeout(300);
  await settlePage(page, 1_500);
  const position = await page.evaluate(() => ({
    top: Math.round(scrollY),
    height: Math.round(document.documentElement.scrollHeight),
    viewport: innerHeight,
  }));
  const atEdge = direction === 'down' ? position.top + position.viewport >= position.height - 2 : position.top <= 0;
  return {
    ok: true,
    message: `scrolled ${direction} ${pages} page${pages === 1 ? '' : 's'}; viewport shows ${position.top}-${position.top + position.viewport} of ${position.height} px${atEdge ? ` (${direction === 'down' ? 'bottom' : 'top'} of the page)` : ''}`,
    navigated: false,
  };
}

function goBackAction(session: BrowserSession): Promise<ActionResult> {
  return actOnCurrentPage(session, async (page) => {
    const urlBefore = page.url();
    const goBack = () => page.goBack({ waitUntil: 'commit', timeout: GO_BACK_TIMEOUT_MS });
    const response = await goBack().catch(async (error: unknown) => {
      if (!isDetachedDuringSwap(error)) throw error;
      await settlePage(page, DETACHED_RETRY_SETTLE_MS);
      return goBack();
    });
    if (response === null && page.url() === urlBefore) fail('there is no previous page in this tab');
    return { description: 'went back', navigated: true };
  });
}

function waitAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const seconds = Math.min(MAX_WAIT_SECONDS, Math.max(0, numberArg(args, 'seconds')));
  return actOnCurrentPage(
    session,
    async (page) => {
      await page.waitForTimeout(seconds * 1000);
      return { description: `waited ${seconds} s` };
    },
    0,
  );
}

async function switchTabAction(session: BrowserSession, args: Record<string, unknown>): Promise<ActionResult> {
  const index = integerArg(args, 'index', 0);
  const tabCount = session.pages().length;
  if (index >= tabCount) fail(`there is no tab [${index}]; open tabs are [0]..[${tabCount - 1}]`);
  const page = await session.switchTab(index);
  return { ok: true, message: `switched to tab [${index}] at ${await pageLocation(page)}`, navigated: true };
}

async function runAction(session: BrowserSession, action: BrowserAction): Promise<ActionResult> {
  const args = action.args ?? {};
  switch (action.name as BrowserToolName) {
    case 'navigate':
      return navigateAction(session, args);
    case 'click':
      return clickAction(session, args);
    case 'type':
      return typeAction(session, args);
    case 'select_option':
      return selectOptionAction(session, args);
    case 'press_key':
      return pressKeyAction(session, args);
    case 'scroll':
      return scrollAction(session, args);
    case 'go_back':
      return goBackAction(session);
    case 'wait':
      return waitAction(session, args);
    case 'switch_tab':
      return switchTabAction(session, args);
    case 'open_tab':
      return openTabAction(session, args);
    case 'screenshot':
      return {
        ok: true,
        message: 'a screenshot of the visible page will be attached to the next observation',
        navigated: false,
        screenshotRequested: true,
      };
    case 'extract':
    case 'done':
      return {
        ok: false,
        message: `"${action.name}" is answered by the agent loop, not by the browser`,
        navigated: false,
      };
    default:
      return {
        ok: false,
        message: `unknown action "${action.name}"; available actions: ${BROWSER_TOOLS.map((definition) => definition.function.name).join(', ')}`,
        navigated: false,
      };
  }
}

function withDialogs(session: BrowserSession, result: ActionResult): ActionResult {
  const dialogs = session.takeDialogMessages();
  const note = dialogs.length > 0 ? `; the page showed ${dialogs.join(', ')} (accepted)` : '';
  return { ...result, message: session.mask(`${result.message}${note}`) };
}

/**
 * Performs one tool call in the browser. Failures (bad arguments, missing elements, timeouts, blocked
 * navigations) come back as `ok: false`; it only throws when the browser or context itself is gone.
 */
export async function executeAction(session: BrowserSession, action: BrowserAction): Promise<ActionResult> {
  try {
    return withDialogs(session, await runAction(session, action));
  } catch (error) {
    if (session.isClosed) throw error;
    const reason = error instanceof ActionFailure ? error.message : describeError(error);
    return withDialogs(session, { ok: false, message: `${action.name} failed: ${reason}`, navigated: false });
  }
}
