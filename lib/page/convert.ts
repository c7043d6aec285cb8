import { descendants, elementsIn, findElement, parseHtmlTree, textOf, type HtmlElement } from './html-tree';
import { htmlToMarkdown } from './html-to-markdown';

export type PageLink = { url: string; text: string };

export type PageMetadata = {
  title: string | null;
  description: string | null;
  links: PageLink[];
  language: string | null;
};

export type ConvertedPage = { markdown: string; metadata: PageMetadata };

export type BrowserNeed = { needed: boolean; reason: string };

/*
 * Every step here is linear in the page (see html-tree.ts and html-to-markdown.ts): a page is hostile input, and a regular
 * expression that backtracks over it, or a walk repeated per nesting level, would let one page stall the worker.
 */
const MAX_LINKS = 500;
/** Link texts and similar labels are read only this far, so a page of many nested links stays linear. */
const LABEL_CHARS = 300;
const LABEL_NODES = 2_000;
const NOISE_TAGS = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'iframe',
  'frame',
  'object',
  'embed',
  'canvas',
  'link',
  'meta',
  'base',
  'head',
  'title',
  'nav',
  'button',
  'input',
  'select',
  'textarea',
  'dialog',
]);
const INVISIBLE_STYLE = /(^|;)\s*(display\s*:\s*none|visibility\s*:\s*hidden)/i;
const CONSENT_MARKER =
  /(^|[\s_-])(cookie|consent|gdpr)[-_]?(banner|bar|notice|popup|consent|modal|dialog|wall|overlay|law|message)($|[\s_-])|onetrust|cookiebot|usercentrics|cc-window/i;

function collapse(text: string | null | undefined): string {
  return (text ?? '').replace(/\s+/g, ' ').trim();
}

function nonEmpty(text: string | null | undefined): string | null {
  const value = collapse(text);
  return value ? value : null;
}

function attribute(element: HtmlElement | null, name: string): string | null {
  return element?.attributes.get(name) ?? null;
}

function attributeIs(element: HtmlElement, name: string, value: string): boolean {
  return (element.attributes.get(name) ?? '').trim().toLowerCase() === value;
}

function contentRoot(document: HtmlElement): HtmlElement {
  const body = findElement(document, (element) => element.name === 'body');
  return body && body.children.length > 0 ? body : document;
}

function resolveUrl(raw: string | null | undefined, base: string): URL | null {
  if (!raw) return null;
  try {
    return new URL(raw.trim(), base);
  } catch {
    return null;
  }
}

function isHttp(url: URL): boolean {
  return url.protocol === 'http:' || url.protocol === 'https:';
}

function label(element: HtmlElement): string {
  return collapse(textOf(element, { maxChars: LABEL_CHARS, maxNodes: LABEL_NODES }));
}

function linkText(anchor: HtmlElement): string {
  const imageAlt = () =>
    attribute(
      findElement(anchor, (element) => element.name === 'img' && element.attributes.has('alt'), LABEL_NODES),
      'alt',
    );
  return (
    label(anchor) ||
    collapse(attribute(anchor, 'aria-label')) ||
    collapse(attribute(anchor, 'title')) ||
    collapse(imageAlt())
  );
}

/** Title, description, language and links, from one pass over the whole document (navigation included). */
function extractMetadata(document: HtmlElement, pageUrl: string): { metadata: PageMetadata; base: string } {
  let title: string | null = null;
  let ogTitle: string | null = null;
  let description: string | null = null;
  let ogDescription: string | null = null;
  let htmlLang: string | null = null;
  let contentLanguage: string | null = null;
  let baseHref: string | null = null;
  let seenHtml = false;
  const anchors: HtmlElement[] = [];
  for (const element of elementsIn(document)) {
    switch (element.name) {
      case 'title':
        title ??= nonEmpty(textOf(element));
        break;
      case 'meta':
        if (attributeIs(element, 'property', 'og:title')) ogTitle ??= nonEmpty(attribute(element, 'content'));
        else if (attributeIs(element, 'name', 'description')) description ??= nonEmpty(attribute(element, 'content'));
        else if (attributeIs(element, 'property', 'og:description'))
          ogDescription ??= nonEmpty(attribute(element, 'content'));
        else if (attributeIs(element, 'http-equiv', 'content-language'))
          contentLanguage ??= nonEmpty(attribute(element, 'content'));
        break;
      case 'base':
        if (baseHref === null && element.attributes.has('href')) baseHref = attribute(element, 'href');
        break;
      case 'html':
        if (!seenHtml) htmlLang = nonEmpty(attribute(element, 'lang'));
        seenHtml = true;
        break;
      case 'a':
        if (element.attributes.has('href')) anchors.push(element);
        break;
    }
  }
  const base = resolveUrl(baseHref, pageUrl)?.href ?? pageUrl;
  const seen = new Set<string>();
  const links: PageLink[] = [];
  for (const anchor of anchors) {
    if (links.length >= MAX_LINKS) break;
    const url = resolveUrl(attribute(anchor, 'href'), base);
    if (!url || !isHttp(url)) continue;
    url.hash = '';
    if (seen.has(url.href)) continue;
    seen.add(url.href);
    links.push({ url: url.href, text: linkText(anchor) });
  }
  return {
    metadata: {
      title: title ?? ogTitle,
      description: description ?? ogDescription,
      links,
      language: htmlLang ?? contentLanguage,
    },
    base,
  };
}

