import type { AgentEntryView } from '../../../api/services/market/catalog';
import { agentPricing, ListingHeader } from '../../components/listing';
import { SchemaTable } from '../../components/schema';
import { usd } from '../../format';
import { Layout } from '../../layout';

export interface AgentListing {
  entry: AgentEntryView;
  iconUrl: string | null;
  providerName: string;
}

function MarketTools(props: { tools: AgentEntryView['marketTools'] }) {
  if (props.tools.length === 0) return <p class="meta">This agent uses no market tools.</p>;
  return (
    <table>
      <caption>Market tools the agent calls (billed to you as any call)</caption>
      <thead>
        <tr>
          <th scope="col">Listing</th>
          <th scope="col">Tools</th>
          <th scope="col">Price</th>
          <th scope="col" class="num">
            Cap per run
          </th>
        </tr>
      </thead>
      <tbody>
        {props.tools.map((tool) =>
          !tool.available ? (
            <tr>
              <th scope="row">
                <code>{tool.mcpId}</code>
              </th>
              <td colspan={2}>No longer listed: runs fail until the provider replaces it.</td>
              <td class="num">{tool.maxTotalUsd === null ? '—' : usd(tool.maxTotalUsd)}</td>
            </tr>
          ) : (
            <tr>
              <th scope="row">
                <a href={`/market/tools/${tool.mcpId}`}>{tool.name}</a>
              </th>
              <td>{tool.tools?.map((t) => t.toolName).join(', ')}</td>
              <td>
                {tool.monetizationStrategy === 'tool_call_fixed'
                  ? tool.tools?.map((t) => `${t.toolName}: ${usd(t.clientPriceUsd)} per call`).join('; ')
                  : tool.monetizationStrategy === 'provider_event'
                    ? tool.pricingEvents?.map((e) => `${e.eventName}: ${usd(e.unitPriceUsd)}`).join('; ')
                    : 'Free'}
              </td>
              <td class="num">{tool.maxTotalUsd === null ? '—' : usd(tool.maxTotalUsd)}</td>
            </tr>
          ),
        )}
      </tbody>
    </table>
  );
}

function StructuredOutput(props: { fields: AgentEntryView['structuredOutput'] }) {
  if (!props.fields?.length) return <p class="meta">The agent answers in free text.</p>;
  return (
    <table>
      <caption>Fields of the agent's answer</caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Type</th>
          <th scope="col">Description</th>
        </tr>
      </thead>
      <tbody>
        {props.fields.map((field) => (
          <tr>
            <th scope="row">
              <code>{field.id}</code>
            </th>
            <td>{field.type}</td>
            <td>{field.description ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AgentListingPage(props: { listing: AgentListing; signedInAs: string | null }) {
  const { entry, iconUrl, providerName } = props.listing;
  return (
    <Layout title={entry.name} section="market" signedInAs={props.signedInAs}>
      <ListingHeader market="agents" name={entry.name} description={entry.description} uploadedIconUrl={iconUrl} />
      <dl class="facts">
        <dt>Provider</dt>
        <dd>{providerName}</dd>
        <dt>Price</dt>
        <dd>{agentPricing(entry)}</dd>
        <dt>Run mode</dt>
        <dd>
          {entry.runMode === 'template'
            ? `Template: you fill in the fields below${entry.allowTaskOverride ? ' (and may add a task of your own)' : ''}`
            : 'Task: you describe the task in your own words'}
        </dd>
        <dt>Suggested model</dt>
        <dd>
          <code>{entry.suggestedLlmModel}</code> (
          {entry.suggestedLlmProvider === 'service' ? "the platform's models" : 'your model router'})
        </dd>
        <dt>Agent id</dt>
        <dd>
          <code>{entry.id}</code>
        </dd>
      </dl>
      <section aria-labelledby="inputs-heading">
        <h2 id="inputs-heading">Input fields</h2>
        <SchemaTable
          schema={entry.inputSchema}
          caption="What a run takes"
          empty="The agent takes no fields: give it a task."
        />
      </section>
      <section aria-labelledby="output-heading">
        <h2 id="output-heading">Structured output</h2>
        <StructuredOutput fields={entry.structuredOutput} />
      </section>
      <section aria-labelledby="tools-heading">
        <h2 id="tools-heading">Market tools</h2>
        <MarketTools tools={entry.marketTools} />
      </section>
      <section aria-labelledby="run-heading">
        <h2 id="run-heading">Run it</h2>
        <p>
          {entry.priceUsd > 0 ? 'Buy it once, then run it as often as you like' : 'Run it'} through the API (
          <a href="/api/v1/docs/guides/agent-market">Agent market guide</a>); every run appears in your{' '}
          <a href="/console">console</a> with its status and logs.
        </p>
        {props.signedInAs && (
          <p>
            {entry.purchased ? (
              <a class="button" href={`/market/agents/${entry.id}/run`}>
                Run it now
              </a>
            ) : (
              <a class="button" href={`/market/agents/${entry.id}/buy`}>
                {`Buy it for ${usd(entry.priceUsd)}`}
              </a>
            )}
          </p>
        )}
      </section>
    </Layout>
  );
}
