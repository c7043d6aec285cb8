import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { readMcpBody } from '../mcp-request-body';

/**
 * A stateful remote MCP server on loopback (SDK v2, the 2025 `initialize` handshake with
 * `Mcp-Session-Id` sessions), as many deployed servers are: what a client `remember`s is kept in its
 * session and `recall` returns it, so a test sees whether two clients share a session. The tools'
 * descriptions follow the `x-locale` header (a value a consumer may choose), so a test sees whose
 * parameters a tool list was fetched with. Every request's headers are recorded.
 */
export interface SessionMcpServer {
  url: string;
  requests: { method: string; headers: http.IncomingHttpHeaders }[];
  /** Sessions opened so far. */
  sessions: () => number;
  close: () => Promise<void>;
}

export const SESSION_TOOL_DESCRIPTIONS = {
  en: {
    remember: 'Remembers a note for the rest of this session.',
    recall: 'Returns the notes remembered in this session.',
  },
  de: {
    remember: 'Merkt sich eine Notiz für den Rest dieser Sitzung.',
    recall: 'Gibt die in dieser Sitzung gemerkten Notizen zurück.',
  },
} as const;

function buildServer(locale: 'en' | 'de'): McpServer {
  const notes: string[] = [];
  const server = new McpServer({ name: 'session-notes', version: '1.0.0' });
  const text = SESSION_TOOL_DESCRIPTIONS[locale];
  server.registerTool(
    'remember',
    { description: text.remember, inputSchema: z.object({ note: z.string().describe('The note') }) },
    async ({ note }) => {
      notes.push(note);
      return { content: [{ type: 'text', text: `remembered ${notes.length} note(s)` }] };
    },
  );
  server.registerTool('recall', { description: text.recall, inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: JSON.stringify(notes) }],
  }));
  return server;
}

export async function startSessionMcpServer(): Promise<SessionMcpServer> {
  const requests: SessionMcpServer['requests'] = [];
  const transports = new Map<string, NodeStreamableHTTPServerTransport>();
  let opened = 0;

  const server = http.createServer(async (req, res) => {
    requests.push({ method: req.method ?? 'GET', headers: req.headers });
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    const body = await readMcpBody(req);
    const sessionId = req.headers['mcp-session-id'];
    try {
      if (typeof sessionId === 'string') {
        const transport = transports.get(sessionId);
        if (!transport)
          return void res
            .writeHead(404, { 'content-type': 'application/json' })
            .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
        return await transport.handleRequest(req, res, body);
      }
      if (req.method !== 'POST' || body?.method !== 'initialize') {
        return void res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(
            '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: no valid session ID provided"},"id":null}',
          );
      }
      const locale = req.headers['x-locale'] === 'de' ? 'de' : 'en';
      const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id: string) => {
          opened += 1;
          transports.set(id, transport);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) transports.delete(transport.sessionId);
      };
      await buildServer(locale).connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    sessions: () => opened,
    close: async () => {
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => {})));
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}