function isNoise(element: HtmlElement): boolean {
  if (NOISE_TAGS.has(element.name)) return true;
  if (
    element.attributes.has('hidden') ||
    attributeIs(element, 'aria-hidden', 'true') ||
    attributeIs(element, 'role', 'navigation')
  )
    return true;
  const style = element.attributes.get('style');
  if (style && INVISIBLE_STYLE.test(style)) return true;
  const id = element.attributes.get('id');
  const className = element.attributes.get('class');
  return (id !== undefined || className !== undefined) && CONSENT_MARKER.test(`${id ?? ''} ${className ?? ''}`);
}

export function htmlToPage(html: string, pageUrl: string): ConvertedPage {
  const document = parseHtmlTree(html);
  const { metadata, base } = extractMetadata(document, pageUrl);
  const markdown = htmlToMarkdown(contentRoot(document), {
    isNoise,
    resolveHref(raw, kind) {
      const url = resolveUrl(raw, base);
      if (!url) return null;
      if (isHttp(url) || (kind === 'link' && (url.protocol === 'mailto:' || url.protocol === 'tel:'))) return url.href;
      return null;
    },
  });
  return { markdown, metadata };
}

const HTML_TYPES = /^(text\/html|application\/xhtml\+xml)\b/i;
const SPA_MOUNT_IDS = new Set(['root', 'app', '__next', '__nuxt', '___gatsby', 'svelte']);
const SPA_MOUNT_ATTRIBUTES = ['data-reactroot', 'ng-app', 'ng-version'];
const JS_REQUIRED =
  /(enable|turn on|activate|requires?|need)\s+(your\s+)?javascript|javascript\s+(is\s+)?(required|disabled|must be enabled|needs to be enabled)/i;
const BOT_CHALLENGE =
  /cf-browser-verification|challenge-platform|cf_chl_|just a moment\.\.\.|checking your browser|ddos-guard|_incapsula_resource|px-captcha/i;
