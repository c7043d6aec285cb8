import type { Page } from 'playwright-core';

import {
  ELEMENT_INDEX_ATTRIBUTE,
  SECRET_FILLED_ATTRIBUTE,
  inPage,
  settlePage,
  type BrowserSession,
  type TabInfo,
} from './session';
import { secretPlaceholder } from '../sensitive-data';

export type ObservationDetail = 'low' | 'high' | 'auto';

export type ObserveOptions = {
  maxChars: number;
  includeScreenshot: boolean;
  detail: ObservationDetail;
};

export type ObservedElement = {
  index: number;
  tag: string;
  role?: string;
  text: string;
  attributes: Record<string, string>;
};

export type ObservationScreenshot = {
  base64: string;
  mimeType: 'image/png' | 'image/jpeg';
  /** How many elements (password inputs, inputs filled from secrets) were painted over. */
  maskedElements: number;
};

export type Observation = {
  url: string;
  title: string;
  tabs: TabInfo[];
  elements: ObservedElement[];
  /** Visible page text. */
  text: string;
  /** The whole observation as the text the LLM sees, at most `maxChars` long. */
  rendered: string;
  screenshot?: ObservationScreenshot;
  /** False when the page has almost no text or elements (e.g. a canvas), so a screenshot is needed to see it. */
  readable: boolean;
};

export type ObservationView = Pick<Observation, 'url' | 'title' | 'tabs' | 'elements' | 'text' | 'readable'>;

type SnapshotConfig = {
  indexAttribute: string;
  secretAttribute: string;
  maxElementText: number;
  maxAttributeLength: number;
  maxOptions: number;
  maxPageText: number;
};

type SnapshotElement = {
  index: number;
  tag: string;
  role?: string;
  text: string;
  attributes: Record<string, string>;
  secretIds?: string;
};

type DomSnapshot = {
  title: string;
  text: string;
  elements: SnapshotElement[];
  visualCoverage: number;
};

const SNAPSHOT_CONFIG: SnapshotConfig = {
  indexAttribute: ELEMENT_INDEX_ATTRIBUTE,
  secretAttribute: SECRET_FILLED_ATTRIBUTE,
  maxElementText: 100,
  maxAttributeLength: 150,
  maxOptions: 40,
  maxPageText: 200_000,
};

const SCREENSHOT_TIMEOUT_MS = 10_000;
const TEXT_SHARE_OF_BUDGET = 0.3;
const MAX_URL_CHARS = 500;
const MAX_TITLE_CHARS = 200;
const RENDERED_ATTRIBUTE_ORDER = [
  'type',
  'name',
  'role',
  'href',
  'target',
  'placeholder',
  'aria-label',
  'label',
  'title',
  'alt',
  'value',
  'checked',
  'filled',
  'aria-expanded',
  'aria-checked',
  'aria-selected',
  'disabled',
];
const VOID_TAGS = new Set(['input', 'select', 'textarea']);

