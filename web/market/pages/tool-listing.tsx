import type { ToolEntryView } from '../../../api/services/market/catalog';
import type { ValidationIssue } from '../../../lib/market/validation-report';
import { ListingHeader, QualityScore, toolPricing } from '../../components/listing';
import { SchemaTable } from '../../components/schema';
import { usd } from '../../format';
import { Layout } from '../../layout';
import {
  claudeCodeCommand,
  claudeCodeHeaderCommand,
  CREDENTIAL_PLACEHOLDER,
  curlCommand,
  cursorInstallLink,
  cursorServerConfig,
  headerConfig,
  mcpRemoteCommand,
  vsCodeConfig,
  type ConnectTarget,
} from '../../snippets';

export interface ToolListing {
  entry: ToolEntryView;
  iconUrl: string | null;
  providerName: string;
  /** The validation the entry was listed with (null if it is gone). */
  validation: { qualityScore: number; issues: ValidationIssue[]; scanFindings: ValidationIssue[] } | null;
  connect: ConnectTarget;
}

const STRATEGY_NAMES = {
  free: 'Free',
  tool_call_fixed: 'A fixed price per call',
  provider_event: 'Per event the provider reports',
} as const;

function hasParameters(schema: Record<string, unknown>): boolean {
  const properties = schema?.properties;
  return !!properties && typeof properties === 'object' && Object.keys(properties).length > 0;
}

function Snippet(props: { id: string; title: string; intro: string; text: string }) {
  return (
    <div class="snippet">
      <h3 id={`${props.id}-heading`}>{props.title}</h3>
      <p>{props.intro}</p>
      <pre id={props.id} tabindex={0} aria-labelledby={`${props.id}-heading`}>
        <code>{props.text}</code>
      </pre>
    </div>
  );
}

function Connect(props: { listing: ToolListing }) {
  const { entry, connect } = props.listing;
  const needsCredential = hasParameters(entry.requiredUserParamsSchema);
  return (
    <section aria-labelledby="connect-heading">
      <h2 id="connect-heading">Connect</h2>
      <p>
        The entry is served as an MCP endpoint of its own at <code id="mcp-url">{connect.url}</code> (Streamable HTTP).
      </p>
      <p id="connect-oauth">
        Clients that sign in with OAuth need only this address. The first time they connect they open your browser: you
        sign in to the console with your API key, see the listing and its prices,
        {needsCredential ? ' fill in its parameters' : ''} set optional budgets (per month, in all) and allow the
        client. It gets a short-lived token for this endpoint alone; <a href="/console/connections">Connected apps</a>{' '}
        lists and revokes it (<a href="/api/v1/docs/guides/using-market-tools">Using market tools</a>).
      </p>
      <Snippet
        id="snippet-claude"
        title="Claude Code"
        intro="Run in a terminal, then type /mcp in Claude Code, choose the server and Authenticate:"
        text={claudeCodeCommand(connect)}
      />
      <Snippet
        id="snippet-vscode"
        title="VS Code"
        intro="Put in .vscode/mcp.json; VS Code asks you to sign in when it starts the server:"
        text={vsCodeConfig(connect)}
      />
      <div class="snippet">
        <h3 id="snippet-cursor-heading">Cursor</h3>
        <p>
          <a id="cursor-install" href={cursorInstallLink(connect)}>
            Add to Cursor
          </a>{' '}
          opens Cursor with this server filled in; it asks you to sign in when it connects. The same configuration by
          hand:
        </p>
        <pre id="snippet-cursor" tabindex={0} aria-labelledby="snippet-cursor-heading">
          <code>{JSON.stringify({ mcpServers: { [connect.name]: cursorServerConfig(connect) } }, null, 2)}</code>
        </pre>
      </div>
      <h3 id="connect-header-heading">With a credential instead</h3>
      <p>
        {needsCredential ? (
          <>
            For a client without OAuth, a script or a machine without a browser, send an <code>Authorization</code>{' '}
            header: replace <code>{CREDENTIAL_PLACEHOLDER}</code> with a credential for this entry; it carries the
            parameters below. Create one <a href={`/console/credentials?entry=${entry.id}`}>in your console</a> or with{' '}
            <code>POST /api/v1/mcp-market/mcps/{'{id}'}/credentials</code>.
          </>
        ) : (
          <>
            For a client without OAuth, a script or a machine without a browser, send an <code>Authorization</code>{' '}
            header: replace <code>{CREDENTIAL_PLACEHOLDER}</code> with your API key, or with a credential for this entry
            (<a href={`/console/credentials?entry=${entry.id}`}>in your console</a>) if you want budgets or a limit per
            run.
          </>
        )}
      </p>
      <Snippet
        id="snippet-header-config"
        title="A client configuration with a header"
        intro="The mcpServers shape most clients read (Claude Desktop, Windsurf, agent frameworks):"
        text={headerConfig(connect)}
      />
      <Snippet
        id="snippet-claude-header"
        title="Claude Code with a header"
        intro="Without the browser sign-in:"
        text={claudeCodeHeaderCommand(connect)}
      />
      <Snippet
        id="snippet-generic"
        title="Clients that only start local (stdio) servers"
        intro="mcp-remote bridges stdio to the endpoint:"
        text={mcpRemoteCommand(connect)}
      />
      <Snippet
        id="snippet-curl"
        title="curl"
        intro="The first request any client sends; the answer names the server and its capabilities:"
        text={curlCommand(connect)}
      />
    </section>
  );
}

