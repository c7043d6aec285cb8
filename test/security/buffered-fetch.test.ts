// Network rule: every packet in this file goes to 127.0.0.0/8. Names resolve only through stub resolvers.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createSelfSignedCertificate } from '../support/mcp-tls';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

import { proxyForPlaywright, proxyFromTemplate } from '../../lib/net/proxy';
import { fetchBuffered, type BufferedFetchOptions } from '../../lib/net/buffered-fetch';
import { parseNetworkAllowlist, type Resolver } from '../../lib/net/ssrf';
import { FetchError, ssrfRefusal } from '../../lib/net/transport';
import { startFakeProxy, type FakeProxy } from '../support/fakes/fake-proxy';

interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface TestServer {
  host: string;
  port: number;
  origin: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void;

async function listen(server: Server, host: string, scheme: 'http' | 'https'): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  server.on('request', (request: IncomingMessage) => {
    const record: RecordedRequest = {
      method: request.method ?? '',
      url: request.url ?? '',
      headers: request.headers,
      body: '',
    };
    requests.push(record);
    request.on('data', (chunk: Buffer) => (record.body += chunk.toString()));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host,
    port,
    origin: `${scheme}://${host}:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function withBody(handler: Handler) {
  return (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => handler(request, response, Buffer.concat(chunks).toString()));
  };
}

function startHttpServer(host: string, handler: Handler): Promise<TestServer> {
  return listen(http.createServer(withBody(handler)), host, 'http');
}

function expectNetworkError(code: FetchError['code']) {
  return (error: unknown) => {
    assert.ok(error instanceof FetchError, `expected FetchError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  };
}

const LOCAL_NAMES: Record<string, string[]> = {
  'fixtures.test': ['127.0.0.1'],
  'secure.test': ['127.0.0.1'],
  'internal.example': ['127.0.0.2'],
  'multi.test': ['127.0.0.1', '10.0.0.5'],
};

const stubResolver: Resolver = async (hostname) => {
  const addresses = LOCAL_NAMES[hostname];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: 4 as const }));
};

const policy = parseNetworkAllowlist('127.0.0.1');
const bomb = zlib.gzipSync(Buffer.alloc(50 * 1024 * 1024));

