/**
 * The floor of any hosted MCP endpoint built on the SDK v2 (bench:mcp's "bare SDK proxy" baseline):
 * a process serving one stateless MCP endpoint with the SDK's server and Node adapter, whose
 * tools/list and tools/call are forwarded to UPSTREAM_URL through one connected SDK v2 client — the
 * same two MCP hops as /mcp/{entryId}, and nothing else: no authentication, database, billing,
 * rug-pull gate or records. Prints `SDK proxy listening on <url>`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';

async function main() {
  const upstream = new Client({ name: 'bench-sdk-proxy', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await upstream.connect(new StreamableHTTPClientTransport(new URL(process.env.UPSTREAM_URL!)));
  const serve = toNodeHandler(
    createMcpHandler(() => {
      const server = new Server({ name: 'bench-sdk-proxy', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler('tools/list', async () => upstream.listTools());
      server.setRequestHandler(
        'tools/call',
        async (request) =>
          upstream.callTool({ name: request.params.name, arguments: request.params.arguments ?? {} }) as never,
      );
      return server;
    }),
  );
  const server = http.createServer((req, res) => void serve(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`SDK proxy listening on http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp\n`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      server.closeAllConnections();
      server.close(() => void upstream.close().finally(() => process.exit(0)));
    });
  }
}

void main();
