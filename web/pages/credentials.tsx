import { CsrfField } from '../components/csrf';
import { SchemaTable } from '../components/schema';
import type { CredentialView, ListingChoice } from '../../api/services/market-credentials';
import { usd, utc } from '../format';
import { Layout } from '../layout';
import { ConsoleNav } from './console-home';

/** One value a credential carries, as its form asks for it (from the entry's requiredUserParamsSchema). */
export interface CredentialParamField {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  required: boolean;
  secret: boolean;
  description: string;
  options: string[] | null;
}

export interface CredentialEntry {
  entryId: string;
  name: string;
  schema: Record<string, unknown>;
  fields: CredentialParamField[];
}

/** What the page shows: the entry chooser, an entry's form (with a problem to fix), or the credential just issued. */
export interface CredentialsView {
  email: string;
  csrfToken: string;
  entryQuery: string;
  entry: CredentialEntry | null;
  /** Values to put back into the form after a refusal (never a secret's). */
  values: Record<string, string>;
  cap: string;
  /** The budgets typed into the creation form (put back after a refusal). */
  budgetTotal: string;
  budgetMonthly: string;
  label: string;
  problem: string | null;
  issued: {
    credential: string;
    mcpUrl: string;
    credentialId: string;
    maxTotalUsdPerRun: number | null;
    budgetTotalUsd: number | null;
    budgetMonthlyUsd: number | null;
  } | null;
  /**
   * The chooser of the listing a new credential is for: the live listings the account uses, and the listings
   * found by name for `q` (null: no search made).
   */
  listings: { q: string; used: ListingChoice[]; found: ListingChoice[] | null };
  /** The account's credentials (one page, newest first), and a note after a revocation. */
  list: { rows: CredentialView[]; page: number; totalPages: number };
  revoked: string | null;
  /** A note after a credential's budgets were saved, or why they were not (with the credential's id). */
  budgets: { credentialId: string; saved: boolean; message: string } | null;
}

const STATUS_TEXT: Record<CredentialView['status'], string> = {
  active: 'Active',
  revoked: 'Revoked',
  key_rotated: 'Ended (API key rotated)',
};

function credentialName(row: CredentialView): string {
  const entry = row.entryName ?? 'a listing no longer live';
  if (row.source === 'oauth') return `${row.app?.name ?? 'an app'}'s credential (${entry})`;
  return row.label ? `${row.label} (${entry})` : `${entry}, created ${utc(row.createdAt)}`;
}

/** Who made it: a label you gave, or the app (OAuth client) that holds it. */
function madeBy(row: CredentialView) {
  if (row.source !== 'oauth') return row.label ?? '—';
  return (
    <>
      {`Made by app ${row.app?.name ?? row.app?.clientId ?? 'unknown'}`}
      <span class="meta"> (Connected apps)</span>
    </>
  );
}

