import Router from '@koa/router';
import type { Context } from 'koa';
import { toolEntryView } from '../../../api/services/market/catalog';
import { issueEntryCredential, type IssuedCredential } from '../../../api/services/market/credentials';
import { needsParams } from '../../../api/services/market/credential-check';
import { marketToolTrier } from '../../../api/services/market/try';
import { marketMcpUrl, publicOrigin } from '../../../api/services/shared/public-urls';
import type { WebSession } from '../../../db/repos/sessions';
import type { MarketToolCallOutcome } from '../../../lib/market/tool-call';
import { microsToUsd } from '../../../lib/money';
import type { SourceParamValues, ToolContentBlock } from '../../../lib/tools/types';
import { readFields } from '../../components/schema-form';
import type { WebDeps } from '../../deps';
import { pageNotFound, sendPage } from '../../page';
import { TryToolPage, type ResultBlock, type TryResult, type TryToolView } from '../../pages/try-tool';
import { signedIn as signedInPage, signedInForm as signedInPageForm } from '../../session';
import { mcpHeaderValue, shellWord } from '../../shell';
import { CREDENTIAL_PLACEHOLDER } from '../../snippets';
import { findPublicMcpEntry } from '../../../api/services/market/reads';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MODERN_REVISION = '2026-07-28';

/**
 * The same call by hand: one stateless 2026-07-28 tools/call request to the hosted endpoint, every value quoted
 * for a POSIX shell (web/shell.ts): the tool's name and the arguments are the provider's and the consumer's
 * text, never shell code.
 */
