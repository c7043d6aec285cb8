// Network rule: every packet in this file goes to 127.0.0.0/8 — names are resolved only by the loopback fake DNS.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { loadConfig } from '../../lib/config';
import { dnsServersResolver, parseDnsServers } from '../../lib/net/dns';
import { createStreamingFetch } from '../../lib/net/streaming-fetch';
import { findFetchError } from '../../lib/net/transport';
import { networkPolicyFromConfig } from '../../lib/net/policy';
import { fetchBuffered } from '../../lib/net/buffered-fetch';
import { startFakeDns, type FakeDns } from '../support/fakes/fake-dns';
import { useHarness, type Harness } from '../support/stack/harness';
import { startInternalTarget, type InternalTarget } from '../support/fakes/mcp-internal-target';

/** A name no zone has: unique per call, so the fake DNS's query log proves this very lookup reached it. */
const madeUpName = (tld = 'aa') => `nowhere-${randomBytes(4).toString('hex')}.${tld}`;

describe('DNS_SERVERS: the SSRF guard resolves names only through the configured servers', function () {
  describe('configuration', function () {
    it('parses ip, ip:port, [ipv6]:port and bare IPv6 entries', function () {
      assert.deepEqual(parseDnsServers(' 127.0.0.1:5353, 10.0.0.1 ,[::1]:53,fd00::1 '), [
        { address: '127.0.0.1', port: 5353 },
        { address: '10.0.0.1', port: 53 },
        { address: '::1', port: 53 },
        { address: 'fd00::1', port: 53 },
      ]);
      assert.deepEqual(parseDnsServers(undefined), []);
      assert.deepEqual(parseDnsServers(''), []);
    });

    it('refuses names and bad ports with a message naming DNS_SERVERS', function () {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dns-config-'));
      try {
        for (const bad of ['dns.example:53', '127.0.0.1:0', '127.0.0.1:70000', '127.0.0.1:x', '[::1']) {
          assert.throws(
            () =>
              loadConfig({
                DATA_DIR: dataDir,
                ADMIN_TOKEN: 't'.repeat(32),
                MASTER_KEY: '0'.repeat(64),
                DNS_SERVERS: bad,
              }),
            /DNS_SERVERS is invalid/,
            bad,
          );
        }
        const config = loadConfig({
          DATA_DIR: dataDir,
          ADMIN_TOKEN: 't'.repeat(32),
          MASTER_KEY: '0'.repeat(64),
          DNS_SERVERS: '127.0.0.1:5353',
        });
        assert.deepEqual(config.dnsServers, [{ address: '127.0.0.1', port: 5353 }]);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });

  describe('the resolver and the guard', function () {
    let dns: FakeDns;
    let site: http.Server;
    let sitePort: number;
    let internal: InternalTarget;

    before(async () => {
      dns = await startFakeDns({
        'site.dns.test': ['127.0.0.1'],
        'dual.dns.test': ['127.0.0.1', '::1'],
        'v6only.dns.test': ['::1'],
      });
      internal = await startInternalTarget();
      dns.set('internal.dns.test', ['127.0.0.2']);
      site = http.createServer((req, res) => res.end(`hello from ${req.headers.host}`));
      await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
      sitePort = (site.address() as AddressInfo).port;
    });
    after(async () => {
      await Promise.all([dns.close(), internal.close(), new Promise<void>((resolve) => site.close(() => resolve()))]);
    });

    it('answers A and AAAA from the servers, ENOTFOUND for a name they do not have, loopback for localhost', async function () {
      const resolve = dnsServersResolver(parseDnsServers(dns.server));
      assert.deepEqual(await resolve('site.dns.test'), [{ address: '127.0.0.1', family: 4 }]);
      assert.deepEqual(await resolve('Dual.DNS.test.'), [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ]);
      assert.deepEqual(await resolve('v6only.dns.test'), [{ address: '::1', family: 6 }]);
      const name = madeUpName();
      await assert.rejects(
        resolve(name),
        (error: NodeJS.ErrnoException) => error.code === 'ENOTFOUND' && error.message.includes(name),
      );
      assert.ok(
        dns.queries().some((q) => q.name === name && q.type === 'A'),
        'the fake DNS was not asked',
      );
      const before = dns.queries().length;
      assert.deepEqual(
        (await resolve('localhost')).map((a) => a.address),
        ['127.0.0.1', '::1'],
      );
      assert.equal(dns.queries().length, before, 'localhost was sent to the DNS server');
    });

    it('reports a server that does not answer as EAI_AGAIN (a DNS failure), not as a missing host', async function () {
      const silent = dnsServersResolver(parseDnsServers('127.0.0.1:9'), { timeoutMs: 200, tries: 1 });
      await assert.rejects(silent(madeUpName('test')), (error: NodeJS.ErrnoException) => error.code === 'EAI_AGAIN');
    });

    it('connects to the address the configured servers gave, and refuses a name they map to an internal address', async function () {
      const policy = networkPolicyFromConfig({
        networkAllowlist: '127.0.0.1',
        dnsServers: parseDnsServers(dns.server),
      });
      const response = await fetchBuffered(`http://site.dns.test:${sitePort}/`, { policy });
      assert.equal(response.status, 200);
      assert.equal(response.body.toString(), `hello from site.dns.test:${sitePort}`);
      await assert.rejects(
        fetchBuffered(`http://internal.dns.test:${internal.port}/`, { policy }),
        (error) => findFetchError(error)?.code === 'blocked',
      );
      const guarded = createStreamingFetch({ policy });
      assert.equal(
        await (await guarded(`http://site.dns.test:${sitePort}/`)).text(),
        `hello from site.dns.test:${sitePort}`,
      );
      await assert.rejects(
        guarded(`http://internal.dns.test:${internal.port}/`),
        (error) => findFetchError(error)?.code === 'blocked',
      );
      assert.equal(internal.connections(), 0);
    });

    it('classifies a name the servers do not have as host_not_found, naming the host', async function () {
      const policy = networkPolicyFromConfig({
        networkAllowlist: '127.0.0.1',
        dnsServers: parseDnsServers(dns.server),
      });
      const name = madeUpName();
      await assert.rejects(createStreamingFetch({ policy })(`https://${name}/mcp`), (error) => {
        const failure = findFetchError(error);
        assert.equal(failure?.code, 'host_not_found');
        assert.match(failure.message, new RegExp(name.replace(/\./g, '\\.')));
        return true;
      });
      assert.ok(dns.queries().some((q) => q.name === name));
    });
  });

  describe('through the API (the harness resolves only through its fake DNS)', function () {
    this.timeout(120_000);
    let h: Harness;
    let apiKey: string;

    before(async () => {
      h = await useHarness();
      ({ apiKey } = await h.createUser());
    });

    const cases = [
      { what: 'market discovery', path: '/api/v1/mcp-market/discover' },
      { what: 'market validation', path: '/api/v1/mcp-market/validate' },
      { what: 'custom agent discovery', path: '/api/v1/agents/discover-mcp' },
    ];
    for (const { what, path } of cases) {
      it(`answers 400 host_not_found for ${what} of a URL whose host does not resolve, after asking the fake DNS`, async function () {
        const name = madeUpName();
        for (const body of [
          { type: 'remote_mcp', url: `https://${name}/mcp` },
          { type: 'openapi', url: `https://${name}/openapi.json` },
        ]) {
          const response = await h.http('POST', path, { apiKey, body });
          assert.equal(response.status, 400, JSON.stringify(response.body));
          assert.equal(response.body.error.code, 'host_not_found');
          assert.ok(response.body.error.message.includes(name), response.body.error.message);
          assert.equal(typeof response.body.error.requestId, 'string');
        }
        assert.ok(
          h.dns.queries().some((q) => q.name === name),
          `the fake DNS never saw ${name}: the lookup went elsewhere`,
        );
      });
    }

    it('fails a scrape of a made-up host naming it, after asking the fake DNS', async function () {
      const name = madeUpName();
      const accepted = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `http://${name}/page` } });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const job = await h.waitForJob(apiKey, `/api/v1/scrape/status/${accepted.body.jobId}`);
      assert.equal(job.status, 'failed', JSON.stringify(job));
      assert.match(JSON.stringify(job.error), new RegExp(`ENOTFOUND ${name.replace(/\./g, '\\.')}`));
      assert.ok(
        h.dns.queries().some((q) => q.name === name),
        'the page was resolved somewhere other than the guard',
      );
    });

    it('documents host_not_found among the 400 answers of each of those operations', async function () {
      const spec = (await h.http('GET', '/api/v1/openapi.json')).body;
      for (const p of ['/mcp-market/discover', '/agents/discover-mcp']) {
        assert.match(JSON.stringify(spec.paths[p].post.responses['400']), /host_not_found/, p);
      }
    });
  });
});