describe('fetchBuffered', () => {
  let target: TestServer;
  let other: TestServer;
  let internal: TestServer;

  const fetchFrom = (pathname: string, options: Partial<BufferedFetchOptions> = {}) =>
    fetchBuffered(`${target.origin}${pathname}`, { policy, resolver: stubResolver, ...options });

  before(async () => {
    internal = await startHttpServer('127.0.0.2', (_request, response) => response.end('internal secret'));
    other = await startHttpServer('127.0.0.1', (request, response, body) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ method: request.method, headers: request.headers, body }));
    });
    target = await startHttpServer('127.0.0.1', (request, response, body) => {
      const url = new URL(request.url ?? '/', 'http://x');
      const redirect = (status: number, location: string) => {
        response.writeHead(status, { location });
        response.end('moved');
      };
      const chain = /^\/chain\/(\d+)$/.exec(url.pathname);
      if (chain) return Number(chain[1]) === 0 ? response.end('done') : redirect(302, `/chain/${Number(chain[1]) - 1}`);
      switch (url.pathname) {
        case '/hello':
          response.setHeader('set-cookie', ['a=1; Path=/', 'b=2; HttpOnly']);
          response.setHeader('x-multi', ['one', 'two']);
          return response.end('hello');
        case '/echo':
          response.setHeader('content-type', 'application/json');
          return response.end(JSON.stringify({ method: request.method, headers: request.headers, body }));
        case '/redirect-internal':
          return redirect(302, `http://127.0.0.2:${internal.port}/`);
        case '/redirect-internal-name':
          return redirect(301, `http://internal.example:${internal.port}/`);
        case '/redirect-metadata':
          return redirect(302, 'http://169.254.169.254/latest/meta-data/');
        case '/redirect-ftp':
          return redirect(302, 'ftp://127.0.0.1/file');
        case '/redirect-other':
          return redirect(307, `${other.origin}/echo`);
        case '/loop':
          return redirect(302, '/loop');
        case '/see-other':
          return redirect(303, '/echo');
        case '/found':
          return redirect(302, '/echo');
        case '/temporary':
          return redirect(307, '/echo');
        case '/big':
          response.setHeader('content-length', 2000);
          return response.end(Buffer.alloc(2000, 'x'));
        case '/big-chunked':
          for (let i = 0; i < 20; i++) response.write(Buffer.alloc(100, 'y'));
          return response.end();
        case '/gzip':
          response.setHeader('content-encoding', 'gzip');
          return response.end(zlib.gzipSync('gzipped body'));
        case '/br':
          response.setHeader('content-encoding', 'br');
          return response.end(zlib.brotliCompressSync('brotli body'));
        case '/deflate':
          response.setHeader('content-encoding', 'deflate');
          return response.end(zlib.deflateSync('zlib deflate body'));
        case '/deflate-raw':
          response.setHeader('content-encoding', 'deflate');
          return response.end(zlib.deflateRawSync('raw deflate body'));
        case '/gzip-then-br':
          response.setHeader('content-encoding', 'gzip, br');
          return response.end(zlib.brotliCompressSync(zlib.gzipSync('layered body')));
        case '/gzip-empty':
          response.setHeader('content-encoding', 'gzip');
          return response.end();
        case '/gzip-corrupt':
          response.setHeader('content-encoding', 'gzip');
          return response.end('definitely not gzip');
        case '/unknown-encoding':
          response.setHeader('content-encoding', 'zstd');
          return response.end('opaque');
        case '/bomb':
          response.setHeader('content-encoding', 'gzip');
          return response.end(bomb);
        case '/hang':
          return;
        case '/slow-body':
          response.writeHead(200, { 'content-length': 100 });
          return response.write('partial');
        case '/truncated':
          response.writeHead(200, { 'content-length': 100 });
          response.write('partial');
          return setTimeout(() => response.socket?.destroy(), 20);
        default:
          response.statusCode = 404;
          return response.end('not found');
      }
    });
  });

  after(async () => {
    await Promise.all([target, other, internal].map((server) => server.close()));
  });

  beforeEach(() => {
    for (const server of [target, other, internal]) server.requests.length = 0;
  });

  afterEach(() => {
    assert.equal(internal.requests.length, 0, 'the stand-in internal server on 127.0.0.2 must never be reached');
  });

  it('fetches an allowlisted target and reports headers and cookies', async () => {
    const response = await fetchFrom('/hello');
    assert.equal(response.status, 200);
    assert.equal(response.body.toString(), 'hello');
    assert.equal(response.url, `${target.origin}/hello`);
    assert.deepEqual(response.redirects, []);
    assert.deepEqual(response.setCookies, ['a=1; Path=/', 'b=2; HttpOnly']);
    assert.equal(response.headers['x-multi'], 'one, two');
    assert.equal(response.headers['set-cookie'], undefined);
  });

  it('refuses a loopback target that is not allowlisted, sending nothing', async () => {
    await assert.rejects(
      fetchBuffered(`${target.origin}/hello`, { policy: parseNetworkAllowlist(undefined), resolver: stubResolver }),
      expectNetworkError('blocked'),
    );
    await assert.rejects(
      fetchBuffered(`http://127.0.0.2:${internal.port}/`, { policy, resolver: stubResolver }),
      expectNetworkError('blocked'),
    );
    assert.equal(target.requests.length, 0);
  });

  it('connects by name through the guarded lookup', async () => {
    const response = await fetchBuffered(`http://fixtures.test:${target.port}/echo`, {
      policy,
      resolver: stubResolver,
    });
    assert.equal(JSON.parse(response.body.toString()).headers.host, `fixtures.test:${target.port}`);
  });

  it('allows a hostname-allowlisted name to a non-allowlisted address', async () => {
    const response = await fetchBuffered(`http://fixtures.test:${target.port}/hello`, {
      policy: parseNetworkAllowlist('fixtures.test'),
      resolver: stubResolver,
    });
    assert.equal(response.body.toString(), 'hello');
  });

  it('refuses a name whose addresses include a private one, sending nothing', async () => {
    await assert.rejects(
      fetchBuffered(`http://multi.test:${target.port}/hello`, { policy, resolver: stubResolver }),
      (error: unknown) => {
        assert.ok(ssrfRefusal(error), String(error));
        assert.match((error as Error).message, /multi\.test.*10\.0\.0\.5/);
        return true;
      },
    );
    assert.equal(target.requests.length, 0);
  });

  it('refuses names resolving to a non-allowlisted loopback address, sending nothing', async () => {
    await assert.rejects(
      fetchBuffered(`http://internal.example:${internal.port}/`, { policy, resolver: stubResolver }),
      expectNetworkError('blocked'),
    );
  });

  it('re-checks every redirect hop (IP literal)', async () => {
    await assert.rejects(fetchFrom('/redirect-internal'), (error: unknown) => {
      assert.equal(ssrfRefusal(error)?.host, '127.0.0.2');
      return true;
    });
    assert.equal(target.requests.length, 1);
  });

  it('re-checks every redirect hop (name resolved by the guard)', async () => {
    await assert.rejects(fetchFrom('/redirect-internal-name'), expectNetworkError('blocked'));
  });

  it('refuses a redirect to the metadata address without DNS', async () => {
    await assert.rejects(fetchFrom('/redirect-metadata'), /cloud metadata/);
  });

  it('follows redirects and lists every redirecting URL', async () => {
    const response = await fetchFrom('/chain/3');
    assert.equal(response.body.toString(), 'done');
    assert.equal(response.url, `${target.origin}/chain/0`);
    assert.deepEqual(response.redirects, [
      `${target.origin}/chain/3`,
      `${target.origin}/chain/2`,
      `${target.origin}/chain/1`,
    ]);
  });

  it('stops at the redirect limit', async () => {
    await assert.rejects(fetchFrom('/loop'), expectNetworkError('too_many_redirects'));
    assert.equal(target.requests.length, 6);
    await assert.rejects(fetchFrom('/chain/3', { maxRedirects: 2 }), expectNetworkError('too_many_redirects'));
    assert.equal((await fetchFrom('/chain/2', { maxRedirects: 2 })).body.toString(), 'done');
  });

  it('returns the 3xx as is when maxRedirects is 0', async () => {
    const response = await fetchFrom('/loop', { maxRedirects: 0 });
    assert.equal(response.status, 302);
    assert.equal(response.headers.location, '/loop');
    assert.equal(response.body.toString(), 'moved');
  });

  it('refuses redirects to non-http schemes', async () => {
    await assert.rejects(fetchFrom('/redirect-ftp'), expectNetworkError('bad_scheme'));
  });

  it('refuses non-http schemes up front', async () => {
    await assert.rejects(fetchBuffered('file:///etc/passwd', { policy }), expectNetworkError('bad_scheme'));
  });

  it('turns POST into GET on 303 and 302, dropping the body', async () => {
    for (const pathname of ['/see-other', '/found']) {
      const response = await fetchFrom(pathname, {
        method: 'POST',
        body: 'payload',
        headers: { 'Content-Type': 'text/plain' },
      });
      const echoed = JSON.parse(response.body.toString());
      assert.equal(echoed.method, 'GET', pathname);
      assert.equal(echoed.body, '');
      assert.equal(echoed.headers['content-type'], undefined);
      assert.equal(echoed.headers['content-length'], undefined);
    }
  });

  it('keeps method and body on 307', async () => {
    const response = await fetchFrom('/temporary', { method: 'POST', body: 'payload' });
    const echoed = JSON.parse(response.body.toString());
    assert.equal(echoed.method, 'POST');
    assert.equal(echoed.body, 'payload');
  });

  it('drops credentials when a redirect changes origin', async () => {
    const response = await fetchFrom('/redirect-other', {
      headers: { Authorization: 'Bearer secret', Cookie: 'session=1', 'X-Keep': 'yes' },
    });
    const echoed = JSON.parse(response.body.toString());
    assert.equal(echoed.headers.authorization, undefined);
    assert.equal(echoed.headers.cookie, undefined);
    assert.equal(echoed.headers['x-keep'], 'yes');
    assert.equal(target.requests[0].headers.authorization, 'Bearer secret');
  });

  it('sends URL credentials as basic auth and never reports them', async () => {
    const response = await fetchBuffered(`http://user:p%40ss@127.0.0.1:${target.port}/echo#frag`, { policy });
    assert.equal(
      JSON.parse(response.body.toString()).headers.authorization,
      `Basic ${Buffer.from('user:p@ss').toString('base64')}`,
    );
    assert.equal(response.url, `${target.origin}/echo`);
  });

  it('enforces maxBytes on declared and streamed bodies', async () => {
    await assert.rejects(fetchFrom('/big', { maxBytes: 1000 }), expectNetworkError('too_large'));
    await assert.rejects(fetchFrom('/big-chunked', { maxBytes: 1000 }), expectNetworkError('too_large'));
    assert.equal((await fetchFrom('/big', { maxBytes: 2000 })).body.length, 2000);
    const head = await fetchFrom('/big', { method: 'HEAD', maxBytes: 1000 });
    assert.equal(head.body.length, 0);
    assert.equal(head.headers['content-length'], '2000');
  });

  it('enforces maxBytes on the decoded body (gzip bomb)', async () => {
    await assert.rejects(fetchFrom('/bomb', { maxBytes: 1024 * 1024 }), expectNetworkError('too_large'));
  });

  it('decodes gzip, brotli, deflate (zlib and raw) and stacked encodings', async () => {
    const expectations: Record<string, string> = {
      '/gzip': 'gzipped body',
      '/br': 'brotli body',
      '/deflate': 'zlib deflate body',
      '/deflate-raw': 'raw deflate body',
      '/gzip-then-br': 'layered body',
      '/gzip-empty': '',
    };
    for (const [pathname, text] of Object.entries(expectations)) {
      const response = await fetchFrom(pathname);
      assert.equal(response.body.toString(), text, pathname);
      assert.equal(response.headers['content-encoding'], undefined, pathname);
    }
    assert.equal(target.requests[0].headers['accept-encoding'], 'gzip, deflate, br');
  });

  it('returns bodies in unknown encodings as received', async () => {
    const response = await fetchFrom('/unknown-encoding');
    assert.equal(response.body.toString(), 'opaque');
    assert.equal(response.headers['content-encoding'], 'zstd');
  });

  it('reports an undecodable body as a network error', async () => {
    await assert.rejects(fetchFrom('/gzip-corrupt'), (error: unknown) => {
      assert.ok(error instanceof FetchError);
      assert.equal(error.code, 'network');
      assert.match(error.message, /decode the gzip body/);
      return true;
    });
  });

  it('reports a truncated body as a connection closed mid-response', async () => {
    await assert.rejects(fetchFrom('/truncated'), expectNetworkError('reset'));
  });

  it('times out the whole request, waiting for headers or for the body', async () => {
    for (const pathname of ['/hang', '/slow-body']) {
      await assert.rejects(fetchFrom(pathname, { timeoutMs: 200 }), expectNetworkError('timeout'), pathname);
    }
  });

  it('rejects with the caller signal reason when aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled by caller');
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(fetchFrom('/hang', { signal: controller.signal }), (error: unknown) => error === reason);
    await assert.rejects(
      fetchFrom('/hello', { signal: AbortSignal.abort(reason) }),
      (error: unknown) => error === reason,
    );
  });

  it('reports a refused connection as such, naming the target', async () => {
    const closed = await startHttpServer('127.0.0.1', () => {});
    await closed.close();
    await assert.rejects(fetchBuffered(`${closed.origin}/`, { policy }), (error: unknown) => {
      expectNetworkError('refused')(error);
      assert.match((error as Error).message, new RegExp(`${closed.origin} refused the connection`));
      return true;
    });
  });
});

