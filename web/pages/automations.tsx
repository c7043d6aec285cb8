import type { AutomationType, Job } from '../../db/schema';
import { shortId, utc } from '../format';
import { Layout } from '../layout';
import { ConsoleNav, StatusBadge } from './console-home';

export const AUTOMATION_TYPE_NAMES: Record<AutomationType, string> = {
  'forum-agent': 'Forum automation',
  'microblog-agent': 'Microblog automation',
  'custom-agent': 'Custom agent',
};

export interface AutomationItem {
  id: string;
  name: string;
  type: AutomationType;
  cron: string;
  timezone: string | null;
  isPaused: boolean;
  nextFireTimes: Date[];
  lastRuns: Job[];
  createdAt: Date | string;
}

export interface AutomationsView {
  email: string;
  items: AutomationItem[];
  page: number;
  totalPages: number;
  total: number;
  lastRunsShown: number;
  nextFireTimesShown: number;
}

function AutomationCard(props: { item: AutomationItem; lastRunsShown: number; nextFireTimesShown: number }) {
  const { item } = props;
  const headingId = `automation-${item.id}`;
  return (
    <section class="automation" aria-labelledby={headingId}>
      <h3 id={headingId}>{item.name}</h3>
      <dl class="facts">
        <dt>Type</dt>
        <dd>{AUTOMATION_TYPE_NAMES[item.type]}</dd>
        <dt>Schedule</dt>
        <dd>
          <code>{item.cron}</code>
          {` (${item.timezone ?? 'UTC'})`}
        </dd>
        <dt>State</dt>
        <dd>
          <span class={`badge ${item.isPaused ? 'status-failed' : 'status-completed'}`}>
            {item.isPaused ? 'paused' : 'active'}
          </span>
        </dd>
        <dt>Next fire times</dt>
        <dd>
          {item.nextFireTimes.length === 0 ? (
            'None (paused)'
          ) : (
            <ul class="plain">
              {item.nextFireTimes.slice(0, props.nextFireTimesShown).map((at) => (
                <li>{utc(at)}</li>
              ))}
            </ul>
          )}
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{item.id}</code>
        </dd>
      </dl>
      {item.lastRuns.length === 0 ? (
        <p class="meta">No run yet.</p>
      ) : (
        <table>
          <caption>{`Last ${item.lastRuns.length === 1 ? 'run' : `${item.lastRuns.length} runs`} of ${item.name}, newest first`}</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Status</th>
              <th scope="col">Started</th>
            </tr>
          </thead>
          <tbody>
            {item.lastRuns.map((job) => (
              <tr>
                <th scope="row">
                  <a href={`/console/runs/${job.id}`}>
                    <code>{shortId(job.id)}</code>
                  </a>
                </th>
                <td>
                  <StatusBadge status={job.status} />
                </td>
                <td>{utc(job.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The account's automations and custom agents (GET /automations lists both), their next fire times and last runs. */
export function AutomationsPage(props: { view: AutomationsView }) {
  const { view } = props;
  return (
    <Layout title="Automations and custom agents" section="console" signedInAs={view.email}>
      <h1>Automations and custom agents</h1>
      <ConsoleNav current="automations" />
      {view.items.length === 0 ? (
        <p>
          No automations or custom agents yet. Create one through the API (<code>POST /api/v1/automations</code> or{' '}
          <code>POST /api/v1/agents</code>, see the <a href="/api/v1/docs">documentation</a>) and it shows here.
        </p>
      ) : (
        <>
          <h2>{`${view.total} scheduled ${view.total === 1 ? 'automation' : 'automations'}, newest first`}</h2>
          <p class="meta">{`Each shows its next ${view.nextFireTimesShown} fire times (from its Temporal Schedule) and its last ${view.lastRunsShown} runs.`}</p>
          {view.items.map((item) => (
            <AutomationCard
              item={item}
              lastRunsShown={view.lastRunsShown}
              nextFireTimesShown={view.nextFireTimesShown}
            />
          ))}
          <nav class="pager" aria-label="Automation pages">
            {view.page > 1 && <a href={`/console/automations?page=${view.page - 1}`}>Newer</a>}
            <span class="meta">{`Page ${view.page} of ${Math.max(1, view.totalPages)}`}</span>
            {view.page < view.totalPages && <a href={`/console/automations?page=${view.page + 1}`}>Older</a>}
          </nav>
        </>
      )}
    </Layout>
  );
}
