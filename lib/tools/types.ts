import type { ClientCapabilities, ContentBlock, Tool } from '@modelcontextprotocol/client';

/** The shapes of the tool runtime: sources, the tools they offer, and what a call returns. */

export type ToolSourceType = 'remote_mcp' | 'openapi';

/** MCP tool annotations (hints); OpenAPI operations get them from their HTTP method. */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface ToolDefinition {
  name: string;
  description: string | null;
  /**
   * JSON Schema of the arguments (an object schema), as models get it: an MCP server's `$schema`
   * dialect declaration is left out (`listing` keeps it).
   */
  inputSchema: Record<string, unknown> | null;
  annotations?: ToolAnnotations;
  /**
   * Remote MCP: the tool exactly as the server listed it (`inputSchema` with its `$schema`,
   * `outputSchema`, `title`, `annotations`, `icons`, `_meta`, `execution`, in the server's key order),
   * for serving it unchanged (the hosted market endpoint's tools/list).
   */
  listing?: McpToolListing;
}

/** An MCP tool as its server lists it (the protocol's Tool). */
export type McpToolListing = Tool;

/** One block of an MCP tool result: text, image, audio, resource_link or an embedded resource. */
export type ToolContentBlock = ContentBlock;

/** Where a source parameter goes: an HTTP header, query or cookie of every request, or a variable of the server URL. */
export type SourceParamLocation = 'header' | 'query' | 'cookie' | 'server';

/** A value the source needs from whoever connects it (a credential, an API key, a server URL variable). */
export interface SourceParam {
  name: string;
  in: SourceParamLocation;
  required: boolean;
  /** Credentials are secret: stored sealed, never shown again. */
  secret: boolean;
  description: string;
}

/** Parameter values, by SourceParam name (`Authorization`, an API key's name, a server variable). */
export type SourceParamValues = Record<string, string | number | boolean>;

/** What to connect to. */
export interface ToolSourceSpec {
  type: ToolSourceType;
  /** The MCP endpoint (Streamable HTTP, or a legacy SSE endpoint), or the URL of an OpenAPI document. */
  url?: string;
  /** OpenAPI document, parsed. */
  spec?: Record<string, unknown>;
  /** OpenAPI document as JSON or YAML text. */
  specText?: string;
  /** OpenAPI only: the API's base URL, overriding the document's servers. */
  baseUrl?: string;
  /** The values of the source's owner (a user's own source, or a market provider's staticConfig). */
  params?: SourceParamValues;
  /**
   * HTTP headers sent with every request to the source besides the params (the hosted market's
   * x-service-charge-* headers). Never shown to a model. They win over every param of the same name.
   */
  headers?: Record<string, string>;
  /**
   * Values from someone who is not the source's owner (a market consumer), for the names the owner
   * opened to them. They are confined (lib/tools/consumer-params.ts): `headers` and `params` win over
   * them name for name, case-insensitively; they never set a header the platform manages, a hop-by-hop,
   * Host, Cookie or charge header; and an OpenAPI server URL variable takes one only from its enum (the
   * document's, else `consumerChoices`) and only when the URL keeps the template's host. Anything else
   * refuses the source (ToolSourceError `invalid_params`) before a request is sent.
   */
  consumerParams?: SourceParamValues;
  /** The values the owner allows for each consumer param it restricted (its declared `enum`). */
  consumerChoices?: Record<string, readonly string[]>;
}

/** A tool source as an agent selects it: the source, optionally narrowed to some tools. */
export interface ToolSelection extends ToolSourceSpec {
  /** Shown to the model to tell sources apart. */
  name?: string;
  /** Only these tools (all when empty or absent). */
  toolNames?: string[];
  /** Tools found by an earlier discovery; lets an MCP source skip listing its tools again. */
  knownTools?: ToolDefinition[];
  /**
   * Remote MCP: what the client behind the platform can answer (`sampling`, `elicitation`, `roots`, as
   * that client declared them): declared to the server, whose requests during a relayed call are
   * passed to that client (ToolSource.relayCall). Absent: the platform's client declares none.
   */
  clientCapabilities?: Pick<ClientCapabilities, 'sampling' | 'elicitation' | 'roots'>;
}

export interface SourceMetadata {
  type: ToolSourceType;
  /** remote_mcp: how the server was reached. */
  transport?: 'streamable_http' | 'sse';
  /** remote_mcp: the negotiated protocol revision. */
  protocolVersion?: string;
  /** remote_mcp: the server's self-reported name and version. */
  server?: { name: string; version: string };
  /** openapi: e.g. "OpenAPI 3.1.0" or "Swagger 2.0". */
  specification?: string;
  /** openapi: the base URL calls go to, when known. */
  serverUrl?: string | null;
  /** The upstream refused the request for lack of (valid) credentials; `params` says what it wants. */
  authRequired: boolean;
}

/** A prompt of a remote MCP server as discovery keeps it. */
export interface McpPromptInfo {
  name: string;
  title?: string;
  description?: string;
  arguments?: { name: string; title?: string; description?: string; required?: boolean }[];
}

/** A resource of a remote MCP server as discovery keeps it. */
export interface McpResourceInfo {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

export interface DiscoveryResult {
  title: string | null;
  description: string | null;
  tools: ToolDefinition[];
  params: SourceParam[];
  source: SourceMetadata;
  /** Remote MCP: the server's prompts and resources when it offers them (read by the tool market's scan). */
  prompts?: McpPromptInfo[];
  resources?: McpResourceInfo[];
}

/**
 * A tool's answer. `text` is the answer as one text for a model (text blocks as they are, other blocks
 * described, e.g. `[image: image/png, 1234 bytes]`, structured content as JSON when there is no text),
 * capped in size. A remote MCP tool's answer is also kept as the tool sent it: `content` (its blocks,
 * text cut to the same cap), `structuredContent` and `meta` — read the blocks with resultContent().
 */
export interface ToolCallResult {
  /** The tool ran and reported a failure (MCP `isError`, an HTTP error status). */
  isError: boolean;
  text: string;
  /** The text was cut to the result cap. */
  truncated: boolean;
  /**
   * The answer's blocks as the tool sent them, when they are more than `text` (several blocks, a
   * non-text block, a block with annotations or `_meta`). Absent: the answer is one text block, `text`.
   */
  content?: ToolContentBlock[];
  /** Remote MCP: the result's `structuredContent`, as sent. */
  structuredContent?: Record<string, unknown>;
  /** Remote MCP: the result's `_meta`, as sent (the protocol's own `io.modelcontextprotocol/` keys left out). */
  meta?: Record<string, unknown>;
}
