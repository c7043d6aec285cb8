import type { AgentTransaction } from '../../db/schema';
import type { OpenHolds, SpendCategory } from '../../db/repos/spending';
import { DailyChartWithTable } from '../components/chart';
import { shortId, usd, utc } from '../format';
import { CountAndAmountTable } from '../components/count-and-amount-table';
import { Layout } from '../layout';
import { ConsoleNav, KIND_NAMES, MoneySummary } from './console-home';

export interface UsageView {
  email: string;
  money: { balanceUsd: number; heldUsd: number; availableUsd: number };
  days: number;
  perDay: { day: string; usd: number }[];
  perCategory: { category: SpendCategory; usd: number; charges: number }[];
  perListing: { slug: string; listingId: string | null; usd: number; charges: number }[];
  holds: OpenHolds & { jobsUsd: number[]; marketRunsUsd: number[] };
  transactions: { rows: (AgentTransaction & { costUsd: number })[]; page: number; totalPages: number };
}

const CATEGORY_NAMES: Record<string, string> = {
  ...KIND_NAMES,
  'market-call': 'Market tool calls',
  'agent-purchase': 'Agent purchases',
};
const categoryName = (category: string) => CATEGORY_NAMES[category] ?? category;

function Empty(props: { children: string }) {
  return <p class="meta">{props.children}</p>;
}

export function UsagePage(props: { view: UsageView }) {
  const { view } = props;
  const spent = view.perDay.reduce((sum, d) => sum + d.usd, 0);
  return (
    <Layout title="Usage and money" section="console" signedInAs={view.email}>
      <h1>Usage and money</h1>
      <ConsoleNav current="usage" />
      <section aria-labelledby="money-heading">
        <h2 id="money-heading">Wallet</h2>
        <MoneySummary {...view.money} />
      </section>

      <section aria-labelledby="per-day-heading">
        <h2 id="per-day-heading">{`Spent per day, last ${view.days} days (UTC)`}</h2>
        <DailyChartWithTable
          chartId="spend-chart"
          tableId="spend-per-day"
          title={`Spent per day over the last ${view.days} days`}
          caption={`Spent per day: ${usd(Math.round(spent * 1e6) / 1e6)} in all`}
          column="Spent"
          days={view.perDay}
        />
      </section>

      <section aria-labelledby="per-kind-heading">
        <h2 id="per-kind-heading">{`Spent per kind, last ${view.days} days`}</h2>
        {view.perCategory.length === 0 ? (
          <Empty>Nothing spent in this time.</Empty>
        ) : (
          <CountAndAmountTable
            countColumn="Charges"
            amountColumn="Spent"
            id="spend-per-kind"
            caption="Charges by what they were for"
            column="Kind"
            rows={view.perCategory.map((c) => ({ label: categoryName(c.category), charges: c.charges, usd: c.usd }))}
          />
        )}
      </section>

      <section aria-labelledby="per-listing-heading">
        <h2 id="per-listing-heading">{`Spent per market listing, last ${view.days} days`}</h2>
        {view.perListing.length === 0 ? (
          <Empty>No market tool calls in this time.</Empty>
        ) : (
          <CountAndAmountTable
            countColumn="Charges"
            amountColumn="Spent"
            id="spend-per-listing"
            caption="Market tool calls by listing (your own calls and your agents')"
            column="Listing"
            rows={view.perListing.map((l) => ({
              label: l.listingId ? <a href={`/market/tools/${l.listingId}`}>{l.slug}</a> : l.slug,
              charges: l.charges,
              usd: l.usd,
            }))}
          />
        )}
      </section>

      <section aria-labelledby="holds-heading">
        <h2 id="holds-heading">Held now</h2>
        {view.holds.jobs.length + view.holds.marketRuns.length === 0 ? (
          <Empty>Nothing is held: no run is going on.</Empty>
        ) : (
          <table id="holds">
            <caption>What running work has reserved of your balance</caption>
            <thead>
              <tr>
                <th scope="col">For</th>
                <th scope="col">Since or until</th>
                <th scope="col" class="num">
                  Held
                </th>
              </tr>
            </thead>
            <tbody>
              {view.holds.jobs.map((hold, i) => (
                <tr>
                  <th scope="row">
                    {`${KIND_NAMES[hold.kind]} `}
                    <a href={`/console/runs/${hold.jobId}`}>{shortId(hold.jobId)}</a>
                  </th>
                  <td>{`since ${utc(hold.since)}`}</td>
                  <td class="num">{usd(view.holds.jobsUsd[i])}</td>
                </tr>
              ))}
              {view.holds.marketRuns.map((run, i) => (
                <tr>
                  <th scope="row">
                    {'Market run of '}
                    <a href={`/market/tools/${run.entryId}`}>{shortId(run.entryId)}</a>
                  </th>
                  <td>{`until ${utc(run.expiresAt)} at the latest`}</td>
                  <td class="num">{usd(view.holds.marketRunsUsd[i])}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section aria-labelledby="transactions-heading">
        <h2 id="transactions-heading">Transactions</h2>
        {view.transactions.rows.length === 0 ? (
          <Empty>No charges yet.</Empty>
        ) : (
          <>
            <table id="transactions">
              <caption>Every charge, newest first (as GET /transactions lists them)</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">What</th>
                  <th scope="col">Run</th>
                  <th scope="col" class="num">
                    Cost
                  </th>
                </tr>
              </thead>
              <tbody>
                {view.transactions.rows.map((t) => (
                  <tr>
                    <td>{utc(t.executed_at)}</td>
                    <th scope="row">{t.agent_name}</th>
                    <td>{t.job_id ? <a href={`/console/runs/${t.job_id}`}>{shortId(t.job_id)}</a> : '—'}</td>
                    <td class="num">{usd(t.costUsd)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <nav class="pager" aria-label="Transaction pages">
              {view.transactions.page > 1 && (
                <a href={`/console/usage?page=${view.transactions.page - 1}#transactions-heading`}>Newer</a>
              )}
              <span class="meta">{`Page ${view.transactions.page} of ${Math.max(1, view.transactions.totalPages)}`}</span>
              {view.transactions.page < view.transactions.totalPages && (
                <a href={`/console/usage?page=${view.transactions.page + 1}#transactions-heading`}>Older</a>
              )}
            </nav>
          </>
        )}
      </section>
    </Layout>
  );
}
