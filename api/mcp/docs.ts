import { McpServer, type CallToolResult } from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { Config } from '../../lib/config';
import type { DocsSite } from '../docs/site';
import type { McpEndpointOptions } from './endpoint';

/** Where the docs-search MCP endpoint is served on the API origin. */
export const DOCS_MCP_PATH = '/docs-mcp';

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

const Stamp = {
  version: z.string().describe('The API version this documentation describes'),
  indexedAt: z.string().describe('When the documentation index was built (ISO 8601)'),
};

const SearchHitSchema = z.object({
  title: z.string(),
  path: z.string().describe('Pass to read_doc: docs/<guide>.md, README.md, or openapi.json for an operation'),
  anchor: z.string().describe('Section anchor ("" = the top of the guide), or operation/<operationId>'),
  snippet: z.string(),
  kind: z.enum(['guide', 'readme', 'operation']),
  url: z.string().describe('Where a person reads it, relative to the API origin'),
  score: z.number(),
  ...Stamp,
});

const OperationSummarySchema = z.object({
  operationId: z.string(),
  method: z.string(),
  path: z.string().describe('Relative to the server URL of the API (serverUrl in get_operation)'),
  summary: z.string(),
  tags: z.array(z.string()),
});

const JsonObject = z.record(z.string(), z.unknown());

function structured<T extends Record<string, unknown>>(
  value: T,
  text = JSON.stringify(value, null, 2),
): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: value };
}

