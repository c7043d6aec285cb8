import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * Stands in for an internal service on 127.0.0.2 (outside the test allowlist): it counts every
 * connection, so a test can assert that nothing — not even a TCP handshake — reached it.
 */
export interface InternalTarget {
  port: number;
  httpUrl: (path?: string) => string;
  httpsUrl: (path?: string) => string;
  connections: () => number;
  close: () => Promise<void>;
}

export async function startInternalTarget(tls?: { key: string; cert: string }): Promise<InternalTarget> {
  let connections = 0;
  const handler = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":"string","internal":true}');
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    httpUrl: (path = '/') => `http://127.0.0.2:${port}${path}`,
    httpsUrl: (path = '/') => `https://127.0.0.2:${port}${path}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