const JS_REDIRECT = /(window\.|document\.|top\.)?location(\.href)?\s*=[^=]|location\.(replace|assign)\s*\(/;
const DATA_SCRIPT_TYPES = /json|template|html|text\/x-/i;
const INVISIBLE_TAGS = new Set(['script', 'style', 'noscript', 'template', 'svg', 'head', 'title']);
const MEDIA_TAGS = new Set(['img', 'picture', 'video', 'table']);
const SHORT_TEXT = 200;
const SHORT_TEXT_WITH_NOSCRIPT_WARNING = 1000;
const EMPTY_MOUNT_TEXT = 40;
/** How many mount points are examined, and how much of each: enough for any real app shell, bounded for a hostile page. */
const MAX_MOUNTS_EXAMINED = 50;
const MOUNT_NODES_EXAMINED = 5_000;
const NOSCRIPT_CHARS_EXAMINED = 2_000;

/** Whether the text starts (after whitespace and comments) with a doctype, html, head or body tag; a linear scan. */
function looksLikeHtml(html: string): boolean {
  let at = 0;
  for (;;) {
    while (at < html.length && /\s/.test(html[at])) at++;
    if (!html.startsWith('<!--', at)) break;
    const end = html.indexOf('-->', at + 4);
    if (end === -1) return false;
    at = end + 3;
  }
  const head = html.slice(at, at + 15).toLowerCase();
  return ['<!doctype html', '<html', '<head', '<body'].some(
    (start) => head.startsWith(start) && /[\s>]/.test(head[start.length] ?? ''),
  );
}

function isExecutableScript(element: HtmlElement): boolean {
  if (element.name !== 'script') return false;
  const type = element.attributes.get('type');
  return !type || !DATA_SCRIPT_TYPES.test(type);
}

/** Whether a UTF-16 code unit is whitespace for `\s` (what `collapse` collapses). */
function isWhitespace(code: number): boolean {
  if (code <= 32) return code === 32 || (code >= 9 && code <= 13);
  if (code < 160) return false;
  return (
    code === 160 ||
    code === 5760 ||
    (code >= 8192 && code <= 8202) ||
    code === 8232 ||
    code === 8233 ||
    code === 8239 ||
    code === 8287 ||
    code === 12288 ||
    code === 65279
  );
}

/** The length the visible text would have with whitespace runs collapsed to one space and the ends trimmed. */
function visibleTextLength(root: HtmlElement): number {
  let length = 0;
  let pendingSpace = false;
  for (const text of elementsAndText(root)) {
    for (let i = 0; i < text.length; i++) {
      if (isWhitespace(text.charCodeAt(i))) {
        pendingSpace = length > 0;
        continue;
      }
      if (pendingSpace) length++;
      pendingSpace = false;
      length++;
    }
  }
  return length;
}

function* elementsAndText(root: HtmlElement): Generator<string> {
  for (const node of descendants(root, (element) => INVISIBLE_TAGS.has(element.name)))
    if (node.type === 'text') yield node.data;
}

function isMountPoint(element: HtmlElement): boolean {
  const id = element.attributes.get('id');
  return (
    (id !== undefined && SPA_MOUNT_IDS.has(id)) ||
    element.name === 'app-root' ||
    SPA_MOUNT_ATTRIBUTES.some((name) => element.attributes.has(name))
  );
}

function isEmptyMount(mount: HtmlElement): boolean {
  let text = '';
  let visited = 0;
  for (const node of descendants(mount)) {
    if (++visited > MOUNT_NODES_EXAMINED) return false;
    if (node.type === 'element') {
      if (MEDIA_TAGS.has(node.name)) return false;
      continue;
    }
    // Kept collapsed and short, so each step costs the same however much text the mount holds.
    text = (text + node.data.trimStart().slice(0, EMPTY_MOUNT_TEXT * 4)).replace(/\s+/g, ' ');
    if (text.trim().length >= EMPTY_MOUNT_TEXT) return false;
  }
  return true;
}

function describeMount(element: HtmlElement): string {
  const id = element.attributes.get('id');
  return id ? `#${id}` : `<${element.name}>`;
}

export function needsBrowser(html: string, contentType: string): BrowserNeed {
  const isHtmlType = HTML_TYPES.test(contentType.trim());
  if (!isHtmlType && (contentType.trim() !== '' || !looksLikeHtml(html))) {
    return { needed: false, reason: `non-HTML content type ${contentType || '(none)'}` };
  }
  const document = parseHtmlTree(html);
  const scripts: HtmlElement[] = [];
  const mounts: HtmlElement[] = [];
  const noscripts: HtmlElement[] = [];
  let metaRefresh = false;
  for (const element of elementsIn(document)) {
    if (isExecutableScript(element)) scripts.push(element);
    else if (element.name === 'noscript') noscripts.push(element);
    else if (element.name === 'meta' && attributeIs(element, 'http-equiv', 'refresh')) metaRefresh = true;
    if (mounts.length < MAX_MOUNTS_EXAMINED && isMountPoint(element)) mounts.push(element);
  }
  const textLength = visibleTextLength(contentRoot(document));

  if (BOT_CHALLENGE.test(html) && textLength < SHORT_TEXT_WITH_NOSCRIPT_WARNING) {
    return { needed: true, reason: 'bot challenge page that runs JavaScript' };
  }
  if (scripts.length > 0) {
    const emptyMount = mounts.find(isEmptyMount);
    if (emptyMount) return { needed: true, reason: `empty SPA mount point ${describeMount(emptyMount)}` };
  }
  const noscriptWarning = noscripts.some((n) =>
    JS_REQUIRED.test(textOf(n, { maxChars: NOSCRIPT_CHARS_EXAMINED, maxNodes: MOUNT_NODES_EXAMINED })),
  );
  if (noscriptWarning && textLength < SHORT_TEXT_WITH_NOSCRIPT_WARNING) {
    return { needed: true, reason: '<noscript> says JavaScript is required and little text is present' };
  }
  if (metaRefresh) {
    return { needed: true, reason: 'meta refresh redirect' };
  }
  if (textLength < SHORT_TEXT && scripts.some((s) => JS_REDIRECT.test(textOf(s)))) {
    return { needed: true, reason: 'JavaScript redirect on a page with little text' };
  }
  if (textLength < SHORT_TEXT && scripts.length > 0) {
    return { needed: true, reason: `only ${textLength} characters of visible text with ${scripts.length} script(s)` };
  }
  return {
    needed: false,
    reason: scripts.length > 0 ? `static HTML with ${textLength} characters of text` : 'static HTML without scripts',
  };
}