function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** One fresh server per request (stateless): four read-only tools and the guides as resources. */
export function createDocsMcpServer(site: DocsSite): McpServer {
  const stamp = { version: site.version, indexedAt: site.indexedAt };
  const server = new McpServer(
    { name: 'scrape-platform-docs', title: 'Scrape platform documentation', version: site.version },
    {
      instructions:
        `Documentation of the scrape platform API, version ${site.version}. Use search_docs with a question, then read_doc with a hit's path ` +
        'and anchor for the whole section; list_operations and get_operation give the reference of each endpoint with its schemas inline.',
    },
  );

  server.registerTool(
    'search_docs',
    {
      title: 'Search the documentation',
      description:
        'Full-text search over the guides, the README and every API operation. Returns ranked sections with a snippet; read one with read_doc.',
      inputSchema: z.object({
        query: z
          .string()
          .trim()
          .min(1)
          .max(500)
          .describe('A question or keywords, e.g. "how do I verify a webhook signature"'),
        limit: z.number().int().min(1).max(20).optional().describe('How many hits (default 5)'),
      }),
      outputSchema: z.object({ query: z.string(), hits: z.array(SearchHitSchema), ...Stamp }),
      annotations: READ_ONLY,
    },
    async ({ query, limit }) => {
      const hits = site.search(query, limit ?? 5);
      return structured({ query, hits, ...stamp });
    },
  );

  server.registerTool(
    'read_doc',
    {
      title: 'Read a guide or one section',
      description:
        'The Markdown of a guide (path such as docs/webhooks.md), or of one section with its anchor; openapi.json with anchor operation/<operationId> reads an operation.',
      inputSchema: z.object({
        path: z.string().trim().min(1).max(300),
        anchor: z
          .string()
          .max(200)
          .optional()
          .describe("A section anchor from search_docs or from the guide's section list"),
      }),
      outputSchema: z.object({
        title: z.string(),
        path: z.string(),
        anchor: z.string(),
        url: z.string(),
        markdown: z.string(),
        sections: z
          .array(z.object({ anchor: z.string(), title: z.string(), level: z.number() }))
          .describe("The guide's sections (when a whole guide is read)"),
        ...Stamp,
      }),
      annotations: READ_ONLY,
    },
    async ({ path, anchor }) => {
      const doc = site.readDoc(path, anchor);
      if (!doc.ok) return toolError(doc.message);
      const { ok: _ok, ...fields } = doc;
      return structured({ ...fields, ...stamp }, `${doc.markdown}\n\n(API version ${site.version}; ${doc.url})`);
    },
  );

  server.registerTool(
    'list_operations',
    {
      title: 'List API operations',
      description:
        'Every operation of the REST API (method, path, operationId, summary), optionally only those with one tag.',
      inputSchema: z.object({
        tag: z
          .string()
          .trim()
          .min(1)
          .max(200)
          .optional()
          .describe(`One of: ${site.tags.join(', ')}`),
      }),
      outputSchema: z.object({ tags: z.array(z.string()), operations: z.array(OperationSummarySchema), ...Stamp }),
      annotations: READ_ONLY,
    },
    async ({ tag }) => {
      const wanted = tag ? site.tags.find((t) => t.toLowerCase() === tag.toLowerCase()) : undefined;
      if (tag && !wanted) return toolError(`No tag "${tag}". Tags: ${site.tags.join(', ')}`);
      const operations = wanted ? site.operations.filter((op) => op.tags.includes(wanted)) : site.operations;
      return structured({ tags: site.tags, operations, ...stamp });
    },
  );

  server.registerTool(
    'get_operation',
    {
      title: 'Get one API operation',
      description:
        'One operation from the OpenAPI document with its parameters, request body and responses, every schema resolved inline. Give operationId, or method and path.',
      inputSchema: z.object({
        operationId: z.string().trim().min(1).max(200).optional(),
        method: z.string().trim().min(1).max(10).optional().describe('GET, POST, PATCH, DELETE …'),
        path: z.string().trim().min(1).max(500).optional().describe('e.g. /scrape/status/{jobId} or /api/v1/scrape'),
      }),
      outputSchema: z.object({
        operation: z.object({
          operationId: z.string(),
          method: z.string(),
          path: z.string(),
          serverUrl: z.string(),
          summary: z.string(),
          description: z.string().nullable(),
          tags: z.array(z.string()),
          security: z.unknown(),
          parameters: z.array(JsonObject),
          requestBody: JsonObject.nullable(),
          responses: z.record(z.string(), JsonObject),
        }),
        ...Stamp,
      }),
      annotations: READ_ONLY,
    },
    async ({ operationId, method, path }) => {
      if (!operationId && !(method && path))
        return toolError('Give operationId, or both method and path (list_operations shows them)');
      const operation = site.getOperation(operationId ? { operationId } : { method, path });
      if (!operation) {
        const asked = operationId ? `operationId "${operationId}"` : `${method!.toUpperCase()} ${path}`;
        return toolError(
          `No operation with ${asked}. Known operations: ${site.operations.map((op) => `${op.operationId} (${op.method} ${op.path})`).join(', ')}`,
        );
      }
      return structured({ operation: { ...operation }, ...stamp });
    },
  );

  const documents = site.readme ? [...site.guides, site.readme] : site.guides;
  for (const guide of documents) {
    const uri = guide.slug === 'readme' ? 'docs://readme' : `docs://guides/${guide.slug}`;
    server.registerResource(
      guide.slug,
      uri,
      { title: guide.title, description: guide.summary, mimeType: 'text/markdown' },
      async (resourceUri) => ({
        contents: [{ uri: resourceUri.href, mimeType: 'text/markdown', text: guide.markdown.trim() }],
      }),
    );
  }
  return server;
}

/** The endpoint's mount options: public (no API key), rate-limited, answering for DOCS_MCP_URL's host too. */
export function docsMcpEndpoint(site: DocsSite, config: Pick<Config, 'docsMcp'>): McpEndpointOptions {
  const advertised = config.docsMcp.url ? new URL(config.docsMcp.url) : null;
  return {
    path: DOCS_MCP_PATH,
    factory: () => createDocsMcpServer(site),
    allowedHostnames: advertised ? [advertised.hostname] : [],
    rateLimitPerMinute: config.docsMcp.rateLimitPerMinute,
  };
}

/** The address to tell people about: DOCS_MCP_URL, else /docs-mcp on the origin they reached the API at. */
export function advertisedDocsMcpUrl(config: Pick<Config, 'docsMcp'>, apiOrigin: string): string {
  return config.docsMcp.url ?? `${apiOrigin}${DOCS_MCP_PATH}`;
}
