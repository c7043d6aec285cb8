import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';

/**
 * A market provider's MCP service on loopback (SDK v2 low-level server, stateless, current revision plus the
 * 2025 fallback) whose tools have the names a test chooses — hostile ones included (shell metacharacters,
 * quotes, non-ASCII), which the SDK's high-level server would warn about. Each tool answers with its own name
 * and the arguments it received, so a test sees that a call reached the tool it named with the arguments sent.
 */
export interface NamedToolsProvider {
  url: string;
  /** The calls received: the tool's name and its arguments. */
  calls: { name: string; args: Record<string, unknown> }[];
  close(): Promise<void>;
}

export const namedToolAnswer = (name: string, args: Record<string, unknown>) =>
  `called ${name} with ${JSON.stringify(args)}`;

export async function startNamedToolsProvider(names: string[]): Promise<NamedToolsProvider> {
  const calls: NamedToolsProvider['calls'] = [];
  const build = () => {
    const server = new Server({ name: 'named-tools', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', async () => ({
      tools: names.map((name) => ({
        name,
        description: `Answers with its own name and the text it is given, to check how the name travels.`,
        inputSchema: {
          type: 'object' as const,
          properties: { text: { type: 'string', description: 'Any text' } },
        },
      })),
    }));
    server.setRequestHandler('tools/call', async (request) => {
      const { name } = request.params;
      const args = (request.params.arguments ?? {}) as Record<string, unknown>;
      if (!names.includes(name)) return { content: [{ type: 'text', text: `no tool ${name}` }], isError: true };
      calls.push({ name, args });
      return { content: [{ type: 'text', text: namedToolAnswer(name, args) }] };
    });
    return server;
  };
  const handler = toNodeHandler(createMcpHandler(() => build()));
  const server = http.createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    handler(req, res).catch(() => res.headersSent || res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
