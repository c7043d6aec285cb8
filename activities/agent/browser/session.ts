import type { BrowserContext, BrowserContextOptions, Dialog, ElementHandle, Page } from 'playwright-core';

import { waitPastRedirectInterstitials, type ContextGuard } from '../../browser/guarded-routing';
import { maskSecrets, validateSensitiveItems, type SensitiveItem } from '../sensitive-data';

export type StorageState = Awaited<ReturnType<BrowserContext['storageState']>>;

export type SessionCheckpoint = {
  url: string;
  storageState: StorageState;
};

export type BrowserSessionOptions = {
  sensitiveData: SensitiveItem[];
  /** When given, failed navigations report why the SSRF guard blocked them. */
  guard?: ContextGuard;
};

export type TabInfo = { index: number; title: string; url: string; active: boolean };

export type NewPageWatch = {
  /** Resolves with the first page opened while watching (never, if none is). */
  first: Promise<Page>;
  stop: () => Page[];
};

export type NavigationOutcome = { ok: true; url: string; status: number | null } | { ok: false; error: string };

export const ELEMENT_INDEX_ATTRIBUTE = 'data-agent-index';
export const SECRET_FILLED_ATTRIBUTE = 'data-agent-secret';

export const DEFAULT_SETTLE_MS = 3_000;
export const DETACHED_RETRY_SETTLE_MS = 1_000;
const NAVIGATION_TIMEOUT_MS = 20_000;
const MAX_PENDING_DIALOGS = 10;
const ERROR_PAGE_WAIT_MS = 1_500;

type SecretFilledElement = { page: Page; handle: ElementHandle<Element>; secretIds: string[] };

/**
 * Wraps a function so it survives being serialized into the page: tsx/esbuild's keepNames inserts `__name(...)`
 * calls into nested functions, which do not exist in the page.
 */
export function inPage<Args extends unknown[], Result>(fn: (...args: Args) => Result): (...args: Args) => Result {
  return new Function('...args', `const __name = (target) => target;\nreturn (${fn.toString()})(...args);`) as (
    ...args: Args
  ) => Result;
}

/** Chromium briefly detaches a page while swapping it to another renderer, e.g. after showing an error page. */
export function isDetachedDuringSwap(error: unknown): boolean {
  return error instanceof Error && /Not attached to an active page/.test(error.message);
}

export function isWebUrl(url: string): boolean {
  return /^https?:\/\//i.test(url);
}

/** Waits, within `budgetMs`, for the page to load, pass the guard's redirect interstitials and go network-idle. */
export async function settlePage(page: Page, budgetMs = DEFAULT_SETTLE_MS): Promise<void> {
  const deadline = Date.now() + budgetMs;
  const remaining = () => Math.max(1, deadline - Date.now());
  const ignore = () => undefined;
  await page.waitForLoadState('domcontentloaded', { timeout: remaining() }).catch(ignore);
  await waitPastRedirectInterstitials(page, remaining()).catch(ignore);
  await page.waitForLoadState('load', { timeout: remaining() }).catch(ignore);
  await page.waitForLoadState('networkidle', { timeout: remaining() }).catch(ignore);
  await waitPastRedirectInterstitials(page, remaining()).catch(ignore);
}

export function contextOptionsFromCheckpoint(
  checkpoint: SessionCheckpoint,
): Pick<BrowserContextOptions, 'storageState'> {
  return { storageState: structuredClone(checkpoint.storageState) };
}

function cookieKey(cookie: { name: string; domain: string; path: string }): string {
  return `${cookie.name}\u0000${cookie.domain}\u0000${cookie.path}`;
}

async function addMissingStorage(context: BrowserContext, storageState: StorageState): Promise<void> {
  const present = await context.storageState();
  const presentCookies = new Set(present.cookies.map(cookieKey));
  const missingCookies = storageState.cookies.filter((cookie) => !presentCookies.has(cookieKey(cookie)));
  if (missingCookies.length > 0) await context.addCookies(missingCookies);

  const presentOrigins = new Set(present.origins.map((origin) => origin.origin));
  const missingOrigins = storageState.origins.filter(
    (origin) => origin.localStorage.length > 0 && !presentOrigins.has(origin.origin),
  );
  if (missingOrigins.length === 0) return;
  await context.addInitScript(
    (origins: Array<{ origin: string; localStorage: Array<{ name: string; value: string }> }>) => {
      const entry = origins.find((candidate) => candidate.origin === location.origin);
      if (!entry) return;
      try {
        for (const item of entry.localStorage) {
          if (localStorage.getItem(item.name) === null) localStorage.setItem(item.name, item.value);
        }
      } catch {
        // storage is unavailable for this document
      }
    },
    missingOrigins.map(({ origin, localStorage }) => ({ origin, localStorage })),
  );
}

