/**
 * A small YAML subset for SKILL.md frontmatter: `key: value` maps nested by indentation, plain
 * scalars (also continued on more-indented lines), single- and double-quoted scalars, literal (|)
 * and folded (>) block scalars with chomping indicators, inline [a, b] lists and block "- item"
 * lists. Scalars stay strings (so `version: 1.10` is "1.10"). Anything else is skipped, never thrown.
 */
export type YamlValue = string | YamlValue[] | { [key: string]: YamlValue };

export interface Frontmatter {
  data: Record<string, YamlValue>;
  body: string;
}

interface Line {
  indent: number;
  text: string;
}

export function parseFrontmatter(markdown: string): Frontmatter {
  const text = markdown.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const lines = text.split('\n');
  if (lines[0]?.trim() !== '---') return { data: {}, body: text };
  const end = lines.findIndex((line, i) => i > 0 && /^(---|\.\.\.)\s*$/.test(line));
  if (end < 0) return { data: {}, body: text };
  const block: Line[] = lines
    .slice(1, end)
    .map((raw) => ({ indent: raw.length - raw.trimStart().length, text: raw.replace(/\t/g, '  ') }));
  const cursor = { at: 0 };
  const data = parseMap(block, cursor, 0);
  return { data, body: lines.slice(end + 1).join('\n') };
}

const isBlank = (line: Line) => line.text.trim() === '' || line.text.trim().startsWith('#');

function skipBlank(lines: Line[], cursor: { at: number }) {
  while (cursor.at < lines.length && isBlank(lines[cursor.at])) cursor.at++;
}

