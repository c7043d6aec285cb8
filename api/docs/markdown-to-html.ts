/**
 * The Markdown the guides are written in, parsed into blocks and rendered to HTML with every piece of
 * text escaped. Supported: ATX headings, paragraphs, fenced code (with an info string such as
 * `sh exec expect=…`), bullet and numbered lists (nested by indentation), block quotes, GFM tables,
 * rules, and inline code, links, autolinks, `**strong**`, `*emphasis*` and backslash escapes. Raw HTML
 * is never passed through: it is shown as text. Links with a scheme other than http(s) or mailto are
 * rendered as plain text.
 */

export type Block =
  | { type: 'heading'; level: number; text: string; id: string; line: number }
  | { type: 'paragraph'; text: string }
  | { type: 'code'; lang: string; attrs: Record<string, string | true>; code: string; line: number }
  | { type: 'list'; ordered: boolean; start: number; tight: boolean; items: Block[][] }
  | { type: 'blockquote'; children: Block[] }
  | { type: 'table'; header: string[]; align: Align[]; rows: string[][] }
  | { type: 'rule' };

export type Align = 'left' | 'center' | 'right' | null;

export interface ParsedMarkdown {
  blocks: Block[];
  /** Top-level headings in order, with the ids the renderer gives them. */
  headings: Extract<Block, { type: 'heading' }>[];
}

const FENCE = /^( {0,3})(`{3,}|~{3,})\s*([^`]*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const LIST_ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
const TABLE_DELIMITER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/** GitHub-style heading slug: lower case, punctuation dropped, spaces to hyphens. */
export function slugify(text: string): string {
  return text
    .toLowerCase()
    .trim()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Splits an info string (`sh exec expect="code":"x"`) into the language and its attributes. */
export function parseInfoString(info: string): { lang: string; attrs: Record<string, string | true> } {
  const [lang = '', ...rest] = info.trim().split(/\s+/).filter(Boolean);
  const attrs: Record<string, string | true> = {};
  for (const word of rest) {
    const eq = word.indexOf('=');
    if (eq <= 0) attrs[word] = true;
    else attrs[word.slice(0, eq)] = word.slice(eq + 1);
  }
  return { lang: lang.toLowerCase(), attrs };
}

export function parseMarkdown(source: string): ParsedMarkdown {
  const lines = source.replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');
  const slugs = new Map<string, number>();
  const uniqueId = (text: string) => {
    const base = slugify(plainInline(text)) || 'section';
    const seen = slugs.get(base) ?? 0;
    slugs.set(base, seen + 1);
    return seen === 0 ? base : `${base}-${seen}`;
  };
  const blocks = parseBlocks(lines, 0, uniqueId);
  return { blocks, headings: blocks.filter((b): b is Extract<Block, { type: 'heading' }> => b.type === 'heading') };
}

function isBlank(line: string | undefined): boolean {
  return line === undefined || line.trim() === '';
}

function startsBlock(line: string, next: string | undefined): boolean {
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    LIST_ITEM.test(line) ||
    (line.includes('|') && next !== undefined && TABLE_DELIMITER.test(next) && next.includes('-'))
  );
}

function splitRow(line: string): string[] {
  let row = line.trim();
  if (row.startsWith('|')) row = row.slice(1);
  if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
  const cells: string[] = [];
  let current = '';
  let inCode = false;
  for (let i = 0; i < row.length; i++) {
    const ch = row[i];
    if (ch === '\\' && row[i + 1] === '|') {
      current += '|';
      i++;
    } else if (ch === '`') {
      inCode = !inCode;
      current += ch;
    } else if (ch === '|' && !inCode) {
      cells.push(current.trim());
      current = '';
    } else {
      current += ch;
    }
  }
  cells.push(current.trim());
  return cells;
}