function guardReason(guard: ContextGuard | undefined, blockedBefore: number): string | null {
  const block = guard?.blocked
    .slice(blockedBefore)
    .reverse()
    .find((entry) => entry.isMainFrameNavigation);
  return block ? `blocked by the network policy (${block.host}: ${block.reason})` : null;
}

function navigationErrorText(error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0].replace(/^[\w.]+: /, '');
  if (/ERR_BLOCKED_BY_CLIENT/.test(message)) return 'blocked by the network policy';
  return message;
}

export class BrowserSession {
  readonly context: BrowserContext;
  readonly sensitiveData: readonly SensitiveItem[];
  private readonly guard: ContextGuard | undefined;
  private active: Page;
  private contextClosed = false;
  private sessionClosed = false;
  private secretFilled: SecretFilledElement[] = [];
  private pendingDialogs: string[] = [];
  private readonly newPageWatchers = new Set<(page: Page) => void>();
  private readonly watchedPages = new WeakSet<Page>();
  private readonly onContextPage = (page: Page) => {
    this.watchPage(page);
    for (const watcher of this.newPageWatchers) watcher(page);
  };
  private readonly onContextClose = () => {
    this.contextClosed = true;
  };
  private readonly onDialog = (dialog: Dialog) => {
    if (this.pendingDialogs.length < MAX_PENDING_DIALOGS)
      this.pendingDialogs.push(`${dialog.type()}: "${dialog.message()}"`);
    void dialog.accept().catch(() => undefined);
  };

  private constructor(context: BrowserContext, page: Page, options: BrowserSessionOptions) {
    this.context = context;
    this.sensitiveData = options.sensitiveData.map((item) => ({ ...item }));
    this.guard = options.guard;
    this.active = page;
    for (const existing of context.pages()) this.watchPage(existing);
    context.on('page', this.onContextPage);
    context.on('close', this.onContextClose);
  }

  static async open(context: BrowserContext, options: BrowserSessionOptions): Promise<BrowserSession> {
    validateSensitiveItems(options.sensitiveData);
    const existing = context.pages().filter((page) => !page.isClosed());
    const page = existing.at(-1) ?? (await context.newPage());
    return new BrowserSession(context, page, options);
  }

  /**
   * Reopens a checkpoint in `context`. Create the context with `contextOptionsFromCheckpoint(checkpoint)` so
   * storage is in place before any page loads; cookies and localStorage it lacks are added here.
   */
  static async restore(
    context: BrowserContext,
    checkpoint: SessionCheckpoint,
    options: BrowserSessionOptions,
  ): Promise<BrowserSession> {
    await addMissingStorage(context, checkpoint.storageState);
    const session = await BrowserSession.open(context, options);
    if (isWebUrl(checkpoint.url)) {
      const outcome = await session.navigate(checkpoint.url);
      if (!outcome.ok) {
        await session.close();
        throw new Error(`Could not reopen ${session.mask(checkpoint.url)}: ${outcome.error}`);
      }
    }
    return session;
  }

  get isClosed(): boolean {
    return this.sessionClosed || this.contextClosed || this.context.browser()?.isConnected() === false;
  }

  mask(text: string): string {
    return maskSecrets(text, this.sensitiveData);
  }

  pages(): Page[] {
    return this.context.pages().filter((page) => !page.isClosed());
  }

  currentPage(): Page {
    if (!this.active.isClosed()) return this.active;
    const fallback = this.pages().at(-1);
    if (!fallback) throw new Error('The browser session has no open tabs');
    this.active = fallback;
    return fallback;
  }

  async ensureCurrentPage(): Promise<Page> {
    if (this.pages().length === 0) this.active = await this.context.newPage();
    return this.currentPage();
  }

  activeTabIndex(): number {
    return this.pages().indexOf(this.currentPage());
  }

  async tabs(): Promise<TabInfo[]> {
    const active = this.pages().length > 0 ? this.currentPage() : null;
    return Promise.all(
      this.pages().map(async (page, index) => ({
        index,
        title: this.mask(await page.title().catch(() => '')),
        url: this.mask(page.url()),
        active: page === active,
      })),
    );
  }

  async switchTab(index: number): Promise<Page> {
    const pages = this.pages();
    const page = pages[index];
    if (!Number.isInteger(index) || !page) {
      throw new RangeError(`There is no tab [${index}]; open tabs are [0]..[${pages.length - 1}]`);
    }
    this.active = page;
    await page.bringToFront().catch(() => undefined);
    return page;
  }

  async openTab(): Promise<Page> {
    const page = await this.context.newPage();
    this.active = page;
    return page;
  }

  activate(page: Page): void {
    if (page.context() !== this.context) throw new Error('That page belongs to another browser context');
    this.active = page;
  }

