import { parse as parseYaml } from 'yaml';
import { codeBlocks, parseMarkdown, plainInline, plainText, type Block, type ParsedMarkdown } from './markdown-to-html';

/** A Markdown file as read from disk: its path relative to the repository root and its text. */
export interface DocSource {
  path: string;
  text: string;
}

export interface Section {
  /** The heading's id on the rendered page; '' for the text before the first section heading. */
  anchor: string;
  title: string;
  level: number;
  /** Guide title › parent headings › this heading. */
  breadcrumb: string[];
  /** Markdown of the heading and its own text, up to the next heading of any level. */
  ownMarkdown: string;
  /** Markdown of the heading, its text and its subsections. */
  markdown: string;
}

export interface Guide {
  /** `docs/webhooks.md`, or `README.md`. */
  path: string;
  /** `webhooks`; the README is `readme`. */
  slug: string;
  title: string;
  summary: string;
  /** Position in the guide list (front matter `order`, lower first). */
  order: number;
  /** The Markdown without its front matter. */
  markdown: string;
  /** Lines of front matter before the Markdown (add to a block's line for its line in the file). */
  bodyLineOffset: number;
  parsed: ParsedMarkdown;
  sections: Section[];
  /** What is wrong with the file's structure (a test keeps this empty). */
  problems: string[];
}

const FRONT_MATTER = /^---\n([\s\S]*?)\n---\n?/;

function splitFrontMatter(text: string): {
  meta: Record<string, unknown>;
  body: string;
  offset: number;
  problems: string[];
} {
  const normalized = text.replace(/\r\n?/g, '\n');
  const match = FRONT_MATTER.exec(normalized);
  if (!match) return { meta: {}, body: normalized, offset: 0, problems: [] };
  const body = normalized.slice(match[0].length);
  const offset = match[0].split('\n').length - (match[0].endsWith('\n') ? 1 : 0);
  try {
    const meta = parseYaml(match[1]);
    return {
      meta: meta && typeof meta === 'object' ? (meta as Record<string, unknown>) : {},
      body,
      offset,
      problems: [],
    };
  } catch (err) {
    return { meta: {}, body, offset, problems: [`front matter is not YAML: ${(err as Error).message}`] };
  }
}

function firstParagraph(blocks: Block[]): string {
  const paragraph = blocks.find((b) => b.type === 'paragraph');
  return paragraph && paragraph.type === 'paragraph' ? plainInline(paragraph.text).replace(/\s+/g, ' ') : '';
}

export function parseGuide(source: DocSource): Guide {
  const { meta, body, offset, problems } = splitFrontMatter(source.text);
  const parsed = parseMarkdown(body);
  const lines = body.split('\n');
  const h1 = parsed.headings.find((h) => h.level === 1);
  const title = typeof meta.title === 'string' ? meta.title : h1 ? plainInline(h1.text) : source.path;
  const isReadme = /(^|\/)README\.md$/i.test(source.path);
  const slug = isReadme ? 'readme' : source.path.replace(/^.*\//, '').replace(/\.md$/i, '');
  if (!h1) problems.push('has no "# Title" heading');
  if (!isReadme) {
    if (typeof meta.summary !== 'string' || !meta.summary.trim()) problems.push('front matter has no summary');
    if (typeof meta.order !== 'number') problems.push('front matter has no numeric order');
  }

  const sectionHeadings = parsed.headings.filter((h) => h.level >= 2);
  const sections: Section[] = [];
  const introEnd = sectionHeadings[0]?.line ?? lines.length;
  const introStart = h1 ? h1.line : 0;
  sections.push({
    anchor: '',
    title,
    level: 1,
    breadcrumb: [title],
    ownMarkdown: lines.slice(introStart, introEnd).join('\n').trim(),
    markdown: lines.slice(introStart).join('\n').trim(),
  });
  const trail: { level: number; title: string }[] = [];
  sectionHeadings.forEach((heading, k) => {
    const headingTitle = plainInline(heading.text);
    while (trail.length && trail[trail.length - 1].level >= heading.level) trail.pop();
    trail.push({ level: heading.level, title: headingTitle });
    const nextAny = sectionHeadings[k + 1]?.line ?? lines.length;
    const nextSameOrHigher = sectionHeadings.slice(k + 1).find((h) => h.level <= heading.level)?.line ?? lines.length;
    sections.push({
      anchor: heading.id,
      title: headingTitle,
      level: heading.level,
      breadcrumb: [title, ...trail.map((t) => t.title)],
      ownMarkdown: lines.slice(heading.line, nextAny).join('\n').trim(),
      markdown: lines.slice(heading.line, nextSameOrHigher).join('\n').trim(),
    });
  });

  const summary = typeof meta.summary === 'string' ? meta.summary.trim() : firstParagraph(parsed.blocks);
  const order = typeof meta.order === 'number' ? meta.order : isReadme ? Number.MAX_SAFE_INTEGER : 1000;
  return {
    path: source.path,
    slug,
    title,
    summary,
    order,
    markdown: body,
    bodyLineOffset: offset,
    parsed,
    sections,
    problems,
  };
}

/** Plain text of a section's own Markdown (its heading line excluded), for the index and snippets. */
export function sectionText(section: Section): { text: string; code: string } {
  const blocks = parseMarkdown(section.ownMarkdown).blocks.filter((b, i) => !(i === 0 && b.type === 'heading'));
  return {
    text: plainText(blocks),
    code: codeBlocks(blocks)
      .map((b) => b.code)
      .join('\n'),
  };
}
