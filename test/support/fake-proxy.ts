import http from 'node:http';

/** A loopback forward proxy (absolute-form HTTP requests) that records who asked for what. */
export interface FakeProxy {
  /** Template for PROXY_URL, with the country placeholder. */
  urlTemplate: string;
  requests: { target: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

export async function startFakeProxy(): Promise<FakeProxy> {
  const requests: FakeProxy['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ target: req.url ?? '', authorization: req.headers['proxy-authorization'] });
    const target = new URL(req.url ?? '');
    if (target.hostname !== '127.0.0.1') {
      res.writeHead(502).end('this test proxy only forwards to 127.0.0.1');
      return;
    }
    const { 'proxy-authorization': _auth, ...headers } = req.headers;
    const upstream = http.request(target, { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on('connect', (req, socket) => {
    requests.push({ target: `CONNECT ${req.url}`, authorization: req.headers['proxy-authorization'] });
    socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    urlTemplate: `http://user-{country}:proxy-pass@127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
