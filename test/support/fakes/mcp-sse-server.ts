import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A remote MCP server that speaks ONLY the legacy HTTP+SSE transport (protocol 2024-11-05):
 * `GET /sse` opens an event stream whose first event (`endpoint`) names the URL to POST
 * JSON-RPC messages to; each POST is answered `202 Accepted` and the JSON-RPC response
 * arrives on the stream as a `message` event. Hand-written, because the SDK v2 server
 * packages no longer ship this transport. A POST to /sse (a Streamable HTTP attempt) gets 405.
 */
export interface TestSseMcpServer {
  /** The SSE endpoint, e.g. http://127.0.0.1:1234/sse */
  url: string;
  requests: { method: string; path: string; headers: http.IncomingHttpHeaders }[];
  incrementCalls: () => number;
  close: () => Promise<void>;
}

const TOOLS = [
  {
    name: 'legacy_echo',
    description: 'Returns the message it is given (legacy SSE server).',
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'legacy_increment',
    description: 'Adds one to a counter (not idempotent).',
    inputSchema: { type: 'object', properties: {} },
  },
];

interface JsonRpcMessage {
  jsonrpc: '2.0';
  id?: string | number;
  method?: string;
  params?: Record<string, any>;
}

export async function startSseMcpServer(options: { bearerToken?: string } = {}): Promise<TestSseMcpServer> {
  const streams = new Map<string, http.ServerResponse>();
  const requests: TestSseMcpServer['requests'] = [];
  let increments = 0;

  const answer = (message: JsonRpcMessage): Record<string, unknown> | null => {
    if (message.id === undefined) return null; // notifications need no answer
    const result = (value: unknown) => ({ jsonrpc: '2.0', id: message.id, result: value });
    switch (message.method) {
      case 'initialize':
        return result({
          protocolVersion: '2024-11-05',
          capabilities: { tools: {} },
          serverInfo: { name: 'legacy-sse-server', version: '0.9.0' },
        });
      case 'ping':
        return result({});
      case 'tools/list':
        return result({ tools: TOOLS });
      case 'tools/call': {
        const name = message.params?.name;
        if (name === 'legacy_echo')
          return result({ content: [{ type: 'text', text: `legacy echo: ${message.params?.arguments?.message}` }] });
        if (name === 'legacy_increment')
          return result({ content: [{ type: 'text', text: `counter is ${++increments}` }] });
        return { jsonrpc: '2.0', id: message.id, error: { code: -32602, message: `Unknown tool: ${name}` } };
      }
      default:
        return {
          jsonrpc: '2.0',
          id: message.id,
          error: { code: -32601, message: `Method not found: ${message.method}` },
        };
    }
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push({ method: req.method ?? 'GET', path: url.pathname, headers: req.headers });
    if (options.bearerToken && req.headers.authorization !== `Bearer ${options.bearerToken}`) {
      res.writeHead(401, { 'www-authenticate': 'Bearer realm="legacy-sse"' }).end();
      return;
    }
    if (url.pathname === '/sse' && req.method === 'GET') {
      const sessionId = randomUUID();
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      res.write(`event: endpoint\ndata: /messages?sessionId=${sessionId}\n\n`);
      streams.set(sessionId, res);
      req.once('close', () => streams.delete(sessionId));
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const stream = streams.get(url.searchParams.get('sessionId') ?? '');
      if (!stream) return void res.writeHead(404).end('Unknown session');
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        let message: JsonRpcMessage;
        try {
          message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return void res.writeHead(400).end('Invalid JSON');
        }
        res.writeHead(202).end('Accepted');
        const reply = answer(message);
        if (reply) stream.write(`event: message\ndata: ${JSON.stringify(reply)}\n\n`);
      });
      return;
    }
    if (url.pathname === '/sse') return void res.writeHead(405, { allow: 'GET' }).end('Method Not Allowed');
    res.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    requests,
    incrementCalls: () => increments,
    close: () =>
      new Promise<void>((resolve) => {
        for (const stream of streams.values()) stream.end();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
