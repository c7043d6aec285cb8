import type { CatalogueSort } from '../../db/repos/market-listings';
import { CATALOGUE_SORTS } from '../../api/services/market/reads';
import type { MonetizationStrategy } from '../../lib/market/listing';
import { usdToWholeMicros } from '../../lib/money';

/** What /market was asked for, read leniently: a value it does not know is its default, with a note. */
export interface MarketQuery {
  q: string;
  market: 'all' | 'tools' | 'agents';
  pricing: 'any' | 'free' | 'per_call' | 'per_event' | 'one_time';
  /** As typed (shown back in the form). */
  min: string;
  max: string;
  minMicros?: number;
  maxMicros?: number;
  sort: CatalogueSort;
  page: number;
  problems: string[];
}

export const MARKETS = [
  ['all', 'Both markets'],
  ['tools', 'Tool market (MCP servers and APIs)'],
  ['agents', 'Agent market'],
] as const;

export const PRICING_MODELS = [
  ['any', 'Any pricing'],
  ['free', 'Free'],
  ['per_call', 'Per call (tools)'],
  ['per_event', 'Per event (tools)'],
  ['one_time', 'One-time purchase (agents)'],
] as const;

export const SORTS: readonly (readonly [CatalogueSort, string])[] = [
  ['relevance', 'Relevance'],
  ['newest', 'Newest'],
  ['price_asc', 'Price, low to high'],
  ['price_desc', 'Price, high to low'],
  ['name', 'Name'],
  ['quality', 'Quality score (tools)'],
];

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value) ?? '';

function oneOf<T extends string>(
  raw: string,
  values: readonly (readonly [T, string])[],
  fallback: T,
  label: string,
  problems: string[],
): T {
  if (!raw) return fallback;
  const found = values.find(([value]) => value === raw);
  if (!found) problems.push(`Unknown ${label} "${raw}": showing ${fallback}.`);
  return found ? found[0] : fallback;
}

function price(raw: string, label: string, problems: string[]): number | undefined {
  if (!raw.trim()) return undefined;
  const micros = /^\d{1,7}(\.\d{1,6})?$/.test(raw.trim()) ? usdToWholeMicros(Number(raw.trim())) : null;
  if (micros === null) {
    problems.push(`The ${label} price "${raw}" is not an amount in USD (such as 0.01); it was left out.`);
    return undefined;
  }
  return micros;
}

export function parseMarketQuery(query: Record<string, string | string[] | undefined>): MarketQuery {
  const problems: string[] = [];
  const q = first(query.q).slice(0, 200);
  const min = first(query.min).slice(0, 20);
  const max = first(query.max).slice(0, 20);
  const sort = oneOf(first(query.sort), SORTS, 'relevance', 'sort', problems);
  const pageNumber = Number(first(query.page) || '1');
  return {
    q,
    market: oneOf(first(query.market), MARKETS, 'all', 'market', problems),
    pricing: oneOf(first(query.pricing), PRICING_MODELS, 'any', 'pricing model', problems),
    min,
    max,
    minMicros: price(min, 'lowest', problems),
    maxMicros: price(max, 'highest', problems),
    sort: CATALOGUE_SORTS.includes(sort) ? sort : 'relevance',
    page: Number.isInteger(pageNumber) && pageNumber >= 1 && pageNumber <= 1000 ? pageNumber : 1,
    problems,
  };
}

/** The tool market's strategy for a pricing model; null when tools cannot match it (one-time purchases are agents'). */
export function toolStrategyOf(pricing: MarketQuery['pricing']): MonetizationStrategy | undefined | null {
  switch (pricing) {
    case 'free':
      return 'free';
    case 'per_call':
      return 'tool_call_fixed';
    case 'per_event':
      return 'provider_event';
    case 'one_time':
      return null;
    default:
      return undefined;
  }
}

/** Whether agents are paid for a pricing model (undefined: either); null when agents cannot match it. */
export function agentPaidOf(pricing: MarketQuery['pricing']): boolean | undefined | null {
  switch (pricing) {
    case 'free':
      return false;
    case 'one_time':
      return true;
    case 'per_call':
    case 'per_event':
      return null;
    default:
      return undefined;
  }
}

/** The /market address of this query with some values changed (pagination, "see all" links). */
export function marketHref(query: MarketQuery, change: Partial<Pick<MarketQuery, 'market' | 'page'>>): string {
  const next = { ...query, ...change };
  const params = new URLSearchParams();
  if (next.q) params.set('q', next.q);
  if (next.market !== 'all') params.set('market', next.market);
  if (next.pricing !== 'any') params.set('pricing', next.pricing);
  if (next.min) params.set('min', next.min);
  if (next.max) params.set('max', next.max);
  if (next.sort !== 'relevance') params.set('sort', next.sort);
  if (next.page > 1) params.set('page', String(next.page));
  const text = params.toString();
  return text ? `/market?${text}` : '/market';
}
