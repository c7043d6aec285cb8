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
}

/**
 * The consent page of an OAuth authorization (issue 25): who asks (the client's name and the host it
 * sends the person back to), for which listing at which prices, the consumer parameters the listing
 * needs (kept sealed, never shown again) and an optional spending cap per run.
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
                  value={f.type === 'checkbox' ? 'true' : undefined}
                />
                {f.description && <span class="meta">{f.description}</span>}
              </p>
            ))}
          </fieldset>
        )}
        <p>
          <label for="cap">Spending cap per run in USD (optional)</label>
          <input id="cap" name="cap" type="text" inputmode="decimal" autocomplete="off" maxlength={20} />
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
