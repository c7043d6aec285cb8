import type { SubmissionCore } from '../../../db/repos/market-submissions';
import { DailyChartWithTable } from '../../components/chart';
import { shortId, usd, utc } from '../../format';
import { CountAndAmountTable } from '../../components/count-and-amount-table';
import { CsrfField } from '../../components/csrf';
import { Layout } from '../../layout';
import { ConsoleNav } from '../../pages/console-home';

export interface ProviderView {
  email: string;
  csrfToken: string;
  days: number;
  submissions: { market: 'mcp' | 'agent'; rows: SubmissionCore[]; total: number }[];
  /** GET /provider/revenue's totals (every run, all time). */
  totals: { runs: number; totalChargedUsd: number; commissionUsd: number; providerRevenueUsd: number };
  perDay: { day: string; usd: number }[];
  perListing: {
    listingId: string;
    market: 'mcp' | 'agent';
    name: string | null;
    charges: number;
    usd: number;
    totalUsd: number;
  }[];
  perEvent: { eventName: string; toolName: string | null; charges: number; usd: number }[];
}

export const MARKET_NAMES = { mcp: 'Tool market', agent: 'Agent market' } as const;
export const STATUS_NAMES: Record<string, string> = {
  draft: 'Draft',
  pending_review: 'Waiting for review',
  approved: 'Approved',
  rejected: 'Rejected',
  disabled: 'Disabled',
};
const STATUS_TONES: Record<string, string> = {
  draft: '',
  pending_review: 'warn',
  approved: 'good',
  rejected: 'bad',
  disabled: 'bad',
};

export function SubmissionStatus(props: { status: string }) {
  return <span class={`badge ${STATUS_TONES[props.status] ?? ''}`}>{STATUS_NAMES[props.status] ?? props.status}</span>;
}

export const listingHref = (market: 'mcp' | 'agent', listingId: string) =>
  market === 'mcp' ? `/market/tools/${listingId}` : `/market/agents/${listingId}`;

/** The tool market's live approved listings can be revised from the console (the listing wizard in revision mode). */
function RevisionAction(props: { market: 'mcp' | 'agent'; submission: SubmissionCore; csrfToken: string }) {
  const { submission: s } = props;
  if (props.market !== 'mcp' || !s.live || s.status !== 'approved') return <>—</>;
  return (
    <form method="post" action={`/console/provider/new/revision/${s.id}`} class="inline-form">
      <CsrfField token={props.csrfToken} />
      <button type="submit" aria-label={`Make a revision of ${s.name}`}>
        Make a revision
      </button>
    </form>
  );
}

