import type { StoredValidation } from '../../db/repos/market-validations';
import type { EventVerificationView } from '../../api/services/mcp-listing';
import type { DiscoveryParam } from '../../lib/market/discovery';
import { POISONING_CODES } from '../../lib/market/validation-report';
import { CsrfField } from '../components/csrf';
import { QualityScore } from '../components/listing';
import { LlmReviewFacts } from '../components/llm-review';
import { SchemaTable } from '../components/schema';
import { Layout } from '../layout';
import { shellWord } from '../shell';
import { ConsoleNav } from './console-home';

/** The source the wizard lists, carried from step to step in the address (nothing secret in it). */
export interface WizardSource {
  type: 'remote_mcp' | 'openapi';
  url: string;
  /** OpenAPI only: the API's base URL when the document has no absolute HTTPS server. */
  base: string;
  /** In revision mode: the id of the live approved submission the listing revises; else ''. */
  revision: string;
}

/** The live listing a revision-mode wizard revises: its name (for the headings) and its pricing. */
export interface RevisionOf {
  name: string;
  monetizationStrategy: string;
}

/** The wizard's first step, with the source (and revision mode) filled in. */
export function sourceHref(source: WizardSource): string {
  const query = new URLSearchParams({ type: source.type, url: source.url });
  if (source.type === 'openapi' && source.base) query.set('base', source.base);
  if (source.revision) query.set('revision', source.revision);
  return `/console/provider/new?${query.toString()}`;
}

/** The wizard's address for a validation, with the source (and the verification of its events, if any). */
export function wizardHref(validationId: string, source: WizardSource, verificationId?: string | null): string {
  const query = new URLSearchParams({ type: source.type, url: source.url });
  if (source.type === 'openapi' && source.base) query.set('base', source.base);
  if (source.revision) query.set('revision', source.revision);
  if (verificationId) query.set('verification', verificationId);
  return `/console/provider/new/${validationId}?${query.toString()}`;
}

export function eventsHref(validationId: string, source: WizardSource, verificationId?: string): string {
  const [path, query] = wizardHref(validationId, source).split('?');
  return `${path}/events${verificationId ? `/${verificationId}` : ''}?${query}`;
}

const SOURCE_KIND = { remote_mcp: 'Remote MCP server', openapi: 'OpenAPI document' } as const;

type Step = 'source' | 'report' | 'events' | 'listing';

function Steps(props: { current: Step }) {
  const steps: [Step, string][] = [
    ['source', 'Source'],
    ['report', 'Validation report'],
    ['events', 'Events to verify (per-event pricing only)'],
    ['listing', 'Tools, prices and submit'],
  ];
  return (
    <ol class="wizard-steps" aria-label="Steps of the listing wizard">
      {steps.map(([step, label]) => (
        <li aria-current={step === props.current ? 'step' : undefined}>{label}</li>
      ))}
    </ol>
  );
}

/** The pages' heading: a new listing, or the revision of a live one. */
function WizardHeading(props: { revisionOf: RevisionOf | null }) {
  if (!props.revisionOf) return <h1>List a tool source</h1>;
  return (
    <>
      <h1>{`Revision of ${props.revisionOf.name}`}</h1>
      <p class="meta" id="revision-mode">
        You are making a revision of your live listing: it is prefilled from the live version. Once you submit it, an
        operator reviews it, and when approved it replaces the live listing under the same public id (the live version
        stays as it is until then).
      </p>
    </>
  );
}

