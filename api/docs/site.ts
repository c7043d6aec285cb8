import { parseGuide, sectionText, type DocSource, type Guide } from './guides';
import {
  findOperation,
  listOperations,
  operationMarkdown,
  operationSearchText,
  withOperationIds,
  type OpenApiDocument,
  type OperationSummary,
  type ResolvedOperation,
} from '../openapi/operations';
import { DocsIndex, type IndexEntry, type SearchHit } from './search';

/** Where the human docs page lives on the API origin. */
export const DOCS_PAGE_PATH = '/api/v1/docs';
/** The `path` operations carry in search hits and read_doc. */
export const OPENAPI_PATH = 'openapi.json';

export interface DocsSiteInput {
  guides: DocSource[];
  readme: DocSource | null;
  openapi: OpenApiDocument;
  builtAt?: Date;
}

export type ReadDocResult =
  | {
      ok: true;
      title: string;
      path: string;
      anchor: string;
      url: string;
      markdown: string;
      sections: { anchor: string; title: string; level: number }[];
    }
  | { ok: false; message: string };

/** Everything the docs page and the docs-search MCP endpoint serve, built once at start. */
export interface DocsSite {
  /** The API version the documentation describes (the OpenAPI document's info.version). */
  version: string;
  /** When this index was built (ISO 8601). */
  indexedAt: string;
  /** The guides in reading order. */
  guides: Guide[];
  readme: Guide | null;
  /** The served OpenAPI document, every operation with an operationId. */
  openapi: OpenApiDocument;
  operations: OperationSummary[];
  tags: string[];
  /** What the search index holds: one entry per guide or README section and per operation. */
  entries: readonly IndexEntry[];
  search(query: string, limit: number): SearchHit[];
  /** Where a link in a guide leads on the docs site: guide files become their pages; other links are kept. */
  resolveLink(href: string): string;
  /** A guide (or the README) by `docs/x.md`, `x.md`, `x`, or its page URL. */
  findGuide(path: string): Guide | null;
  readDoc(path: string, anchor?: string): ReadDocResult;
  getOperation(query: { operationId?: string; method?: string; path?: string }): ResolvedOperation | null;
  /** The docs-page URL (path and fragment) of a guide section or an operation. */
  pageUrl(path: string, anchor?: string): string;
}

export function guidePageUrl(guide: Pick<Guide, 'slug'>, anchor = ''): string {
  const page = guide.slug === 'readme' ? `${DOCS_PAGE_PATH}/readme` : `${DOCS_PAGE_PATH}/guides/${guide.slug}`;
  return anchor ? `${page}#${anchor}` : page;
}

export const operationAnchor = (operationId: string) => `operation/${operationId}`;

