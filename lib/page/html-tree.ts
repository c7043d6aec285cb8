import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';

/**
 * A minimal HTML tree for reading page content, built in one linear pass over htmlparser2's tokenizer with the
 * tree rules of htmlparser2's parser (implied end tags, void elements, foreign content), but with no step whose cost
 * grows with the nesting depth and with hard bounds on what a hostile page can make it hold:
 * - at most MAX_DEPTH open elements: deeper start tags (and their end tags) are ignored, their text kept;
 * - at most MAX_ELEMENTS elements: later tags are ignored, their text kept.
 * Everything that reads the tree walks it iteratively, so no page can overflow the stack either.
 */
export const MAX_DEPTH = 512;
export const MAX_ELEMENTS = 200_000;

export interface HtmlText {
  readonly type: 'text';
  data: string;
}

export interface HtmlElement {
  readonly type: 'element';
  /** Lower-cased tag name; `#document` for the root. */
  readonly name: string;
  readonly attributes: ReadonlyMap<string, string>;
  readonly children: HtmlNode[];
  readonly parent: HtmlElement | null;
  /** True when a `table` element is somewhere below this one. */
  containsTable: boolean;
}

export type HtmlNode = HtmlElement | HtmlText;

export interface HtmlLimits {
  maxDepth: number;
  maxElements: number;
}

const VOID_ELEMENTS = new Set([
  'area',
  'base',
  'basefont',
  'br',
  'col',
  'command',
  'embed',
  'frame',
  'hr',
  'img',
  'input',
  'isindex',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);

const FORM_TAGS = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const P_TAG = new Set(['p']);
const TABLE_SECTION_TAGS = new Set(['thead', 'tbody']);
const DD_DT_TAGS = new Set(['dd', 'dt']);
const RT_RP_TAGS = new Set(['rt', 'rp']);
/** Start tags that close the open elements listed, while those are on top (as htmlparser2's parser does). */
const OPEN_IMPLIES_CLOSE = new Map<string, ReadonlySet<string>>([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', DD_DT_TAGS],
  ['dt', DD_DT_TAGS],
  ['rt', RT_RP_TAGS],
  ['rp', RT_RP_TAGS],
  ['tbody', TABLE_SECTION_TAGS],
  ['tfoot', TABLE_SECTION_TAGS],
  ...['select', 'input', 'output', 'button', 'datalist', 'textarea'].map((tag): [string, ReadonlySet<string>] => [
    tag,
    FORM_TAGS,
  ]),
  ...[
    'p',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'address',
    'article',
    'aside',
    'blockquote',
    'details',
    'div',
    'dl',
    'fieldset',
    'figcaption',
    'figure',
    'footer',
    'form',
    'header',
    'hr',
    'main',
    'nav',
    'ol',
    'pre',
    'section',
    'table',
    'ul',
  ].map((tag): [string, ReadonlySet<string>] => [tag, P_TAG]),
]);
const FOREIGN_CONTEXT_ELEMENTS = new Set(['math', 'svg']);
const HTML_INTEGRATION_ELEMENTS = new Set([
  'mi',
  'mo',
  'mn',
  'ms',
  'mtext',
  'annotation-xml',
  'foreignobject',
  'desc',
  'title',
]);

/** Shared by every element without attributes (most of them), so those cost no map of their own. */
const NO_ATTRIBUTES: ReadonlyMap<string, string> = new Map();

interface MutableElement extends HtmlElement {
  attributes: Map<string, string> | typeof NO_ATTRIBUTES;
}

function newElement(name: string, parent: HtmlElement | null): MutableElement {
  return { type: 'element', name, attributes: NO_ATTRIBUTES, children: [], parent, containsTable: false };
}

function setAttribute(element: MutableElement, name: string, value: string): void {
  if (element.attributes === NO_ATTRIBUTES) element.attributes = new Map();
  const attributes = element.attributes as Map<string, string>;
  if (!attributes.has(name)) attributes.set(name, value);
}

/** Parses a whole document or a fragment; never throws on malformed input. */
export function parseHtmlTree(
  html: string,
  limits: HtmlLimits = { maxDepth: MAX_DEPTH, maxElements: MAX_ELEMENTS },
): HtmlElement {
  const root = newElement('#document', null);
  const open: HtmlElement[] = [];
  /** How many elements of each name are open, so an end tag with nothing to close costs nothing. */
  const openCount = new Map<string, number>();
  /** Ignored start tags (over a limit) whose end tags are still to be ignored, by name. */
  const ignoredOpen = new Map<string, number>();
  const foreignContext: boolean[] = [false];
  let elements = 0;

  let tagName = '';
  let tag: MutableElement | null = null;
  let ignoringTag = false;
  let attributeName = '';
  let attributeValue = '';

  const current = () => open[open.length - 1] ?? root;
  const bump = (map: Map<string, number>, name: string, by: number) => map.set(name, (map.get(name) ?? 0) + by);

  /** Text of the current insertion point, joined once when something else is inserted (no per-piece string rebuilding). */
  let pendingText: string[] = [];
  const appendText = (text: string) => {
    if (text !== '') pendingText.push(text);
  };
  const flushText = () => {
    if (pendingText.length === 0) return;
    const data = pendingText.length === 1 ? pendingText[0] : pendingText.join('');
    pendingText = [];
    const { children } = current();
    const last = children[children.length - 1];
    if (last?.type === 'text') last.data += data;
    else children.push({ type: 'text', data });
  };

  const pop = () => {
    flushText();
    const element = open.pop()!;
    bump(openCount, element.name, -1);
    if ((element.containsTable || element.name === 'table') && element.parent) element.parent.containsTable = true;
    if (FOREIGN_CONTEXT_ELEMENTS.has(element.name) || HTML_INTEGRATION_ELEMENTS.has(element.name)) foreignContext.pop();
  };

  const openElement = (name: string) => {
    const implied = OPEN_IMPLIES_CLOSE.get(name);
    if (implied) while (open.length > 0 && implied.has(current().name)) pop();
    const isVoid = VOID_ELEMENTS.has(name);
    if (elements >= limits.maxElements || (!isVoid && open.length >= limits.maxDepth)) {
      if (!isVoid) bump(ignoredOpen, name, 1);
      tag = null;
      ignoringTag = true;
      return;
    }
    flushText();
    elements++;
    const element = newElement(name, current());
    current().children.push(element);
    tag = element;
    ignoringTag = false;
    if (!isVoid) {
      open.push(element);
      bump(openCount, name, 1);
      if (FOREIGN_CONTEXT_ELEMENTS.has(name)) foreignContext.push(true);
      else if (HTML_INTEGRATION_ELEMENTS.has(name)) foreignContext.push(false);
    }
  };

  const closeElement = (name: string) => {
    if ((ignoredOpen.get(name) ?? 0) > 0) {
      bump(ignoredOpen, name, -1);
      return;
    }
    if (VOID_ELEMENTS.has(name)) {
      if (name === 'br') openElement('br');
      return;
    }
    if ((openCount.get(name) ?? 0) > 0) {
      while (open.length > 0) {
        const closed = current().name;
        pop();
        if (closed === name) break;
      }
    } else if (name === 'p') {
      // `</p>` with no open paragraph is an empty paragraph, as browsers (and htmlparser2) read it.
      openElement('p');
      if (ignoringTag) bump(ignoredOpen, 'p', -1);
      else if (tag && current() === tag) pop();
    }
  };

  const slice = (start: number, end: number) => html.slice(start, end);
  const callbacks: TokenizerCallbacks = {
    ontext: (start, end) => appendText(slice(start, end)),
    ontextentity: (codepoint) => appendText(String.fromCodePoint(codepoint)),
    onopentagname(start, end) {
      tagName = slice(start, end).toLowerCase();
      openElement(tagName);
    },
    onattribname(start, end) {
      attributeName = slice(start, end).toLowerCase();
      attributeValue = '';
    },
    onattribdata(start, end) {
      attributeValue += slice(start, end);
    },
    onattribentity(codepoint) {
      attributeValue += String.fromCodePoint(codepoint);
    },
    onattribend() {
      if (tag && !ignoringTag) setAttribute(tag, attributeName, attributeValue);
      attributeValue = '';
    },
    onopentagend() {
      tag = null;
    },
    onselfclosingtag() {
      // Only foreign content (svg, math) has self-closing tags; in HTML `<div/>` is a start tag.
      if (foreignContext[foreignContext.length - 1] && !ignoringTag && tag && current() === tag) pop();
      else if (foreignContext[foreignContext.length - 1] && ignoringTag && !VOID_ELEMENTS.has(tagName))
        bump(ignoredOpen, tagName, -1);
      tag = null;
    },
    onclosetag(start, end) {
      closeElement(slice(start, end).toLowerCase());
    },
    oncomment() {},
    oncdata() {},
    ondeclaration() {},
    onprocessinginstruction() {},
    onend() {},
  };
  const tokenizer = new Tokenizer({ decodeEntities: true }, callbacks);
  tokenizer.write(html);
  tokenizer.end();
  while (open.length > 0) pop();
  flushText();
  return root;
}

/** Depth-first, in document order, without recursion. `skip` prunes an element and everything below it. */
export function* descendants(root: HtmlElement, skip?: (element: HtmlElement) => boolean): Generator<HtmlNode> {
  const stack: { element: HtmlElement; index: number }[] = [{ element: root, index: 0 }];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    if (frame.index >= frame.element.children.length) {
      stack.pop();
      continue;
    }
    const node = frame.element.children[frame.index++];
    if (node.type === 'element' && skip?.(node)) continue;
    yield node;
    if (node.type === 'element' && node.children.length > 0) stack.push({ element: node, index: 0 });
  }
}

