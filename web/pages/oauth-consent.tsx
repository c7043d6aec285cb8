import { CsrfField } from '../components/csrf';
import { Layout } from '../layout';

export interface ConsentParamField {
  name: string;
  label: string;
  type: 'text' | 'number' | 'checkbox' | 'password';
  required: boolean;
  description: string | null;
}

export interface ConsentView {
  uid: string;
  csrfToken: string;
  email: string;
  clientName: string;
  clientId: string;
  redirectHost: string;
  entry: { entryId: string; name: string; slug: string };
  prices: { tool: string; price: string }[];
  fields: ConsentParamField[];
  problem: string | null;
  /** The client named no resource: the person chose the listing (and may choose another). */
  chosen: boolean;
  /** A live grant of this account to this client for this listing: approving replaces it. */
  existing: { createdAt: string } | null;
  /** Values to start from (the existing grant's limit, budgets and non-secret parameters). */
  prefill: {
    cap: string;
    budgetMonthly: string;
    budgetTotal: string;
    params: Record<string, string | boolean>;
  };
}

export interface ChooseListingView {
  uid: string;
  csrfToken: string;
  email: string;
  clientName: string;
  clientId: string;
  redirectHost: string;
  q: string;
  listings: { entryId: string; name: string }[];
}

/**
 * The first step of an authorization whose client named no endpoint (no RFC 8707 `resource`): the
 * person picks the listing to connect (approved listings, searchable); the token will be bound to
 * that listing's `/mcp/{entryId}` alone.
 */
export function OAuthChooseListingPage(props: { view: ChooseListingView }) {
  const v = props.view;
  return (
    <Layout title="Choose a listing" section="console" signedInAs={v.email}>
      <h1>Choose the market tool to connect</h1>
      <p class="lead">
        <strong id="client-name">{v.clientName}</strong>
        {
          ' asks to call a market tool for you, billed to your account, without naming which. Choose one listing: it will get access to that listing only.'
        }
      </p>
      <dl>
        <dt>Client</dt>
        <dd id="client-id">{v.clientId}</dd>
        <dt>It sends you back to</dt>
        <dd id="redirect-host">{v.redirectHost}</dd>
      </dl>
      <form method="get" action={`/oauth/interaction/${v.uid}`} role="search">
        <p>
          <label for="q">Search the listings</label>
          <input id="q" name="q" type="search" value={v.q} maxlength={200} autocomplete="off" />{' '}
          <button type="submit">Search</button>
        </p>
      </form>
      {v.listings.length === 0 ? (
        <p id="no-listings">No listing matches.</p>
      ) : (
        <form method="get" action={`/oauth/interaction/${v.uid}`}>
          <p>
            <label for="entry">Listing</label>
            <select id="entry" name="entry" required>
              {v.listings.map((l) => (
                <option value={l.entryId}>{l.name}</option>
              ))}
            </select>{' '}
            <button type="submit">Continue</button>
          </p>
        </form>
      )}
      <form method="post" action={`/oauth/interaction/${v.uid}/confirm`}>
        <CsrfField token={v.csrfToken} />
        <p>
          <button type="submit" name="decision" value="deny">
            Deny
          </button>
        </p>
      </form>
    </Layout>
  );
}

/**
 * The consent page of an OAuth authorization (issue 25): who asks (the client's name and the host it
 * sends the person back to), for which listing at which prices, the consumer parameters the listing
 * needs (kept sealed, never shown again), and what the app may spend: budgets per calendar month and in all
 * (which bound everything it spends) and a limit per run (which bounds one burst of calls only: not a cap).
 */