describe('fetchBuffered over TLS and through a proxy', () => {
  let certDir: string;
  let cert: Buffer;
  let secure: TestServer;
  let plain: TestServer;
  let internal: TestServer;
  let proxy: TestServer;
  const connectLines: string[] = [];
  const connectAuthorizations: Array<string | undefined> = [];
  const tunnelSockets = new Set<net.Socket>();

  const PROXY_USER = 'user-{country}';
  const PROXY_PASSWORD = 'p%40ss';

  before(async () => {
    certDir = mkdtempSync(path.join(tmpdir(), 'buffered-fetch-'));
    const tls = createSelfSignedCertificate(certDir, 'secure.test', 'DNS:secure.test,IP:127.0.0.1');
    cert = tls.cert;
    const secureServer = https.createServer(
      { key: tls.key, cert },
      withBody((request, response) => {
        response.end(`secure ${request.method} ${request.url} host=${request.headers.host}`);
      }),
    );
    secure = await listen(secureServer, '127.0.0.1', 'https');
    plain = await startHttpServer('127.0.0.1', (request, response) => response.end(`plain ${request.url}`));
    internal = await startHttpServer('127.0.0.2', (_request, response) => response.end('internal secret'));

    const proxyServer = http.createServer((request, response) => {
      const upstream = new URL(request.url ?? '');
      assert.ok(upstream.hostname.startsWith('127.'), 'test proxy only forwards to loopback');
      const forwarded = http.request(
        {
          hostname: upstream.hostname,
          port: upstream.port,
          path: upstream.pathname + upstream.search,
          method: request.method,
          headers: { host: upstream.host },
        },
        (upstreamResponse) => {
          response.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
          upstreamResponse.pipe(response);
        },
      );
      request.pipe(forwarded);
    });
    proxyServer.on('connect', (request: IncomingMessage, clientSocket: net.Socket) => {
      tunnelSockets.add(clientSocket);
      connectLines.push(`${request.method} ${request.url}`);
      connectAuthorizations.push(request.headers['proxy-authorization']);
      if (request.headers['proxy-authorization'] === undefined) {
        clientSocket.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
        return;
      }
      const [host, port] = (request.url ?? '').split(':');
      const upstreamHost = LOCAL_NAMES[host]?.[0] ?? host;
      assert.ok(upstreamHost.startsWith('127.'), 'test proxy only tunnels to loopback');
      const upstream = net.connect(Number(port), upstreamHost, () => {
        clientSocket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.pipe(clientSocket);
        clientSocket.pipe(upstream);
      });
      upstream.on('error', () => clientSocket.destroy());
      clientSocket.on('error', () => upstream.destroy());
      clientSocket.on('close', () => upstream.destroy());
    });
    proxy = await listen(proxyServer, '127.0.0.1', 'http');
  });

  after(async () => {
    tunnelSockets.forEach((socket) => socket.destroy());
    await Promise.all([secure, plain, internal, proxy].map((server) => server.close()));
    rmSync(certDir, { recursive: true, force: true });
  });

  beforeEach(() => {
    for (const server of [secure, plain, internal, proxy]) server.requests.length = 0;
    connectLines.length = 0;
    connectAuthorizations.length = 0;
  });

  afterEach(() => {
    assert.equal(internal.requests.length, 0, 'the stand-in internal server on 127.0.0.2 must never be reached');
  });

  const proxyConfig = () => proxyFromTemplate(`http://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`, 'DE');
  const expectedProxyAuthorization = `Basic ${Buffer.from('user-DE:p@ss').toString('base64')}`;

  it('fetches https directly, verifying the certificate against the name', async () => {
    const response = await fetchBuffered(`https://secure.test:${secure.port}/direct`, {
      policy,
      resolver: stubResolver,
      extraCa: cert,
    });
    assert.equal(response.body.toString(), `secure GET /direct host=secure.test:${secure.port}`);
  });

  it('rejects an untrusted certificate', async () => {
    await assert.rejects(fetchBuffered(`${secure.origin}/`, { policy }), expectNetworkError('tls'));
  });

  it('sends http targets to the proxy in absolute form with basic proxy auth', async () => {
    const response = await fetchBuffered(`${plain.origin}/via-proxy?q=1`, { policy, proxy: proxyConfig() });
    assert.equal(response.body.toString(), 'plain /via-proxy?q=1');
    assert.equal(proxy.requests.length, 1);
    assert.equal(proxy.requests[0].url, `${plain.origin}/via-proxy?q=1`);
    assert.equal(proxy.requests[0].headers['proxy-authorization'], expectedProxyAuthorization);
    assert.equal(proxy.requests[0].headers.host, `127.0.0.1:${plain.port}`);
  });

  it('tunnels https targets through CONNECT, then verifies TLS end to end', async () => {
    const response = await fetchBuffered(`https://secure.test:${secure.port}/tunnelled`, {
      policy,
      resolver: stubResolver,
      proxy: proxyConfig(),
      extraCa: cert,
    });
    assert.equal(response.body.toString(), `secure GET /tunnelled host=secure.test:${secure.port}`);
    assert.deepEqual(connectLines, [`CONNECT 127.0.0.1:${secure.port}`]);
    assert.deepEqual(connectAuthorizations, [expectedProxyAuthorization]);
  });

  it('checks the target before anything reaches the proxy', async () => {
    await assert.rejects(
      fetchBuffered(`http://internal.example:${internal.port}/`, {
        policy,
        resolver: stubResolver,
        proxy: proxyConfig(),
      }),
      expectNetworkError('blocked'),
    );
    await assert.rejects(
      fetchBuffered(`https://10.0.0.5/`, { policy, proxy: proxyConfig() }),
      expectNetworkError('blocked'),
    );
    assert.equal(proxy.requests.length, 0);
    assert.deepEqual(connectLines, []);
  });

  it("reports a refused CONNECT as the proxy's failure", async () => {
    const anonymous = proxyFromTemplate(`http://127.0.0.1:${proxy.port}`, 'de');
    await assert.rejects(
      fetchBuffered(`${secure.origin}/`, { policy, proxy: anonymous, extraCa: cert }),
      (error: unknown) => {
        assert.ok(error instanceof FetchError);
        assert.equal(error.code, 'proxy');
        assert.match(error.message, /407/);
        return true;
      },
    );
  });
});