  /** Starts collecting the pages (tabs, popups) the context opens until `stop()`. */
  watchNewPages(): NewPageWatch {
    const opened: Page[] = [];
    let announce: (page: Page) => void = () => undefined;
    const first = new Promise<Page>((resolve) => {
      announce = resolve;
    });
    const watcher = (page: Page) => {
      opened.push(page);
      announce(page);
    };
    this.newPageWatchers.add(watcher);
    return {
      first,
      stop: () => {
        this.newPageWatchers.delete(watcher);
        return opened;
      },
    };
  }

  takeDialogMessages(): string[] {
    const messages = this.pendingDialogs.map((message) => this.mask(message));
    this.pendingDialogs = [];
    return messages;
  }

  async navigate(url: string, timeoutMs = NAVIGATION_TIMEOUT_MS): Promise<NavigationOutcome> {
    const page = await this.ensureCurrentPage();
    const blockedBefore = this.guard?.blocked.length ?? 0;
    let status: number | null = null;
    try {
      const goto = () => page.goto(url, { waitUntil: 'commit', timeout: timeoutMs });
      const response = await goto().catch(async (error: unknown) => {
        if (!isDetachedDuringSwap(error)) throw error;
        await settlePage(page, DETACHED_RETRY_SETTLE_MS);
        return goto();
      });
      status = response?.status() ?? null;
      await settlePage(page);
    } catch (error) {
      if (this.isClosed) throw error;
      await page
        .waitForEvent('framenavigated', {
          predicate: (frame) => frame === page.mainFrame(),
          timeout: ERROR_PAGE_WAIT_MS,
        })
        .catch(() => undefined);
      return { ok: false, error: guardReason(this.guard, blockedBefore) ?? navigationErrorText(error) };
    }
    if (page.url().startsWith('chrome-error:')) {
      return { ok: false, error: guardReason(this.guard, blockedBefore) ?? 'the page could not be loaded' };
    }
    return { ok: true, url: page.url(), status };
  }

  /** Remembers that `handle` holds secret values, so observations hide its value and screenshots mask it. */
  async markSecretFilled(page: Page, handle: ElementHandle<Element>, secretIds: string[]): Promise<void> {
    await this.clearSecretFilled(page, handle);
    await handle.evaluate((element, [attribute, ids]) => element.setAttribute(attribute, ids), [
      SECRET_FILLED_ATTRIBUTE,
      secretIds.join(' '),
    ] as const);
    this.secretFilled.push({ page, handle, secretIds: [...secretIds] });
  }

  async clearSecretFilled(page: Page, handle: ElementHandle<Element>): Promise<void> {
    const remaining: SecretFilledElement[] = [];
    for (const entry of this.secretFilled) {
      const same =
        entry.page === page &&
        (await entry.handle.evaluate((element, other) => element === other, handle).catch(() => false));
      if (same) this.forget(entry, true);
      else remaining.push(entry);
    }
    this.secretFilled = remaining;
    await handle
      .evaluate((element, attribute) => element.removeAttribute(attribute), SECRET_FILLED_ATTRIBUTE)
      .catch(() => undefined);
  }

  /** Puts the secret marker back on tracked elements of `page` in case the page removed it. */
  async restampSecretFilled(page: Page): Promise<void> {
    const kept: SecretFilledElement[] = [];
    for (const entry of this.secretFilled) {
      if (entry.page !== page) {
        kept.push(entry);
        continue;
      }
      const stillThere = await entry.handle
        .evaluate(
          (element, [attribute, ids]) => {
            if (!element.isConnected) return false;
            element.setAttribute(attribute, ids);
            return true;
          },
          [SECRET_FILLED_ATTRIBUTE, entry.secretIds.join(' ')] as const,
        )
        .catch(() => false);
      if (stillThere) kept.push(entry);
      else this.forget(entry, false);
    }
    this.secretFilled = kept;
  }

  async checkpoint(): Promise<SessionCheckpoint> {
    const url = this.pages().length > 0 ? this.currentPage().url() : 'about:blank';
    return { url, storageState: await this.context.storageState() };
  }

  async close(): Promise<void> {
    this.sessionClosed = true;
    this.context.off('page', this.onContextPage);
    this.context.off('close', this.onContextClose);
    for (const entry of this.secretFilled) this.forget(entry, false);
    this.secretFilled = [];
    this.newPageWatchers.clear();
    for (const page of this.context.pages()) {
      page.off('dialog', this.onDialog);
      await page.close().catch(() => undefined);
    }
  }

  private watchPage(page: Page): void {
    if (this.watchedPages.has(page)) return;
    this.watchedPages.add(page);
    page.on('dialog', this.onDialog);
  }

  private forget(entry: SecretFilledElement, removeMarker: boolean): void {
    const handle = entry.handle;
    const cleanup = removeMarker
      ? handle
          .evaluate((element, attribute) => element.removeAttribute(attribute), SECRET_FILLED_ATTRIBUTE)
          .catch(() => undefined)
      : Promise.resolve();
    void cleanup.then(() => handle.dispose()).catch(() => undefined);
  }
}
