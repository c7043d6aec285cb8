import { textOf, type HtmlElement, type HtmlNode } from './html-tree';

/**
 * HTML tree → Markdown, in one iterative pass whose cost is linear in the page: no regular expression that can
 * backtrack, no recursion, no string rebuilt per nesting level. Line prefixes (list indentation, quote markers)
 * count at most MAX_PREFIX_LEVELS levels, so deep nesting cannot multiply the output either.
 */
export interface MarkdownOptions {
  /** Resolves a link or image URL against the page; null drops the link (keeping its text) or the image. */
  resolveHref(raw: string, kind: 'link' | 'image'): string | null;
  /** Elements left out with everything inside them (scripts, navigation, hidden parts, ...). */
  isNoise(element: HtmlElement): boolean;
}

const MAX_PREFIX_LEVELS = 8;
const MAX_TABLE_COLUMNS_FROM_COLSPAN = 50;

const BLOCK_ELEMENTS = new Set([
  'address',
  'article',
  'aside',
  'audio',
  'blockquote',
  'body',
  'canvas',
  'center',
  'dd',
  'details',
  'dialog',
  'dir',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'frameset',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hgroup',
  'hr',
  'html',
  'li',
  'main',
  'menu',
  'nav',
  'noframes',
  'ol',
  'output',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'ul',
  'caption',
]);
const HEADINGS: Record<string, string> = { h1: '# ', h2: '## ', h3: '### ', h4: '#### ', h5: '##### ', h6: '###### ' };