/** Runs inside the page: stamps visible interactive elements with indices in document order and reads the page. */
function snapshotDom(config: SnapshotConfig): DomSnapshot {
  const selector = [
    'a[href]',
    'button',
    'input:not([type=hidden])',
    'select',
    'textarea',
    'summary',
    '[onclick]',
    '[contenteditable]:not([contenteditable=false])',
    ...[
      'button',
      'link',
      'checkbox',
      'radio',
      'switch',
      'tab',
      'menuitem',
      'menuitemcheckbox',
      'menuitemradio',
      'option',
      'combobox',
      'textbox',
      'searchbox',
    ].map((role) => `[role=${role}]`),
  ].join(',');
  const collapse = (value: string) => value.replace(/\s+/g, ' ').trim();
  const clip = (value: string, max: number) => (value.length > max ? `${value.slice(0, max - 1)}…` : value);

  // Document order (an element, its shadow tree, then its children), without recursion: no page is too deep for it.
  const candidates: Element[] = [];
  const pending: Element[] = Array.from(document.children).reverse();
  const pushReversed = (elements: HTMLCollection) => {
    for (let i = elements.length - 1; i >= 0; i--) pending.push(elements[i]);
  };
  while (pending.length > 0) {
    const element = pending.pop()!;
    if (element.hasAttribute(config.indexAttribute)) element.removeAttribute(config.indexAttribute);
    if (element.matches(selector)) candidates.push(element);
    pushReversed(element.children);
    if (element.shadowRoot) pushReversed(element.shadowRoot.children);
  }

  const isVisible = (element: Element) => {
    const rect = element.getBoundingClientRect();
    if (rect.width <= 0 || rect.height <= 0) return false;
    return element.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
  };

  const describe = (element: Element, index: number): SnapshotElement => {
    const tag = element.tagName.toLowerCase();
    const attributes: Record<string, string> = {};
    const put = (name: string, value: string | null | undefined) => {
      const cleaned = collapse(value ?? '');
      if (cleaned) attributes[name] = clip(cleaned, config.maxAttributeLength);
    };
    for (const name of [
      'name',
      'role',
      'placeholder',
      'aria-label',
      'title',
      'alt',
      'href',
      'target',
      'aria-expanded',
      'aria-checked',
      'aria-selected',
    ]) {
      put(name, element.getAttribute(name));
    }
    if (tag === 'input' || tag === 'button')
      put('type', element.getAttribute('type') ?? (tag === 'button' ? 'submit' : 'text'));
    if ((element as HTMLInputElement).disabled) attributes.disabled = 'true';
    const secretIds = element.getAttribute(config.secretAttribute) ?? undefined;
    const label = (element as HTMLInputElement).labels?.[0];
    if (label && !attributes['aria-label']) {
      put(
        'label',
        Array.from(label.childNodes)
          .filter((node) => !node.contains(element))
          .map((node) => node.textContent ?? '')
          .join(' '),
      );
    }

    let text = '';
    if (element instanceof HTMLInputElement) {
      const type = element.type;
      if (type === 'checkbox' || type === 'radio') attributes.checked = String(element.checked);
      else if (secretIds) attributes.filled = 'true';
      else if (type === 'password') {
        if (element.value) attributes.filled = 'true';
      } else if (type !== 'file') put('value', element.value);
    } else if (element instanceof HTMLTextAreaElement) {
      if (secretIds) attributes.filled = 'true';
      else put('value', element.value);
    } else if (element instanceof HTMLSelectElement) {
      const options = Array.from(element.options);
      put(
        'value',
        Array.from(element.selectedOptions)
          .map((option) => option.value)
          .join(', '),
      );
      const shown = options.slice(0, config.maxOptions).map((option) => {
        const label = collapse(option.label || option.text);
        const described = !option.value || option.value === label ? label : `${label} [${option.value}]`;
        return option.selected ? `*${described}*` : described;
      });
      if (options.length > config.maxOptions) shown.push(`… ${options.length - config.maxOptions} more`);
      attributes.options = shown.join(', ');
    } else if (!secretIds) {
      text = collapse((element as HTMLElement).innerText ?? element.textContent ?? '');
      if (!text) text = collapse(element.querySelector('img[alt]')?.getAttribute('alt') ?? '');
    }
    element.setAttribute(config.indexAttribute, String(index));
    const role = element.getAttribute('role') ?? undefined;
    return { index, tag, role, text: clip(text, config.maxElementText), attributes, secretIds };
  };

  const elements = candidates.filter(isVisible).map((element, position) => describe(element, position + 1));

  const lines = (document.body?.innerText ?? '').split('\n').map((line) => line.replace(/[ \t\u00a0]+/g, ' ').trim());
  const kept: string[] = [];
  for (const line of lines) {
    if (line || (kept.length > 0 && kept[kept.length - 1] !== '')) kept.push(line);
  }
  const text = kept.join('\n').trim().slice(0, config.maxPageText);

  const viewportArea = Math.max(1, innerWidth * innerHeight);
  let visualArea = 0;
  for (const media of Array.from(document.querySelectorAll('canvas, video, iframe, embed, object, img, svg'))) {
    const rect = media.getBoundingClientRect();
    const width = Math.max(0, Math.min(rect.right, innerWidth) - Math.max(rect.left, 0));
    const height = Math.max(0, Math.min(rect.bottom, innerHeight) - Math.max(rect.top, 0));
    visualArea += width * height;
  }
  return { title: document.title, text, elements, visualCoverage: Math.min(1, visualArea / viewportArea) };
}

const EMPTY_SNAPSHOT: DomSnapshot = { title: '', text: '', elements: [], visualCoverage: 0 };

async function takeSnapshot(page: Page): Promise<DomSnapshot> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await page.evaluate(inPage(snapshotDom), SNAPSHOT_CONFIG);
    } catch (error) {
      if (page.isClosed() || attempt >= 2) throw error;
      await settlePage(page, 2_000);
    }
  }
}

