import type { AgentEntryView, ToolEntryView } from '../../../api/services/market/catalog';
import { agentPricing, ListingIcon, QualityScore, toolPricing } from '../../components/listing';
import { Layout } from '../../layout';
import { MARKETS, marketHref, PRICING_MODELS, SORTS, type MarketQuery } from '../market-query';

export interface ToolCard {
  entry: ToolEntryView;
  iconUrl: string | null;
  qualityScore: number | null;
}

export interface AgentCard {
  entry: AgentEntryView;
  iconUrl: string | null;
}

/** One market's results: null when the filters exclude the market altogether. */
export interface Results<T> {
  cards: T[];
  total: number;
  pageSize: number;
}

export function Select(props: {
  id: string;
  label: string;
  value: string;
  options: readonly (readonly [string, string])[];
}) {
  return (
    <div>
      <label for={props.id}>{props.label}</label>
      <select id={props.id} name={props.id}>
        {props.options.map(([value, text]) => (
          <option value={value} selected={value === props.value}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
}

function SearchForm(props: { query: MarketQuery }) {
  const { query } = props;
  return (
    <form class="search" method="get" action="/market" role="search" aria-label="Search the markets">
      <div class="wide">
        <label for="q">Search</label>
        <input
          id="q"
          name="q"
          type="search"
          value={query.q}
          placeholder="Name, description or tool name"
          maxlength={200}
        />
      </div>
      <Select id="market" label="Market" value={query.market} options={MARKETS} />
      <Select id="pricing" label="Pricing model" value={query.pricing} options={PRICING_MODELS} />
      <div>
        <label for="min">Lowest price (USD)</label>
        <input id="min" name="min" inputmode="decimal" value={query.min} placeholder="0" />
      </div>
      <div>
        <label for="max">Highest price (USD)</label>
        <input id="max" name="max" inputmode="decimal" value={query.max} placeholder="any" />
      </div>
      <Select id="sort" label="Sort by" value={query.sort} options={SORTS} />
      <div>
        <button type="submit">Search</button>
      </div>
    </form>
  );
}

function ToolCards(props: { cards: ToolCard[] }) {
  return (
    <ul class="cards">
      {props.cards.map(({ entry, iconUrl, qualityScore }) => (
        <li class="card">
          <ListingIcon name={entry.name} uploadedIconUrl={iconUrl} />
          <div>
            <h3>
              <a href={`/market/tools/${entry.id}`}>{entry.name}</a>
            </h3>
            {entry.description && <p>{entry.description}</p>}
            <p class="meta">
              {toolPricing(entry)} · {`${entry.tools.length} ${entry.tools.length === 1 ? 'tool' : 'tools'}`}
            </p>
            <p>
              <QualityScore score={qualityScore} />
            </p>
          </div>
        </li>
      ))}
    </ul>
  );
}

function AgentCards(props: { cards: AgentCard[] }) {
  return (
    <ul class="cards">
      {props.cards.map(({ entry, iconUrl }) => (
        <li class="card">
          <ListingIcon name={entry.name} uploadedIconUrl={iconUrl} />
          <div>
            <h3>
              <a href={`/market/agents/${entry.id}`}>{entry.name}</a>
            </h3>
            {entry.description && <p>{entry.description}</p>}
            <p class="meta">
              {agentPricing(entry)} · {entry.runMode === 'template' ? 'Fill in a form' : 'Give it a task'}
            </p>
          </div>
        </li>
      ))}
    </ul>
  );
}

function Section<T>(props: {
  id: string;
  title: string;
  results: Results<T> | null;
  query: MarketQuery;
  market: 'tools' | 'agents';
  excludedBecause: string;
  render: (cards: T[]) => unknown;
}) {
  const { results, query } = props;
  const single = query.market !== 'all';
  return (
    <section aria-labelledby={props.id}>
      <h2 id={props.id}>
        {props.title}
        {results && <span class="meta">{` (${results.total} found)`}</span>}
      </h2>
      {!results ? (
        <p class="meta">{props.excludedBecause}</p>
      ) : results.total === 0 ? (
        <p>Nothing matches. Try fewer words or wider filters.</p>
      ) : (
        <>
          {props.render(results.cards)}
          {!single && results.total > results.cards.length && (
            <p>
              <a
                href={marketHref(query, { market: props.market, page: 1 })}
              >{`See all ${results.total} in the ${props.title.toLowerCase()}`}</a>
            </p>
          )}
          {single && (
            <nav class="pager" aria-label="Pages">
              {query.page > 1 && <a href={marketHref(query, { page: query.page - 1 })}>Previous page</a>}
              <span class="meta">{`Page ${query.page} of ${Math.max(1, Math.ceil(results.total / results.pageSize))}`}</span>
              {query.page * results.pageSize < results.total && (
                <a href={marketHref(query, { page: query.page + 1 })}>Next page</a>
              )}
            </nav>
          )}
        </>
      )}
    </section>
  );
}

export function MarketPage(props: {
  query: MarketQuery;
  tools: Results<ToolCard> | null;
  agents: Results<AgentCard> | null;
  signedInAs: string | null;
}) {
  const { query } = props;
  return (
    <Layout title="Market" section="market" signedInAs={props.signedInAs}>
      <h1>Market</h1>
      <p class="lead">
        MCP servers and APIs you can call through one hosted endpoint each, and ready-made agents, reviewed before they
        are listed.
      </p>
      <SearchForm query={query} />
      {query.problems.length > 0 && (
        <div class="notice error" role="alert">
          {query.problems.map((problem) => (
            <p>{problem}</p>
          ))}
        </div>
      )}
      {query.market !== 'agents' && (
        <Section
          id="tools-heading"
          title="Tool market"
          results={props.tools}
          query={query}
          market="tools"
          excludedBecause="Tools are priced free, per call or per event: none is a one-time purchase."
          render={(cards) => <ToolCards cards={cards as ToolCard[]} />}
        />
      )}
      {query.market !== 'tools' && (
        <Section
          id="agents-heading"
          title="Agent market"
          results={props.agents}
          query={query}
          market="agents"
          excludedBecause="Agents are free or bought once: none is priced per call or per event."
          render={(cards) => <AgentCards cards={cards as AgentCard[]} />}
        />
      )}
    </Layout>
  );
}