const ESCAPED_ANYWHERE = /[\\*`[\]_]/g;
/** Whether some whitespace run is not already a single space (most prose has none, so most text is returned as is). */
const UNCOLLAPSED_SPACE = /[\t\n\r\f]| [ \t\n\r\f]/;

function isSpace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13 || code === 12;
}

/** HTML whitespace collapsing: every run of spaces, tabs and line breaks becomes one space (no-break spaces stay). */
export function collapseSpaces(text: string): string {
  if (!UNCOLLAPSED_SPACE.test(text)) return text;
  const parts: string[] = [];
  let kept = 0;
  for (let i = 0; i < text.length;) {
    const code = text.charCodeAt(i);
    if (!isSpace(code)) {
      i++;
      continue;
    }
    let end = i + 1;
    while (end < text.length && isSpace(text.charCodeAt(end))) end++;
    if (end - i > 1 || code !== 32) {
      parts.push(text.slice(kept, i), ' ');
      kept = end;
    }
    i = end;
  }
  parts.push(text.slice(kept));
  return parts.join('');
}

/** Markdown escaping as turndown does it: characters that mean something anywhere, and line starts that would become syntax. */
function escapeText(text: string, atLineStart: boolean): string {
  let escaped = text.replace(ESCAPED_ANYWHERE, '\\$&');
  if (!atLineStart) return escaped;
  const first = escaped.charCodeAt(0);
  if (first === 45 /* - */ || first === 62 /* > */ || first === 61 /* = */) return '\\' + escaped;
  if (escaped.startsWith('+ ')) return '\\' + escaped;
  if (escaped.startsWith('~~~')) return '\\' + escaped;
  if (first === 35 /* # */) {
    let hashes = 0;
    while (hashes < escaped.length && escaped.charCodeAt(hashes) === 35) hashes++;
    if (hashes <= 6 && escaped.charCodeAt(hashes) === 32) return '\\' + escaped;
  }
  if (first >= 48 && first <= 57) {
    let digits = 0;
    while (digits < escaped.length && escaped.charCodeAt(digits) >= 48 && escaped.charCodeAt(digits) <= 57) digits++;
    if (escaped.charCodeAt(digits) === 46 && escaped.charCodeAt(digits + 1) === 32)
      escaped = `${escaped.slice(0, digits)}\\${escaped.slice(digits)}`;
  }
  return escaped;
}

function longestRun(text: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    run = text[i] === char ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  return longest;
}

function trimSpaces(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}

interface Prefix {
  first: string;
  rest: string;
  used: boolean;
}

interface Opener {
  text: string;
  written: boolean;
}

class Writer {
  private readonly parts: string[] = [];
  private readonly prefixes: Prefix[] = [];
  private readonly openers: Opener[] = [];
  private wroteAnything = false;
  /** Whether the current line has anything (its prefix included). */
  private lineStarted = false;
  /** Whether the current line has content beyond its prefix. */
  private lineHasContent = false;
  private pendingNewlines = 0;
  private pendingSpace = false;
  /** Blank lines written since the last line with content ended. */
  private blankLines = 0;
  /** The prefix of a continuation line, valid while the prefix stack is unchanged and every level is used. */
  private cachedPrefix: string | null = null;

  constructor(private readonly singleLine: boolean) {}

  /** Asks for a line break (1) or a blank line (2) before whatever comes next. */
  block(separation: 1 | 2): void {
    this.pendingSpace = this.singleLine && (this.pendingSpace || this.lineHasContent);
    if (this.singleLine) return;
    const top = this.prefixes[this.prefixes.length - 1];
    if (top && !top.used) return;
    if (this.wroteAnything) this.pendingNewlines = Math.max(this.pendingNewlines, separation);
  }

  space(): void {
    this.pendingSpace = true;
  }

  hardBreak(): void {
    if (this.singleLine) return this.space();
    if (!this.lineHasContent) {
      // A break on an empty line (the second of `<br><br>`) leaves a blank line.
      this.block(2);
      return;
    }
    this.parts.push('  ');
    this.breakLines(1);
    this.pendingSpace = false;
  }

  pushPrefix(first: string, rest: string): void {
    if (this.singleLine) return;
    this.prefixes.push({ first, rest, used: false });
    this.cachedPrefix = null;
  }

  popPrefix(): void {
    if (this.singleLine) return;
    this.prefixes.pop();
    this.cachedPrefix = null;
  }

  open(text: string): void {
    this.openers.push({ text, written: false });
  }

  /** Whether an opener with this text is open: emphasis inside the same emphasis adds nothing. */
  isOpen(text: string): boolean {
    return this.openers.some((opener) => opener.text === text);
  }

  /** Closes the innermost opener; its closing text is written only if the opener was (something was written inside). */
  close(closing: string | ((written: boolean) => string)): void {
    const opener = this.openers.pop();
    const text = typeof closing === 'string' ? closing : closing(opener?.written ?? false);
    if (opener?.written && text) this.parts.push(text);
  }

  /** Visible text, written as given (callers escape). Flushes pending breaks, the pending space and pending openers first. */
  write(text: string, escape: (atLineStart: boolean) => string = () => text): void {
    if (text === '') return;
    if (this.pendingNewlines > 0) {
      this.breakLines(this.pendingNewlines);
      this.pendingNewlines = 0;
      this.pendingSpace = false;
    }
    this.startLine();
    if (this.pendingSpace && this.lineHasContent) this.parts.push(' ');
    this.pendingSpace = false;
    for (const opener of this.openers) {
      if (opener.written) continue;
      this.parts.push(opener.text);
      opener.written = true;
      this.lineHasContent = true;
    }
    this.parts.push(escape(!this.lineHasContent));
    this.lineHasContent = true;
    this.wroteAnything = true;
  }

  /** Preformatted lines (after the current line), each under the current prefixes, blank ones kept, trailing blanks dropped. */
  writeLines(lines: string[]): void {
    for (const line of lines) {
      this.endLine();
      let end = line.length;
      while (end > 0 && (line.charCodeAt(end - 1) === 32 || line.charCodeAt(end - 1) === 9)) end--;
      if (end === 0) {
        this.parts.push(this.blankPrefix(), '\n');
        continue;
      }
      this.startLine();
      this.parts.push(end === line.length ? line : line.slice(0, end));
      this.lineHasContent = true;
    }
    this.wroteAnything = true;
  }

  /** The Markdown: no trailing spaces but hard breaks, at most one blank line outside code blocks, no blank ends. */
  toString(): string {
    const text = this.parts.join('');
    let end = text.length;
    while (end > 0 && isSpace(text.charCodeAt(end - 1))) end--;
    return end === text.length ? text : text.slice(0, end);
  }

  private startLine(): void {
    if (this.lineStarted) return;
    const prefix = this.cachedPrefix ?? this.linePrefix(false);
    if (prefix !== '') this.parts.push(prefix);
    this.lineStarted = true;
  }

  /** Ends the current line, if one is started, so what follows begins a line of its own. */
  private endLine(): void {
    if (!this.lineStarted) return;
    this.parts.push('\n');
    this.lineStarted = false;
    this.lineHasContent = false;
    this.blankLines = 0;
  }

  /** Ends the current line and makes sure `count - 1` blank lines (carrying quote markers) separate it from the next. */
  private breakLines(count: number): void {
    if (this.singleLine) {
      this.pendingSpace = true;
      return;
    }
    if (!this.wroteAnything) return;
    this.endLine();
    for (; this.blankLines < count - 1; this.blankLines++) this.parts.push(this.blankPrefix(), '\n');
  }

  private blankPrefix(): string {
    const prefix = this.linePrefix(true);
    let end = prefix.length;
    while (end > 0 && prefix.charCodeAt(end - 1) === 32) end--;
    return prefix.slice(0, end);
  }

  private linePrefix(blank: boolean): string {
    let prefix = '';
    const levels = Math.min(this.prefixes.length, MAX_PREFIX_LEVELS);
    for (let i = 0; i < levels; i++) {
      const level = this.prefixes[i];
      if (blank) {
        prefix += level.used ? level.rest : '';
        continue;
      }
      prefix += level.used ? level.rest : level.first;
      level.used = true;
    }
    if (!blank) {
      for (let i = levels; i < this.prefixes.length; i++) this.prefixes[i].used = true;
      // From now on every level is used, so the next lines get the same prefix until the stack changes.
      this.cachedPrefix = this.linePrefix(true);
    }
    return prefix;
  }
}

interface ListState {
  ordered: boolean;
  next: number;
}

function directChildren(element: HtmlElement, names: readonly string[]): HtmlElement[] {
  return element.children.filter(
    (child): child is HtmlElement => child.type === 'element' && names.includes(child.name),
  );
}

function tableRows(table: HtmlElement): HtmlElement[] {
  const rows: HtmlElement[] = [];
  for (const child of table.children) {
    if (child.type !== 'element') continue;
    if (child.name === 'tr') rows.push(child);
    else if (child.name === 'thead' || child.name === 'tbody' || child.name === 'tfoot')
      rows.push(...directChildren(child, ['tr']));
  }
  return rows;
}

export function htmlToMarkdown(root: HtmlElement, options: MarkdownOptions): string {
  return render(root, options, false);
}

function render(root: HtmlElement, options: MarkdownOptions, singleLine: boolean): string {
  const writer = new Writer(singleLine);
  const lists: ListState[] = [];
  type Frame = { element: HtmlElement; index: number; exit?: () => void };
  const stack: Frame[] = [{ element: root, index: 0 }];

  const writeText = (data: string) => {
    if (data === '') return;
    const startsWithSpace = isSpace(data.charCodeAt(0));
    const endsWithSpace = isSpace(data.charCodeAt(data.length - 1));
    const words = collapseSpaces(trimSpaces(data));
    if (startsWithSpace) writer.space();
    writer.write(words, (atLineStart) => escapeText(words, atLineStart));
    if (endsWithSpace && words !== '') writer.space();
  };

  const inlineCode = (element: HtmlElement) => {
    const raw = textOf(element);
    const code = collapseSpaces(trimSpaces(raw));
    if (raw !== '' && isSpace(raw.charCodeAt(0))) writer.space();
    if (code !== '') {
      const fence = '`'.repeat(longestRun(code, '`') + 1);
      const pad = code.startsWith('`') || code.endsWith('`') ? ' ' : '';
      writer.write(`${fence}${pad}${code}${pad}${fence}`);
    }
    if (raw !== '' && isSpace(raw.charCodeAt(raw.length - 1))) writer.space();
  };

  const codeBlock = (pre: HtmlElement) => {
    let code = textOf(pre);
    if (code.startsWith('\n')) code = code.slice(1);
    if (code.endsWith('\n')) code = code.slice(0, -1);
    const codeChild = pre.children.find(
      (child): child is HtmlElement => child.type === 'element' && child.name === 'code',
    );
    const language =
      /(?:^|\s)language-([\w+#.-]{1,40})(?:\s|$)/.exec(codeChild?.attributes.get('class') ?? '')?.[1] ?? '';
    if (singleLine) {
      writeText(code);
      return;
    }
    const fence = '`'.repeat(Math.max(3, longestRun(code, '`') + 1));
    writer.block(2);
    writer.write(`${fence}${language}`);
    writer.writeLines([...code.split('\n'), fence]);
    writer.block(2);
  };

  const image = (element: HtmlElement) => {
    const candidates = [
      element.attributes.get('src'),
      element.attributes.get('data-src'),
      element.attributes.get('data-lazy-src'),
    ];
    let src: string | null = null;
    for (const candidate of candidates) {
      if (candidate && (src = options.resolveHref(candidate, 'image'))) break;
    }
    if (!src) return;
    const clean = (value: string | undefined) => (value ?? '').replace(/\n\s*/g, '\n');
    const alt = clean(element.attributes.get('alt'));
    const title = clean(element.attributes.get('title'));
    writer.write(`![${alt}](${src}${title ? ` "${title}"` : ''})`);
  };

  const table = (element: HtmlElement): boolean => {
    if (element.containsTable) return false;
    const rows = tableRows(element).map((row) => {
      const cells: string[] = [];
      for (const cell of directChildren(row, ['td', 'th'])) {
        cells.push(render(cell, options, true).replace(/\|/g, '\\|'));
        const span = Math.min(Number(cell.attributes.get('colspan')) || 1, MAX_TABLE_COLUMNS_FROM_COLSPAN);
        for (let i = 1; i < span; i++) cells.push('');
      }
      return cells;
    });
    const width = rows.reduce((widest, row) => Math.max(widest, row.length), 0);
    if (rows.length < 2 || width < 2) return false;
    const line = (cells: string[]) => `| ${Array.from({ length: width }, (_, i) => cells[i] ?? '').join(' | ')} |`;
    const caption = directChildren(element, ['caption'])[0];
    const captionText = caption ? render(caption, options, true) : '';
    writer.block(2);
    if (captionText) {
      writer.write(captionText);
      writer.block(2);
    }
    writer.write(line(rows[0]));
    writer.writeLines([`| ${Array.from({ length: width }, () => '---').join(' | ')} |`, ...rows.slice(1).map(line)]);
    writer.block(2);
    return true;
  };

  /** Writes what an element opens with; returns false to leave out what is inside it. */
  const enter = (element: HtmlElement, frame: Frame): boolean => {
    const { name } = element;
    if (options.isNoise(element)) return false;
    const heading = HEADINGS[name];
    if (heading) {
      writer.block(2);
      writer.open(heading);
      frame.exit = () => {
        writer.close('');
        writer.block(2);
      };
      return true;
    }
    switch (name) {
      case 'br':
        writer.hardBreak();
        return false;
      case 'hr':
        writer.block(2);
        writer.write('---');
        writer.block(2);
        return false;
      case 'img':
        image(element);
        return false;
      case 'pre':
        codeBlock(element);
        return false;
      case 'code':
      case 'kbd':
      case 'samp':
      case 'tt':
        inlineCode(element);
        return false;
      case 'table':
        if (table(element)) return false;
        break;
      case 'blockquote':
        writer.block(2);
        writer.pushPrefix('> ', '> ');
        frame.exit = () => {
          writer.popPrefix();
          writer.block(2);
        };
        return true;
      case 'ul':
      case 'ol': {
        const insideItem = element.parent?.name === 'li';
        writer.block(insideItem ? 1 : 2);
        lists.push({ ordered: name === 'ol', next: Number.parseInt(element.attributes.get('start') ?? '', 10) || 1 });
        frame.exit = () => {
          lists.pop();
          writer.block(insideItem ? 1 : 2);
        };
        return true;
      }
      case 'li': {
        const list = lists[lists.length - 1];
        const marker = list?.ordered ? `${list.next++}. ` : '- ';
        writer.block(1);
        writer.pushPrefix(marker, ' '.repeat(marker.length));
        frame.exit = () => {
          writer.popPrefix();
          writer.block(1);
        };
        return true;
      }
      case 'a': {
        const raw = element.attributes.get('href');
        const href = raw ? options.resolveHref(raw, 'link') : null;
        // Links do not nest (an HTML parser would have closed the outer one): an inner link is plain text.
        if (!href || writer.isOpen('[')) return true;
        writer.open('[');
        frame.exit = () => writer.close(`](${href.replace(/[()]/g, (c) => encodeURIComponent(c))})`);
        return true;
      }
      case 'em':
      case 'i':
      case 'strong':
      case 'b': {
        const delimiter = name === 'em' || name === 'i' ? '_' : '**';
        if (writer.isOpen(delimiter)) return true;
        writer.open(delimiter);
        frame.exit = () => writer.close(delimiter);
        return true;
      }
    }
    if (BLOCK_ELEMENTS.has(name)) {
      writer.block(2);
      frame.exit = () => writer.block(2);
    }
    return true;
  };

  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    if (frame.index >= frame.element.children.length) {
      stack.pop();
      frame.exit?.();
      continue;
    }
    const node: HtmlNode = frame.element.children[frame.index++];
    if (node.type === 'text') {
      writeText(node.data);
      continue;
    }
    const child: Frame = { element: node, index: 0 };
    if (enter(node, child)) stack.push(child);
    else child.exit?.();
  }
  return singleLine ? trimSpaces(writer.toString()) : writer.toString();
}
