import type { JobKind, JobStatus } from '../../db/schema';
import type { JobWithCost } from '../../db/repos/jobs';
import { Layout } from '../layout';
import { ConsoleNav, KIND_NAMES, RunsTable } from './console-home';
import { Select } from '../market/pages/market';

export const RUN_KINDS = Object.keys(KIND_NAMES) as JobKind[];
export const RUN_STATUSES: readonly JobStatus[] = ['pending', 'processing', 'completed', 'failed'];

export interface RunsFilter {
  kind: JobKind | null;
  status: JobStatus | null;
}

export interface RunsView {
  email: string;
  filter: RunsFilter;
  rows: (JobWithCost & { costUsd: number })[];
  page: number;
  totalPages: number;
  total: number;
}

/** The list's address for a page of the same filter. */
function pageHref(filter: RunsFilter, page: number): string {
  const query = new URLSearchParams();
  if (filter.kind) query.set('kind', filter.kind);
  if (filter.status) query.set('status', filter.status);
  if (page > 1) query.set('page', String(page));
  const text = query.toString();
  return text ? `/console/runs?${text}` : '/console/runs';
}

/** Every job of the account (all five kinds), filterable with a plain GET form that needs no script. */
export function RunsPage(props: { view: RunsView }) {
  const { view } = props;
  const filtered = view.filter.kind !== null || view.filter.status !== null;
  return (
    <Layout title="Runs" section="console" signedInAs={view.email}>
      <h1>Runs</h1>
      <ConsoleNav current="runs" />
      <form class="search" method="get" action="/console/runs" role="search" aria-label="Filter runs">
        <Select
          id="kind"
          label="Kind"
          value={view.filter.kind ?? ''}
          options={[['', 'Every kind'], ...RUN_KINDS.map((k) => [k, KIND_NAMES[k]] as const)]}
        />
        <Select
          id="status"
          label="Status"
          value={view.filter.status ?? ''}
          options={[['', 'Every status'], ...RUN_STATUSES.map((s) => [s, s] as const)]}
        />
        <div>
          <button type="submit">Filter</button>
        </div>
      </form>
      {view.rows.length === 0 ? (
        <p>
          {filtered ? (
            <>
              No run matches these filters. <a href="/console/runs">Show every run</a>.
            </>
          ) : (
            <>
              No runs yet. Start one through the API (<a href="/api/v1/docs/guides/getting-started">Getting started</a>)
              and it shows here.
            </>
          )}
        </p>
      ) : (
        <>
          <RunsTable
            id="runs"
            caption={`${view.total} ${view.total === 1 ? 'run' : 'runs'}${filtered ? ' matching the filters' : ''}, newest first`}
            jobs={view.rows}
          />
          <p class="meta">Cost is what the run's charges debited so far (its lines in your transactions).</p>
          <nav class="pager" aria-label="Run pages">
            {view.page > 1 && <a href={pageHref(view.filter, view.page - 1)}>Newer</a>}
            <span class="meta">{`Page ${view.page} of ${Math.max(1, view.totalPages)}`}</span>
            {view.page < view.totalPages && <a href={pageHref(view.filter, view.page + 1)}>Older</a>}
          </nav>
        </>
      )}
    </Layout>
  );
}
