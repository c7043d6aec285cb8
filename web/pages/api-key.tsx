import type { ApiKeyBudgetsView } from '../../api/services/account/api-key-budgets';
import { usd, utc } from '../format';
import { Layout } from '../layout';
import { BudgetsForm } from './credentials';
import { ConsoleNav } from './console-home';

/**
 * The API key the person signed in with (never its value) and its budgets for the account's own market calls:
 * the calls made with the key itself (GET and PATCH /api/v1/account/api-key show and set the same).
 */
export function ApiKeyPage(props: {
  email: string;
  csrfToken: string;
  apiKey: ApiKeyBudgetsView;
  /** After a save: that it was saved, or why not. */
  notice: { saved: boolean; message: string } | null;
}) {
  const key = props.apiKey;
  return (
    <Layout title="API key" section="console" signedInAs={props.email}>
      <h1>API key</h1>
      <ConsoleNav current="api-key" />
      <p class="lead">
        The key you signed in with. Its budgets bound what the market tool calls made with the key itself may spend per
        calendar month (UTC) and in all: the calls of an MCP client given this key as its bearer token, and Try a tool
        without a credential. A call that would pass a budget is refused and charges nothing. Calls made with a market
        credential or by a connected app are bounded by that credential's own budgets, an agent's market tools by its
        limit per run.
      </p>
      <dl class="money">
        <div>
          <dt>Key</dt>
          <dd id="api-key-prefix">
            <code>{key.prefix}…</code>
          </dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>{utc(key.createdAt)}</dd>
        </div>
        <div>
          <dt>Spent this month (UTC)</dt>
          <dd id="api-key-spent-month">{usd(key.spentThisMonthUsd)}</dd>
        </div>
        <div>
          <dt>Spent in all</dt>
          <dd id="api-key-spent">{usd(key.spentUsd)}</dd>
        </div>
      </dl>
      <section aria-labelledby="api-key-budgets-heading">
        <h2 id="api-key-budgets-heading">Budgets of this key's own calls</h2>
        <p class="meta">
          Empty for no budget. What the key's calls already spent counts; while a call runs, what it holds counts too. A
          rotated key passes its budgets on to the new key, which starts with nothing spent.
        </p>
        <BudgetsForm
          credentialId={key.id}
          name="this API key"
          monthlyUsd={key.budgetMonthlyUsd}
          totalUsd={key.budgetTotalUsd}
          csrfToken={props.csrfToken}
          action="/console/api-key/budgets"
        />
        {props.notice && (
          <div class={props.notice.saved ? 'notice' : 'notice error'} role={props.notice.saved ? 'status' : 'alert'}>
            <p id="budgets-notice">{props.notice.message}</p>
          </div>
        )}
      </section>
    </Layout>
  );
}
