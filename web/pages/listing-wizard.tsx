import type { StoredValidation } from '../../db/repos/market-validations';
import { POISONING_CODES } from '../../lib/market/validation-report';
import { CsrfField } from '../components/csrf';
import { QualityScore } from '../components/listing';
import { SchemaTable } from '../components/schema';
import { Layout } from '../layout';
import { ConsoleNav } from './console-home';

function Steps(props: { current: 1 | 2 }) {
  const steps = ['Source', 'Report, tools and prices'];
  return (
    <ol class="wizard-steps" aria-label="Steps of the listing wizard">
      {steps.map((step, i) => (
        <li aria-current={i + 1 === props.current ? 'step' : undefined}>{step}</li>
      ))}
    </ol>
  );
}

function Problem(props: { problem: string | null }) {
  if (!props.problem) return null;
  return (
    <div class="notice error" role="alert">
      <p>{props.problem}</p>
    </div>
  );
}

/** Step 1: the remote MCP server to list; validating it discovers its tools and stores the report. */
export function WizardSourcePage(props: { email: string; csrfToken: string; url: string; problem: string | null }) {
  return (
    <Layout title="List a tool source" section="console" signedInAs={props.email}>
      <h1>List a tool source</h1>
      <ConsoleNav current="provider" />
      <Steps current={1} />
      <Problem problem={props.problem} />
      <form method="post" action="/console/provider/new">
        <CsrfField token={props.csrfToken} />
        <p>
          <label for="url">Remote MCP server URL</label>
          <input
            id="url"
            name="url"
            type="url"
            required
            maxlength={2048}
            value={props.url}
            aria-describedby="url-help"
          />
        </p>
        <p id="url-help" class="meta">
          The server's Streamable HTTP (or SSE) endpoint, over HTTPS. Validating it lists its tools, scores how well
          they are described and scans them for tool poisoning; nothing is published yet. OpenAPI sources and sources
          that need parameters are listed through the API (POST /api/v1/mcp-market/validate).
        </p>
        <p>
          <button type="submit">Discover and validate</button>
        </p>
      </form>
    </Layout>
  );
}

/** Step 2: the validation report, the discovered tools, and the form that chooses tools and prices and submits. */
export function WizardToolsPage(props: {
  email: string;
  csrfToken: string;
  url: string;
  validation: StoredValidation;
  problem: string | null;
  values: URLSearchParams | null;
}) {
  const { validation, values } = props;
  const findings = validation.report.issues.filter((i) => (POISONING_CODES as readonly string[]).includes(i.code));
  const notes = validation.report.issues.filter((i) => !(POISONING_CODES as readonly string[]).includes(i.code));
  const tools = validation.discovery.tools;
  const strategy = values?.get('monetizationStrategy') ?? 'tool_call_fixed';
  return (
    <Layout title="Tools and prices" section="console" signedInAs={props.email}>
      <h1>List a tool source</h1>
      <ConsoleNav current="provider" />
      <Steps current={2} />
      <Problem problem={props.problem} />
      <section aria-labelledby="report-heading">
        <h2 id="report-heading">Validation report</h2>
        <dl class="facts">
          <dt>Source</dt>
          <dd>
            <code>{props.url}</code>
          </dd>
          <dt>Status</dt>
          <dd id="validation-status">{validation.status}</dd>
          <dt>Quality score</dt>
          <dd>
            <QualityScore score={validation.report.qualityScore} />
          </dd>
          <dt>Tool-poisoning scan</dt>
          <dd id="scan-result">
            {findings.length === 0 ? (
              <span class="good">No findings</span>
            ) : (
              <span class="bad">{`${findings.length} finding(s)`}</span>
            )}
          </dd>
        </dl>
        {validation.report.issues.length > 0 && (
          <ul id="report-issues" aria-label="Issues of the validation report">
            {[...findings, ...notes].map((issue) => (
              <li>
                {`${issue.severity}: `}
                {issue.tool && <code>{issue.tool}</code>} {issue.message}
              </li>
            ))}
          </ul>
        )}
      </section>
      {validation.status !== 'valid' ? (
        <p class="notice error">
          {validation.status === 'needs_parameters'
            ? 'This source needs parameters to be discovered: list it through the API, which takes them.'
            : 'This source cannot be listed as it is: fix what the report says and validate it again.'}{' '}
          <a href="/console/provider/new">Validate again</a>
        </p>
      ) : (
        <form method="post" action={`/console/provider/new/${validation.id}`}>
          <CsrfField token={props.csrfToken} />
          <input type="hidden" name="url" value={props.url} />
          <h2 id="listing-heading">The listing</h2>
          <p>
            <label for="name">Name</label>
            <input id="name" name="name" required maxlength={100} value={values?.get('name') ?? ''} />
          </p>
          <p>
            <label for="description">Description</label>
            <textarea id="description" name="description" rows={3} maxlength={2000}>
              {values?.get('description') ?? ''}
            </textarea>
          </p>
          <fieldset>
            <legend>Pricing</legend>
            <p class="choice">
              <input
                type="radio"
                id="strategy-fixed"
                name="monetizationStrategy"
                value="tool_call_fixed"
                checked={strategy === 'tool_call_fixed'}
              />{' '}
              <label for="strategy-fixed">A fixed price per call (set below, per tool)</label>
            </p>
            <p class="choice">
              <input
                type="radio"
                id="strategy-free"
                name="monetizationStrategy"
                value="free"
                checked={strategy === 'free'}
              />{' '}
              <label for="strategy-free">Free</label>
            </p>
          </fieldset>
          <h2 id="tools-heading">{`Tools (${tools.length} discovered)`}</h2>
          {tools.map((tool, i) => {
            const listed = values ? values.get(`tool.${i}.listed`) === 'on' : true;
            return (
              <fieldset class="wizard-tool">
                <legend>
                  <code>{tool.name}</code>
                </legend>
                <p>{tool.description ?? 'No description.'}</p>
                <details>
                  <summary>{`Input schema of ${tool.name}`}</summary>
                  <SchemaTable schema={tool.inputSchema} caption={`Arguments of ${tool.name}`} empty="No arguments." />
                </details>
                <input type="hidden" name={`tool.${i}.name`} value={tool.name} />
                <p class="choice">
                  <input type="checkbox" id={`tool-${i}-listed`} name={`tool.${i}.listed`} checked={listed} />{' '}
                  <label for={`tool-${i}-listed`}>{`List ${tool.name}`}</label>
                </p>
                <p>
                  <label for={`tool-${i}-display`}>{`Display name of ${tool.name}`}</label>
                  <input
                    id={`tool-${i}-display`}
                    name={`tool.${i}.displayName`}
                    maxlength={100}
                    value={values?.get(`tool.${i}.displayName`) ?? tool.name}
                  />
                </p>
                <p>
                  <label for={`tool-${i}-price`}>{`Price per call of ${tool.name} (USD, with a fixed price)`}</label>
                  <input
                    id={`tool-${i}-price`}
                    name={`tool.${i}.price`}
                    inputmode="decimal"
                    pattern="[0-9]+(\.[0-9]{1,6})?"
                    maxlength={12}
                    value={values?.get(`tool.${i}.price`) ?? ''}
                  />
                </p>
              </fieldset>
            );
          })}
          <p>
            <button type="submit">Submit for review</button>
          </p>
        </form>
      )}
    </Layout>
  );
}