function parseBlocks(lines: string[], lineOffset: number, uniqueId: (text: string) => string): Block[] {
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const [, indent, marker, info] = fence;
      const body: string[] = [];
      const start = i;
      i++;
      while (i < lines.length) {
        const closing = new RegExp(`^ {0,3}${marker[0] === '`' ? '`' : '~'}{${marker.length},}\\s*$`);
        if (closing.test(lines[i])) break;
        body.push(lines[i].replace(new RegExp(`^ {0,${indent.length}}`), ''));
        i++;
      }
      i++; // the closing fence (or the end of the input)
      const { lang, attrs } = parseInfoString(info);
      blocks.push({ type: 'code', lang, attrs, code: body.join('\n'), line: lineOffset + start });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const text = (heading[2] ?? '').replace(/\s+#+\s*$/, '').replace(/^#+$/, '');
      blocks.push({ type: 'heading', level: heading[1].length, text, id: uniqueId(text), line: lineOffset + i });
      i++;
      continue;
    }
    if (RULE.test(line)) {
      blocks.push({ type: 'rule' });
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner: string[] = [];
      const start = i;
      while (i < lines.length && QUOTE.test(lines[i])) {
        inner.push(QUOTE.exec(lines[i])![1]);
        i++;
      }
      blocks.push({ type: 'blockquote', children: parseBlocks(inner, lineOffset + start, uniqueId) });
      continue;
    }
    if (
      line.includes('|') &&
      lines[i + 1] !== undefined &&
      TABLE_DELIMITER.test(lines[i + 1]) &&
      lines[i + 1].includes('-')
    ) {
      const header = splitRow(line);
      const align = splitRow(lines[i + 1]).map((cell): Align => {
        const left = cell.startsWith(':');
        const right = cell.endsWith(':');
        return left && right ? 'center' : right ? 'right' : left ? 'left' : null;
      });
      i += 2;
      const rows: string[][] = [];
      while (i < lines.length && !isBlank(lines[i]) && lines[i].includes('|')) {
        const cells = splitRow(lines[i]);
        rows.push(header.map((_, c) => cells[c] ?? ''));
        i++;
      }
      blocks.push({ type: 'table', header, align: header.map((_, c) => align[c] ?? null), rows });
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      const consumed = parseList(lines, i, lineOffset, uniqueId);
      blocks.push(consumed.block);
      i = consumed.next;
      continue;
    }
    const paragraph: string[] = [];
    while (i < lines.length && !isBlank(lines[i]) && (paragraph.length === 0 || !startsBlock(lines[i], lines[i + 1]))) {
      paragraph.push(lines[i].trim());
      i++;
    }
    blocks.push({ type: 'paragraph', text: paragraph.join('\n') });
  }
  return blocks;
}

function parseList(
  lines: string[],
  from: number,
  lineOffset: number,
  uniqueId: (text: string) => string,
): { block: Block; next: number } {
  const first = LIST_ITEM.exec(lines[from])!;
  const ordered = /\d/.test(first[2]);
  const start = ordered ? parseInt(first[2], 10) : 1;
  const items: Block[][] = [];
  let tight = true;
  let i = from;
  while (i < lines.length) {
    const marker = LIST_ITEM.exec(lines[i]);
    if (!marker || /\d/.test(marker[2]) !== ordered) break;
    const contentIndent = marker[1].length + marker[2].length + Math.max(1, Math.min(marker[3].length, 4));
    const body: string[] = [marker[4]];
    const itemStart = i;
    i++;
    let sawBlank = false;
    while (i < lines.length) {
      const line = lines[i];
      if (isBlank(line)) {
        // A blank line continues the item only when the next non-blank line is indented into it.
        let j = i;
        while (j < lines.length && isBlank(lines[j])) j++;
        if (j < lines.length && lines[j].search(/\S/) >= contentIndent) {
          for (; i < j; i++) body.push('');
          sawBlank = true;
          continue;
        }
        break;
      }
      const indent = line.search(/\S/);
      if (indent >= contentIndent) {
        body.push(line.slice(contentIndent));
      } else if (!sawBlank && !LIST_ITEM.test(line) && !startsBlock(line, lines[i + 1])) {
        body.push(line.trim()); // lazy continuation of the item's paragraph
      } else {
        break;
      }
      i++;
    }
    if (sawBlank) tight = false;
    items.push(parseBlocks(body, lineOffset + itemStart, uniqueId));
    // Blank lines between items make the list loose.
    let j = i;
    while (j < lines.length && isBlank(lines[j])) j++;
    if (j < lines.length && j > i) {
      const nextMarker = LIST_ITEM.exec(lines[j]);
      if (nextMarker && /\d/.test(nextMarker[2]) === ordered && nextMarker[1].length < contentIndent) {
        tight = false;
        i = j;
        continue;
      }
      break;
    }
  }
  return { block: { type: 'list', ordered, start, tight, items }, next: i };
}

// ---------------------------------------------------------------------------------------------
// Inline content

const PLACEHOLDER = /\uE000(\d+)\uE001/g;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Links this renderer will emit as <a>: http(s), mailto, and scheme-less (relative) references. */
export function isSafeHref(href: string): boolean {
  if (/[\s\x00-\x1f\x7f]/.test(href)) return false;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(href);
  return scheme === null || ['http', 'https', 'mailto'].includes(scheme[1].toLowerCase());
}