function stripComment(value: string): string {
  return value.replace(/\s+#.*$/, '');
}

function parseMap(lines: Line[], cursor: { at: number }, indent: number): Record<string, YamlValue> {
  const out: Record<string, YamlValue> = {};
  for (;;) {
    skipBlank(lines, cursor);
    const line = lines[cursor.at];
    if (!line || line.indent < indent) return out;
    if (line.indent > indent) {
      cursor.at++; // Stray deeper line: ignore it.
      continue;
    }
    const match = /^\s*("[^"]*"|'[^']*'|[^:#\s][^:]*?)\s*:(?:\s+(.*)|\s*)$/.exec(line.text);
    if (!match) {
      cursor.at++;
      continue;
    }
    const key = match[1].replace(/^["']|["']$/g, '');
    const rest = (match[2] ?? '').trim();
    cursor.at++;
    out[key] = parseValue(lines, cursor, indent, rest);
  }
}

function parseValue(lines: Line[], cursor: { at: number }, indent: number, rest: string): YamlValue {
  if (/^[|>][+-]?\d*\s*(#.*)?$/.test(rest)) return blockScalar(lines, cursor, indent, rest);
  if (rest.startsWith('"') || rest.startsWith("'")) return quoted(lines, cursor, rest);
  if (rest.startsWith('[')) return inlineList(rest);
  if (rest === '' || rest.startsWith('#')) {
    skipBlank(lines, cursor);
    const next = lines[cursor.at];
    if (!next || next.indent < indent || (next.indent === indent && !next.text.trimStart().startsWith('- '))) return '';
    if (next.text.trimStart().startsWith('- ') || next.text.trim() === '-')
      return blockList(lines, cursor, next.indent);
    if (/^\s*("[^"]*"|'[^']*'|[^:#\s][^:]*?)\s*:(\s|$)/.test(next.text)) return parseMap(lines, cursor, next.indent);
    return plainContinuation(lines, cursor, indent, '');
  }
  return plainContinuation(lines, cursor, indent, stripComment(rest));
}

/** A plain scalar whose following, more-indented lines fold into it with single spaces. */
function plainContinuation(lines: Line[], cursor: { at: number }, indent: number, first: string): string {
  const parts = first ? [first] : [];
  while (cursor.at < lines.length) {
    const line = lines[cursor.at];
    if (line.text.trim() === '') {
      cursor.at++;
      continue;
    }
    if (line.indent <= indent) break;
    parts.push(line.text.trim());
    cursor.at++;
  }
  return parts.join(' ');
}

function blockScalar(lines: Line[], cursor: { at: number }, indent: number, header: string): string {
  const folded = header.startsWith('>');
  const chomp = header.includes('-') ? 'strip' : header.includes('+') ? 'keep' : 'clip';
  const body: string[] = [];
  let blockIndent = -1;
  while (cursor.at < lines.length) {
    const line = lines[cursor.at];
    if (line.text.trim() === '') {
      body.push('');
      cursor.at++;
      continue;
    }
    if (line.indent <= indent) break;
    if (blockIndent < 0) blockIndent = line.indent;
    body.push(line.text.slice(Math.min(blockIndent, line.indent)));
    cursor.at++;
  }
  let trailing = 0;
  while (body.length && body[body.length - 1] === '') {
    body.pop();
    trailing++;
  }
  let value: string;
  if (folded) {
    value = '';
    for (const [i, part] of body.entries()) {
      if (i === 0) value = part;
      else if (part === '' || /^\s/.test(part)) value += '\n' + part;
      else value += (body[i - 1] === '' || /^\s/.test(body[i - 1]) ? '' : ' ') + part;
    }
  } else {
    value = body.join('\n');
  }
  if (chomp === 'strip' || value === '') return value;
  return value + (chomp === 'keep' ? '\n'.repeat(trailing + 1) : '\n');
}

function quoted(lines: Line[], cursor: { at: number }, rest: string): string {
  const quote = rest[0];
  let source = rest;
  // A quoted scalar may span lines; join them (YAML folds the line breaks into spaces).
  const closed = (s: string) => (quote === '"' ? /^"(?:[^"\\]|\\.)*"/.test(s) : /^'(?:[^']|'')*'/.test(s));
  while (!closed(source) && cursor.at < lines.length) {
    source += ' ' + lines[cursor.at].text.trim();
    cursor.at++;
  }
  if (quote === "'") {
    const m = /^'((?:[^']|'')*)'/.exec(source);
    return m ? m[1].replace(/''/g, "'") : source.slice(1);
  }
  const m = /^"((?:[^"\\]|\\.)*)"/.exec(source);
  const inner = m ? m[1] : source.slice(1);
  return inner.replace(/\\(["\\/bfnrt]|u[0-9a-fA-F]{4})/g, (_, e: string) => {
    const map: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
    return e.length === 5 ? String.fromCharCode(parseInt(e.slice(1), 16)) : map[e];
  });
}

function unquote(value: string): string {
  const v = value.trim();
  if (v.length >= 2 && ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))))
    return v.slice(1, -1);
  return v;
}

function inlineList(rest: string): YamlValue[] {
  const inner = rest.replace(/^\[/, '').replace(/\]\s*(#.*)?$/, '');
  return inner
    .split(',')
    .map(unquote)
    .filter((v) => v !== '');
}

function blockList(lines: Line[], cursor: { at: number }, indent: number): YamlValue[] {
  const out: YamlValue[] = [];
  for (;;) {
    skipBlank(lines, cursor);
    const line = lines[cursor.at];
    if (!line || line.indent !== indent || !/^\s*-(\s|$)/.test(line.text)) return out;
    const rest = line.text.trim().replace(/^-\s*/, '');
    cursor.at++;
    out.push(
      rest.startsWith('"') || rest.startsWith("'")
        ? quoted(lines, cursor, rest)
        : plainContinuation(lines, cursor, indent, stripComment(rest)),
    );
  }
}

/** A frontmatter field as a single-line string (whitespace collapsed), or null. */
export function frontmatterString(value: YamlValue | undefined): string | null {
  if (typeof value !== 'string') return null;
  const collapsed = value.replace(/\s+/g, ' ').trim();
  return collapsed || null;
}