function SubmissionsTable(props: {
  market: 'mcp' | 'agent';
  rows: SubmissionCore[];
  total: number;
  csrfToken: string;
}) {
  const { market, rows } = props;
  const id = `submissions-${market}`;
  if (rows.length === 0) return <p class="meta">{`No ${MARKET_NAMES[market].toLowerCase()} submissions yet.`}</p>;
  return (
    <div class="table-scroll" role="region" aria-labelledby={`${id}-caption`} tabindex={0}>
      <table id={id}>
        <caption id={`${id}-caption`}>{`${MARKET_NAMES[market]}: ${props.total} submission(s), newest first`}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">Revision</th>
            <th scope="col">Review reason</th>
            <th scope="col">Submitted</th>
            <th scope="col">Reviewed</th>
            {market === 'mcp' && <th scope="col">Action</th>}
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => (
            <tr data-submission={s.id}>
              <th scope="row">
                {s.live && s.status === 'approved' ? <a href={listingHref(market, s.listingId)}>{s.name}</a> : s.name}
                {s.live && <span class="meta"> (live)</span>}
              </th>
              <td>
                <SubmissionStatus status={s.status} />
              </td>
              <td>{s.parentEntryId ? `Revision of ${shortId(s.parentEntryId)}` : 'First version'}</td>
              <td>{s.reviewReason ?? '—'}</td>
              <td>{s.submittedAt ? utc(s.submittedAt) : '—'}</td>
              <td>{s.reviewedAt ? utc(s.reviewedAt) : '—'}</td>
              {market === 'mcp' && (
                <td>
                  <RevisionAction market={market} submission={s} csrfToken={props.csrfToken} />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const eventLabel = (e: { eventName: string; toolName: string | null }) =>
  e.eventName === 'agent_purchase'
    ? 'Agent purchases'
    : e.eventName === 'tool_call' && e.toolName
      ? `Calls of ${e.toolName}`
      : e.toolName
        ? `${e.eventName} (${e.toolName})`
        : e.eventName;

/** The provider's side of the console: its submissions to both markets and what it earned. */
export function ProviderPage(props: { view: ProviderView }) {
  const { view } = props;
  const earned = Math.round(view.perDay.reduce((sum, d) => sum + d.usd, 0) * 1e6) / 1e6;
  return (
    <Layout title="Provider" section="console" signedInAs={view.email}>
      <h1>Provider</h1>
      <ConsoleNav current="provider" />
      <section aria-labelledby="submissions-heading">
        <h2 id="submissions-heading">Your submissions</h2>
        <p>
          <a class="button" href="/console/provider/new">
            List a tool source
          </a>
        </p>
        <p class="meta">
          Each listing you submit is reviewed by an operator before it appears in the market; a rejection comes with its
          reason. To change a live tool-market listing, make a revision of it: the listing wizard opens prefilled with
          it; the revision is reviewed in the same way and replaces the live listing when approved.
        </p>
        {view.submissions.map((s) => (
          <section aria-labelledby={`submissions-${s.market}-heading`}>
            <h3 id={`submissions-${s.market}-heading`}>{MARKET_NAMES[s.market]}</h3>
            <SubmissionsTable market={s.market} rows={s.rows} total={s.total} csrfToken={view.csrfToken} />
          </section>
        ))}
      </section>

      <section aria-labelledby="revenue-heading">
        <h2 id="revenue-heading">Revenue</h2>
        <dl class="money" id="revenue-totals">
          <div>
            <dt>Tool-market runs</dt>
            <dd>{String(view.totals.runs)}</dd>
          </div>
          <div>
            <dt>Charged to consumers</dt>
            <dd>{usd(view.totals.totalChargedUsd)}</dd>
          </div>
          <div>
            <dt>Commission</dt>
            <dd>{usd(view.totals.commissionUsd)}</dd>
          </div>
          <div>
            <dt>Your revenue from runs</dt>
            <dd id="revenue-total">{usd(view.totals.providerRevenueUsd)}</dd>
          </div>
        </dl>
        <h3 id="revenue-per-day-heading">{`Revenue per day, last ${view.days} days (UTC)`}</h3>
        <DailyChartWithTable
          chartId="revenue-chart"
          tableId="revenue-per-day"
          title={`Revenue per day over the last ${view.days} days`}
          caption={`Revenue per day: ${usd(earned)} in all`}
          column="Revenue"
          days={view.perDay}
        />
        <h3 id="revenue-per-listing-heading">{`Revenue per listing, last ${view.days} days`}</h3>
        {view.perListing.length === 0 ? (
          <p class="meta">No sales in this time.</p>
        ) : (
          <CountAndAmountTable
            countColumn="Sales"
            amountColumn="Your revenue"
            id="revenue-per-listing"
            caption="Sales by listing (tool calls, events and agent purchases)"
            column="Listing"
            rows={view.perListing.map((l) => ({
              label: <a href={listingHref(l.market, l.listingId)}>{l.name ?? shortId(l.listingId)}</a>,
              charges: l.charges,
              usd: l.usd,
            }))}
          />
        )}
        <h3 id="revenue-per-event-heading">{`Revenue per event, last ${view.days} days`}</h3>
        {view.perEvent.length === 0 ? (
          <p class="meta">No sales in this time.</p>
        ) : (
          <CountAndAmountTable
            countColumn="Sales"
            amountColumn="Your revenue"
            id="revenue-per-event"
            caption="Sales by what was charged"
            column="Event"
            rows={view.perEvent.map((e) => ({ label: eventLabel(e), charges: e.charges, usd: e.usd }))}
          />
        )}
      </section>
    </Layout>
  );
}
