import { scrubSecrets, ToolSourceError } from './errors';
import { listMcpPromptsAndResources, McpAuthRequiredError } from './mcp';
import { parseSourceUrl, preflightSourceUrl } from './network';
import { mcpHeaders } from './consumer-params';
import { connectAndList, loadOpenApi, type ToolRuntimeDeps } from './source';
import type { DiscoveryResult, SourceParam, ToolSourceSpec } from './types';

/**
 * What a source offers and what it needs: its tools (name, description, input schema, annotations)
 * and the params a caller must supply (credentials, API keys, server URL variables). An MCP server
 * that answers 401/403 is not an error: it yields no tools and a param describing the credential it
 * asked for. Throws ToolSourceError for everything else; no message ever contains a param value.
 */
export async function discoverTools(spec: ToolSourceSpec, deps: ToolRuntimeDeps): Promise<DiscoveryResult> {
  const { discovery } = await discoverToolsWithDocument(spec, deps);
  // The MCP server's own listing of each tool is for the tool market (which serves it unchanged), not for agents.
  return { ...discovery, tools: discovery.tools.map(({ listing: _listing, ...tool }) => tool) };
}

/**
 * discoverTools, with each remote MCP tool's `listing` (the tool exactly as the server listed it), and
 * for an OpenAPI source the document as it was read (parsed, `$ref`s untouched): the tool market
 * fingerprints the document, also when it was fetched from a URL.
 */
export async function discoverToolsWithDocument(
  spec: ToolSourceSpec,
  deps: ToolRuntimeDeps,
): Promise<{ discovery: DiscoveryResult; openapiDocument: Record<string, unknown> | null }> {
  const secrets = Object.values(spec.params ?? {});
  try {
    if (spec.type === 'remote_mcp') return { discovery: await discoverMcp(spec, deps), openapiDocument: null };
    return await discoverOpenApi(spec, deps);
  } catch (error) {
    if (error instanceof ToolSourceError)
      throw new ToolSourceError(error.code, scrubSecrets(error.message, secrets), error.transient);
    throw error;
  }
}

/** How long listing prompts or resources may take when the runtime sets no connect timeout. */
const DISCOVERY_LIST_TIMEOUT_MS = 15_000;

async function discoverMcp(spec: ToolSourceSpec, deps: ToolRuntimeDeps): Promise<DiscoveryResult> {
  if (!spec.url) throw new ToolSourceError('invalid_source', 'A remote MCP source needs its url');
  const url = parseSourceUrl(spec.url, 'The MCP server URL');
  preflightSourceUrl(url, deps.policy);
  const headers = mcpHeaders({ params: spec.params });
  const supplied = Object.keys(headers);
  let opened;
  try {
    opened = await connectAndList(url, headers, deps);
  } catch (error) {
    if (!(error instanceof McpAuthRequiredError)) throw error;
    return {
      title: null,
      description: null,
      tools: [],
      params: [
        credentialParam(error),
        ...suppliedHeaderParams(supplied.filter((name) => name.toLowerCase() !== 'authorization')),
      ],
      source: { type: 'remote_mcp', authRequired: true },
    };
  }
  const { session, tools } = opened;
  try {
    const extras = await listMcpPromptsAndResources(session, deps.connectTimeoutMs ?? DISCOVERY_LIST_TIMEOUT_MS);
    const server = session.client.getServerVersion() as
      { name: string; version: string; title?: string; description?: string } | undefined;
    return {
      title: server?.title ?? server?.name ?? null,
      description: session.client.getInstructions() ?? server?.description ?? null,
      tools,
      params: suppliedHeaderParams(supplied),
      ...extras,
      source: {
        type: 'remote_mcp',
        transport: session.transport,
        protocolVersion: session.client.getNegotiatedProtocolVersion(),
        ...(server && { server: { name: server.name, version: server.version } }),
        authRequired: false,
      },
    };
  } finally {
    await session.close();
  }
}

/** The credential a 401/403 challenge asks for, as a param (the Authorization header). */
function credentialParam(error: McpAuthRequiredError): SourceParam {
  const scheme = /^\s*([A-Za-z][\w-]*)/.exec(error.challenge ?? '')?.[1] ?? 'Bearer';
  const description =
    scheme.toLowerCase() === 'basic'
      ? 'HTTP Basic credentials the server asked for (WWW-Authenticate: Basic): give "Basic <base64 of user:password>".'
      : scheme.toLowerCase() === 'bearer'
        ? `Bearer token the server asked for (HTTP ${error.status}, WWW-Authenticate: Bearer): give the token, sent as "Authorization: Bearer <token>".`
        : `Credentials the server asked for (WWW-Authenticate: ${scheme}), sent as the Authorization header.`;
  return { name: 'Authorization', in: 'header', required: true, secret: true, description };
}

function suppliedHeaderParams(names: string[]): SourceParam[] {
  return names.map((name) => ({
    name,
    in: 'header',
    required: false,
    secret: true,
    description: `Given with this request; sent as the ${name} header of every request to the server.`,
  }));
}

async function discoverOpenApi(
  spec: ToolSourceSpec,
  deps: ToolRuntimeDeps,
): Promise<{ discovery: DiscoveryResult; openapiDocument: Record<string, unknown> }> {
  const { document, model, baseUrl } = await loadOpenApi(spec, deps);
  if (model.operations.length > 1000)
    throw new ToolSourceError(
      'source_too_large',
      `The document has ${model.operations.length} operations; at most 1000 are supported`,
    );
  const discovery: DiscoveryResult = {
    title: model.title,
    description: model.description,
    tools: model.operations.map((operation) => operation.tool),
    params: model.params,
    source: {
      type: 'openapi',
      specification: document.label,
      serverUrl: baseUrl ? baseUrl.href : null,
      authRequired: false,
    },
  };
  return { discovery, openapiDocument: document.doc };
}
