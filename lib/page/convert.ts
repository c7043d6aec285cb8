import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';

export type PageLink = { url: string; text: string };

export type PageMetadata = {
  title: string | null;
  description: string | null;
  links: PageLink[];
  language: string | null;
};

export type ConvertedPage = { markdown: string; metadata: PageMetadata };

export type BrowserNeed = { needed: boolean; reason: string };

const MAX_LINKS = 500;
const NOISE_SELECTOR = [
  'script', 'style', 'noscript', 'template', 'svg', 'iframe', 'frame', 'object', 'embed', 'canvas',
  'link', 'meta', 'base', 'head', 'title',
  'nav', '[role="navigation"]', 'button', 'input', 'select', 'textarea', 'dialog',
  '[hidden]', '[aria-hidden="true"]',
].join(',');
const INVISIBLE_STYLE = /(^|;)\s*(display\s*:\s*none|visibility\s*:\s*hidden)/i;
const CONSENT_MARKER = /(^|[\s_-])(cookie|consent|gdpr)[-_]?(banner|bar|notice|popup|consent|modal|dialog|wall|overlay|law|message)($|[\s_-])|onetrust|cookiebot|usercentrics|cc-window/i;

function all(root: Document | Element, selector: string): Element[] {
  return Array.from(root.querySelectorAll(selector));
}

function parseDocument(html: string): Document {
  const wrapped = /<html[\s>]/i.test(html) ? html : `<!doctype html><html><head></head><body>${html}</body></html>`;
  return parseHTML(wrapped).document;
}

function contentRoot(document: Document): Element {
  const body: Element | null = document.body;
  if (body && body.childNodes.length > 0) return body;
  return document.documentElement as Element;
}

function collapse(text: string | null | undefined): string {
  return (text ?? '').replace(/\s+/g, ' ').trim();
}

function nonEmpty(text: string | null | undefined): string | null {
  const value = collapse(text);
  return value ? value : null;
}

function metaContent(document: Document, selector: string): string | null {
  return nonEmpty(document.querySelector(selector)?.getAttribute('content'));
}

