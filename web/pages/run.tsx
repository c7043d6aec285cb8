import type { Job } from '../../db/schema';
import { JsonBlock } from '../components/schema';
import { utc } from '../format';
import { Layout } from '../layout';
import { KIND_NAMES, StatusBadge } from './console-home';

export const isTerminal = (status: Job['status']) => status === 'completed' || status === 'failed';

/** The run's outcome (result and error); replaced whole when the run ends. */
export function RunOutcome(props: { job: Job }) {
  const { job } = props;
  return (
    <section id="run-outcome" aria-labelledby="outcome-heading">
      <h2 id="outcome-heading">Outcome</h2>
      {job.error && (
        <div class="notice error">
          <p>
            <strong>Error:</strong> {job.error}
          </p>
        </div>
      )}
      {job.result ? (
        <JsonBlock value={job.result} />
      ) : (
        <p class="meta">{isTerminal(job.status) ? 'No result.' : 'The result shows here when the run ends.'}</p>
      )}
    </section>
  );
}

export const LogLine = (props: { line: string }) => <li>{props.line}</li>;

/** Whether the page is following the run; replaced when it ends. */
export function LiveNote(props: { job: Job }) {
  return (
    <p id="run-live-note" class="meta">
      {isTerminal(props.job.status)
        ? 'The run has ended.'
        : 'Following the run: new log lines and the outcome appear here as they happen. '}
      {!isTerminal(props.job.status) && <a href={`/console/runs/${props.job.id}`}>Reload</a>}
    </p>
  );
}

export function RunPage(props: { job: Job; email: string; temporalUrl: string }) {
  const { job } = props;
  const live = !isTerminal(job.status);
  return (
    <Layout
      title={`${KIND_NAMES[job.kind]} ${job.id.slice(0, 8)}`}
      section="console"
      signedInAs={props.email}
      live={live}
    >
      <p>
        <a href="/console">Console</a> / <a href="/console/runs">Runs</a>
      </p>
      <h1>{`${KIND_NAMES[job.kind]} ${job.id.slice(0, 8)}`}</h1>
      <div role="status">
        Status: <StatusBadge id="run-status" status={job.status} />
      </div>
      <dl class="facts">
        <dt>Run id</dt>
        <dd>
          <code>{job.id}</code>
        </dd>
        <dt>Started</dt>
        <dd>{utc(job.created_at)}</dd>
        <dt>Last change</dt>
        <dd id="run-updated">{utc(job.updated_at)}</dd>
        <dt>Workflow</dt>
        <dd>
          <code>{job.workflow_id}</code> (<a href={props.temporalUrl}>open in the Temporal UI</a>, for operators)
        </dd>
      </dl>
      <LiveNote job={job} />
      {/* Live pages stream what changes (SSE); each message carries the partials to swap in. */}
      {live && (
        <div
          hx-sse:connect={`/console/runs/${job.id}/events?after=${job.logs.length}`}
          hx-sse:close="done"
          hx-swap="none"
        ></div>
      )}
      <section aria-labelledby="logs-heading">
        <h2 id="logs-heading">Logs</h2>
        <div class="logs" role="log" aria-labelledby="logs-heading" tabindex={0}>
          <ol id="run-logs">
            {job.logs.map((line) => (
              <LogLine line={line} />
            ))}
          </ol>
        </div>
      </section>
      <RunOutcome job={job} />
      <section aria-labelledby="request-heading">
        <h2 id="request-heading">Request</h2>
        <JsonBlock value={job.request} />
      </section>
    </Layout>
  );
}