export interface RenderOptions {
  /** Rewrites a link target (e.g. a guide file name to its page); return null to render the text without a link. */
  resolveLink?: (href: string) => string | null;
  /**
   * The address of an image `![alt](src)`; null (the default for every image) renders its alt text
   * instead. Only pictures the docs site serves itself should get one.
   */
  resolveImage?: (src: string) => string | null;
}

interface InlineToken {
  kind: 'code' | 'link' | 'image' | 'text';
  text: string;
  href?: string;
}

/** Finds the end of a link destination `(…)` starting at `open`, allowing balanced parentheses inside. */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return i;
  }
  return -1;
}

function closingBracket(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '`') {
      const run = /^`+/.exec(text.slice(i))![0];
      const end = text.indexOf(run, i + run.length);
      if (end > 0) i = end + run.length - 1;
    } else if (text[i] === '[') depth++;
    else if (text[i] === ']' && --depth === 0) return i;
  }
  return -1;
}

/** Pulls out code spans, links, autolinks and escapes; what is left is plain text with emphasis markers. */
function tokenizeInline(text: string): { template: string; tokens: InlineToken[] } {
  const tokens: InlineToken[] = [];
  let template = '';
  const push = (token: InlineToken) => {
    template += `\uE000${tokens.length}\uE001`;
    tokens.push(token);
  };
  const source = text.replace(/[\uE000\uE001]/g, '');
  let i = 0;
  while (i < source.length) {
    const ch = source[i];
    if (ch === '\\' && /[!-/:-@[-`{-~]/.test(source[i + 1] ?? '')) {
      push({ kind: 'text', text: source[i + 1] });
      i += 2;
      continue;
    }
    if (ch === '`') {
      const run = /^`+/.exec(source.slice(i))![0];
      const end = source.indexOf(run, i + run.length);
      if (end > 0 && source[end + run.length] !== '`') {
        let code = source.slice(i + run.length, end).replace(/\n/g, ' ');
        if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
        push({ kind: 'code', text: code });
        i = end + run.length;
        continue;
      }
      template += run;
      i += run.length;
      continue;
    }
    if (ch === '<') {
      const auto = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(source.slice(i));
      if (auto) {
        push({ kind: 'link', text: auto[1], href: auto[1] });
        i += auto[0].length;
        continue;
      }
    }
    if (ch === '!' && source[i + 1] === '[') {
      const close = closingBracket(source, i + 1);
      const end = close > 0 && source[close + 1] === '(' ? closingParen(source, close + 1) : -1;
      if (end > 0) {
        const destination = source.slice(close + 2, end).trim();
        const href = /^<([^>]*)>/.exec(destination)?.[1] ?? destination.split(/\s+/)[0] ?? '';
        push({ kind: 'image', text: source.slice(i + 2, close), href });
        i = end + 1;
        continue;
      }
    }
    if (ch === '[') {
      const close = closingBracket(source, i);
      if (close > 0 && source[close + 1] === '(') {
        const end = closingParen(source, close + 1);
        if (end > 0) {
          const destination = source.slice(close + 2, end).trim();
          const href = /^<([^>]*)>/.exec(destination)?.[1] ?? destination.split(/\s+/)[0] ?? '';
          push({ kind: 'link', text: source.slice(i + 1, close), href });
          i = end + 1;
          continue;
        }
      }
    }
    template += ch;
    i++;
  }
  return { template, tokens };
}

function emphasize(escaped: string): string {
  return escaped
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?![*\w])/g, '$1<em>$2</em>');
}

export function renderInline(text: string, options: RenderOptions = {}): string {
  const { template, tokens } = tokenizeInline(text);
  const html = emphasize(escapeHtml(template));
  return html.replace(PLACEHOLDER, (_, n: string) => {
    const token = tokens[Number(n)];
    if (token.kind === 'text') return escapeHtml(token.text);
    if (token.kind === 'code') return `<code>${escapeHtml(token.text)}</code>`;
    if (token.kind === 'image') {
      const src = options.resolveImage ? options.resolveImage(token.href!) : null;
      if (src === null || !isSafeHref(src)) return escapeHtml(token.text);
      return `<img src="${escapeHtml(src)}" alt="${escapeHtml(token.text)}">`;
    }
    const inner = token.href === token.text ? escapeHtml(token.text) : renderInline(token.text, options);
    const target = options.resolveLink ? options.resolveLink(token.href!) : token.href!;
    if (target === null || !isSafeHref(target)) return inner;
    return `<a href="${escapeHtml(target)}">${inner}</a>`;
  });
}

