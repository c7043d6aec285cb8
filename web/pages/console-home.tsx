import type { Job } from '../../db/schema';
import { CsrfField } from '../components/csrf';
import { usd, utc, shortId } from '../format';
import { Layout } from '../layout';

export interface ConsoleAccount {
  email: string;
  planId: string;
  balanceUsd: number;
  heldUsd: number;
  availableUsd: number;
  operations: number;
  period: string;
  monthlyOperationLimit: number;
}

export const KIND_NAMES: Record<Job['kind'], string> = {
  scrape: 'Scrape',
  agentic: 'Browser agent',
  automation: 'Automation run',
  'custom-agent': 'Custom agent run',
  'agent-market': 'Agent-market run',
};

export function StatusBadge(props: { status: Job['status']; id?: string }) {
  return (
    <span id={props.id} class={`badge status-${props.status}`}>
      {props.status}
    </span>
  );
}

export type ConsoleSection =
  'home' | 'runs' | 'automations' | 'credentials' | 'connections' | 'api-key' | 'usage' | 'provider' | 'review';

const CONSOLE_SECTIONS: readonly (readonly [ConsoleSection, string, string])[] = [
  ['home', '/console', 'Home'],
  ['runs', '/console/runs', 'Runs'],
  ['automations', '/console/automations', 'Automations and agents'],
  ['credentials', '/console/credentials', 'Market credentials'],
  ['connections', '/console/connections', 'Connected apps'],
  ['api-key', '/console/api-key', 'API key'],
  ['usage', '/console/usage', 'Usage and money'],
  ['provider', '/console/provider', 'Provider'],
  ['review', '/console/review', 'Review queue'],
];

/** Runs as a table: each links to its run page; with their cost when the rows carry one. */
export function RunsTable(props: {
  id?: string;
  caption: string;
  jobs: (Pick<Job, 'id' | 'kind' | 'status' | 'created_at' | 'updated_at'> & { costUsd?: number })[];
}) {
  const withCost = props.jobs.some((job) => job.costUsd !== undefined);
  return (
    <table id={props.id}>
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Kind</th>
          <th scope="col">Status</th>
          {withCost && (
            <th scope="col" class="num">
              Cost
            </th>
          )}
          <th scope="col">Started</th>
          <th scope="col">Last change</th>
        </tr>
      </thead>
      <tbody>
        {props.jobs.map((job) => (
          <tr>
            <th scope="row">
              <a href={`/console/runs/${job.id}`}>
                <code>{shortId(job.id)}</code>
              </a>
            </th>
            <td>{KIND_NAMES[job.kind]}</td>
            <td>
              <StatusBadge status={job.status} />
            </td>
            {withCost && <td class="num">{usd(job.costUsd ?? 0)}</td>}
            <td>{utc(job.created_at)}</td>
            <td>{utc(job.updated_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The console's own sections. */
export function ConsoleNav(props: { current: ConsoleSection }) {
  return (
    <nav class="console-nav" aria-label="Console">
      <ul>
        {CONSOLE_SECTIONS.map(([section, href, text]) => (
          <li>
            <a href={href} aria-current={props.current === section ? 'page' : undefined}>
              {text}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/** Balance, held and available, as GET /account gives them. */
export function MoneySummary(props: { balanceUsd: number; heldUsd: number; availableUsd: number }) {
  return (
    <dl class="money">
      <div>
        <dt>Balance</dt>
        <dd id="balance">{usd(props.balanceUsd)}</dd>
      </div>
      <div>
        <dt>Held for running work</dt>
        <dd id="held">{usd(props.heldUsd)}</dd>
      </div>
      <div>
        <dt>Available</dt>
        <dd id="available">{usd(props.availableUsd)}</dd>
      </div>
    </dl>
  );
}

export function ConsoleHomePage(props: {
  account: ConsoleAccount;
  jobs: Job[];
  csrfToken: string;
  liveSessions: number;
  sessionEndsAt: Date;
}) {
  const { account } = props;
  return (
    <Layout title="Console" section="console" signedInAs={account.email}>
      <h1>Console</h1>
      <ConsoleNav current="home" />
      <section aria-labelledby="money-heading">
        <h2 id="money-heading">Money</h2>
        <MoneySummary balanceUsd={account.balanceUsd} heldUsd={account.heldUsd} availableUsd={account.availableUsd} />
        <p class="meta">{`Plan ${account.planId}: ${account.operations} of ${account.monthlyOperationLimit} operations used in ${account.period}.`}</p>
        <p>
          <a href="/console/usage">
            Spending per day, per kind and per listing, your transactions and what is held now
          </a>
        </p>
      </section>
      <section aria-labelledby="runs-heading">
        <h2 id="runs-heading">Recent runs</h2>
        {props.jobs.length === 0 ? (
          <p>
            No runs yet. Start one through the API (<a href="/api/v1/docs/guides/getting-started">Getting started</a>)
            and it shows here.
          </p>
        ) : (
          <RunsTable caption={`Your ${props.jobs.length} most recent runs, newest first`} jobs={props.jobs} />
        )}
        <p>
          <a href="/console/runs">All runs, filtered by kind and status, with their costs</a>
        </p>
      </section>
      <section aria-labelledby="session-heading">
        <h2 id="session-heading">Session</h2>
        <p>{`This session ends by ${utc(props.sessionEndsAt)} at the latest. You are signed in on ${props.liveSessions} ${props.liveSessions === 1 ? 'browser' : 'browsers'}.`}</p>
        <div class="actions">
          <form class="inline-form" method="post" action="/console/sign-out">
            <CsrfField token={props.csrfToken} />
            <button type="submit">Sign out</button>
          </form>
          <form class="inline-form" method="post" action="/console/sign-out-everywhere">
            <CsrfField token={props.csrfToken} />
            <button type="submit" class="secondary">
              Sign out everywhere
            </button>
          </form>
        </div>
      </section>
    </Layout>
  );
}
