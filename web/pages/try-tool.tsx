import type { ToolEntryView } from '../../api/services/market/catalog';
import { CsrfField } from '../components/csrf';
import { JsonBlock } from '../components/schema';
import { SchemaFields } from '../components/schema-form';
import { usd } from '../format';
import { Layout } from '../layout';

type ToolView = ToolEntryView['tools'][number];

/** One block of a tool's answer as the page shows it: text as text; anything else described (the CSP loads no data: URL). */
export type ResultBlock = { kind: 'text'; text: string } | { kind: 'other'; description: string };

export interface TryResult {
  /** answered: the tool ran (isError: it reported a failure); refused / failed: the platform's own refusal or failure. */
  status: 'answered' | 'refused' | 'failed';
  isError: boolean;
  message: string | null;
  blocks: ResultBlock[];
  structured: Record<string, unknown> | null;
  chargedUsd: number;
  runId: string | null;
}

export interface TryToolView {
  entry: ToolEntryView;
  tool: ToolView;
  /** The entry has parameters: calls need a credential made for it. */
  needsCredential: boolean;
  csrfToken: string;
  mcpUrl: string;
  /** The form as posted (to fill it in again), or null. */
  values: URLSearchParams | null;
  /** A credential just created on this page: shown once. */
  newCredential: string | null;
  problems: string[];
  result: TryResult | null;
  curl: string;
}

function priceOf(entry: ToolEntryView, tool: ToolView): string {
  if (entry.monetizationStrategy === 'tool_call_fixed') return `${usd(tool.clientPriceUsd ?? 0)} per call`;
  if (entry.monetizationStrategy === 'provider_event')
    return `per event the provider reports (${entry.pricingEvents.map((e) => `${e.eventName} ${usd(e.unitPriceUsd)}`).join(', ')})`;
  return 'free';
}

function Result(props: { result: TryResult }) {
  const { result } = props;
  return (
    <section aria-labelledby="result-heading" id="result">
      <h2 id="result-heading">Result</h2>
      <dl class="facts">
        <dt>Outcome</dt>
        <dd id="result-outcome" class={result.status === 'answered' && !result.isError ? 'good' : 'bad'}>
          {result.status === 'answered'
            ? result.isError
              ? 'The tool answered with an error'
              : 'The tool answered'
            : result.status === 'refused'
              ? 'Refused'
              : 'The call failed'}
        </dd>
        <dt>Charged</dt>
        <dd id="result-cost">{usd(result.chargedUsd)}</dd>
        {result.runId && (
          <>
            <dt>Market run</dt>
            <dd>
              <code>{result.runId}</code>
            </dd>
          </>
        )}
      </dl>
      {result.message && <p id="result-message">{result.message}</p>}
      {result.blocks.map((block, i) =>
        block.kind === 'text' ? (
          <pre tabindex={0} aria-label={`Answer block ${i + 1}`} class="result-text">
            <code>{block.text}</code>
          </pre>
        ) : (
          <p class="meta">{block.description}</p>
        ),
      )}
      {result.structured && (
        <>
          <h3>Structured content</h3>
          <JsonBlock value={result.structured} />
        </>
      )}
    </section>
  );
}

/** "Try a tool": a form generated from the tool's input schema, the answer, its cost and the equivalent curl. */
export function TryToolPage(props: { view: TryToolView; signedInAs: string }) {
  const v = props.view;
  const base = `/market/tools/${v.entry.id}`;
  return (
    <Layout title={`Try ${v.tool.toolName} — ${v.entry.name}`} section="market" signedInAs={props.signedInAs}>
      <p>
        <a href={base}>{`Back to ${v.entry.name}`}</a>
      </p>
      <h1>
        Try {v.tool.displayName} <code>{v.tool.toolName}</code>
      </h1>
      {v.tool.description && <p class="lead">{v.tool.description}</p>}
      <p>
        {`Price: ${priceOf(v.entry, v.tool)}. The call goes through the entry's hosted endpoint path with your own `}
        {v.needsCredential ? 'credential' : 'API key'}
        {' and is billed to your account like any call.'}
      </p>
      {v.problems.length > 0 && (
        <div class="notice error" role="alert">
          <ul>
            {v.problems.map((problem) => (
              <li>{problem}</li>
            ))}
          </ul>
        </div>
      )}
      {v.newCredential && (
        <section aria-labelledby="new-credential-heading" class="notice">
          <h2 id="new-credential-heading">Your new credential</h2>
          <p>Copy it now: it is shown only once. It is filled in below for this call.</p>
          <pre id="new-credential" tabindex={0} aria-labelledby="new-credential-heading">
            <code>{v.newCredential}</code>
          </pre>
        </section>
      )}
      <form method="post" action={`${base}/try`}>
        <CsrfField token={v.csrfToken} />
        <input type="hidden" name="tool" value={v.tool.toolName} />
        {v.needsCredential && (
          <div class="field">
            <label for="credential">Your credential for this entry (required)</label>
            <input
              id="credential"
              name="credential"
              type="password"
              autocomplete="off"
              required
              maxlength={16384}
              value={v.newCredential ?? ''}
              aria-describedby="credential-hint"
            />
            <p class="meta" id="credential-hint">
              A credential made for this entry (mcpc1.…). You have none yet? Create one below.
            </p>
          </div>
        )}
        <fieldset>
          <legend>{`Input of ${v.tool.toolName}`}</legend>
          <SchemaFields schema={v.tool.inputSchema} prefix="arg." idPrefix="arg" values={v.values} />
        </fieldset>
        <p>
          <button type="submit">{`Call ${v.tool.toolName}`}</button>
        </p>
      </form>
      {v.result && <Result result={v.result} />}
      <section aria-labelledby="curl-heading">
        <h2 id="curl-heading">The same call with curl</h2>
        <p>
          A 2026-07-28 request to <code>{v.mcpUrl}</code>; replace the placeholder with your{' '}
          {v.needsCredential ? 'credential' : 'API key or credential'}.
        </p>
        <pre id="try-curl" tabindex={0} aria-labelledby="curl-heading">
          <code>{v.curl}</code>
        </pre>
      </section>
      {v.needsCredential && (
        <section aria-labelledby="create-credential-heading">
          <h2 id="create-credential-heading">Create a credential for this entry</h2>
          <p>
            The entry needs these parameters from you. They are sealed into the credential, never stored in a page or a
            log.
          </p>
          <form method="post" action={`${base}/credentials`}>
            <CsrfField token={v.csrfToken} />
            <input type="hidden" name="tool" value={v.tool.toolName} />
            <fieldset>
              <legend>Parameters of the credential</legend>
              <SchemaFields schema={v.entry.requiredUserParamsSchema} prefix="param." idPrefix="param" />
            </fieldset>
            <p>
              <button type="submit">Create credential</button>
            </p>
          </form>
        </section>
      )}
    </Layout>
  );
}