/** The text a reader sees, without Markdown syntax (for search and snippets). */
export function plainInline(text: string): string {
  const { template, tokens } = tokenizeInline(text);
  const plain = template
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '$1')
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?![*\w])/g, '$1$2');
  return plain.replace(PLACEHOLDER, (_, n: string) => {
    const token = tokens[Number(n)];
    return token.kind === 'link' ? plainInline(token.text) : token.text;
  });
}

// ---------------------------------------------------------------------------------------------
// Blocks

export function renderBlocks(blocks: Block[], options: RenderOptions = {}): string {
  return blocks.map((block) => renderBlock(block, options, false)).join('\n');
}

function renderBlock(block: Block, options: RenderOptions, tightItem: boolean): string {
  switch (block.type) {
    case 'heading': {
      const id = escapeHtml(block.id);
      return `<h${block.level} id="${id}"><a class="anchor" href="#${id}">${renderInline(block.text, options)}</a></h${block.level}>`;
    }
    case 'paragraph':
      return tightItem ? renderInline(block.text, options) : `<p>${renderInline(block.text, options)}</p>`;
    case 'code': {
      const lang = block.lang.replace(/[^\w+-]/g, '');
      return `<pre><code${lang ? ` class="language-${lang}"` : ''}>${escapeHtml(block.code)}</code></pre>`;
    }
    case 'list': {
      const tag = block.ordered ? 'ol' : 'ul';
      const start = block.ordered && block.start !== 1 ? ` start="${block.start}"` : '';
      const items = block.items.map(
        (children) => `<li>${children.map((child) => renderBlock(child, options, block.tight)).join('\n')}</li>`,
      );
      return `<${tag}${start}>\n${items.join('\n')}\n</${tag}>`;
    }
    case 'blockquote':
      return `<blockquote>\n${renderBlocks(block.children, options)}\n</blockquote>`;
    case 'table': {
      const cell = (tag: 'th' | 'td', text: string, c: number) => {
        const align = block.align[c];
        return `<${tag}${align ? ` class="align-${align}"` : ''}>${renderInline(text, options)}</${tag}>`;
      };
      const head = `<tr>${block.header.map((text, c) => cell('th', text, c)).join('')}</tr>`;
      const body = block.rows.map((row) => `<tr>${row.map((text, c) => cell('td', text, c)).join('')}</tr>`).join('\n');
      return `<table>\n<thead>${head}</thead>\n<tbody>\n${body}\n</tbody>\n</table>`;
    }
    case 'rule':
      return '<hr>';
  }
}

/** Plain text of blocks, code included, one block per line. */
export function plainText(blocks: Block[], options: { includeCode?: boolean } = {}): string {
  const out: string[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'heading':
      case 'paragraph':
        out.push(plainInline(block.text));
        break;
      case 'code':
        if (options.includeCode) out.push(block.code);
        break;
      case 'list':
        for (const item of block.items) out.push(plainText(item, options));
        break;
      case 'blockquote':
        out.push(plainText(block.children, options));
        break;
      case 'table':
        out.push(block.header.map(plainInline).join(' | '));
        for (const row of block.rows) out.push(row.map(plainInline).join(' | '));
        break;
      case 'rule':
        break;
    }
  }
  return out.filter(Boolean).join('\n');
}

/** Every code block, nested ones included, in document order. */
export function codeBlocks(blocks: Block[]): Extract<Block, { type: 'code' }>[] {
  const found: Extract<Block, { type: 'code' }>[] = [];
  for (const block of blocks) {
    if (block.type === 'code') found.push(block);
    else if (block.type === 'list') block.items.forEach((item) => found.push(...codeBlocks(item)));
    else if (block.type === 'blockquote') found.push(...codeBlocks(block.children));
  }
  return found;
}

/** Every link target, nested ones included. */
export function linkTargets(blocks: Block[]): string[] {
  const targets: string[] = [];
  const fromInline = (text: string) => {
    for (const token of tokenizeInline(text).tokens) {
      if (token.kind === 'link') {
        targets.push(token.href!);
        fromInline(token.text);
      }
    }
  };
  for (const block of blocks) {
    if (block.type === 'heading' || block.type === 'paragraph') fromInline(block.text);
    else if (block.type === 'list') block.items.forEach((item) => targets.push(...linkTargets(item)));
    else if (block.type === 'blockquote') targets.push(...linkTargets(block.children));
    else if (block.type === 'table') [...block.header, ...block.rows.flat()].forEach(fromInline);
  }
  return targets;
}