describe("fetchBuffered: a failing proxy is the proxy's failure, on every path", () => {
  let target: TestServer;
  let refusingProxy: Server;
  let refusingPort: number;
  let closedPort: number;
  const refusals: string[] = [];

  before(async () => {
    target = await startHttpServer('127.0.0.1', (_request, response) => response.end('the page'));
    // A proxy that wants other credentials: 407 to absolute-form requests and to CONNECT alike.
    refusingProxy = http.createServer((request, response) => {
      refusals.push(request.url ?? '');
      response.writeHead(407, { 'proxy-authenticate': 'Basic realm="proxy"' }).end('proxy says no');
    });
    refusingProxy.on('connect', (request: IncomingMessage, socket: net.Socket) => {
      refusals.push(`CONNECT ${request.url}`);
      socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\n\r\n');
    });
    await new Promise<void>((resolve) => refusingProxy.listen(0, '127.0.0.1', resolve));
    refusingPort = (refusingProxy.address() as AddressInfo).port;
    const closed = await startHttpServer('127.0.0.1', () => {});
    closedPort = closed.port;
    await closed.close();
  });

  after(async () => {
    refusingProxy.closeAllConnections();
    await new Promise<void>((resolve) => refusingProxy.close(() => resolve()));
    await target.close();
  });

  beforeEach(() => (refusals.length = 0));

  const via = (port: number) => proxyFromTemplate(`http://user:secret-pass@127.0.0.1:${port}`, 'DE');

  function expectProxyFailure(pattern: RegExp) {
    return (error: unknown) => {
      assert.ok(error instanceof FetchError, `expected FetchError, got ${String(error)}`);
      assert.equal(error.code, 'proxy', error.message);
      assert.equal(error.reached, false);
      assert.match(error.message, /proxy/i);
      assert.match(error.message, pattern);
      assert.doesNotMatch(error.message, /secret-pass/);
      return true;
    };
  }

  it('reports a 407 to a plain-http request as the proxy refusing it, not as the page answering 407', async () => {
    await assert.rejects(
      fetchBuffered(`${target.origin}/page`, { policy, proxy: via(refusingPort) }),
      expectProxyFailure(/407/),
    );
    assert.deepEqual(refusals, [`${target.origin}/page`]);
    assert.equal(target.requests.length, 0);
  });

  it('reports a 407 to CONNECT the same way', async () => {
    await assert.rejects(
      fetchBuffered(`https://127.0.0.1:${target.port}/page`, { policy, proxy: via(refusingPort) }),
      expectProxyFailure(/407/),
    );
    assert.deepEqual(refusals, [`CONNECT 127.0.0.1:${target.port}`]);
  });

  for (const scheme of ['http', 'https'] as const) {
    it(`reports a proxy that refuses connections as unreachable, for an ${scheme} target, not as the target refusing`, async () => {
      await assert.rejects(
        fetchBuffered(`${scheme}://127.0.0.1:${target.port}/page`, { policy, proxy: via(closedPort) }),
        (error: unknown) => {
          expectProxyFailure(/Could not reach the proxy/)(error);
          assert.doesNotMatch((error as Error).message, new RegExp(String(target.port)));
          return true;
        },
      );
      assert.equal(target.requests.length, 0);
    });
  }
});