export function tryCurlCommand(url: string, toolName: string, args: Record<string, unknown>): string {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: toolName,
      arguments: args,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN_REVISION,
        'io.modelcontextprotocol/clientInfo': { name: 'curl', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
  return [
    `curl -sS ${shellWord(url)} \\`,
    `  -H ${shellWord(`Authorization: Bearer ${CREDENTIAL_PLACEHOLDER}`)} \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -H 'Accept: application/json, text/event-stream' \\`,
    `  -H ${shellWord(`MCP-Protocol-Version: ${MODERN_REVISION}`)} \\`,
    `  -H 'Mcp-Method: tools/call' \\`,
    // The tool's name is the provider's choice: quoted for the shell, encoded for the header (SEP-2243).
    `  -H ${shellWord(`Mcp-Name: ${mcpHeaderValue(toolName)}`)} \\`,
    `  -d ${shellWord(body)}`,
  ].join('\n');
}

/** A block of an answer as the page shows it: text as it is (escaped by the renderer), anything else described. */
function blockView(block: ToolContentBlock): ResultBlock {
  const b = block as {
    type: string;
    text?: string;
    mimeType?: string;
    data?: string;
    uri?: string;
    resource?: { uri?: string; text?: string };
  };
  const bytes = (data: string | undefined) => (data ? Math.floor((data.length * 3) / 4) : 0);
  switch (b.type) {
    case 'text':
      return { kind: 'text', text: b.text ?? '' };
    case 'image':
    case 'audio':
      return {
        kind: 'other',
        description: `An ${b.type} (${b.mimeType ?? 'unknown type'}, about ${bytes(b.data)} bytes): not shown on this page; an MCP client shows it.`,
      };
    case 'resource':
      return b.resource?.text !== undefined
        ? { kind: 'text', text: b.resource.text }
        : { kind: 'other', description: `An embedded resource ${b.resource?.uri ?? ''} (binary, not shown).` };
    case 'resource_link':
      return { kind: 'other', description: `A link to the resource ${b.uri ?? ''}.` };
    default:
      return { kind: 'other', description: `A ${b.type} block (not shown).` };
  }
}

function resultView(outcome: MarketToolCallOutcome): TryResult {
  if (outcome.status === 'answered') {
    const { result } = outcome;
    const blocks = result.content ? result.content.map(blockView) : [{ kind: 'text' as const, text: result.text }];
    return {
      status: 'answered',
      isError: result.isError,
      message: null,
      blocks,
      structured: result.structuredContent ?? null,
      chargedUsd: microsToUsd(outcome.costMicros),
      runId: outcome.runId,
    };
  }
  return {
    status: outcome.status,
    isError: true,
    message: outcome.message,
    blocks: [],
    structured: null,
    chargedUsd: 0,
    runId: outcome.runId,
  };
}

/** The problem a service refused with (a 4xx with a message and details), else rethrown. */
function problemOf(err: unknown): string {
  const status = (err as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500 && err instanceof Error) {
    const details = (err as { details?: { path: string; message: string }[] }).details ?? [];
    const why = details.map((d) => `${d.path.replace(/^(body\/)?params\//, '')} ${d.message}`).join('; ');
    return why ? `${err.message}: ${why}` : err.message;
  }
  throw err;
}

/**
 * "Try a tool" on a tool-market listing (signed in): a form generated from the tool's input schema,
 * called through the hosted endpoint's call path with the consumer's own credential (or API key, for
 * an entry without parameters), billed as any call; and the credential form of an entry with parameters.
 */
export function tryRoutes(deps: WebDeps): Router {
  const router = new Router({ prefix: '/market/tools/:id' });
  const tryTool = marketToolTrier(deps);

  const signedIn = (ctx: Context) => signedInPage(ctx, deps);

  const signedInForm = (ctx: Context) => signedInPageForm(ctx, deps);

  async function listing(ctx: Context, toolName: string | null) {
    const id = String(ctx.params.id);
    const entry = UUID.test(id) ? await findPublicMcpEntry(deps.db, id.toLowerCase()) : null;
    if (!entry) throw pageNotFound('No tool-market listing has this address: it may have been withdrawn.');
    const view = toolEntryView(entry, () => '');
    const tool = view.tools.find((t) => t.toolName === toolName);
    if (!tool) throw pageNotFound('This listing has no tool of that name.');
    return { view, tool };
  }

  async function render(
    ctx: Context,
    session: WebSession,
    toolName: string | null,
    extra: Partial<Pick<TryToolView, 'values' | 'newCredential' | 'problems' | 'result'>> & {
      args?: Record<string, unknown>;
    },
    status = 200,
  ) {
    const { view, tool } = await listing(ctx, toolName);
    const mcpUrl = marketMcpUrl(deps.config, publicOrigin(ctx, deps.config), view.id);
    await sendPage(
      ctx,
      <TryToolPage
        signedInAs={session.user.email}
        view={{
          entry: view,
          tool,
          needsCredential: needsParams(view.requiredUserParamsSchema),
          csrfToken: session.csrfToken,
          mcpUrl,
          values: extra.values ?? null,
          newCredential: extra.newCredential ?? null,
          problems: extra.problems ?? [],
          result: extra.result ?? null,
          curl: tryCurlCommand(mcpUrl, tool.toolName, extra.args ?? {}),
        }}
      />,
      { status, private: true },
    );
  }

  router.get('/try/:tool', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    await render(ctx, session, String(ctx.params.tool), {});
  });

  router.post('/try', async (ctx) => {
    const { session, form } = await signedInForm(ctx);
    const toolName = form.get('tool');
    const { tool } = await listing(ctx, toolName);
    const { values: args, problems } = readFields(tool.inputSchema, form, 'arg.');
    if (problems.length > 0) return render(ctx, session, toolName, { values: form, problems, args }, 400);
    const credential = (form.get('credential') ?? '').trim() || null;
    const tried = await tryTool({
      userId: session.user.userId,
      apiKeyId: session.apiKeyId,
      entryId: String(ctx.params.id).toLowerCase(),
      toolName: tool.toolName,
      args,
      credential,
    });
    if (tried.status === 'refused')
      return render(ctx, session, toolName, { values: form, problems: [tried.problem], args }, 400);
    await render(ctx, session, toolName, { values: form, result: resultView(tried.outcome), args });
  });

  router.post('/credentials', async (ctx) => {
    const { session, form } = await signedInForm(ctx);
    const toolName = form.get('tool');
    const { view } = await listing(ctx, toolName);
    const { values, problems } = readFields(view.requiredUserParamsSchema, form, 'param.');
    if (problems.length > 0) return render(ctx, session, toolName, { problems }, 400);
    let issued: IssuedCredential;
    try {
      issued = await issueEntryCredential(deps, {
        userId: session.user.userId,
        apiKeyId: async () => session.apiKeyId,
        entryId: view.id,
        params: values as SourceParamValues,
        apiOrigin: publicOrigin(ctx, deps.config),
      });
    } catch (err) {
      // An entry no longer live is the 404 page; a refused value is shown on the form.
      if ((err as { status?: unknown }).status === 404) throw err;
      return render(ctx, session, toolName, { problems: [problemOf(err)] }, 400);
    }
    await render(ctx, session, toolName, { newCredential: issued.credential });
  });

  return router;
}
