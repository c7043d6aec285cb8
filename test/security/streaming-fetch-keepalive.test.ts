import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createStreamingFetch, KEEP_ALIVE_IDLE_MS } from '../../lib/net/streaming-fetch';
import { findFetchError } from '../../lib/net/transport';
import { networkPolicyFromConfig } from '../../lib/net/policy';
import { startInternalTarget, type InternalTarget } from '../support/fakes/mcp-internal-target';

/**
 * Keep-alive in the guarded fetch (tool sources make many requests per session): connections are
 * reused for the same origin, each request still reports when it may have reached the upstream, the
 * guard still refuses what it refused, and idle connections close on their own.
 */
describe('guarded fetch with keep-alive', function () {
  this.timeout(20_000);
  let server: http.Server;
  let base: string;
  let connections = 0;
  let open = 0;
  let internal: InternalTarget;
  const policy = networkPolicyFromConfig({ networkAllowlist: '127.0.0.1', dnsServers: [] });

  before(async () => {
    server = http.createServer((req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`${req.method} ${req.url}`),
    );
    server.on('connection', (socket) => {
      connections++;
      open++;
      socket.once('close', () => open--);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    internal = await startInternalTarget();
  });

  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await internal.close();
  });

  beforeEach(() => (connections = 0));

  it('closes an idle kept-alive connection after KEEP_ALIVE_IDLE_MS', async function () {
    const fetch = createStreamingFetch({ policy, keepAlive: true });
    assert.equal(open, 0);
    await (await fetch(`${base}/idle`)).text();
    assert.equal(open, 1, 'the connection stays open for the next request');
    await new Promise((resolve) => setTimeout(resolve, KEEP_ALIVE_IDLE_MS + 700));
    assert.equal(open, 0, 'and is closed once idle');
  });

  it('sends a session of requests over one connection, and says each time that the request may have reached the upstream', async function () {
    const reached: string[] = [];
    const fetch = createStreamingFetch({
      policy,
      keepAlive: true,
      onConnected: ({ url }) => reached.push(url.pathname),
    });
    for (const path of ['/a', '/b', '/c'])
      assert.equal(await (await fetch(`${base}${path}`, { method: 'POST', body: '{}' })).text(), `POST ${path}`);
    assert.equal(connections, 1);
    assert.deepEqual(reached, ['/a', '/b', '/c']);
  });

  it('opens a connection per request without keep-alive', async function () {
    const fetch = createStreamingFetch({ policy });
    for (const path of ['/a', '/b']) await (await fetch(`${base}${path}`)).text();
    assert.equal(connections, 2);
  });

  it('still refuses an internal address next to a kept-alive connection; nothing reaches it', async function () {
    const fetch = createStreamingFetch({ policy, keepAlive: true });
    await (await fetch(`${base}/warm`)).text();
    await assert.rejects(fetch(internal.httpUrl('/')), (error) => findFetchError(error)?.code === 'blocked');
    assert.equal(internal.connections(), 0);
  });
});
