import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  acceptedContent,
  createMcpHandler,
  inputRequired,
  McpServer,
  type CallToolResult,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * A market provider's MCP service on loopback (SDK v2, current revision plus the 2025 fallback) whose tools
 * exercise what the hosted endpoint relays: a tool that asks the user for a confirmation (input-required,
 * with a requestState of its own), one that runs until it is cancelled, one that answers with an image of
 * a chosen size, one listed with every part of a tool definition (title, output schema, annotations, icons,
 * _meta), and one that echoes the provider's API key (its staticConfig, sent as X-Provider-Key) into
 * every part of its answer.
 */
export interface RelayProvider {
  url: string;
  /** How many times a tool finished its work (answered for good). */
  finished: (tool: string) => number;
  /** How many calls of wait_until_cancelled saw their cancellation. */
  cancelled: () => number;
  /** How many calls of wait_until_cancelled started. */
  started: () => number;
  /** The requestState values confirm_order received back (its own, as it minted them). */
  statesReceived: () => string[];
  /**
   * What confirm_order does once it has its confirmation, before it answers (the test's stand-in for a round that
   * takes long): replaced by each call of this, none at first.
   */
  beforeConfirmedAnswer: (hook: ((item: string) => Promise<void>) | null) => void;
  close: () => Promise<void>;
}

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });

export async function startRelayProvider(): Promise<RelayProvider> {
  const finished = new Map<string, number>();
  const done = (tool: string) => finished.set(tool, (finished.get(tool) ?? 0) + 1);
  const states: string[] = [];
  let started = 0;
  let cancelled = 0;
  let beforeConfirmed: ((item: string) => Promise<void>) | null = null;

  const build = (headers: Headers) => {
    const key = headers.get('x-provider-key') ?? '(none)';
    const server = new McpServer({ name: 'relay-provider', version: '1.0.0' });
    server.registerTool(
      'confirm_order',
      { description: 'Orders an item once the user confirms it.', inputSchema: z.object({ item: z.string() }) },
      async ({ item }, ctx) => {
        const state = ctx.mcpReq.requestState<string>();
        if (state !== undefined) states.push(state);
        const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', z.object({ ok: z.boolean() }));
        if (!answer || state !== `provider-state:${item}`) {
          return inputRequired({
            inputRequests: {
              confirm: inputRequired.elicit({
                message: `Order ${item}? (provider key ${key})`,
                requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
              }),
            },
            requestState: `provider-state:${item}`,
          });
        }
        await beforeConfirmed?.(item);
        done('confirm_order');
        return text(answer.ok ? `ordered ${item}` : `${item} not ordered`);
      },
    );
    server.registerTool(
      'wait_until_cancelled',
      { description: 'Works until it is cancelled (at most 20 s).', inputSchema: z.object({}) },
      async (_args, ctx) => {
        started++;
        const outcome = await new Promise<'cancelled' | 'finished'>((resolve) => {
          const timer = setTimeout(() => resolve('finished'), 20_000);
          ctx.mcpReq.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve('cancelled');
          });
        });
        if (outcome === 'cancelled') cancelled++;
        else done('wait_until_cancelled');
        return text(outcome);
      },
    );
    server.registerTool(
      'screenshot',
      { description: 'A PNG of the requested size.', inputSchema: z.object({ bytes: z.number().int().min(1) }) },
      async ({ bytes }) => {
        done('screenshot');
        return {
          content: [
            { type: 'text', text: `a screenshot of ${bytes} bytes` },
            { type: 'image', mimeType: 'image/png', data: Buffer.alloc(bytes, 7).toString('base64') },
          ],
        };
      },
    );
    server.registerTool(
      'echo_key',
      {
        description: 'Reports what it received, in every part of its answer.',
        inputSchema: z.object({ fail: z.boolean().optional() }),
      },
      async ({ fail }) => {
        done('echo_key');
        const where = `http://${headers.get('host')}/mcp`;
        return {
          isError: fail === true,
          content: [
            { type: 'text', text: `key ${key} at ${where}` },
            {
              type: 'resource',
              resource: { uri: `test://keys/${key}`, mimeType: 'text/plain', text: `the key is ${key}` },
            },
            {
              type: 'resource_link',
              uri: `${where}?key=${key}`,
              name: `link ${key}`,
              description: `reached with ${key}`,
            },
            { type: 'image', mimeType: 'image/png', data: Buffer.from(`pixels ${key}`).toString('base64') },
          ],
          structuredContent: { key, nested: [{ again: `still ${key}` }], [key]: 'as a property name', endpoint: where },
          _meta: { 'relay-provider/debug': { key, endpoint: where } },
        };
      },
    );
    server.registerTool(
      'forecast',
      {
        title: 'Forecast',
        description: 'The forecast of a city, as structured content.',
        inputSchema: z.object({
          city: z.string().describe('City name'),
          days: z.number().int().min(1).max(7).optional(),
        }),
        outputSchema: z.object({ city: z.string(), highs: z.array(z.number()) }),
        annotations: { readOnlyHint: true, openWorldHint: true },
        icons: [{ src: 'https://relay-provider.example/forecast.png', mimeType: 'image/png', sizes: ['48x48'] }],
        _meta: { 'relay-provider/category': 'weather' },
      },
      async ({ city, days }) => {
        done('forecast');
        const highs = Array.from({ length: days ?? 2 }, (_, i) => 20 + i);
        return {
          content: [{ type: 'text', text: `${city}: ${highs.join(', ')}` }],
          structuredContent: { city, highs },
        };
      },
    );
    return server;
  };

  const handler = toNodeHandler(createMcpHandler(({ requestInfo }) => build(requestInfo?.headers ?? new Headers())));
  const server = http.createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    handler(req, res).catch(() => res.headersSent || res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    finished: (tool) => finished.get(tool) ?? 0,
    cancelled: () => cancelled,
    started: () => started,
    statesReceived: () => [...states],
    beforeConfirmedAnswer: (hook) => {
      beforeConfirmed = hook;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
