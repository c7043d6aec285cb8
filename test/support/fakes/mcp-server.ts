import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * A real remote MCP server on loopback, written with the SDK v2 server packages, stateless.
 *
 * `era: 'current'` serves the current protocol revision (2026-07-28, `server/discover` +
 * per-request envelope) and, through the SDK's stateless legacy fallback, 2025-era clients;
 * `era: '2025'` is a server that only knows the 2025 revisions (`initialize` handshake over
 * stateless Streamable HTTP), like most servers deployed today.
 */
export interface McpServerOptions {
  era?: 'current' | '2025';
  /** Requests without `Authorization: Bearer <token>` get 401 with a WWW-Authenticate challenge. */
  bearerToken?: string;
  /** Serve HTTPS with this key and certificate (see mcp-tls.ts). */
  tls?: { key: string; cert: string };
  host?: string;
  name?: string;
}

export interface RecordedMcpRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
}

export interface TestMcpServer {
  /** The MCP endpoint, e.g. http://127.0.0.1:1234/mcp */
  url: string;
  origin: string;
  requests: RecordedMcpRequest[];
  /** How many times the non-idempotent `increment` tool ran. */
  incrementCalls: () => number;
  /** How many times any tool ran, by name. */
  toolRuns: (name: string) => number;
  close: () => Promise<void>;
}

export const LARGE_RESULT_BYTES = 200_000;

function buildServer(counters: { runs: Map<string, number>; total: number }, name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' }, { instructions: 'Test tools for the platform test-suite.' });
  const ran = (tool: string) => counters.runs.set(tool, (counters.runs.get(tool) ?? 0) + 1);

  server.registerTool(
    'echo',
    {
      title: 'Echo',
      description: 'Returns the message it is given.',
      inputSchema: z.object({ message: z.string().describe('Text to send back') }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ message }) => {
      ran('echo');
      return { content: [{ type: 'text', text: `echo: ${message}` }] };
    },
  );

  server.registerTool(
    'add',
    { description: 'Adds two numbers.', inputSchema: z.object({ a: z.number(), b: z.number() }) },
    async ({ a, b }) => {
      ran('add');
      return { content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } };
    },
  );

  server.registerTool(
    'slow',
    {
      description: 'Waits before answering.',
      inputSchema: z.object({ ms: z.number().int().min(0).max(60_000).default(1_500) }),
      annotations: { readOnlyHint: true },
    },
    async ({ ms }) => {
      ran('slow');
      await new Promise((resolve) => setTimeout(resolve, ms));
      return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
    },
  );

  server.registerTool('fail', { description: 'Always reports an error.', inputSchema: z.object({}) }, async () => {
    ran('fail');
    return { isError: true, content: [{ type: 'text', text: 'the widget store is on fire' }] };
  });

  server.registerTool(
    'large',
    {
      description: 'Returns a large text.',
      inputSchema: z.object({ bytes: z.number().int().min(1).max(2_000_000).default(LARGE_RESULT_BYTES) }),
      annotations: { readOnlyHint: true },
    },
    async ({ bytes }) => {
      ran('large');
      return { content: [{ type: 'text', text: 'L'.repeat(bytes - 3) + 'END' }] };
    },
  );

  server.registerTool(
    'increment',
    {
      description: 'Adds one to a server-side counter and returns it (not idempotent).',
      inputSchema: z.object({ delayMs: z.number().int().min(0).max(60_000).default(0) }),
      annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    },
    async ({ delayMs }) => {
      ran('increment');
      counters.total += 1;
      const value = counters.total;
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return { content: [{ type: 'text', text: `counter is ${value}` }] };
    },
  );
  return server;
}

function challenge(res: http.ServerResponse): void {
  res.writeHead(401, {
    'content-type': 'application/json',
    'www-authenticate': 'Bearer realm="test-mcp", error="invalid_token"',
  });
  res.end(JSON.stringify({ error: 'invalid_token', error_description: 'A bearer token is required' }));
}

export async function startMcpServer(options: McpServerOptions = {}): Promise<TestMcpServer> {
  const era = options.era ?? 'current';
  const name = options.name ?? `test-mcp-${era}`;
  const counters = { runs: new Map<string, number>(), total: 0 };
  const requests: RecordedMcpRequest[] = [];
  const modern = toNodeHandler(createMcpHandler(() => buildServer(counters, name)));

  const serve2025 = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.method !== 'POST') {
      res
        .writeHead(405, { allow: 'POST', 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }));
      return;
    }
    const server = buildServer(counters, name);
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.once('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };

  const handler = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push({ method: req.method ?? 'GET', path, headers: req.headers });
    if (path !== '/mcp') return void res.writeHead(404).end('not found');
    if (options.bearerToken && req.headers.authorization !== `Bearer ${options.bearerToken}`) return challenge(res);
    try {
      if (era === 'current') await modern(req, res);
      else await serve2025(req, res);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  };
  const server = options.tls
    ? https.createServer({ key: options.tls.key, cert: options.tls.cert }, handler)
    : http.createServer(handler);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `${options.tls ? 'https' : 'http'}://${host}:${port}`;
  return {
    url: `${origin}/mcp`,
    origin,
    requests,
    incrementCalls: () => counters.total,
    toolRuns: (tool) => counters.runs.get(tool) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
