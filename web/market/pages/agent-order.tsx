import type { AgentEntryView } from '../../../api/services/market/catalog';
import { CsrfField } from '../../components/csrf';
import { SchemaFields } from '../../components/schema-form';
import { usd } from '../../format';
import { Layout } from '../../layout';

function Problems(props: { problems: string[] }) {
  if (props.problems.length === 0) return <></>;
  return (
    <div class="notice error" role="alert">
      <ul>
        {props.problems.map((problem) => (
          <li>{problem}</li>
        ))}
      </ul>
    </div>
  );
}

/** The confirm step of buying an agent: the price first, what is available to pay it, one button. */
export function BuyAgentPage(props: {
  entry: AgentEntryView;
  availableUsd: number;
  csrfToken: string;
  problems: string[];
  signedInAs: string;
}) {
  const { entry } = props;
  const base = `/market/agents/${entry.id}`;
  return (
    <Layout title={`Buy ${entry.name}`} section="market" signedInAs={props.signedInAs}>
      <p>
        <a href={base}>{`Back to ${entry.name}`}</a>
      </p>
      <h1>{`Buy ${entry.name}`}</h1>
      <Problems problems={props.problems} />
      <dl class="facts">
        <dt>Price (once)</dt>
        <dd id="agent-price">{usd(entry.priceUsd)}</dd>
        <dt>Available in your account</dt>
        <dd id="available">{usd(props.availableUsd)}</dd>
      </dl>
      <p>
        You pay once and may run the agent as often as you like; each run is billed separately for the model and any
        market tools it calls. Buying it again charges nothing.
      </p>
      <form method="post" action={`${base}/buy`}>
        <CsrfField token={props.csrfToken} />
        <p>
          <button type="submit">{`Confirm: buy for ${usd(entry.priceUsd)}`}</button>
        </p>
      </form>
    </Layout>
  );
}

/** The run form of an agent, generated from its input schema (and a task field where the agent takes one). */
export function RunAgentPage(props: {
  entry: AgentEntryView;
  csrfToken: string;
  runKey: string;
  notice: string | null;
  values: URLSearchParams | null;
  problems: string[];
  signedInAs: string;
}) {
  const { entry } = props;
  const base = `/market/agents/${entry.id}`;
  const takesTask = entry.runMode === 'task' || entry.allowTaskOverride;
  return (
    <Layout title={`Run ${entry.name}`} section="market" signedInAs={props.signedInAs}>
      <p>
        <a href={base}>{`Back to ${entry.name}`}</a>
      </p>
      <h1>{`Run ${entry.name}`}</h1>
      {props.notice && (
        <div class="notice" role="status">
          <p id="order-notice">{props.notice}</p>
        </div>
      )}
      <Problems problems={props.problems} />
      <p>
        The run is billed to your account (the model and any market tools it calls) and appears in your console with its
        status and logs.
      </p>
      <form method="post" action={`${base}/run`}>
        <CsrfField token={props.csrfToken} />
        <input type="hidden" name="run_key" value={props.runKey} />
        {entry.runMode === 'template' && (
          <fieldset>
            <legend>Input fields</legend>
            <SchemaFields schema={entry.inputSchema} prefix="in." idPrefix="in" values={props.values} />
          </fieldset>
        )}
        {takesTask && (
          <div class="field">
            <label for="task">{entry.runMode === 'task' ? 'Task (required)' : 'Task of your own (optional)'}</label>
            <textarea id="task" name="task" rows={4} required={entry.runMode === 'task'} maxlength={20000}>
              {props.values?.get('task') ?? ''}
            </textarea>
          </div>
        )}
        <p>
          <button type="submit">Start the run</button>
        </p>
      </form>
    </Layout>
  );
}
