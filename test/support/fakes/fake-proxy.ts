import http from 'node:http';
import net from 'node:net';

/**
 * A loopback forward proxy: absolute-form HTTP requests and CONNECT tunnels, recording what it was asked to reach.
 * Like a real proxy it resolves names itself, through `names` (standing in for the proxy's own DNS, e.g. one that
 * answers differently than the worker's: split horizon or rebinding). It only ever connects to 127.0.0.0/8.
 */
export interface FakeProxy {
  /** Template for PROXY_URL, with the country placeholder. */
  urlTemplate: string;
  port: number;
  /** `target` is the absolute-form URL, or `CONNECT host:port`; `host` is the Host header of a forwarded request. */
  requests: { target: string; authorization: string | undefined; host?: string }[];
  close(): Promise<void>;
}

export interface FakeProxyOptions {
  /** The proxy's own name resolution: name → address. Unknown names fail like NXDOMAIN. */
  names?: Record<string, string>;
}

function loopbackAddress(host: string, names: Record<string, string>): string | null {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const address = net.isIP(bare) ? bare : names[bare.toLowerCase()];
  return address && net.isIPv4(address) && address.startsWith('127.') ? address : null;
}

function splitAuthority(authority: string): { host: string; port: number } {
  const at = authority.lastIndexOf(':');
  return { host: authority.slice(0, at), port: Number(authority.slice(at + 1)) };
}

export async function startFakeProxy(options: FakeProxyOptions = {}): Promise<FakeProxy> {
  const names = options.names ?? {};
  const requests: FakeProxy['requests'] = [];
  const tunnels = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    requests.push({ target: req.url ?? '', authorization: req.headers['proxy-authorization'], host: req.headers.host });
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('absolute-form request expected');
      return;
    }
    const address = loopbackAddress(target.hostname, names);
    if (!address) {
      res.writeHead(502).end('this test proxy only forwards to 127.0.0.0/8');
      return;
    }
    const { 'proxy-authorization': _auth, ...headers } = req.headers;
    const upstream = http.request(
      { host: address, port: target.port || 80, path: target.pathname + target.search, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    requests.push({ target: `CONNECT ${req.url}`, authorization: req.headers['proxy-authorization'] });
    tunnels.add(client);
    client.on('close', () => tunnels.delete(client));
    client.on('error', () => client.destroy());
    const { host, port } = splitAuthority(req.url ?? '');
    const address = loopbackAddress(host, names);
    if (!address || !Number.isInteger(port)) {
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const upstream = net.connect(port, address, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    urlTemplate: `http://user-{country}:proxy-pass@127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise((resolve) => {
        tunnels.forEach((socket) => socket.destroy());
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
