import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { readMcpBody } from '../mcp-request-body';

/**
 * A market provider's MCP service on loopback whose calls a test can hold open: `lookup` answers at
 * once; `slow_lookup` and `charge_pages` wait at a named gate until the test opens it, so a test can
 * have calls in flight while it makes others. `charge_pages` charges `pages` page.scraped events the
 * way a real provider does (the forwarded x-service-charge-* headers, the provider's own API key, an
 * idempotency key unique to the call and the event), before answering. Every tools/call's headers
 * are recorded, so a test can also charge a run later, as a provider's backend would.
 */
export interface MeteredProvider {
  url: string;
  /** Headers of every tools/call, in arrival order. */
  calls: () => http.IncomingHttpHeaders[];
  /** Resolves once `count` calls wait at the gate `name`. */
  arrived(name: string, count?: number): Promise<void>;
  /** Lets every call waiting at `name` (and every later one) through. */
  open(name: string): void;
  configureCharging(options: { apiBase: string; apiKey: string }): void;
  /** A charge of the run a recorded call carried, sent now (a provider's late charge). */
  chargeLater(
    headers: http.IncomingHttpHeaders,
    idempotencyKey: string,
    count?: number,
  ): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startMeteredProvider(): Promise<MeteredProvider> {
  const calls: http.IncomingHttpHeaders[] = [];
  const gates = new Map<
    string,
    { opened: boolean; release: Promise<void>; open: () => void; waiting: number; watchers: (() => void)[] }
  >();
  let charging: { apiBase: string; apiKey: string } | null = null;

  const gate = (name: string) => {
    let entry = gates.get(name);
    if (!entry) {
      let open!: () => void;
      const release = new Promise<void>((resolve) => (open = resolve));
      entry = { opened: false, release, open, waiting: 0, watchers: [] };
      gates.set(name, entry);
    }
    return entry;
  };
  const wait = async (name: string) => {
    const g = gate(name);
    g.waiting++;
    g.watchers.splice(0).forEach((notify) => notify());
    await g.release;
  };

  async function charge(headers: { get(name: string): string | null | undefined }, key: string, count: number) {
    if (!charging) throw new Error('charging not configured');
    const response = await fetch(
      `${charging.apiBase}/api/v1/provider/runs/${headers.get('x-service-charge-run-id')}/charge`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': charging.apiKey,
          'x-service-charge-token': headers.get('x-service-charge-token') ?? '',
          'idempotency-key': key,
        },
        body: JSON.stringify({ eventName: 'page.scraped', count, toolName: 'charge_pages' }),
      },
    );
    return { status: response.status, body: await response.json() };
  }

  const build = (headers: Headers) => {
    const server = new McpServer({ name: 'metered-provider', version: '1.0.0' });
    server.registerTool(
      'lookup',
      {
        description: 'Returns the population of a city by its name.',
        inputSchema: z.object({ city: z.string().describe('City name') }),
      },
      async ({ city }) => ({
        content: [{ type: 'text', text: `${city}: 545000` }],
      }),
    );
    server.registerTool(
      'slow_lookup',
      {
        description: 'Returns the population of a city by its name, after a while.',
        inputSchema: z.object({ city: z.string().describe('City name'), gate: z.string().describe('Wait name') }),
      },
      async ({ city, gate: name }) => {
        await wait(name);
        return { content: [{ type: 'text', text: `${city}: 545000 (slow)` }] };
      },
    );
    server.registerTool(
      'charge_pages',
      {
        description: 'Scrapes pages and reports each one as a billable page.scraped event.',
        inputSchema: z.object({
          pages: z.number().int().min(1).describe('Pages to scrape'),
          gate: z.string().optional().describe('Wait name'),
        }),
      },
      async ({ pages, gate: name }) => {
        if (name) await wait(name);
        const result = await charge(headers, `call-${randomUUID()}`, pages);
        const forwarded: Record<string, string> = {};
        headers.forEach((value, key) => {
          if (key.startsWith('x-service-charge-') && key !== 'x-service-charge-token') forwarded[key] = value;
        });
        return { content: [{ type: 'text', text: JSON.stringify({ charge: result, forwarded }) }] };
      },
    );
    return server;
  };

  const handler = toNodeHandler(createMcpHandler(({ requestInfo }) => build(requestInfo?.headers ?? new Headers())));
  const server = http.createServer(async (req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    const body = await readMcpBody(req);
    if (body?.method === 'tools/call') calls.push(req.headers);
    await handler(req, res, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls: () => calls,
    arrived: (name, count = 1) =>
      new Promise<void>((resolve) => {
        const g = gate(name);
        const check = () => (g.waiting >= count ? resolve() : g.watchers.push(check));
        check();
      }),
    open: (name) => {
      const g = gate(name);
      g.opened = true;
      g.open();
    },
    configureCharging: (options) => void (charging = options),
    chargeLater: (headers, key, count = 1) =>
      charge({ get: (name) => headers[name] as string | undefined }, key, count),
    close: () =>
      new Promise<void>((resolve) => {
        for (const g of gates.values()) g.open();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