function baseUrl(document: Document, pageUrl: string): string {
  const href = document.querySelector('base[href]')?.getAttribute('href');
  if (!href) return pageUrl;
  try {
    return new URL(href, pageUrl).href;
  } catch {
    return pageUrl;
  }
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

function linkText(anchor: Element): string {
  return collapse(anchor.textContent)
    || collapse(anchor.getAttribute('aria-label'))
    || collapse(anchor.getAttribute('title'))
    || collapse(anchor.querySelector('img[alt]')?.getAttribute('alt'));
}

function extractLinks(document: Document, base: string): PageLink[] {
  const seen = new Set<string>();
  const links: PageLink[] = [];
  for (const anchor of all(document, 'a[href]')) {
    const url = resolveUrl(anchor.getAttribute('href'), base);
    if (!url || !isHttp(url)) continue;
    url.hash = '';
    if (seen.has(url.href)) continue;
    seen.add(url.href);
    links.push({ url: url.href, text: linkText(anchor) });
    if (links.length >= MAX_LINKS) break;
  }
  return links;
}

function extractMetadata(document: Document, base: string): PageMetadata {
  return {
    title: nonEmpty(document.querySelector('title')?.textContent) ?? metaContent(document, 'meta[property="og:title"]'),
    description: metaContent(document, 'meta[name="description"]') ?? metaContent(document, 'meta[property="og:description"]'),
    links: extractLinks(document, base),
    language: nonEmpty(document.documentElement?.getAttribute('lang'))
      ?? metaContent(document, 'meta[http-equiv="content-language"]'),
  };
}

function isNoise(element: Element): boolean {
  const style = element.getAttribute('style');
  if (style && INVISIBLE_STYLE.test(style)) return true;
  const marker = `${element.getAttribute('id') ?? ''} ${element.getAttribute('class') ?? ''}`;
  return CONSENT_MARKER.test(marker);
}

function removeNoise(root: Element): void {
  for (const element of all(root, NOISE_SELECTOR)) element.remove();
  for (const element of all(root, '[style],[id],[class]')) {
    if (element.isConnected && isNoise(element)) element.remove();
  }
}

function absolutizeLinks(root: Element, base: string): void {
  for (const anchor of all(root, 'a[href]')) {
    const url = resolveUrl(anchor.getAttribute('href'), base);
    if (url && (isHttp(url) || url.protocol === 'mailto:' || url.protocol === 'tel:')) anchor.setAttribute('href', url.href);
    else anchor.removeAttribute('href');
  }
  for (const image of all(root, 'img')) {
    const candidates = [image.getAttribute('src'), image.getAttribute('data-src'), image.getAttribute('data-lazy-src')];
    const url = candidates.map((c) => resolveUrl(c, base)).find((u): u is URL => !!u && isHttp(u));
    if (url) image.setAttribute('src', url.href);
    else image.removeAttribute('src');
  }
}

type TurndownNode = TurndownService.Node & Element;

function directRows(table: Element): Element[] {
  const rows: Element[] = [];
  for (const child of Array.from(table.children)) {
    if (child.nodeName === 'TR') rows.push(child);
    else if (['THEAD', 'TBODY', 'TFOOT'].includes(child.nodeName)) {
      rows.push(...Array.from(child.children).filter((r) => r.nodeName === 'TR'));
    }
  }
  return rows;
}

function rowCells(row: Element, renderCell: (cell: Element) => string): string[] {
  const cells: string[] = [];
  for (const cell of Array.from(row.children)) {
    if (cell.nodeName !== 'TD' && cell.nodeName !== 'TH') continue;
    cells.push(renderCell(cell));
    const span = Math.min(Number(cell.getAttribute('colspan')) || 1, 50);
    for (let i = 1; i < span; i++) cells.push('');
  }
  return cells;
}

function markdownTable(table: Element, renderCell: (cell: Element) => string): string | null {
  if (table.querySelector('table')) return null;
  const rows = directRows(table).map((row) => rowCells(row, renderCell));
  const width = Math.max(0, ...rows.map((r) => r.length));
  if (rows.length < 2 || width < 2) return null;
  const line = (cells: string[]) => `| ${Array.from({ length: width }, (_, i) => cells[i] ?? '').join(' | ')} |`;
  const separator = `| ${Array.from({ length: width }, () => '---').join(' | ')} |`;
  const caption = collapse(table.querySelector('caption')?.textContent);
  const body = [line(rows[0]), separator, ...rows.slice(1).map(line)].join('\n');
  return `\n\n${caption ? `${caption}\n\n` : ''}${body}\n\n`;
}

function createTurndown(): TurndownService {
  const service = new TurndownService({
    headingStyle: 'atx',
    hr: '---',
    bulletListMarker: '-',
    codeBlockStyle: 'fenced',
    emDelimiter: '_',
    strongDelimiter: '**',
  });
  const renderCell = (cell: Element) => collapse(service.turndown(cell.innerHTML)).replace(/\|/g, '\\|');
  service.addRule('table', {
    filter: 'table',
    replacement: (content, node) => markdownTable(node as TurndownNode, renderCell) ?? `\n\n${content}\n\n`,
  });
  service.addRule('tableSection', {
    filter: ['thead', 'tbody', 'tfoot', 'caption'],
    replacement: (content) => content,
  });
  service.addRule('listItem', {
    filter: 'li',
    replacement: (content, node, options) => {
      const parent = node.parentNode as Element | null;
      let prefix = `${options.bulletListMarker} `;
      if (parent?.nodeName === 'OL') {
        const start = Number(parent.getAttribute('start')) || 1;
        prefix = `${start + Array.prototype.indexOf.call(parent.children, node)}. `;
      }
      const isParagraph = /\n$/.test(content);
      const body = (content.replace(/^\n+|\n+$/g, '') + (isParagraph ? '\n' : '')).replace(/\n/g, `\n${' '.repeat(prefix.length)}`);
      return prefix + body + (node.nextSibling ? '\n' : '');
    },
  });
  service.addRule('link', {
    filter: (node) => node.nodeName === 'A' && !!node.getAttribute('href'),
    replacement: (content, node) => {
      const text = collapse(content);
      if (!text) return '';
      const href = (node as TurndownNode).getAttribute('href')!.replace(/[()]/g, (c) => encodeURIComponent(c));
      return `[${text}](${href})`;
    },
  });
  return service;
}

const turndown = createTurndown();

function tidyMarkdown(markdown: string): string {
  return markdown
    .replace(/[ \t]+$/gm, (spaces) => (spaces === '  ' ? spaces : ''))
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export function htmlToPage(html: string, pageUrl: string): ConvertedPage {
  const document = parseDocument(html);
  const base = baseUrl(document, pageUrl);
  const metadata = extractMetadata(document, base);
  const root = contentRoot(document);
  removeNoise(root);
  absolutizeLinks(root, base);
  const markdown = tidyMarkdown(turndown.turndown(root.innerHTML));
  return { markdown, metadata };
}

const HTML_TYPES = /^(text\/html|application\/xhtml\+xml)\b/i;
const SPA_MOUNT_SELECTOR = '#root, #app, #__next, #__nuxt, #___gatsby, #svelte, [data-reactroot], app-root, [ng-app], [ng-version]';
const JS_REQUIRED = /(enable|turn on|activate|requires?|need)\s+(your\s+)?javascript|javascript\s+(is\s+)?(required|disabled|must be enabled|needs to be enabled)/i;
const BOT_CHALLENGE = /cf-browser-verification|challenge-platform|cf_chl_|just a moment\.\.\.|checking your browser|ddos-guard|_incapsula_resource|px-captcha/i;
const JS_REDIRECT = /(window\.|document\.|top\.)?location(\.href)?\s*=[^=]|location\.(replace|assign)\s*\(/;
const DATA_SCRIPT_TYPES = /json|template|html|text\/x-/i;
const SHORT_TEXT = 200;
const SHORT_TEXT_WITH_NOSCRIPT_WARNING = 1000;
const EMPTY_MOUNT_TEXT = 40;

function looksLikeHtml(html: string): boolean {
  return /^\s*(<!--[\s\S]*?-->\s*)*<(!doctype html|html|head|body)[\s>]/i.test(html);
}

function executableScripts(document: Document): Element[] {
  return all(document, 'script').filter((script) => {
    const type = script.getAttribute('type');
    return !type || !DATA_SCRIPT_TYPES.test(type);
  });
}

function visibleText(root: Element): string {
  const clone = root.cloneNode(true) as Element;
  for (const element of all(clone, 'script,style,noscript,template,svg,head,title')) element.remove();
  return collapse(clone.textContent);
}

function describeMount(element: Element): string {
  const id = element.getAttribute('id');
  return id ? `#${id}` : `<${element.localName}>`;
}

export function needsBrowser(html: string, contentType: string): BrowserNeed {
  const isHtmlType = HTML_TYPES.test(contentType.trim());
  if (!isHtmlType && (contentType.trim() !== '' || !looksLikeHtml(html))) {
    return { needed: false, reason: `non-HTML content type ${contentType || '(none)'}` };
  }
  const document = parseDocument(html);
  const scripts = executableScripts(document);
  const text = visibleText(contentRoot(document));

  if (BOT_CHALLENGE.test(html) && text.length < SHORT_TEXT_WITH_NOSCRIPT_WARNING) {
    return { needed: true, reason: 'bot challenge page that runs JavaScript' };
  }
  if (scripts.length > 0) {
    const emptyMount = all(document, SPA_MOUNT_SELECTOR)
      .find((mount) => collapse(mount.textContent).length < EMPTY_MOUNT_TEXT && !mount.querySelector('img,picture,video,table'));
    if (emptyMount) return { needed: true, reason: `empty SPA mount point ${describeMount(emptyMount)}` };
  }
  const noscriptWarning = all(document, 'noscript').some((n) => JS_REQUIRED.test(n.textContent ?? ''));
  if (noscriptWarning && text.length < SHORT_TEXT_WITH_NOSCRIPT_WARNING) {
    return { needed: true, reason: '<noscript> says JavaScript is required and little text is present' };
  }
  if (document.querySelector('meta[http-equiv="refresh" i]')) {
    return { needed: true, reason: 'meta refresh redirect' };
  }
  if (text.length < SHORT_TEXT && scripts.some((s) => JS_REDIRECT.test(s.textContent ?? ''))) {
    return { needed: true, reason: 'JavaScript redirect on a page with little text' };
  }
  if (text.length < SHORT_TEXT && scripts.length > 0) {
    return { needed: true, reason: `only ${text.length} characters of visible text with ${scripts.length} script(s)` };
  }
  return { needed: false, reason: scripts.length > 0 ? `static HTML with ${text.length} characters of text` : 'static HTML without scripts' };
}
