import { CsrfField } from '../components/csrf';
import { deviceOf, usd, utc } from '../format';
import { BudgetsForm } from './credentials';
import { Layout } from '../layout';
import { ConsoleNav } from './console-home';

export interface ConnectionRow {
  grantId: string;
  clientName: string;
  clientId: string;
  entryId: string;
  listing: string;
  approvedAt: Date;
  device: { name: string | null; userAgent: string | null };
  lastUsedAt: Date | null;
  /** The grant's market credential: its budgets and what it spent (null: not recorded yet). */
  credential: {
    id: string;
    budgetMonthlyUsd: number | null;
    budgetTotalUsd: number | null;
    spentUsd: number;
    spentThisMonthUsd: number;
  } | null;
}

/** How a connection's device reads: the name given on the consent page, else its browser and system. */
const deviceName = (row: ConnectionRow) => row.device.name ?? deviceOf(row.device.userAgent) ?? 'Unknown device';

/**
 * The OAuth grants of the account ("connected apps"): which client may call which listing from which
 * device, when it was last used, each revocable on its own.
 */
export function ConnectionsPage(props: { email: string; csrfToken: string; rows: ConnectionRow[] }) {
  return (
    <Layout title="Connected apps" section="console" signedInAs={props.email}>
      <h1>Connected apps</h1>
      <ConsoleNav current="connections" />
      <p class="lead">
        MCP clients you allowed to call market tools for you, one row per device you signed in on. Revoking one ends its
        access at once (its tokens and its credential stop working); the app's other devices keep theirs. Its budgets
        bound what it spends per calendar month (UTC) and in all: a call past one is refused.
      </p>
      {props.rows.length === 0 ? (
        <p id="no-connections">No app is connected.</p>
      ) : (
        <table id="connections">
          <caption>Connected apps</caption>
          <thead>
            <tr>
              <th scope="col">App</th>
              <th scope="col">Device</th>
              <th scope="col">Listing</th>
              <th scope="col">Allowed</th>
              <th scope="col">Last used</th>
              <th scope="col">Spent (this month, UTC / in all)</th>
              <th scope="col">Budgets</th>
              <th scope="col">
                <span class="visually-hidden">Revoke</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map((row) => (
              <tr>
                <th scope="row">
                  {row.clientName}
                  <span class="meta"> ({row.clientId})</span>
                </th>
                <td class="device">
                  {deviceName(row)}
                  {row.device.name && row.device.userAgent && (
                    <span class="meta">{` (${deviceOf(row.device.userAgent)})`}</span>
                  )}
                </td>
                <td>
                  <a href={`/market/tools/${row.entryId}`}>{row.listing}</a>
                </td>
                <td>{utc(row.approvedAt)}</td>
                <td>{row.lastUsedAt ? utc(row.lastUsedAt) : 'Never'}</td>
                <td class="num">
                  {row.credential
                    ? `${usd(row.credential.spentThisMonthUsd)} / ${usd(row.credential.spentUsd)}`
                    : '$0.00 / $0.00'}
                </td>
                <td>
                  {row.credential && (
                    <BudgetsForm
                      credentialId={row.credential.id}
                      name={`${row.clientName} for ${row.listing}`}
                      monthlyUsd={row.credential.budgetMonthlyUsd}
                      totalUsd={row.credential.budgetTotalUsd}
                      csrfToken={props.csrfToken}
                      back="connections"
                    />
                  )}
                </td>
                <td>
                  <form method="post" action={`/console/connections/${row.grantId}/revoke`}>
                    <CsrfField token={props.csrfToken} />
                    <button
                      type="submit"
                      aria-label={`Revoke ${row.clientName} for ${row.listing} on ${deviceName(row)}`}
                    >
                      Revoke
                    </button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Layout>
  );
}
