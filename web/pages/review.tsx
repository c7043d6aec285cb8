import type {
  AgentReviewView,
  McpEvidence,
  McpReviewView,
  ReviewView,
  ToolChange,
} from '../../api/services/market-review';
import { POISONING_CODES } from '../../lib/market/validation-report';
import { CsrfField } from '../components/csrf';
import { QualityScore } from '../components/listing';
import { LlmReviewFacts } from '../components/llm-review';
import { JsonBlock, SchemaTable } from '../components/schema';
import { shortId, usd, utc } from '../format';
import { Layout } from '../layout';
import { listingHref, MARKET_NAMES, STATUS_NAMES, SubmissionStatus } from './provider';

/** The statuses the queue can be filtered by (waiting for review first: that is the queue). */
export const QUEUE_STATUSES = ['pending_review', 'approved', 'rejected', 'disabled'] as const;
export type QueueStatus = (typeof QUEUE_STATUSES)[number];

export interface ReviewQueueView {
  status: QueueStatus;
  /** The name or slug filter, as typed ('' for none). */
  q: string;
  csrfToken: string;
  markets: { market: 'mcp' | 'agent'; submissions: ReviewView[]; total: number }[];
  evidence: Map<string, McpEvidence>;
  ownerEmails: Map<string, string>;
  /** What the last decision did (after the redirect), or null. */
  done: string | null;
}

const STRATEGY_NAMES: Record<string, string> = {
  free: 'Free',
  tool_call_fixed: 'Fixed price per call',
  provider_event: 'Per event the provider reports',
};

const show = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

function Validation(props: { id: string; evidence: McpEvidence | undefined }) {
  const validation = props.evidence?.validation;
  if (!validation) return <p class="meta">The validation report of this submission is no longer stored.</p>;
  const findings = validation.report.issues.filter((i) => (POISONING_CODES as readonly string[]).includes(i.code));
  const others = validation.report.issues.filter((i) => !(POISONING_CODES as readonly string[]).includes(i.code));
  return (
    <>
      <dl class="facts">
        <dt>Validation status</dt>
        <dd>{validation.status}</dd>
        <dt>Quality score</dt>
        <dd>
          <QualityScore score={validation.report.qualityScore} />
        </dd>
        <dt>Tool-poisoning scan</dt>
        <dd>
          {findings.length === 0 ? (
            <span class="good">No findings</span>
          ) : (
            <span class="bad">{`${findings.length} finding(s)`}</span>
          )}
        </dd>
        <LlmReviewFacts review={validation.report.llmReview} idPrefix={props.id} />
      </dl>
      {findings.length > 0 && (
        <ul aria-label="Scan findings" class="scan-findings">
          {findings.map((issue) => (
            <li>
              <span class="badge bad">{issue.code}</span> {issue.tool && <code>{issue.tool}</code>} {issue.message}
            </li>
          ))}
        </ul>
      )}
      {others.length > 0 && (
        <details>
          <summary>{`${others.length} other note(s) of the validation report`}</summary>
          <ul>
            {others.map((issue) => (
              <li>
                {`${issue.severity}: `}
                {issue.tool && <code>{issue.tool}</code>} {issue.message}
              </li>
            ))}
          </ul>
        </details>
      )}
    </>
  );
}

function ChangeList(props: { label: string; changes: ToolChange[]; className: string }) {
  if (props.changes.length === 0) return <p class="meta">No tool definition changed.</p>;
  return (
    <ul aria-label={props.label} class={props.className}>
      {props.changes.map((c) => (
        <li>
          <code>{c.toolName}</code> {c.change}
          {c.fields.length > 0 && (
            <ul>
              {c.fields.map((f) => (
                <li>
                  <code>{f.field}</code>
                  {': '}
                  <del>{show(f.before)}</del>
                  {' → '}
                  <ins>{show(f.after)}</ins>
                </li>
              ))}
            </ul>
          )}
        </li>
      ))}
    </ul>
  );
}

