/** Reading the login pages' HTML forms (action, hidden fields, inputs) without a DOM. */

export interface HtmlForm {
  action: string | undefined;
  hidden: Record<string, string>;
  inputs: Set<string>;
}

/** Each `<form …>` up to the next `</form>`; a linear scan (a lazy regex over an unclosed form rescans the rest of the page per form). */
function* formsIn(html: string): Generator<[formAttributes: string, content: string]> {
  const open = /<form\b([^<>]*)>/gi;
  const close = /<\/form>/gi;
  for (let match = open.exec(html); match; match = open.exec(html)) {
    close.lastIndex = open.lastIndex;
    const end = close.exec(html);
    if (!end) return;
    yield [match[1]!, html.slice(open.lastIndex, end.index)];
    open.lastIndex = close.lastIndex;
  }
}

export function parseForms(html: string): HtmlForm[] {
  const forms: HtmlForm[] = [];
  for (const [formAttributes, content] of formsIn(html)) {
    const form: HtmlForm = { action: parseAttributes(formAttributes).action, hidden: {}, inputs: new Set() };
    for (const [, inputAttributes] of content.matchAll(/<input\b([^<>]*)>/gi)) {
      const { name, type, value } = parseAttributes(inputAttributes);
      if (!name) continue;
      if (type?.toLowerCase() === 'hidden') form.hidden[name] = value ?? '';
      else form.inputs.add(name);
    }
    forms.push(form);
  }
  return forms;
}

function parseAttributes(source: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const [, name, doubleQuoted, singleQuoted, bare] of source.matchAll(
    /([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/g,
  )) {
    attributes[name.toLowerCase()] = decodeEntities(doubleQuoted ?? singleQuoted ?? bare ?? '');
  }
  return attributes;
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|#39);/gi, (entity, body: string) => {
    const lower = body.toLowerCase();
    if (lower.startsWith('#x')) return String.fromCodePoint(parseInt(lower.slice(2), 16));
    if (lower.startsWith('#')) return String.fromCodePoint(Number(lower.slice(1)));
    return ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" } as Record<string, string>)[lower] ?? entity;
  });
}

export function pageErrorCode(html: string): string | undefined {
  return /\bdata-error\s*=\s*["']([\w-]+)["']/i.exec(html)?.[1];
}