function Tools(props: { entry: ToolEntryView; signedIn: boolean }) {
  const { entry } = props;
  return (
    <section aria-labelledby="tools-heading">
      <h2 id="tools-heading">{`Tools (${entry.tools.length})`}</h2>
      {entry.tools.map((tool) => (
        <article aria-labelledby={`tool-${tool.toolName}`}>
          <h3 id={`tool-${tool.toolName}`}>
            {tool.displayName} <code>{tool.toolName}</code>
          </h3>
          {tool.description && <p>{tool.description}</p>}
          <p class="meta">
            {entry.monetizationStrategy === 'tool_call_fixed'
              ? `${usd(tool.clientPriceUsd ?? 0)} per call`
              : entry.monetizationStrategy === 'provider_event'
                ? 'Priced by the events below'
                : 'Free'}
          </p>
          <SchemaTable schema={tool.inputSchema} caption={`Input of ${tool.toolName}`} empty="Takes no input." />
          {props.signedIn && (
            <p>
              <a class="button" href={`/market/tools/${entry.id}/try/${encodeURIComponent(tool.toolName)}`}>
                Try {tool.toolName}
              </a>
            </p>
          )}
        </article>
      ))}
    </section>
  );
}

function Quality(props: { validation: ToolListing['validation'] }) {
  const { validation } = props;
  if (!validation) return <p class="meta">The validation report of this entry is no longer available.</p>;
  const warnings = validation.issues.filter((issue) => issue.severity !== 'error');
  return (
    <section aria-labelledby="quality-heading">
      <h2 id="quality-heading">Validation</h2>
      <dl class="facts">
        <dt>Quality score</dt>
        <dd>
          <QualityScore score={validation.qualityScore} />
        </dd>
        <dt>Tool-poisoning scan</dt>
        <dd>
          {validation.scanFindings.length === 0 ? (
            <span class="good">
              Passed: no hidden instructions, secret access, exfiltration or tool shadowing found
            </span>
          ) : (
            <span class="bad">{`${validation.scanFindings.length} finding(s)`}</span>
          )}
        </dd>
      </dl>
      {warnings.length > 0 && (
        <details>
          <summary>{`${warnings.length} note(s) on how the tools are described`}</summary>
          <ul>
            {warnings.map((issue) => (
              <li>
                {issue.tool && <code>{issue.tool}</code>} {issue.message}
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}

export function ToolListingPage(props: { listing: ToolListing; signedInAs: string | null }) {
  const { entry, iconUrl, providerName } = props.listing;
  return (
    <Layout title={entry.name} section="market" signedInAs={props.signedInAs}>
      <ListingHeader market="tools" name={entry.name} description={entry.description} uploadedIconUrl={iconUrl} />
      <dl class="facts">
        <dt>Provider</dt>
        <dd>{providerName}</dd>
        <dt>Source</dt>
        <dd>{entry.type === 'remote_mcp' ? 'Remote MCP server' : 'HTTP API (OpenAPI)'}</dd>
        <dt>Pricing</dt>
        <dd>
          {STRATEGY_NAMES[entry.monetizationStrategy]}: {toolPricing(entry)}
        </dd>
        <dt>Listing id</dt>
        <dd>
          <code>{entry.id}</code>
        </dd>
      </dl>
      {entry.pricingEvents.length > 0 && (
        <table>
          <caption>Pricing events</caption>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">What it is</th>
              <th scope="col" class="num">
                Price each
              </th>
            </tr>
          </thead>
          <tbody>
            {entry.pricingEvents.map((event) => (
              <tr>
                <th scope="row">
                  <code>{event.eventName}</code>
                </th>
                <td>{[event.title, event.description].filter(Boolean).join(' — ')}</td>
                <td class="num">{usd(event.unitPriceUsd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Quality validation={props.listing.validation} />
      <Tools entry={entry} signedIn={!!props.signedInAs} />
      {hasParameters(entry.requiredUserParamsSchema) && (
        <section aria-labelledby="params-heading">
          <h2 id="params-heading">Parameters you provide</h2>
          <p>The entry needs these from you; they go into your credential, never into a page or a log.</p>
          <SchemaTable schema={entry.requiredUserParamsSchema} caption="Parameters of a credential" />
        </section>
      )}
      <Connect listing={props.listing} />
    </Layout>
  );
}