describe('fetchBuffered through a proxy pins the checked address', () => {
  // The worker's resolver and the proxy's own DNS disagree about each name (rebinding, split horizon): the guard
  // checks the worker's answer, so the proxy must be handed that address and never the name.
  const workerView: Resolver = async (hostname) => {
    const addresses: Record<string, string> = {
      'rebind.test': '127.0.0.1',
      'pinned.test': '127.0.0.1',
      'wrong-name.test': '127.0.0.1',
    };
    if (!addresses[hostname])
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return [{ address: addresses[hostname], family: 4 as const }];
  };
  let certDir: string;
  let cert: Buffer;
  let plain: TestServer;
  let secure: TestServer;
  let internal: TestServer;
  let proxy: FakeProxy;

  before(async () => {
    certDir = mkdtempSync(path.join(tmpdir(), 'buffered-fetch-pin-'));
    const tls = createSelfSignedCertificate(certDir, 'pinned.test', 'DNS:pinned.test');
    cert = tls.cert;
    const secureServer = https.createServer(
      { key: tls.key, cert },
      withBody((request, response) => {
        response.end(`secure ${request.url} host=${request.headers.host}`);
      }),
    );
    secure = await listen(secureServer, '127.0.0.1', 'https');
    plain = await startHttpServer('127.0.0.1', (request, response) =>
      response.end(`plain ${request.url} host=${request.headers.host}`),
    );
    internal = await startHttpServer('127.0.0.2', (_request, response) => response.end('internal secret'));
    proxy = await startFakeProxy({
      names: { 'rebind.test': '127.0.0.2', 'pinned.test': '127.0.0.2', 'wrong-name.test': '127.0.0.2' },
    });
  });

  after(async () => {
    await proxy.close();
    await Promise.all([plain, secure, internal].map((server) => server.close()));
    rmSync(certDir, { recursive: true, force: true });
  });

  beforeEach(() => {
    proxy.requests.length = 0;
  });

  afterEach(() => {
    assert.equal(
      internal.requests.length,
      0,
      'the proxy reached the internal server on 127.0.0.2 by resolving the name itself',
    );
  });

  const viaProxy = () => proxyFromTemplate(proxy.urlTemplate, 'DE');

  it('sends plain http in absolute form to the checked IP, with the name only in the Host header', async () => {
    const response = await fetchBuffered(`http://rebind.test:${plain.port}/page?q=1`, {
      policy,
      resolver: workerView,
      proxy: viaProxy(),
    });
    assert.equal(response.body.toString(), `plain /page?q=1 host=rebind.test:${plain.port}`);
    assert.deepEqual(
      proxy.requests.map((r) => r.target),
      [`http://127.0.0.1:${plain.port}/page?q=1`],
    );
    assert.equal(proxy.requests[0].host, `rebind.test:${plain.port}`);
    assert.ok(proxy.requests.every((r) => !r.target.includes('rebind.test')));
  });

  it('tunnels https with CONNECT to the checked IP, SNI and certificate checked against the name', async () => {
    const response = await fetchBuffered(`https://pinned.test:${secure.port}/tls`, {
      policy,
      resolver: workerView,
      proxy: viaProxy(),
      extraCa: cert,
    });
    assert.equal(response.body.toString(), `secure /tls host=pinned.test:${secure.port}`);
    assert.deepEqual(
      proxy.requests.map((r) => r.target),
      [`CONNECT 127.0.0.1:${secure.port}`],
    );
  });

  it('still refuses a certificate that does not name the host, though the address is right', async () => {
    await assert.rejects(
      fetchBuffered(`https://wrong-name.test:${secure.port}/`, {
        policy,
        resolver: workerView,
        proxy: viaProxy(),
        extraCa: cert,
      }),
      (error: unknown) =>
        error instanceof FetchError &&
        error.code === 'tls' &&
        /wrong-name\.test/.test(String(error.cause ?? error.message)),
    );
    assert.deepEqual(
      proxy.requests.map((r) => r.target),
      [`CONNECT 127.0.0.1:${secure.port}`],
    );
  });

  it('pins every redirect hop too', async () => {
    const redirector = await startHttpServer('127.0.0.1', (_request, response) => {
      response.writeHead(302, { location: `http://rebind.test:${plain.port}/after` }).end();
    });
    try {
      const response = await fetchBuffered(`http://127.0.0.1:${redirector.port}/start`, {
        policy,
        resolver: workerView,
        proxy: viaProxy(),
      });
      assert.equal(response.body.toString(), `plain /after host=rebind.test:${plain.port}`);
      assert.deepEqual(
        proxy.requests.map((r) => r.target),
        [`http://127.0.0.1:${redirector.port}/start`, `http://127.0.0.1:${plain.port}/after`],
      );
    } finally {
      await redirector.close();
    }
  });
});