function CredentialList(props: { view: CredentialsView }) {
  const { list, csrfToken } = props.view;
  if (list.rows.length === 0) return <p id="no-credentials">You have not created a credential yet.</p>;
  return (
    <>
      <table id="credentials">
        <caption>Your market credentials, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Entry</th>
            <th scope="col">Label or app</th>
            <th scope="col">Created</th>
            <th scope="col">Limit per run</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            <th scope="col">Spent (this month, UTC / in all)</th>
            <th scope="col">Budgets</th>
            <th scope="col">
              <span class="visually-hidden">Revoke</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {list.rows.map((row) => (
            <tr id={`credential-${row.id}`}>
              <th scope="row">
                {row.entryName ? <a href={`/market/tools/${row.entryId}`}>{row.entryName}</a> : row.entryId}
                <span class="meta">{` id ${row.id}`}</span>
              </th>
              <td class="made-by">{madeBy(row)}</td>
              <td>{utc(row.createdAt)}</td>
              <td class="num">{row.maxTotalUsdPerRun === null ? 'None' : usd(row.maxTotalUsdPerRun)}</td>
              <td>{row.lastUsedAt ? utc(row.lastUsedAt) : 'Never'}</td>
              <td>{row.revokedAt ? `Revoked ${utc(row.revokedAt)}` : STATUS_TEXT[row.status]}</td>
              <td class="num">{`${usd(row.spentThisMonthUsd)} / ${usd(row.spentUsd)}`}</td>
              <td>
                <BudgetsCell row={row} csrfToken={csrfToken} />
              </td>
              <td>
                {row.status === 'active' && (
                  <form method="post" action={`/console/credentials/revoke/${row.id}`}>
                    <CsrfField token={csrfToken} />
                    <button type="submit" aria-label={`Revoke ${credentialName(row)}`}>
                      Revoke
                    </button>
                  </form>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.totalPages > 1 && (
        <nav class="pager" aria-label="Credential pages">
          {list.page > 1 && <a href={`/console/credentials?page=${list.page - 1}#list-heading`}>Newer</a>}
          <span class="meta">{`Page ${list.page} of ${list.totalPages}`}</span>
          {list.page < list.totalPages && <a href={`/console/credentials?page=${list.page + 1}#list-heading`}>Older</a>}
        </nav>
      )}
    </>
  );
}

const budgetText = (row: CredentialView) =>
  [
    row.budgetMonthlyUsd === null ? null : `${usd(row.budgetMonthlyUsd)} a month`,
    row.budgetTotalUsd === null ? null : `${usd(row.budgetTotalUsd)} in all`,
  ]
    .filter(Boolean)
    .join(', ') || 'None';

/** A credential's budgets, and (while it can still be used) the form that changes them. */
function BudgetsCell(props: { row: CredentialView; csrfToken: string }) {
  const { row } = props;
  if (row.status !== 'active') return <>{budgetText(row)}</>;
  return (
    <BudgetsForm
      credentialId={row.id}
      name={credentialName(row)}
      monthlyUsd={row.budgetMonthlyUsd}
      totalUsd={row.budgetTotalUsd}
      csrfToken={props.csrfToken}
    />
  );
}

/**
 * The form that sets a credential's budgets (POST /console/credentials/budgets/{id}), on the credentials page and,
 * for an OAuth connection's credential, on the connected apps page (`back`: where the browser returns).
 */
export function BudgetsForm(props: {
  credentialId: string;
  name: string;
  monthlyUsd: number | null;
  totalUsd: number | null;
  csrfToken: string;
  back?: 'connections';
  /** Where the form posts (the API key page's own form); default: the credential's budgets. */
  action?: string;
}) {
  const { name } = props;
  return (
    <form method="post" action={props.action ?? `/console/credentials/budgets/${props.credentialId}`} class="budgets">
      <CsrfField token={props.csrfToken} />
      {props.back && <input type="hidden" name="back" value={props.back} />}
      <label>
        {'Monthly, USD '}
        <input
          name="budgetMonthly"
          inputmode="decimal"
          size={8}
          value={props.monthlyUsd === null ? '' : String(props.monthlyUsd)}
          aria-label={`Monthly budget in USD of ${name} (empty: none)`}
        />
      </label>
      <label>
        {'In all, USD '}
        <input
          name="budgetTotal"
          inputmode="decimal"
          size={8}
          value={props.totalUsd === null ? '' : String(props.totalUsd)}
          aria-label={`Total budget in USD of ${name} (empty: none)`}
        />
      </label>
      <button type="submit" aria-label={`Save the budgets of ${name}`}>
        Save
      </button>
    </form>
  );
}

export const paramInputId = (name: string) => `param-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;

function ParamInput(props: { field: CredentialParamField; value: string }) {
  const { field } = props;
  const id = paramInputId(field.name);
  const described = field.description ? `${id}-help` : undefined;
  const label = `${field.name}${field.required ? ' (required)' : ''}${field.secret ? ' (secret)' : ''}`;
  if (field.type === 'boolean') {
    return (
      <div class="field">
        <input id={id} type="checkbox" name={`param.${field.name}`} value="true" aria-describedby={described} />
        <label for={id}>{label}</label>
        {described && (
          <p id={described} class="meta">
            {field.description}
          </p>
        )}
      </div>
    );
  }
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {field.options ? (
        <select id={id} name={`param.${field.name}`} required={field.required} aria-describedby={described}>
          {!field.required && <option value="">(none)</option>}
          {field.options.map((option) => (
            <option value={option} selected={option === props.value}>
              {option}
            </option>
          ))}
        </select>
      ) : (
        <input
          id={id}
          name={`param.${field.name}`}
          type={field.secret ? 'password' : 'text'}
          inputmode={field.type === 'string' ? undefined : field.type === 'integer' ? 'numeric' : 'decimal'}
          autocomplete={field.secret ? 'new-password' : 'off'}
          required={field.required}
          value={field.secret ? undefined : props.value}
          aria-describedby={described}
        />
      )}
      {described && (
        <p id={described} class="meta">
          {field.description}
        </p>
      )}
    </div>
  );
}

/** Where a listing's credential form is. */
const formOf = (entryId: string) => `/console/credentials?entry=${entryId}`;

/**
 * The listings found by name (the chooser's results, and what htmx swaps in as the person types): each links to
 * its credential form. Null: nothing searched yet.
 */
export function ListingResults(props: { q: string; found: ListingChoice[] | null }) {
  const { q, found } = props;
  if (found === null)
    return <p class="meta">Type a few letters of the listing's name, a word of its description or a tool's name.</p>;
  if (found.length === 0)
    return <p id="no-listings">{`No live listing matches “${q}”. Try another word, or browse the tool market.`}</p>;
  return (
    <>
      <p class="meta">{`${found.length === 1 ? 'One listing matches' : `${found.length} listings match`} “${q}”:`}</p>
      <ul class="listing-choices" id="found-listings">
        {found.map((listing) => (
          <li>
            <a href={formOf(listing.entryId)}>{listing.name}</a>
            {listing.description && <span class="meta">{` — ${listing.description}`}</span>}
          </li>
        ))}
      </ul>
    </>
  );
}

/**
 * Which listing a new credential is for: the listings the account uses, a search by name (results swapped in by
 * htmx as the person types; the form works without script), and the listing's id as a last resort.
 */
function ListingChooser(props: { view: CredentialsView }) {
  const { listings, entryQuery } = props.view;
  return (
    <section aria-labelledby="choose-heading">
      <h2 id="choose-heading">Create a credential</h2>
      <p>
        Choose the listing the credential is for: one you use, one you find by name here or in the{' '}
        <a href="/market?market=tools">tool market</a> (each listing's page links here).
      </p>
      {listings.used.length > 0 && (
        <>
          <h3 id="used-heading">Listings you use</h3>
          <ul class="listing-choices" id="used-listings">
            {listings.used.map((listing) => (
              <li>
                <a href={formOf(listing.entryId)}>{listing.name}</a>
                {listing.lastUsedAt && <span class="meta">{` — last used ${utc(listing.lastUsedAt)}`}</span>}
              </li>
            ))}
          </ul>
        </>
      )}
      <h3 id="find-heading">Find a listing by name</h3>
      <form class="search" method="get" action="/console/credentials" role="search" aria-labelledby="find-heading">
        <div class="wide">
          <label for="listing-q">Name, description or tool</label>
          <input
            id="listing-q"
            name="q"
            type="search"
            value={listings.q}
            maxlength={200}
            autocomplete="off"
            aria-controls="listing-results"
            hx-get="/console/credentials/listings"
            hx-trigger="input changed delay:250ms"
            hx-target="#listing-results"
            hx-swap="innerHTML"
            hx-sync="this:replace"
          />
        </div>
        <div>
          <button type="submit">Search</button>
        </div>
      </form>
      <div id="listing-results" role="region" aria-live="polite" aria-label="Listings found">
        <ListingResults q={listings.q} found={listings.found} />
      </div>
      <h3 id="by-id-heading">Or give the listing's id</h3>
      <form class="search" method="get" action="/console/credentials" aria-labelledby="by-id-heading">
        <div class="wide">
          <label for="entry">Listing id (as in its address, /market/tools/…)</label>
          <input id="entry" name="entry" value={entryQuery} maxlength={64} />
        </div>
        <div>
          <button type="submit">Continue</button>
        </div>
      </form>
    </section>
  );
}

/**
 * Market credentials: a credential for a tool-market entry carries the values its
 * requiredUserParamsSchema asks for (sealed inside it) and an optional cap per run; it is shown once.
 */
export function CredentialsPage(props: { view: CredentialsView }) {
  const { view } = props;
  return (
    <Layout title="Market credentials" section="console" signedInAs={view.email} htmx>
      <h1>Market credentials</h1>
      <ConsoleNav current="credentials" />
      <p>
        A credential lets an MCP client call one tool-market entry on your account: it carries the parameters the entry
        needs (sealed inside it, never shown again) and, if you set them, a limit on what one run (a burst of calls) may
        charge and budgets: what all its calls may spend in a calendar month (UTC) and in all. A call that would pass a
        budget is refused and charges nothing. Revoke one below when you no longer use it (or it leaked): the next
        request made with it is refused. It is also bound to the API key you signed in with: rotating that key ends
        every credential made with it.
      </p>
      {view.issued ? (
        <section aria-labelledby="issued-heading">
          <h2 id="issued-heading">Your new credential</h2>
          <div class="notice" role="status">
            <p>Copy it now: it is shown only this once, and this site keeps no copy to show again.</p>
          </div>
          <pre id="credential" tabindex={0} aria-label="The credential">
            <code>{view.issued.credential}</code>
          </pre>
          <dl class="facts">
            <dt>MCP endpoint</dt>
            <dd>
              <code id="credential-mcp-url">{view.issued.mcpUrl}</code>
            </dd>
            <dt>Credential id</dt>
            <dd>
              <code id="credential-id">{view.issued.credentialId}</code>
            </dd>
            <dt>Limit per run</dt>
            <dd id="credential-cap">
              {view.issued.maxTotalUsdPerRun === null ? 'None' : usd(view.issued.maxTotalUsdPerRun)}
            </dd>
            <dt>Monthly budget</dt>
            <dd id="credential-budget-monthly">
              {view.issued.budgetMonthlyUsd === null ? 'None' : usd(view.issued.budgetMonthlyUsd)}
            </dd>
            <dt>Total budget</dt>
            <dd id="credential-budget-total">
              {view.issued.budgetTotalUsd === null ? 'None' : usd(view.issued.budgetTotalUsd)}
            </dd>
          </dl>
          <p>
            Send it as <code>Authorization: Bearer</code> to the endpoint above.{' '}
            {view.entry && <a href={`/market/tools/${view.entry.entryId}`}>Connect snippets for {view.entry.name}</a>}
          </p>
        </section>
      ) : view.entry ? (
        <section aria-labelledby="create-heading">
          <h2 id="create-heading">{`A credential for ${view.entry.name}`}</h2>
          {view.problem && (
            <div class="notice error" role="alert">
              <p>{view.problem}</p>
            </div>
          )}
          {view.entry.fields.length > 0 && (
            <SchemaTable schema={view.entry.schema} caption={`Parameters ${view.entry.name} needs`} />
          )}
          <form method="post" action={`/console/credentials/${view.entry.entryId}`} class="stacked">
            <CsrfField token={view.csrfToken} />
            {view.entry.fields.length === 0 && <p>This entry needs no parameters.</p>}
            {view.entry.fields.map((field) => (
              <ParamInput field={field} value={view.values[field.name] ?? ''} />
            ))}
            <div class="field">
              <label for="label">Label (optional)</label>
              <input id="label" name="label" maxlength={100} value={view.label} aria-describedby="label-help" />
              <p id="label-help" class="meta">
                Where you use it (say, “laptop Claude Code”), to tell your credentials apart in the list.
              </p>
            </div>
            <div class="field">
              <label for="cap">Limit per run in USD (optional)</label>
              <input id="cap" name="cap" inputmode="decimal" value={view.cap} aria-describedby="cap-help" />
              <p id="cap-help" class="meta">
                The most one run (calls that follow each other closely) may charge, in whole micro-USD; the next run
                opens at once, so this is no budget. Empty for no limit of your own.
              </p>
            </div>
            <div class="field">
              <label for="budget-monthly">Monthly budget in USD (optional)</label>
              <input
                id="budget-monthly"
                name="budgetMonthly"
                inputmode="decimal"
                value={view.budgetMonthly}
                aria-describedby="budget-monthly-help"
              />
              <p id="budget-monthly-help" class="meta">
                The most all its calls may spend in one calendar month (UTC); you can change it later.
              </p>
            </div>
            <div class="field">
              <label for="budget-total">Total budget in USD (optional)</label>
              <input
                id="budget-total"
                name="budgetTotal"
                inputmode="decimal"
                value={view.budgetTotal}
                aria-describedby="budget-total-help"
              />
              <p id="budget-total-help" class="meta">
                The most all its calls may ever spend; you can change it later.
              </p>
            </div>
            <div>
              <button type="submit">Create the credential</button>
            </div>
          </form>
        </section>
      ) : (
        <ListingChooser view={view} />
      )}
      <section aria-labelledby="list-heading">
        <h2 id="list-heading">Issued credentials</h2>
        {view.revoked && (
          <div class="notice" role="status">
            <p id="revoked-notice">{view.revoked}</p>
          </div>
        )}
        {view.budgets && (
          <div class={view.budgets.saved ? 'notice' : 'notice error'} role={view.budgets.saved ? 'status' : 'alert'}>
            <p id="budgets-notice">{view.budgets.message}</p>
          </div>
        )}
        <p>
          This site keeps no copy of a credential or of the values it carries: only its entry, label, limit, budgets and
          when it was created, last used and revoked. Spent counts what its runs were charged (a run counts in the month
          it opened); while a call runs, what it holds counts against the budgets too. The credentials of apps you
          connected with OAuth are listed too, marked with the app; revoking one disconnects that app (as revoking it
          under <a href="/console/connections">connected apps</a> does).
        </p>
        <CredentialList view={view} />
      </section>
    </Layout>
  );
}
