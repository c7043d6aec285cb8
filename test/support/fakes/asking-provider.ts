import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  acceptedContent,
  inputRequired,
  inputResponse,
  isLegacyRequest,
  McpServer,
  WebStandardStreamableHTTPServerTransport,
  type CallToolResult,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * A market provider's MCP service of the 2025 revisions only (sessions, SDK v2 server on loopback), like most
 * servers deployed today: its tool `ask_user` asks the client behind the call — an elicitation and a sampling,
 * sent as requests on the call's own response stream — and logs to it, every message naming the call's `tag`.
 * `ask_user` calls wait for each other until `together` of them run at once (or 15 s pass), so that a test can
 * have concurrent calls on one upstream session ask at the same moment. Records which session each call came in.
 */
export interface AskingProvider {
  url: string;
  /** The session id of each `ask_user` call, in the order they arrived. */
  callSessions: string[];
  close(): Promise<void>;
}

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });

export async function startAskingProvider(options: { together: number }): Promise<AskingProvider> {
  const callSessions: string[] = [];
  let waiting: (() => void)[] = [];
  /** Resolves once `together` first rounds of ask_user are waiting (or after 15 s: the test then fails on what it sees). */
  const allTogether = () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length >= options.together) {
        const all = waiting;
        waiting = [];
        all.forEach((go) => go());
      } else setTimeout(resolve, 15_000).unref();
    });

  const build = () => {
    const server = new McpServer({ name: 'asking-provider', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool(
      'ask_user',
      {
        description: 'Asks the user to confirm and the model to summarise, then reports both answers.',
        inputSchema: z.object({ tag: z.string() }),
      },
      async ({ tag }, ctx) => {
        const confirm = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', z.object({ answer: z.string() }));
        const summary = inputResponse(ctx.mcpReq.inputResponses, 'summary');
        if (!confirm || summary.kind !== 'sampling') {
          callSessions.push(ctx.sessionId ?? '(none)');
          await allTogether();
          await ctx.mcpReq.log('info', `working on ${tag}`);
          return inputRequired({
            inputRequests: {
              confirm: inputRequired.elicit({
                message: `Confirm ${tag}?`,
                requestedSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
              }),
              summary: inputRequired.createMessage({
                messages: [{ role: 'user', content: { type: 'text', text: `Summarise ${tag}` } }],
                maxTokens: 50,
              }),
            },
          });
        }
        const said = Array.isArray(summary.result.content) ? summary.result.content[0] : summary.result.content;
        await ctx.mcpReq.log('info', `done with ${tag}`);
        return text(`${tag}: confirmed ${confirm.answer}, summarised ${said?.type === 'text' ? said.text : '?'}`);
      },
    );
    return server;
  };

  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const node = toNodeHandler({
    async fetch(request: Request): Promise<Response> {
      if (new URL(request.url).pathname !== '/mcp') return new Response('not found', { status: 404 });
      // Only the 2025 revisions: a 2026-07-28 request is answered as a server that does not know it.
      if (!(await isLegacyRequest(request)))
        return Response.json(
          { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: null },
          { status: 404 },
        );
      const sessionId = request.headers.get('mcp-session-id');
      if (sessionId) {
        const transport = sessions.get(sessionId);
        return transport
          ? transport.handleRequest(request)
          : Response.json(
              { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null },
              { status: 404 },
            );
      }
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, transport),
        onsessionclosed: (id) => void sessions.delete(id),
      });
      const server = build();
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
        void server.close();
      };
      await server.connect(transport);
      const response = await transport.handleRequest(request);
      if (!transport.sessionId) void transport.close();
      return response;
    },
  });
  const server = http.createServer((req, res) => {
    node(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    callSessions,
    close: async () => {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
