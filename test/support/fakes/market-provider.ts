import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { parseNetworkAllowlist } from '../../../lib/net/ssrf';
import { connectAndList } from '../../../lib/tools/source';
import type { Harness } from '../stack/harness';
import { approvedEntry, storeValidation } from '../market';
import { readMcpBody } from '../mcp-request-body';

/**
 * A market provider's MCP service on loopback (SDK v2 server, stateless, current revision plus the
 * 2025 fallback). It records the headers of every request (so tests see what the platform forwarded
 * and that the consumer's key never arrives), lets a test change a tool's description (a rug pull),
 * and its `scrape_pages` tool charges provider events the way a real provider does: with the
 * x-service-charge-* headers the platform forwarded, its own API key and an idempotency key.
 */
export interface ProviderCharge {
  status: number;
  body: any;
}

export interface MarketProviderService {
  url: string;
  requests: { method: string; headers: http.IncomingHttpHeaders }[];
  /** Headers of the requests that carried a tools/call. */
  toolCallHeaders: () => http.IncomingHttpHeaders[];
  runs: (tool: string) => number;
  setDescription(tool: string, description: string): void;
  /** Where the provider's service reports charges, with which key. */
  configureCharging(options: { apiBase: string; apiKey: string }): void;
  close(): Promise<void>;
}

export const PROVIDER_DESCRIPTIONS = {
  lookup_city: 'Returns the population and the country of a city by its name.',
  broken_lookup: 'Looks a city up in a registry that is currently failing; reports the error.',
  scrape_pages: 'Scrapes pages of a site and reports each page as a billable page.scraped event.',
} as const;

export async function startMarketProvider(): Promise<MarketProviderService> {
  const descriptions: Record<string, string> = { ...PROVIDER_DESCRIPTIONS };
  const runs = new Map<string, number>();
  const requests: MarketProviderService['requests'] = [];
  const callHeaders: http.IncomingHttpHeaders[] = [];
  let charging: { apiBase: string; apiKey: string } | null = null;
  const ran = (tool: string) => runs.set(tool, (runs.get(tool) ?? 0) + 1);

  async function charge(headers: Headers, key: string, eventName: string, count: number): Promise<ProviderCharge> {
    if (!charging) throw new Error('charging not configured');
    const runId = headers.get('x-service-charge-run-id');
    const response = await fetch(`${charging.apiBase}/api/v1/provider/runs/${runId}/charge`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': charging.apiKey,
        'x-service-charge-token': headers.get('x-service-charge-token') ?? '',
        'idempotency-key': key,
      },
      body: JSON.stringify({ eventName, count, toolName: 'scrape_pages' }),
    });
    return { status: response.status, body: await response.json() };
  }

  const build = (headers: Headers) => {
    const server = new McpServer({ name: 'city-provider', version: '1.0.0' });
    server.registerTool(
      'lookup_city',
      { description: descriptions.lookup_city, inputSchema: z.object({ city: z.string().describe('City name') }) },
      async ({ city }) => {
        ran('lookup_city');
        return { content: [{ type: 'text', text: `${city}: population 545000, country PT` }] };
      },
    );
    server.registerTool(
      'broken_lookup',
      { description: descriptions.broken_lookup, inputSchema: z.object({ city: z.string().describe('City name') }) },
      async () => {
        ran('broken_lookup');
        return { isError: true, content: [{ type: 'text', text: 'the registry is down' }] };
      },
    );
    server.registerTool(
      'scrape_pages',
      {
        description: descriptions.scrape_pages,
        inputSchema: z.object({
          batches: z.array(z.number().int().min(1)).describe('Pages produced per batch'),
          replay: z.boolean().optional(),
        }),
      },
      async ({ batches, replay }) => {
        ran('scrape_pages');
        const results: ProviderCharge[] = [];
        const runId = headers.get('x-service-charge-run-id');
        for (const [i, count] of batches.entries()) {
          results.push(await charge(headers, `${runId}-batch-${i}`, 'page.scraped', count));
          if (replay) results.push(await charge(headers, `${runId}-batch-${i}`, 'page.scraped', count));
        }
        const forwarded: Record<string, string> = {};
        headers.forEach((value, name) => {
          if (name.startsWith('x-service-charge-') && name !== 'x-service-charge-token') forwarded[name] = value;
        });
        return { content: [{ type: 'text', text: JSON.stringify({ charges: results, forwarded }) }] };
      },
    );
    return server;
  };

  const handler = toNodeHandler(createMcpHandler(({ requestInfo }) => build(requestInfo?.headers ?? new Headers())));
  const server = http.createServer(async (req, res) => {
    requests.push({ method: req.method ?? 'GET', headers: req.headers });
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    const body = await readMcpBody(req);
    if (body?.method === 'tools/call') callHeaders.push(req.headers);
    await handler(req, res, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    toolCallHeaders: () => callHeaders,
    runs: (tool) => runs.get(tool) ?? 0,
    setDescription: (tool, description) => void (descriptions[tool] = description),
    configureCharging: (options) => void (charging = options),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The tools of a provider service as the market's discovery sees them (name, description, inputSchema, and the tool as the server listed it). */
export async function discoveredTools(url: string) {
  const { session, tools } = await connectAndList(
    new URL(url),
    {},
    { policy: parseNetworkAllowlist('127.0.0.1,localhost') },
  );
  await session.close();
  return tools.map(({ name, description, inputSchema, listing }) => ({
    name,
    description,
    inputSchema,
    ...(listing && { listing }),
  }));
}

/** An approved, live entry of `provider` serving `url` (submission overrides as for submissionBody). */
export async function approvedServiceEntry(
  h: Harness,
  provider: { userId: string; apiKey: string },
  url: string,
  overrides: Record<string, unknown>,
) {
  const validation = await storeValidation(h, provider.userId, { url, tools: await discoveredTools(url) });
  return approvedEntry(h, provider, overrides, validation);
}
