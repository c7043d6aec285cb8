import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Harness } from './harness';
import { approvedServiceEntry } from '../fakes/market-provider';

/**
 * The hosted `/mcp/{entryId}` endpoint in front of an upstream MCP server, as the conformance CLI can reach
 * it: the upstream listed as a free market entry and approved, and a loopback relay that adds the consumer's
 * `Authorization: Bearer <api key>` to every request (the CLI has no option for request headers). Everything
 * else — method, path, Host, Origin, the MCP headers, bodies and SSE streams — passes through the relay
 * unchanged, so the suite's Host/Origin and header checks judge the hosted endpoint itself.
 */
export interface HostedEndpoint {
  entryId: string;
  /** The URL to give the conformance CLI (the relay). */
  url: string;
  close: () => Promise<void>;
}

/**
 * Lists `upstreamUrl` as a free remote-MCP entry of a new provider, approves it, and opens the hosted endpoint
 * for a new consumer at `apiBaseUrl` (default: the harness's API; a stack started with `startIsolatedStack`
 * can have its own MCP rate limit).
 */
export async function hostedEndpointFor(
  h: Harness,
  upstreamUrl: string,
  apiBaseUrl = h.baseUrl,
): Promise<HostedEndpoint> {
  const provider = await h.createUser({ creditUsd: 0 });
  const consumer = await h.createUser({ creditUsd: 5 });
  const entry = await approvedServiceEntry(h, provider, upstreamUrl, {
    monetizationStrategy: 'free',
    name: `Conformance fixture ${Date.now()}`,
  });
  const relay = await startBearerRelay(`${apiBaseUrl}/mcp/${entry.entryId}`, consumer.apiKey);
  return { entryId: entry.entryId, url: relay.url, close: relay.close };
}

/** A loopback HTTP relay to `target`'s origin that adds `Authorization: Bearer <token>`; returns `target` as seen through it. */
export async function startBearerRelay(
  target: string,
  token: string,
): Promise<{ url: string; close: () => Promise<void> }> {
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const forwarded = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    forwarded.on('error', () =>
      res.headersSent ? res.destroy() : res.writeHead(502).end('relay: upstream unreachable'),
    );
    res.on('close', () => forwarded.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}${upstream.search}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