/** The hidden fields that carry the source (and revision mode) in a step's form. */
function SourceHidden(props: { source: WizardSource }) {
  return (
    <>
      <input type="hidden" name="type" value={props.source.type} />
      <input type="hidden" name="url" value={props.source.url} />
      <input type="hidden" name="base" value={props.source.base} />
      {props.source.revision && <input type="hidden" name="revision" value={props.source.revision} />}
    </>
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

function SourceFields(props: { source: WizardSource }) {
  const { source } = props;
  return (
    <>
      <fieldset>
        <legend>Kind of source</legend>
        <p class="choice">
          <input
            type="radio"
            id="type-mcp"
            name="type"
            value="remote_mcp"
            checked={source.type === 'remote_mcp'}
            aria-describedby="type-mcp-help"
          />{' '}
          <label for="type-mcp">Remote MCP server</label>
        </p>
        <p id="type-mcp-help" class="meta">
          Its Streamable HTTP (or legacy SSE) endpoint.
        </p>
        <p class="choice">
          <input
            type="radio"
            id="type-openapi"
            name="type"
            value="openapi"
            checked={source.type === 'openapi'}
            aria-describedby="type-openapi-help"
          />{' '}
          <label for="type-openapi">OpenAPI document</label>
        </p>
        <p id="type-openapi-help" class="meta">
          The address of an OpenAPI 3.x or Swagger 2.0 document (JSON or YAML) describing your API: each operation
          becomes a tool. External <code>$ref</code>s are not followed.
        </p>
      </fieldset>
      <p>
        <label for="url">Address of the source (HTTPS)</label>
        <input id="url" name="url" type="url" required maxlength={2048} value={source.url} />
      </p>
      <p>
        <label for="base">API base URL (OpenAPI only, optional)</label>
        <input id="base" name="base" type="url" maxlength={2048} value={source.base} aria-describedby="base-help" />
      </p>
      <p id="base-help" class="meta">
        Needed when the document has no absolute HTTPS server; it replaces the document's servers.
      </p>
      {source.revision && <input type="hidden" name="revision" value={source.revision} />}
    </>
  );
}

/** Name and value rows: credentials of the provider's own, used for one validation and never stored. */
function DiscoveryParamFields(props: { names: string[]; idPrefix: string }) {
  const rows = [...props.names, ...Array.from({ length: Math.max(0, 2 - props.names.length) }, () => '')];
  return (
    <fieldset>
      <legend>Credentials to validate with (only if the source needs them)</legend>
      <p id={`${props.idPrefix}-help`} class="meta">
        If the source lists its tools only to a caller with credentials, give yours. Remote MCP: each is a request
        header (for example <code>Authorization</code> with <code>Bearer &lt;token&gt;</code>). OpenAPI: named like the
        document's security scheme or server variable. They are used for this validation only: sealed on the way, never
        stored, never shown again.
      </p>
      {rows.map((name, i) => (
        <div class="param-row">
          <p>
            <label for={`${props.idPrefix}-${i}-name`}>{`Credential ${i + 1}: name`}</label>
            <input
              id={`${props.idPrefix}-${i}-name`}
              name={`param.${i}.name`}
              maxlength={64}
              value={name}
              autocomplete="off"
            />
          </p>
          <p>
            <label for={`${props.idPrefix}-${i}-value`}>{`Credential ${i + 1}: value`}</label>
            <input
              id={`${props.idPrefix}-${i}-value`}
              name={`param.${i}.value`}
              type="password"
              maxlength={2048}
              autocomplete="off"
            />
          </p>
        </div>
      ))}
    </fieldset>
  );
}

/** Step 1: the source to list (a remote MCP server or an OpenAPI document); validating it discovers its tools and stores the report. */
export function WizardSourcePage(props: {
  email: string;
  csrfToken: string;
  source: WizardSource;
  paramNames: string[];
  problem: string | null;
  revisionOf: RevisionOf | null;
}) {
  return (
    <Layout
      title={props.revisionOf ? `Revision of ${props.revisionOf.name}` : 'List a tool source'}
      section="console"
      signedInAs={props.email}
    >
      <WizardHeading revisionOf={props.revisionOf} />
      <ConsoleNav current="provider" />
      <Steps current="source" />
      <Problem problem={props.problem} />
      <form method="post" action="/console/provider/new">
        <CsrfField token={props.csrfToken} />
        <SourceFields source={props.source} />
        <DiscoveryParamFields names={props.paramNames} idPrefix="param" />
        <p class="meta">
          Validating lists the source's tools, scores how well they are described and scans them for tool poisoning (the
          same validation as POST /api/v1/mcp-market/validate); nothing is published yet.
        </p>
        <p>
          <button type="submit">Discover and validate</button>
        </p>
      </form>
    </Layout>
  );
}

function Report(props: { validation: StoredValidation; source: WizardSource }) {
  const { validation, source } = props;
  const findings = validation.report.issues.filter((i) => (POISONING_CODES as readonly string[]).includes(i.code));
  const notes = validation.report.issues.filter((i) => !(POISONING_CODES as readonly string[]).includes(i.code));
  return (
    <section aria-labelledby="report-heading">
      <h2 id="report-heading">Validation report</h2>
      <dl class="facts">
        <dt>Source</dt>
        <dd>
          {`${SOURCE_KIND[source.type]}: `}
          <code id="source-url">{source.url}</code>
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
        <LlmReviewFacts review={validation.report.llmReview} />
        <dt>Valid until</dt>
        <dd>{validation.expiresAt.toISOString().replace('T', ' ').slice(0, 16)} UTC</dd>
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
  );
}

/** Where a consumer's value of a declared parameter reaches the source. */
function whereItGoes(source: WizardSource, param: DiscoveryParam | undefined): string {
  if (source.type === 'remote_mcp') return 'Sent as the request header of this name on every call to your server.';
  if (!param) return 'Used only if it names a security scheme or a server URL variable of your document.';
  const where = param.in ? ` (${param.in})` : '';
  return `${param.description ?? 'A parameter of your document'}${where}.`;
}

/** A consumer parameter as the form declares it. */
export interface UserParamRow {
  name: string;
  description: string;
  secret: boolean;
  required: boolean;
  choices: string;
}

/** The rows the listing form starts with: the parameters discovery found, then blank ones. */
export function userParamRows(validation: StoredValidation, values: URLSearchParams | null): UserParamRow[] {
  if (values) {
    const rows: UserParamRow[] = [];
    for (let i = 0; values.has(`uparam.${i}.name`); i++)
      rows.push({
        name: values.get(`uparam.${i}.name`) ?? '',
        description: values.get(`uparam.${i}.description`) ?? '',
        secret: values.get(`uparam.${i}.secret`) === 'on',
        required: values.get(`uparam.${i}.required`) === 'on',
        choices: values.get(`uparam.${i}.choices`) ?? '',
      });
    if (rows.every((r) => r.name))
      rows.push({ name: '', description: '', secret: false, required: false, choices: '' });
    return rows;
  }
  const found = validation.discovery.params.map((p) => ({
    name: p.name,
    description: p.description ?? '',
    secret: p.secret ?? false,
    required: p.required ?? false,
    choices: '',
  }));
  return [
    ...found,
    ...Array.from({ length: 2 }, () => ({ name: '', description: '', secret: false, required: false, choices: '' })),
  ];
}

function UserParamFields(props: { source: WizardSource; validation: StoredValidation; rows: UserParamRow[] }) {
  const discovered = new Map(props.validation.discovery.params.map((p) => [p.name, p]));
  return (
    <fieldset>
      <legend>Parameters each consumer supplies</legend>
      <p class="meta" id="uparams-help">
        What a consumer gives when connecting (their own API key for your service, a region, ...). Only the names you
        declare reach your server, each checked on every call. Secret ones are sealed and never shown again; a name that
        sounds like a key, token, secret or password must be marked secret.{' '}
        {props.source.type === 'remote_mcp'
          ? 'For a remote MCP server each parameter is the request header of that name.'
          : 'For an OpenAPI source a parameter named like a security scheme of your document fills it; one named like a server URL variable fills it, only with one of its allowed values.'}{' '}
        Leave a name blank to drop a row.
      </p>
      {props.rows.map((row, i) => (
        <fieldset class="wizard-param">
          <legend>{row.name ? `Parameter ${row.name}` : `Parameter ${i + 1} (optional)`}</legend>
          {row.name && <p class="meta">{whereItGoes(props.source, discovered.get(row.name))}</p>}
          <p>
            <label for={`uparam-${i}-name`}>{`Name of parameter ${i + 1}`}</label>
            <input
              id={`uparam-${i}-name`}
              name={`uparam.${i}.name`}
              maxlength={64}
              value={row.name}
              autocomplete="off"
            />
          </p>
          <p>
            <label for={`uparam-${i}-description`}>{`Description of parameter ${i + 1}`}</label>
            <input
              id={`uparam-${i}-description`}
              name={`uparam.${i}.description`}
              maxlength={500}
              value={row.description}
            />
          </p>
          <p>
            <label
              for={`uparam-${i}-choices`}
            >{`Allowed values of parameter ${i + 1} (comma-separated, optional)`}</label>
            <input id={`uparam-${i}-choices`} name={`uparam.${i}.choices`} maxlength={1000} value={row.choices} />
          </p>
          <p class="choice">
            <input type="checkbox" id={`uparam-${i}-secret`} name={`uparam.${i}.secret`} checked={row.secret} />{' '}
            <label for={`uparam-${i}-secret`}>{`Parameter ${i + 1} is a secret`}</label>
          </p>
          <p class="choice">
            <input type="checkbox" id={`uparam-${i}-required`} name={`uparam.${i}.required`} checked={row.required} />{' '}
            <label for={`uparam-${i}-required`}>{`Parameter ${i + 1} is required`}</label>
          </p>
        </fieldset>
      ))}
    </fieldset>
  );
}

/** What a validation that needs parameters asks for, and the form that validates again with them. */
function NeedsParameters(props: { csrfToken: string; source: WizardSource; validation: StoredValidation }) {
  const needed = props.validation.requiredParameters;
  return (
    <section aria-labelledby="needs-heading">
      <h2 id="needs-heading">The source needs credentials to be validated</h2>
      <ul id="needed-parameters" aria-label="Parameters the source asked for">
        {needed.map((p) => (
          <li>
            <code>{p.name}</code>
            {p.in && ` (${p.in})`}
            {p.description && `: ${p.description}`}
          </li>
        ))}
      </ul>
      <p>Give your own values to validate it again; consumers will give theirs (you declare them on the next step).</p>
      <form method="post" action="/console/provider/new">
        <CsrfField token={props.csrfToken} />
        <SourceHidden source={props.source} />
        <DiscoveryParamFields names={needed.map((p) => p.name)} idPrefix="again" />
        <p>
          <button type="submit">Validate again with these credentials</button>
        </p>
      </form>
    </section>
  );
}

/** Step 2 (and 4): the validation report, then the form that names the listing, chooses tools and prices and submits. */
export function WizardToolsPage(props: {
  email: string;
  csrfToken: string;
  source: WizardSource;
  validation: StoredValidation;
  verification: EventVerificationView | null;
  problem: string | null;
  values: URLSearchParams | null;
  revisionOf: RevisionOf | null;
}) {
  const { validation, values, source, verification, revisionOf } = props;
  const tools = validation.discovery.tools;
  const events = verification?.complete ? verification.eventNames : [];
  const strategy = values?.get('monetizationStrategy') ?? (events.length ? 'provider_event' : 'tool_call_fixed');
  return (
    <Layout
      title={revisionOf ? `Tools and prices: revision of ${revisionOf.name}` : 'Tools and prices'}
      section="console"
      signedInAs={props.email}
    >
      <WizardHeading revisionOf={revisionOf} />
      <ConsoleNav current="provider" />
      <Steps current={verification ? 'listing' : 'report'} />
      <Problem problem={props.problem} />
      <Report validation={validation} source={source} />
      {validation.status === 'needs_parameters' ? (
        <NeedsParameters csrfToken={props.csrfToken} source={source} validation={validation} />
      ) : validation.status !== 'valid' ? (
        <p class="notice error">
          This source cannot be listed as it is: fix what the report says and validate it again.{' '}
          <a href={sourceHref(source)}>Validate again</a>
        </p>
      ) : (
        <>
          {!events.length && revisionOf?.monetizationStrategy === 'provider_event' && (
            <div class="notice" role="note" id="verify-again">
              <p>
                The live listing charges per event. A revision priced per event needs its events verified again:{' '}
                <a href={eventsHref(validation.id, source)}>verify your events</a> (they are filled in), then come back
                here to price them.
              </p>
            </div>
          )}
          {!events.length && (
            <section aria-labelledby="per-event-heading">
              <h2 id="per-event-heading">Per-event pricing</h2>
              <p>
                To charge per billable event your server reports (pages scraped, rows returned, ...) instead of per
                call, first prove that your server reports each event:{' '}
                <a href={eventsHref(validation.id, source)}>verify your events</a>, then come back here to price them.
              </p>
            </section>
          )}
          <form method="post" action={`/console/provider/new/${validation.id}`}>
            <CsrfField token={props.csrfToken} />
            <SourceHidden source={source} />
            {verification && <input type="hidden" name="eventVerificationId" value={verification.id} />}
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
              {events.length > 0 && (
                <p class="choice">
                  <input
                    type="radio"
                    id="strategy-event"
                    name="monetizationStrategy"
                    value="provider_event"
                    checked={strategy === 'provider_event'}
                  />{' '}
                  <label for="strategy-event">A price per event your server reports (set below, per event)</label>
                </p>
              )}
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
            {events.length > 0 && (
              <fieldset id="pricing-events">
                <legend>{`Verified events (${events.length})`}</legend>
                {events.map((event, i) => (
                  <fieldset class="wizard-tool">
                    <legend>
                      <code>{event}</code>
                    </legend>
                    <input type="hidden" name={`event.${i}.name`} value={event} />
                    <p>
                      <label for={`event-${i}-title`}>{`Title of ${event}`}</label>
                      <input
                        id={`event-${i}-title`}
                        name={`event.${i}.title`}
                        maxlength={100}
                        value={values?.get(`event.${i}.title`) ?? ''}
                      />
                    </p>
                    <p>
                      <label for={`event-${i}-price`}>{`Price of one ${event} event (USD)`}</label>
                      <input
                        id={`event-${i}-price`}
                        name={`event.${i}.price`}
                        inputmode="decimal"
                        pattern="[0-9]+(\.[0-9]{1,6})?"
                        maxlength={12}
                        value={values?.get(`event.${i}.price`) ?? ''}
                      />
                    </p>
                  </fieldset>
                ))}
              </fieldset>
            )}
            <UserParamFields source={source} validation={validation} rows={userParamRows(validation, values)} />
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
                    <SchemaTable
                      schema={tool.inputSchema}
                      caption={`Arguments of ${tool.name}`}
                      empty="No arguments."
                    />
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
              <button type="submit">{revisionOf ? 'Submit the revision for review' : 'Submit for review'}</button>
            </p>
          </form>
        </>
      )}
    </Layout>
  );
}

/** The request a provider's server sends for one event of a verification (no money moves), quoted for a POSIX shell. */
export function testChargeCommand(verification: EventVerificationView, event: string): string {
  return [
    `curl -sS -X POST ${shellWord(`${verification.apiBaseUrl}/provider/runs/${verification.runId}/charge`)} \\`,
    // The two variables are the provider's own shell's ($API_KEY, $CHARGE_TOKEN): expanded there, on purpose.
    `  -H "X-API-Key: $API_KEY" -H "x-service-charge-token: $CHARGE_TOKEN" \\`,
    `  -H ${shellWord(`idempotency-key: verify-${event}`)} -H 'Content-Type: application/json' \\`,
    `  -d ${shellWord(JSON.stringify({ eventName: event, count: 1 }))}`,
  ].join('\n');
}

/** Step 3: the event names to verify (a form), or a verification's status and the test charges it expects. */
export function WizardEventsPage(props: {
  email: string;
  csrfToken: string;
  source: WizardSource;
  validation: StoredValidation;
  verification: EventVerificationView | null;
  /** Only right after the verification started: the token the provider's server sends. */
  chargeToken: string | null;
  eventNames: string[];
  problem: string | null;
  revisionOf: RevisionOf | null;
}) {
  const { verification, validation, source } = props;
  const rows = [...props.eventNames, ...Array.from({ length: Math.max(0, 3 - props.eventNames.length) }, () => '')];
  return (
    <Layout
      title={props.revisionOf ? `Events to verify: revision of ${props.revisionOf.name}` : 'Events to verify'}
      section="console"
      signedInAs={props.email}
    >
      <WizardHeading revisionOf={props.revisionOf} />
      <ConsoleNav current="provider" />
      <Steps current="events" />
      <Problem problem={props.problem} />
      <p>
        {`${SOURCE_KIND[source.type]}: `}
        <code>{source.url}</code> <a href={wizardHref(validation.id, source)}>Back to the validation report</a>
      </p>
      {!verification ? (
        <form method="post" action={eventsHref(validation.id, source)}>
          <CsrfField token={props.csrfToken} />
          <h2 id="events-heading">Events to verify</h2>
          <p>
            Name each billable event your server will report, as it will name it in each charge (letters, digits,
            <code>.</code>, <code>_</code>, <code>-</code>, <code>:</code>). Starting the verification gives your server
            a test run and its charge token; no money moves. You price the events once they are verified.
          </p>
          {rows.map((name, i) => (
            <p>
              <label for={`event-${i}`}>{`Event ${i + 1}${i > 0 ? ' (optional)' : ''}`}</label>
              <input id={`event-${i}`} name="event" maxlength={100} value={name} required={i === 0} />
            </p>
          ))}
          <p>
            <button type="submit">Start the verification</button>
          </p>
        </form>
      ) : (
        <section aria-labelledby="verification-heading">
          <h2 id="verification-heading">Verification of your events</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd id="verification-status">
              {verification.complete
                ? 'Complete: every event is verified'
                : `Waiting for test charges (${verification.verifiedEventNames.length} of ${verification.eventNames.length} verified)`}
            </dd>
            <dt>Test run id</dt>
            <dd>
              <code id="verification-run">{verification.runId}</code>
            </dd>
            <dt>Charges go to</dt>
            <dd>
              <code>{verification.apiBaseUrl}</code>
            </dd>
            <dt>Expires</dt>
            <dd>{verification.expiresAt.replace('T', ' ').slice(0, 16)} UTC</dd>
          </dl>
          {props.chargeToken && (
            <>
              <div class="notice" role="status">
                <p>
                  The charge token for your server: copy it now, it is shown only this once. It is a secret; it is good
                  for this test run only.
                </p>
              </div>
              <pre id="charge-token" tabindex={0} aria-label="The charge token">
                <code>{props.chargeToken}</code>
              </pre>
            </>
          )}
          <div class="table-scroll" role="region" aria-labelledby="verification-events-caption" tabindex={0}>
            <table id="verification-events">
              <caption id="verification-events-caption">Events and the test charge each expects</caption>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Test charge your server sends</th>
                </tr>
              </thead>
              <tbody>
                {verification.eventNames.map((event) => (
                  <tr>
                    <td>
                      <code>{event}</code>
                    </td>
                    <td>{verification.verifiedEventNames.includes(event) ? 'Verified' : 'Waiting'}</td>
                    <td>
                      <pre>
                        <code>{testChargeCommand(verification, event)}</code>
                      </pre>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p>
            Your server sends each charge as it will in production: your API key, the charge token as{' '}
            <code>x-service-charge-token</code>, an <code>idempotency-key</code>, and the event in the body. A test
            charge answers with <code>verification: true</code> and moves no money.
          </p>
          {verification.complete ? (
            <p>
              <a id="continue" href={wizardHref(validation.id, source, verification.id)}>
                Continue to tools and prices
              </a>
            </p>
          ) : (
            <p>
              <a id="check-again" href={eventsHref(validation.id, source, verification.id)}>
                Check the verification again
              </a>{' '}
              (you can submit only once every event is verified).
            </p>
          )}
        </section>
      )}
    </Layout>
  );
}
