import type { AgentEntryView, ToolEntryView } from '../../api/services/market/catalog';
import { usd } from '../format';

/** How a tool-market entry is priced, in one line. */
export function toolPricing(entry: Pick<ToolEntryView, 'monetizationStrategy' | 'tools' | 'pricingEvents'>): string {
  if (entry.monetizationStrategy === 'free') return 'Free';
  if (entry.monetizationStrategy === 'tool_call_fixed') {
    const prices = entry.tools.map((t) => t.clientPriceUsd ?? 0);
    if (prices.length === 0) return 'Per call';
    const low = Math.min(...prices);
    const high = Math.max(...prices);
    return low === high ? `${usd(low)} per call` : `${usd(low)} to ${usd(high)} per call`;
  }
  const prices = entry.pricingEvents.map((e) => e.unitPriceUsd);
  return prices.length ? `Per event, from ${usd(Math.min(...prices))}` : 'Per event';
}

export const agentPricing = (agent: Pick<AgentEntryView, 'priceUsd'>) =>
  agent.priceUsd === 0 ? 'Free' : `${usd(agent.priceUsd)} one-time purchase`;

/**
 * The listing's icon: an uploaded one (served by this origin), else its initial. A provider's
 * external icon URL is never loaded: pages fetch nothing from other hosts.
 */
export function ListingIcon(props: { name: string; uploadedIconUrl: string | null }) {
  if (props.uploadedIconUrl) return <img class="icon" src={props.uploadedIconUrl} alt="" width={48} height={48} />;
  return (
    <span class="icon" aria-hidden="true">
      {(props.name.trim()[0] ?? '?').toUpperCase()}
    </span>
  );
}

/** The top of a listing page: the way back to its market, the icon, the name and the description. */
export function ListingHeader(props: {
  market: 'tools' | 'agents';
  name: string;
  description: string | null;
  uploadedIconUrl: string | null;
}) {
  return (
    <>
      <p>
        <a href={`/market?market=${props.market}`}>{props.market === 'tools' ? 'Tool market' : 'Agent market'}</a>
      </p>
      <div class="card">
        <ListingIcon name={props.name} uploadedIconUrl={props.uploadedIconUrl} />
        <div>
          <h1>{props.name}</h1>
          {props.description && <p>{props.description}</p>}
        </div>
      </div>
    </>
  );
}

/** Same-origin address of an uploaded icon (the public icon route). */
export const uploadedIconUrl = (iconObjectKey: string | null) =>
  iconObjectKey ? `/api/v1/market/icons/${encodeURIComponent(iconObjectKey)}.png` : null;

export function QualityScore(props: { score: number | null }) {
  if (props.score === null) return <span class="meta">No quality score</span>;
  const tone = props.score >= 80 ? 'good' : props.score >= 50 ? 'warn' : 'bad';
  return <span class={`badge ${tone}`}>{`Quality ${props.score}/100`}</span>;
}