describe('proxy adapter', () => {
  it('returns null without a template', () => {
    assert.equal(proxyFromTemplate(undefined, 'de'), null);
    assert.equal(proxyFromTemplate('  ', 'de'), null);
  });

  it('substitutes the country code as given', () => {
    assert.equal(proxyFromTemplate('http://cust-{country}:pw@proxy.example:8000', 'us')?.url.username, 'cust-us');
    assert.equal(proxyFromTemplate('http://cust-{country}:pw@proxy.example:8000', 'US')?.url.username, 'cust-US');
    assert.equal(proxyFromTemplate('http://u:p@{country}.proxy.example:8000', 'fr')?.url.hostname, 'fr.proxy.example');
  });

  it('rejects country values that could rewrite the URL, and non-http proxies, without echoing secrets', () => {
    assert.throws(() => proxyFromTemplate('http://cust-{country}:pw@proxy.example', 'de@evil'), /two-letter/);
    assert.throws(() => proxyFromTemplate('http://cust-{country}:pw@proxy.example', ''), /two-letter/);
    assert.throws(
      () => proxyFromTemplate('socks5://u:secretpw@proxy.example:1080', 'de'),
      (error: Error) => !error.message.includes('secretpw'),
    );
    assert.throws(
      () => proxyFromTemplate('not a url secretpw', 'de'),
      (error: Error) => !error.message.includes('secretpw'),
    );
  });

  it('ignores the country when the template has no placeholder', () => {
    assert.equal(proxyFromTemplate('http://proxy.example:3128', '')?.url.host, 'proxy.example:3128');
  });

  it('produces the Playwright proxy option with decoded credentials', () => {
    const config = proxyFromTemplate('http://cust-{country}:p%40ss@proxy.example:8000', 'gb');
    assert.ok(config);
    assert.deepEqual(proxyForPlaywright(config), {
      server: 'http://proxy.example:8000',
      username: 'cust-gb',
      password: 'p@ss',
    });
    assert.deepEqual(proxyForPlaywright({ url: new URL('http://proxy.example:3128') }), {
      server: 'http://proxy.example:3128',
    });
  });
});