function McpDetails(props: { sub: McpReviewView; evidence: McpEvidence | undefined }) {
  const { sub, evidence } = props;
  const p = `s-${sub.id}`;
  return (
    <>
      <dl class="facts">
        <dt>Source</dt>
        <dd>
          {sub.type === 'remote_mcp' ? 'Remote MCP server ' : 'OpenAPI '}
          <code>{sub.remoteMcpUrl ?? sub.openapiBaseUrl ?? '—'}</code>
        </dd>
        <dt>Pricing</dt>
        <dd>{STRATEGY_NAMES[sub.monetizationStrategy] ?? sub.monetizationStrategy}</dd>
      </dl>
      <h4 id={`${p}-validation`}>Validation report and scan</h4>
      <Validation id={p} evidence={evidence} />
      {sub.rugPull && (
        <div class="notice error" role="note" aria-labelledby={`${p}-rugpull`}>
          <h4 id={`${p}-rugpull`}>Rug-pull flag: approved tools changed upstream</h4>
          <p>{`First seen ${utc(sub.rugPull.firstDetectedAt)}, last seen ${utc(sub.rugPull.detectedAt)}.`}</p>
          <ChangeList
            label="Tools changed upstream since approval"
            className="rug-pull"
            changes={sub.rugPull.tools.map((t) => ({
              toolName: t.toolName,
              change: t.change === 'missing' ? 'removed' : 'changed',
              fields: t.fields.map((f) => ({ field: f.field, before: f.approved, after: f.upstream })),
            }))}
          />
        </div>
      )}
      {evidence?.revisionDiff && (
        <>
          <h4 id={`${p}-diff`}>Tool definitions changed by this revision</h4>
          <ChangeList
            label="Changes against the live entry"
            className="revision-diff"
            changes={evidence.revisionDiff}
          />
        </>
      )}
      <h4 id={`${p}-tools`}>{`Tools (${sub.tools.length})`}</h4>
      <table>
        <caption>{`Tools of ${sub.name} and their prices`}</caption>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Description</th>
            <th scope="col" class="num">
              Price per call
            </th>
            <th scope="col">Listed</th>
          </tr>
        </thead>
        <tbody>
          {sub.tools.map((t) => (
            <tr>
              <th scope="row">
                <code>{t.toolName}</code>
                {t.displayName && <span class="meta">{` ${t.displayName}`}</span>}
              </th>
              <td>{t.description ?? '—'}</td>
              <td class="num">{t.clientPriceUsd !== undefined ? usd(t.clientPriceUsd) : '—'}</td>
              <td>{t.isEnabled ? 'yes' : 'no'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {sub.tools.map((t) => (
        <details>
          <summary>{`Input schema of ${t.toolName}`}</summary>
          <SchemaTable schema={t.inputSchema} caption={`Arguments of ${t.toolName}`} empty="No arguments." />
        </details>
      ))}
      {sub.pricingEvents.length > 0 && (
        <table>
          <caption>Pricing events</caption>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Description</th>
              <th scope="col" class="num">
                Unit price
              </th>
            </tr>
          </thead>
          <tbody>
            {sub.pricingEvents.map((e) => (
              <tr>
                <th scope="row">
                  <code>{e.eventName}</code>
                </th>
                <td>{e.description ?? '—'}</td>
                <td class="num">{usd(e.unitPriceUsd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h4 id={`${p}-params`}>Parameters each consumer supplies</h4>
      <SchemaTable
        schema={sub.requiredUserParamsSchema}
        caption={`Consumer parameters of ${sub.name}`}
        empty="None: consumers connect without parameters."
      />
    </>
  );
}

function AgentDetails(props: { sub: AgentReviewView }) {
  const { sub } = props;
  const p = `s-${sub.id}`;
  return (
    <>
      <dl class="facts">
        <dt>Price</dt>
        <dd>{usd(sub.priceUsd)}</dd>
        <dt>Run mode</dt>
        <dd>{sub.runMode}</dd>
        <dt>Suggested model</dt>
        <dd>{`${sub.suggestedLlmProvider} ${sub.suggestedLlmModel}`}</dd>
      </dl>
      <h4 id={`${p}-input`}>Input</h4>
      <SchemaTable schema={sub.inputSchema} caption={`Input fields of ${sub.name}`} empty="No input fields." />
      <h4 id={`${p}-output`}>Structured output</h4>
      <JsonBlock value={sub.structuredOutput} />
      <h4 id={`${p}-market-tools`}>Market tools it calls</h4>
      {sub.marketTools.length === 0 ? <p class="meta">None.</p> : <JsonBlock value={sub.marketTools} />}
    </>
  );
}

function Decision(props: { sub: ReviewView; csrfToken: string; q: string }) {
  const { sub } = props;
  const p = `s-${sub.id}`;
  if (sub.status !== 'pending_review' && sub.status !== 'approved') return null;
  return (
    <form method="post" action={`/console/review/${sub.market}/${sub.id}`} class="review-form">
      <CsrfField token={props.csrfToken} />
      {/* The queue shown after the decision keeps the search it was made from. */}
      {props.q && <input type="hidden" name="q" value={props.q} />}
      {sub.status === 'pending_review' ? (
        <>
          <p>
            <label for={`${p}-reason`}>Reason (the provider sees it; required to reject)</label>
            <textarea id={`${p}-reason`} name="reason" rows={2} maxlength={2000}></textarea>
          </p>
          <p class="actions">
            <button type="submit" name="action" value="approve">
              {`Approve ${sub.name}`}
            </button>
            <button type="submit" name="action" value="reject" class="secondary">
              {`Reject ${sub.name}`}
            </button>
          </p>
        </>
      ) : (
        <p class="actions">
          <button type="submit" name="action" value="disable" class="secondary">
            {`Disable ${sub.name}`}
          </button>
        </p>
      )}
    </form>
  );
}

function Submission(props: { sub: ReviewView; view: ReviewQueueView }) {
  const { sub, view } = props;
  const p = `s-${sub.id}`;
  return (
    <article class="review-item" aria-labelledby={`${p}-name`} data-submission={sub.id}>
      <h3 id={`${p}-name`}>{sub.name}</h3>
      <p>
        <SubmissionStatus status={sub.status} />{' '}
        <span class="meta">
          {`${MARKET_NAMES[sub.market]} · by ${view.ownerEmails.get(sub.ownerId) ?? shortId(sub.ownerId)} · ${sub.submittedAt ? `submitted ${utc(sub.submittedAt)}` : 'not submitted'}`}
          {sub.parentEntryId ? ` · revision of ${shortId(sub.parentEntryId)}` : ' · first version'}
        </span>
        {sub.live && sub.status === 'approved' && (
          <>
            {' '}
            <a href={listingHref(sub.market, sub.publicId)}>{`Public page of ${sub.name}`}</a>
          </>
        )}
      </p>
      {sub.description && <p>{sub.description}</p>}
      {sub.reviewReason && <p>{`Review reason: ${sub.reviewReason}`}</p>}
      {sub.market === 'mcp' ? (
        <McpDetails sub={sub} evidence={view.evidence.get(sub.id)} />
      ) : (
        <AgentDetails sub={sub} />
      )}
      <Decision sub={sub} csrfToken={view.csrfToken} q={view.q} />
    </article>
  );
}

/** The operators' review queue of both markets. */
export function ReviewQueuePage(props: { view: ReviewQueueView }) {
  const { view } = props;
  return (
    <Layout title="Review queue" section="console" signedInAs="an operator">
      <h1>Review queue</h1>
      {view.done && (
        <div class="notice" role="status">
          <p>{view.done}</p>
        </div>
      )}
      <form method="get" action="/console/review" class="search">
        <p>
          <label for="status">Show submissions</label>
          <select id="status" name="status">
            {QUEUE_STATUSES.map((s) => (
              <option value={s} selected={s === view.status}>
                {STATUS_NAMES[s]}
              </option>
            ))}
          </select>{' '}
          <label for="q">whose name or slug contains</label>{' '}
          <input id="q" name="q" type="search" maxlength={100} value={view.q} /> <button type="submit">Show</button>
        </p>
      </form>
      <form method="post" action="/console/review/sign-out" class="inline-form">
        <CsrfField token={view.csrfToken} />
        <button type="submit" class="secondary">
          Sign out of the review queue
        </button>
      </form>
      {view.markets.map((m) => (
        <section aria-labelledby={`queue-${m.market}-heading`} id={`queue-${m.market}`}>
          <h2
            id={`queue-${m.market}-heading`}
          >{`${MARKET_NAMES[m.market]}: ${m.total} ${STATUS_NAMES[view.status]!.toLowerCase()}`}</h2>
          {m.submissions.length === 0 ? (
            <p class="meta">Nothing here.</p>
          ) : (
            m.submissions.map((sub) => <Submission sub={sub} view={view} />)
          )}
        </section>
      ))}
    </Layout>
  );
}

/** Operator sign-in with the admin token. */
export function OperatorSignInPage(props: { formToken: string; problem: string | null; minutes: number }) {
  return (
    <Layout title="Operator sign-in" section="console">
      <h1>Sign in to the review queue</h1>
      <p class="lead">The review queue is for operators: sign in with the admin token (ADMIN_TOKEN).</p>
      {props.problem && (
        <div class="notice error" role="alert">
          <p>{props.problem}</p>
        </div>
      )}
      <form method="post" action="/console/review/sign-in">
        <input type="hidden" name="csrf" value={props.formToken} />
        <p>
          <label for="admin_token">Admin token</label>
          <input
            id="admin_token"
            name="admin_token"
            type="password"
            autocomplete="current-password"
            required
            maxlength={512}
            aria-describedby="admin-token-help"
          />
        </p>
        <p id="admin-token-help" class="meta">
          {`It is checked and forgotten: this browser gets a signed operator cookie for ${props.minutes} minutes.`}
        </p>
        <p>
          <button type="submit">Sign in</button>
        </p>
      </form>
    </Layout>
  );
}