export function buildDocsSite(input: DocsSiteInput): DocsSite {
  const openapi = withOperationIds(input.openapi);
  const version = openapi.info.version;
  const indexedAt = (input.builtAt ?? new Date()).toISOString();
  const guides = input.guides.map(parseGuide).sort((a, b) => a.order - b.order || a.slug.localeCompare(b.slug));
  const readme = input.readme ? parseGuide(input.readme) : null;
  const operations = listOperations(openapi);
  const tags = [...new Set(operations.flatMap((op) => op.tags))];
  const documents = readme ? [...guides, readme] : guides;

  const entries: IndexEntry[] = [];
  for (const guide of documents) {
    for (const section of guide.sections) {
      const { text, code } = sectionText(section);
      if (!text && !code) continue;
      entries.push({
        id: `${guide.path}#${section.anchor}`,
        kind: guide.slug === 'readme' ? 'readme' : 'guide',
        title: section.title,
        breadcrumb: section.breadcrumb.slice(0, -1).length ? section.breadcrumb.slice(0, -1) : [guide.title],
        text,
        code,
        path: guide.path,
        anchor: section.anchor,
        url: guidePageUrl(guide, section.anchor),
      });
    }
  }
  for (const summary of operations) {
    const op = findOperation(openapi, { operationId: summary.operationId })!;
    entries.push({
      id: `${OPENAPI_PATH}#${operationAnchor(op.operationId)}`,
      kind: 'operation',
      title: `${op.method} ${op.serverUrl}${op.path} — ${op.summary}`,
      breadcrumb: op.tags,
      text: operationSearchText(op),
      code: '',
      path: OPENAPI_PATH,
      anchor: operationAnchor(op.operationId),
      url: `${DOCS_PAGE_PATH}#${operationAnchor(op.operationId)}`,
    });
  }
  const index = new DocsIndex(entries, version, indexedAt);

  const findGuide = (path: string): Guide | null => {
    const key = path
      .trim()
      .replace(/^\.?\//, '')
      .replace(/^(api\/v1\/docs\/)?(guides\/)?/, '')
      .replace(/^docs\//, '')
      .replace(/\.md$/i, '')
      .replace(/[#?].*$/, '')
      .toLowerCase();
    if (key === 'readme') return readme;
    return guides.find((g) => g.slug.toLowerCase() === key) ?? null;
  };

  const readDoc = (path: string, anchor?: string): ReadDocResult => {
    const wantedAnchor = (anchor ?? '').replace(/^#/, '').trim();
    if (path.trim().replace(/^\//, '') === OPENAPI_PATH || path.includes('openapi.json')) {
      const operationId = wantedAnchor.replace(/^operation\//, '');
      const op = operationId ? findOperation(openapi, { operationId }) : null;
      if (!op) {
        return {
          ok: false,
          message: `No operation "${operationId}" in ${OPENAPI_PATH}. Anchors look like operation/<operationId>; known ids: ${operations.map((o) => o.operationId).join(', ')}`,
        };
      }
      return {
        ok: true,
        title: `${op.method} ${op.serverUrl}${op.path}`,
        path: OPENAPI_PATH,
        anchor: operationAnchor(op.operationId),
        url: `${DOCS_PAGE_PATH}#${operationAnchor(op.operationId)}`,
        markdown: operationMarkdown(op),
        sections: [],
      };
    }
    const guide = findGuide(path);
    if (!guide) {
      return {
        ok: false,
        message: `No document at "${path}". Known paths: ${documents.map((d) => d.path).join(', ')}, and ${OPENAPI_PATH} with an operation/<operationId> anchor`,
      };
    }
    const sections = guide.sections
      .filter((s) => s.anchor)
      .map((s) => ({ anchor: s.anchor, title: s.title, level: s.level }));
    if (!wantedAnchor) {
      return {
        ok: true,
        title: guide.title,
        path: guide.path,
        anchor: '',
        url: guidePageUrl(guide),
        markdown: guide.markdown.trim(),
        sections,
      };
    }
    const section = guide.sections.find((s) => s.anchor && s.anchor === wantedAnchor.toLowerCase());
    if (!section) {
      return {
        ok: false,
        message: `${guide.path} has no section "${wantedAnchor}". Its sections: ${sections.map((s) => s.anchor).join(', ')}`,
      };
    }
    return {
      ok: true,
      title: `${guide.title} › ${section.title}`,
      path: guide.path,
      anchor: section.anchor,
      url: guidePageUrl(guide, section.anchor),
      markdown: section.markdown,
      sections: [],
    };
  };

  return {
    version,
    indexedAt,
    guides,
    readme,
    openapi,
    operations,
    tags,
    entries,
    search: (query, limit) => index.search(query, limit),
    resolveLink: (href) => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('/') || href.startsWith('#')) return href;
      if (/^(\.\/)?docs\/?$/.test(href)) return DOCS_PAGE_PATH;
      const local = /^(?:\.{1,2}\/)*(?:docs\/)?([\w.-]+)\.md(#.*)?$/i.exec(href);
      const guide = local ? findGuide(local[1]) : null;
      return guide ? guidePageUrl(guide) + (local![2] ?? '') : href;
    },
    findGuide,
    readDoc,
    getOperation: (query) => findOperation(openapi, query),
    pageUrl: (path, anchor = '') => {
      if (path === OPENAPI_PATH) return `${DOCS_PAGE_PATH}#${anchor}`;
      const guide = findGuide(path);
      return guide ? guidePageUrl(guide, anchor) : DOCS_PAGE_PATH;
    },
  };
}