function isReadable(snapshot: DomSnapshot): boolean {
  const textChars = snapshot.text.replace(/\s+/g, '').length;
  if (textChars < 20 && snapshot.elements.length < 2) return false;
  return !(snapshot.visualCoverage >= 0.6 && textChars < 200);
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function escapeAttributeValue(value: string): string {
  return value.replace(/"/g, '&quot;');
}

export function renderElement(element: ObservedElement): string {
  const names = [
    ...RENDERED_ATTRIBUTE_ORDER.filter((name) => name in element.attributes),
    ...Object.keys(element.attributes).filter((name) => !RENDERED_ATTRIBUTE_ORDER.includes(name) && name !== 'options'),
  ];
  const shownNames = element.tag === 'select' ? names.filter((name) => name !== 'value') : names;
  const attributes = shownNames.map((name) => ` ${name}="${escapeAttributeValue(element.attributes[name])}"`).join('');
  const open = `[${element.index}] <${element.tag}${attributes}>`;
  if (element.tag === 'select') return `${open} options: ${element.attributes.options ?? ''}`;
  if (VOID_TAGS.has(element.tag) && !element.text) return open;
  return `${open}${element.text}</${element.tag}>`;
}

function renderTabs(tabs: TabInfo[]): string {
  return tabs
    .map((tab) => `[${tab.index}] ${clip(tab.title || tab.url, 80)}${tab.active ? ' (active)' : ''}`)
    .join(' | ');
}

/** Formats an observation for the LLM in at most `maxChars` characters: elements first, then as much page text as fits. */
export function renderObservation(view: ObservationView, maxChars: number): string {
  const header = [
    `URL: ${clip(view.url, MAX_URL_CHARS)}`,
    `Title: ${clip(view.title, MAX_TITLE_CHARS)}`,
    `Tabs: ${renderTabs(view.tabs)}`,
    ...(view.readable
      ? []
      : [
          'Note: this page has almost no readable text or elements (it may be a canvas or an image); a screenshot shows it.',
        ]),
  ].join('\n');
  const textHeading = 'Page text:';
  const textReserve = Math.min(view.text.length, Math.floor(maxChars * TEXT_SHARE_OF_BUDGET));
  const elementBudget = maxChars - header.length - textHeading.length - textReserve - 4;

  const omittedMarker = (count: number) => `… ${count} more interactive elements not shown`;
  const elementLines: string[] = [];
  let used = 'Interactive elements:'.length + 1;
  for (const [position, element] of view.elements.entries()) {
    const line = renderElement(element);
    const after = view.elements.length - position - 1;
    const markerRoom = after > 0 ? omittedMarker(after).length + 1 : 0;
    if (used + line.length + 1 + markerRoom > elementBudget) {
      elementLines.push(omittedMarker(view.elements.length - position));
      break;
    }
    elementLines.push(line);
    used += line.length + 1;
  }
  const elementsSection =
    view.elements.length === 0 ? 'Interactive elements: none' : ['Interactive elements:', ...elementLines].join('\n');

  const beforeText = `${header}\n${elementsSection}\n${textHeading}\n`;
  const textBudget = maxChars - beforeText.length;
  let text = view.text || '(no visible text)';
  if (text.length > textBudget) {
    const total = text.length;
    const marker = (shown: number) => `\n… [page text truncated: showing ${shown} of ${total} characters]`;
    const shown = Math.max(0, textBudget - marker(total).length);
    text = `${text.slice(0, shown)}${marker(shown)}`;
  }
  const rendered = `${beforeText}${text}`;
  return rendered.length > maxChars ? rendered.slice(0, maxChars) : rendered;
}

function screenshotMasks(page: Page) {
  return [page.locator('input[type=password]'), page.locator(`[${SECRET_FILLED_ATTRIBUTE}]`)];
}

/** A viewport screenshot with password inputs and inputs filled from secrets painted over. */
export async function captureScreenshot(
  session: BrowserSession,
  detail: ObservationDetail,
): Promise<ObservationScreenshot> {
  const page = await session.ensureCurrentPage();
  await session.restampSecretFilled(page);
  const mask = screenshotMasks(page);
  const maskedElements = (await Promise.all(mask.map((locator) => locator.count().catch(() => 0)))).reduce(
    (sum, n) => sum + n,
    0,
  );
  const asPng = detail === 'high';
  const image = await page.screenshot({
    type: asPng ? 'png' : 'jpeg',
    ...(asPng ? {} : { quality: 50 }),
    mask,
    fullPage: false,
    animations: 'disabled',
    caret: 'hide',
    timeout: SCREENSHOT_TIMEOUT_MS,
  });
  return { base64: image.toString('base64'), mimeType: asPng ? 'image/png' : 'image/jpeg', maskedElements };
}

function toObservedElement(element: SnapshotElement, mask: (text: string) => string): ObservedElement {
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(element.attributes)) attributes[name] = mask(value);
  if (element.secretIds) {
    attributes.value = element.secretIds.split(' ').filter(Boolean).map(secretPlaceholder).join('');
    delete attributes.filled;
  }
  return {
    index: element.index,
    tag: element.tag,
    ...(element.role ? { role: mask(element.role) } : {}),
    text: mask(element.text),
    attributes,
  };
}

export async function observe(session: BrowserSession, options: ObserveOptions): Promise<Observation> {
  const page = await session.ensureCurrentPage();
  await session.restampSecretFilled(page);
  const snapshot = await takeSnapshot(page).catch((error: unknown) => {
    if (session.isClosed) throw error;
    return EMPTY_SNAPSHOT;
  });
  const mask = (text: string) => session.mask(text);
  const view: ObservationView = {
    url: mask(page.url()),
    title: mask(snapshot.title || (await page.title().catch(() => ''))),
    tabs: await session.tabs(),
    elements: snapshot.elements.map((element) => toObservedElement(element, mask)),
    text: mask(snapshot.text),
    readable: isReadable(snapshot),
  };
  const observation: Observation = { ...view, rendered: renderObservation(view, options.maxChars) };
  if (options.includeScreenshot) {
    try {
      observation.screenshot = await captureScreenshot(session, options.detail);
    } catch (error) {
      if (session.isClosed) throw error;
    }
  }
  return observation;
}