export function OAuthConsentPage(props: { view: ConsentView }) {
  const v = props.view;
  return (
    <Layout title="Allow access" section="console" signedInAs={v.email}>
      <h1>Allow access to a market tool</h1>
      {v.problem && (
        <div class="notice error" role="alert">
          <p>{v.problem}</p>
        </div>
      )}
      <p class="lead">
        <strong id="client-name">{v.clientName}</strong>
        {' wants to call '}
        <a id="listing" href={`/market/tools/${v.entry.entryId}`}>
          {v.entry.name}
        </a>
        {' for you, billed to your account.'}
      </p>
      <dl>
        <dt>Client</dt>
        <dd id="client-id">{v.clientId}</dd>
        <dt>It sends you back to</dt>
        <dd id="redirect-host">{v.redirectHost}</dd>
        <dt>Signed in as</dt>
        <dd>{v.email}</dd>
      </dl>
      {v.chosen && (
        <p>
          <a id="choose-another" href={`/oauth/interaction/${v.uid}`}>
            Choose another listing
          </a>
        </p>
      )}
      {v.existing && (
        <div class="notice" role="status" id="existing-grant">
          <p>
            {`You already connected ${v.clientName} to this listing (${v.existing.createdAt}). Allowing connects this device as well: the other connection keeps working (revoke it under Connected apps), and the values below (secrets left out) start from it.`}
          </p>
        </div>
      )}
      <table id="prices">
        <caption>Prices</caption>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Price</th>
          </tr>
        </thead>
        <tbody>
          {v.prices.map((p) => (
            <tr>
              <td>{p.tool}</td>
              <td>{p.price}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <form method="post" action={`/oauth/interaction/${v.uid}/confirm`}>
        <CsrfField token={v.csrfToken} />
        {v.chosen && <input type="hidden" name="entry" value={v.entry.entryId} />}
        {v.fields.length > 0 && (
          <fieldset>
            <legend>The listing's parameters (kept sealed, never shown again)</legend>
            {v.fields.map((f) => (
              <p>
                <label for={`param-${f.name}`}>{f.label}</label>
                <input
                  id={`param-${f.name}`}
                  name={`param.${f.name}`}
                  type={f.type}
                  required={f.required && f.type !== 'checkbox'}
                  autocomplete="off"
                  value={f.type === 'checkbox' ? 'true' : (v.prefill.params[f.name] as string | undefined)}
                  checked={f.type === 'checkbox' && v.prefill.params[f.name] === true}
                />
                {f.description && <span class="meta">{f.description}</span>}
              </p>
            ))}
          </fieldset>
        )}
        <fieldset>
          <legend>What {v.clientName} may spend (USD, optional)</legend>
          <p>
            <label for="budget-monthly">Monthly budget</label>
            <input
              id="budget-monthly"
              name="budgetMonthly"
              type="text"
              inputmode="decimal"
              autocomplete="off"
              maxlength={20}
              value={v.prefill.budgetMonthly || undefined}
              aria-describedby="budget-monthly-help"
            />
            <span id="budget-monthly-help" class="meta">
              The most its calls may spend in a calendar month (UTC); a call past it is refused.
            </span>
          </p>
          <p>
            <label for="budget-total">Total budget</label>
            <input
              id="budget-total"
              name="budgetTotal"
              type="text"
              inputmode="decimal"
              autocomplete="off"
              maxlength={20}
              value={v.prefill.budgetTotal || undefined}
              aria-describedby="budget-total-help"
            />
            <span id="budget-total-help" class="meta">
              The most its calls may ever spend through this connection.
            </span>
          </p>
          <p>
            <label for="cap">Limit per run</label>
            <input
              id="cap"
              name="cap"
              type="text"
              inputmode="decimal"
              autocomplete="off"
              maxlength={20}
              value={v.prefill.cap || undefined}
              aria-describedby="cap-help"
            />
            <span id="cap-help" class="meta">
              The most one run (calls that follow each other closely) may charge. The next run starts right after, so
              this alone does not bound what the app spends: set a budget for that.
            </span>
          </p>
          <p class="meta">You can change the budgets later under Market credentials in your console.</p>
        </fieldset>
        <p>
          <label for="device">Name this device (optional)</label>
          <input
            id="device"
            name="device"
            type="text"
            autocomplete="off"
            maxlength={100}
            aria-describedby="device-help"
          />
          <span id="device-help" class="meta">
            Shown under Connected apps, where each device you connect is listed and revoked on its own.
          </span>
        </p>
        <p>
          <button type="submit" name="decision" value="allow">
            Allow
          </button>{' '}
          <button type="submit" name="decision" value="deny" formnovalidate>
            Deny
          </button>
        </p>
      </form>
    </Layout>
  );
}
