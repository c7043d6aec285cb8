import MiniSearch from 'minisearch';
import { searchTerm, searchTerms, tokenize } from './text';

/** One searchable unit: a section of a guide or of the README, or one API operation. */
export interface IndexEntry {
  id: string;
  kind: 'guide' | 'readme' | 'operation';
  /** The section heading, or `METHOD /path`. */
  title: string;
  /** Where it sits: guide title › parent headings, or the operation's tags. */
  breadcrumb: string[];
  text: string;
  code: string;
  /** `docs/webhooks.md`, `README.md`, or `openapi.json` for operations. */
  path: string;
  /** Section id on the page ('' = the top), or `operation/<operationId>`. */
  anchor: string;
  /** Where a person reads it on the docs page. */
  url: string;
}

export interface SearchHit {
  title: string;
  path: string;
  anchor: string;
  snippet: string;
  version: string;
  indexedAt: string;
  kind: IndexEntry['kind'];
  url: string;
  score: number;
}

/** Guides are the documentation; the README is the front page that points at them. */
const KIND_BOOST: Record<IndexEntry['kind'], number> = { guide: 1, operation: 0.9, readme: 0.6 };
const SNIPPET_CHARS = 240;

export class DocsIndex {
  private readonly search_: MiniSearch<IndexEntry>;
  private readonly byId: Map<string, IndexEntry>;

  constructor(
    readonly entries: IndexEntry[],
    readonly version: string,
    readonly indexedAt: string,
  ) {
    this.byId = new Map(entries.map((e) => [e.id, e]));
    this.search_ = new MiniSearch<IndexEntry>({
      fields: ['title', 'context', 'text', 'code'],
      storeFields: [],
      tokenize,
      processTerm: searchTerm,
      extractField: (entry, field) =>
        field === 'context'
          ? entry.breadcrumb.join(' ')
          : String((entry as unknown as Record<string, unknown>)[field] ?? ''),
      searchOptions: {
        boost: { title: 3, context: 1.5, text: 1, code: 0.3 },
        prefix: (term) => term.length >= 4,
        fuzzy: (term) => (term.length >= 6 ? 0.2 : false),
        combineWith: 'OR',
        boostDocument: (id) => KIND_BOOST[this.byId.get(id)?.kind ?? 'guide'],
      },
    });
    this.search_.addAll(entries);
  }

  search(query: string, limit: number): SearchHit[] {
    const terms = new Set(searchTerms(query));
    if (terms.size === 0) return [];
    return this.search_
      .search(query)
      .slice(0, limit)
      .map((result) => {
        const entry = this.byId.get(result.id)!;
        return {
          title:
            entry.kind === 'operation'
              ? entry.title
              : [...entry.breadcrumb.slice(0, 1), ...(entry.anchor ? [entry.title] : [])].join(' › '),
          path: entry.path,
          anchor: entry.anchor,
          snippet: snippet(entry.text || entry.code, terms),
          version: this.version,
          indexedAt: this.indexedAt,
          kind: entry.kind,
          url: entry.url,
          score: Math.round(result.score * 1000) / 1000,
        };
      });
  }
}

/** The stretch of text (about two sentences) that holds the most of the query's terms. */
export function snippet(text: string, queryTerms: Set<string>): string {
  const sentences = text
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?:])\s+(?=[A-Z`"(\d])/)
    .filter(Boolean);
  if (sentences.length === 0) return '';
  let best = 0;
  let bestScore = -1;
  sentences.forEach((sentence, i) => {
    const pair = sentence + ' ' + (sentences[i + 1] ?? '');
    const found = new Set(searchTerms(pair).filter((t) => queryTerms.has(t)));
    if (found.size > bestScore) {
      best = i;
      bestScore = found.size;
    }
  });
  let out = sentences.slice(best, best + 2).join(' ');
  if (out.length > SNIPPET_CHARS) out = out.slice(0, SNIPPET_CHARS).replace(/\s+\S*$/, '') + ' …';
  return (best > 0 ? '… ' : '') + out;
}