export function* elementsIn(root: HtmlElement, skip?: (element: HtmlElement) => boolean): Generator<HtmlElement> {
  for (const node of descendants(root, skip)) if (node.type === 'element') yield node;
}

/** The first element below `root` that matches, looking at no more than `maxNodes` nodes. */
export function findElement(
  root: HtmlElement,
  predicate: (element: HtmlElement) => boolean,
  maxNodes = Infinity,
): HtmlElement | null {
  let visited = 0;
  for (const node of descendants(root)) {
    if (++visited > maxNodes) return null;
    if (node.type === 'element' && predicate(node)) return node;
  }
  return null;
}

/** The text below `root`, stopping once `maxChars` are collected or `maxNodes` visited (so a caller looping over many elements stays linear). */
export function textOf(
  root: HtmlElement,
  options: { maxChars?: number; maxNodes?: number; skip?: (element: HtmlElement) => boolean } = {},
): string {
  const maxChars = options.maxChars ?? Infinity;
  const maxNodes = options.maxNodes ?? Infinity;
  let text = '';
  let visited = 0;
  for (const node of descendants(root, options.skip)) {
    if (++visited > maxNodes) break;
    if (node.type === 'text') {
      text += node.data.length > maxChars - text.length ? node.data.slice(0, maxChars - text.length) : node.data;
      if (text.length >= maxChars) break;
    }
  }
  return text;
}
