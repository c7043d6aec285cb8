// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createSelfSignedCertificate } from '../support/mcp-tls';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { fetchBuffered } from '../../lib/net/buffered-fetch';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { createStreamingFetch } from '../../lib/net/streaming-fetch';
import { findFetchError } from '../../lib/net/transport';

/**
 * The buffered and the streaming client run on one transport (lib/net/transport.ts): the same redirect rule, the
 * same origin-bound headers, the same trusted CAs and the same error for the same failure, whichever client asks.
 */
const policy = parseNetworkAllowlist('127.0.0.1,localhost');

interface Client {
  name: string;
  /** Status, final body and the headers the final server saw (the echo servers answer with them). */
  get(url: string, headers?: Record<string, string>, extraCa?: Buffer): Promise<{ status: number; body: string }>;
}

const clients: Client[] = [
  {
    name: 'buffered',
    async get(url, headers = {}, extraCa) {
      const response = await fetchBuffered(url, { policy, headers, extraCa });
      return { status: response.status, body: response.body.toString() };
    },
  },
  {
    name: 'streaming',
    async get(url, headers = {}, extraCa) {
      const response = await createStreamingFetch({ policy, extraCa })(url, { headers });
      return { status: response.status, body: await response.text() };
    },
  },
];

function listen(server: http.Server | https.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function close(server: http.Server | https.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

const echo = (request: IncomingMessage, response: ServerResponse) => response.end(JSON.stringify(request.headers));

describe('one transport under the buffered and the streaming client', () => {
  let origin: http.Server;
  let other: http.Server;
  let originUrl: string;
  let otherUrl: string;

  before(async () => {
    other = http.createServer(echo);
    otherUrl = `http://127.0.0.1:${await listen(other)}`;
    origin = http.createServer((request, response) => {
      if (request.url === '/leave') return response.writeHead(307, { location: `${otherUrl}/echo` }).end();
      if (request.url === '/stay') return response.writeHead(307, { location: '/echo' }).end();
      echo(request, response);
    });
    originUrl = `http://localhost:${await listen(origin)}`;
  });

  after(async () => {
    await Promise.all([close(origin), close(other)]);
  });

  const credentials = {
    Authorization: 'Bearer upstream-secret',
    Cookie: 'session=1',
    'Proxy-Authorization': 'Basic cHJveHk6c2VjcmV0',
    'X-Api-Key': 'key-secret',
    'X-Service-Charge-Token': 'charge-secret',
    'X-Service-Charge-Run-Id': 'run-1',
    'X-Webhook-Signature': 't=1,v1=abc',
    'X-Trace': 'kept',
  };

  for (const client of clients) {
    it(`${client.name}: a redirect to another origin drops every credential and platform secret header`, async () => {
      const { status, body } = await client.get(`${originUrl}/leave`, credentials);
      assert.equal(status, 200);
      const seen = JSON.parse(body) as Record<string, string>;
      for (const name of [
        'authorization',
        'cookie',
        'proxy-authorization',
        'x-api-key',
        'x-service-charge-token',
        'x-service-charge-run-id',
        'x-webhook-signature',
      ]) {
        assert.equal(seen[name], undefined, `${name} reached the other origin`);
      }
      assert.equal(seen['x-trace'], 'kept');
    });

    it(`${client.name}: a redirect within the origin keeps them`, async () => {
      const { body } = await client.get(`${originUrl}/stay`, credentials);
      const seen = JSON.parse(body) as Record<string, string>;
      assert.equal(seen.authorization, 'Bearer upstream-secret');
      assert.equal(seen['x-service-charge-token'], 'charge-secret');
    });

    it(`${client.name}: a refused connection is the same error, naming the target`, async () => {
      const closed = http.createServer();
      const port = await listen(closed);
      await close(closed);
      await assert.rejects(client.get(`http://127.0.0.1:${port}/`), (error: unknown) => {
        const failure = findFetchError(error);
        assert.equal(failure?.code, 'refused', String(error));
        assert.equal(failure?.reached, false);
        assert.match(failure!.message, new RegExp(`http://127\\.0\\.0\\.1:${port} refused the connection`));
        return true;
      });
    });
  }
});

describe('one set of trusted CAs: the default store, NODE_EXTRA_CA_CERTS and the configured extra CA', () => {
  let dir: string;
  let fromEnv: https.Server;
  let fromConfig: https.Server;
  let envUrl: string;
  let configUrl: string;
  let configCert: Buffer;
  const savedEnv = process.env.NODE_EXTRA_CA_CERTS;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'transport-ca-'));
    const env = createSelfSignedCertificate(dir, 'env-ca', 'DNS:localhost,IP:127.0.0.1');
    const config = createSelfSignedCertificate(dir, 'config-ca', 'DNS:localhost,IP:127.0.0.1');
    configCert = config.cert;
    // What an operator's NODE_EXTRA_CA_CERTS file holds: another certificate next to the one the server uses.
    const bundle = path.join(dir, 'extra-ca-bundle.pem');
    writeFileSync(bundle, env.cert);
    process.env.NODE_EXTRA_CA_CERTS = bundle;
    fromEnv = https.createServer({ key: env.key, cert: env.cert }, (_request, response) => response.end('env'));
    fromConfig = https.createServer({ key: config.key, cert: config.cert }, (_request, response) =>
      response.end('config'),
    );
    envUrl = `https://localhost:${await listen(fromEnv)}/`;
    configUrl = `https://localhost:${await listen(fromConfig)}/`;
  });

  after(async () => {
    if (savedEnv === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
    else process.env.NODE_EXTRA_CA_CERTS = savedEnv;
    await Promise.all([close(fromEnv), close(fromConfig)]);
    rmSync(dir, { recursive: true, force: true });
  });

  for (const client of clients) {
    it(`${client.name}: with an extra CA configured, still trusts the NODE_EXTRA_CA_CERTS file`, async () => {
      assert.equal((await client.get(configUrl, {}, configCert)).body, 'config');
      assert.equal((await client.get(envUrl, {}, configCert)).body, 'env');
    });

    it(`${client.name}: refuses a certificate nobody vouches for as a TLS failure`, async () => {
      await assert.rejects(client.get(configUrl), (error: unknown) => findFetchError(error)?.code === 'tls');
    });
  }
});
