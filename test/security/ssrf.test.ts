import assert from 'node:assert/strict';
import type { LookupAddress, LookupOptions } from 'node:dns';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { createSessionRegistry } from '../../activities/agent/session-registry';
import { GUARDED_CONTEXT_OPTIONS, guardContext } from '../../activities/browser/guarded-routing';
import { createBrowserPool, type BrowserPool } from '../../activities/browser/pool';
import { proxyFromTemplate } from '../../lib/net/proxy';

import {
  assertUrlAllowed,
  checkAddress,
  classifyAddress,
  createGuardedLookup,
  parseNetworkAllowlist,
  PUBLIC_ONLY_POLICY,
  resolveAllowedAddresses,
  SsrfBlockedError,
  type AddressClass,
  type NetworkPolicy,
  type Resolver,
} from '../../lib/net/ssrf';
import { startFakeProxy } from '../support/fakes/fake-proxy';

function stubResolver(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = async (hostname: string) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(resolver, { calls });
}

const refusingResolver: Resolver = async (hostname) => {
  throw new Error(`resolver must not be called (asked for ${hostname})`);
};

type LookupResult = { error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };

function lookup(
  policy: NetworkPolicy,
  resolver: Resolver,
  hostname: string,
  options: LookupOptions = {},
): Promise<LookupResult> {
  const guarded = createGuardedLookup(policy, resolver);
  return new Promise((resolve) =>
    guarded(hostname, options, (error, address, family) => resolve({ error, address, family })),
  );
}

describe('classifyAddress', () => {
  const cases: Array<[string, AddressClass]> = [
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.5', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['100.128.0.1', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.0.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['172.15.255.255', 'public'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.0', 'public'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmark'],
    ['198.19.255.255', 'benchmark'],
    ['198.20.0.0', 'public'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['2606:4700:4700::1111', 'public'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['FD00:EC2:0:0:0:0:0:254', 'metadata'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001:2::1', 'benchmark'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
  ];
  for (const [ip, expected] of cases) {
    it(`${ip} is ${expected}`, () => assert.equal(classifyAddress(ip), expected));
  }

  describe('IPv6 forms that embed an IPv4 address', () => {
    const embedded: Array<[string, AddressClass]> = [
      ['::ffff:10.0.0.1', 'private'],
      ['::ffff:a00:1', 'private'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['0:0:0:0:0:ffff:169.254.169.254', 'metadata'],
      ['::ffff:a9fe:a9fe', 'metadata'],
      ['::ffff:c0a8:101', 'private'],
      ['::ffff:8.8.8.8', 'public'],
      ['::ffff:0.0.0.0', 'unspecified'],
      ['::ffff:0:10.0.0.1', 'private'],
      ['::10.0.0.1', 'private'],
      ['::127.0.0.1', 'loopback'],
      ['::a9fe:a9fe', 'metadata'],
      ['64:ff9b::10.0.0.1', 'private'],
      ['64:ff9b::a9fe:a9fe', 'metadata'],
      ['64:ff9b::808:808', 'public'],
      ['64:ff9b:1::a00:1', 'private'],
      ['2002:a00:1::', 'private'],
      ['2002:7f00:1::1', 'loopback'],
      ['2002:a9fe:a9fe::1', 'metadata'],
      ['2002:c0a8:101:1::1', 'private'],
      ['2002:808:808::1', 'public'],
    ];
    for (const [ip, expected] of embedded) {
      it(`${ip} is ${expected}`, () => assert.equal(classifyAddress(ip), expected));
    }
  });

  it('treats anything that is not a canonical IP literal as invalid', () => {
    for (const notAnIp of [
      '0177.0.0.1',
      '0x7f.0.0.1',
      '2130706433',
      '1.2.3',
      '256.0.0.1',
      'example.com',
      '',
      '[::1]x',
      '1::2::3',
    ]) {
      assert.equal(classifyAddress(notAnIp), 'invalid', notAnIp);
    }
  });

  it('accepts a bracketed IPv6 literal', () => assert.equal(classifyAddress('[::1]'), 'loopback'));
});

describe('parseNetworkAllowlist', () => {
  it('returns an empty policy for undefined, empty and blank values', () => {
    for (const value of [undefined, '', ' , ,']) {
      const policy = parseNetworkAllowlist(value);
      assert.equal(policy.hostnames.size, 0);
      assert.equal(policy.networks.length, 0);
    }
  });

  it('splits hostnames from addresses and CIDR ranges', () => {
    const policy = parseNetworkAllowlist(' localhost, 127.0.0.0/8,::1 ,Fixtures.Test., 10.1.2.3, fd00::/8 ');
    assert.deepEqual([...policy.hostnames], ['localhost', 'fixtures.test']);
    assert.deepEqual(
      policy.networks.map((network) => network.cidr),
      ['127.0.0.0/8', '0:0:0:0:0:0:0:1/128', '10.1.2.3/32', 'fd00:0:0:0:0:0:0:0/8'],
    );
  });

  it('masks host bits of a CIDR', () => {
    assert.equal(parseNetworkAllowlist('10.9.8.7/8').networks[0].cidr, '10.0.0.0/8');
  });

  for (const bad of [
    '10.0.0.0/33',
    '::1/129',
    '10.0.0.0/',
    '10.0.0.0/x',
    '300.1.1.1',
    '1.2.3',
    'localhost:3000',
    'foo bar',
    'http://x.test',
    '-bad.test',
    'a..b',
    '*.example.com',
    '10.0.0.0/8/8',
  ]) {
    it(`rejects ${JSON.stringify(bad)} naming the entry`, () => {
      assert.throws(
        () => parseNetworkAllowlist(`localhost,${bad}`),
        (error: Error) => error.message.includes(`"${bad}"`),
      );
    });
  }
});

describe('checkAddress', () => {
  it('allows public addresses under the default policy', () => {
    assert.deepEqual(checkAddress('93.184.215.14', 'example.com', PUBLIC_ONLY_POLICY), { allowed: true });
    assert.deepEqual(checkAddress('2606:4700::1', 'example.com', PUBLIC_ONLY_POLICY), { allowed: true });
  });

  it('refuses every non-public range under the default policy, saying why', () => {
    const refused = [
      '10.0.0.5',
      '172.16.3.4',
      '192.168.0.10',
      '169.254.1.1',
      '127.0.0.1',
      '100.64.1.1',
      '0.0.0.0',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:10.0.0.1',
      '224.0.0.1',
      '192.0.2.1',
      'not-an-ip',
    ];
    for (const ip of refused) {
      const verdict = checkAddress(ip, 'target.test', PUBLIC_ONLY_POLICY);
      assert.equal(verdict.allowed, false, ip);
      if (!verdict.allowed) assert.match(verdict.reason, new RegExp(`${ip.replace(/[.*]/g, '\\$&')}`), ip);
    }
    const verdict = checkAddress('10.0.0.5', 'x.test', PUBLIC_ONLY_POLICY);
    assert.deepEqual(verdict, {
      allowed: false,
      reason: '10.0.0.5 is a private address and is not in the network allowlist',
    });
  });

  it('allows a non-public address inside an allowlisted CIDR, including its IPv4-mapped form', () => {
    const policy = parseNetworkAllowlist('127.0.0.0/8,10.1.0.0/16');
    assert.deepEqual(checkAddress('127.0.0.1', '127.0.0.1', policy), { allowed: true });
    assert.deepEqual(checkAddress('::ffff:127.0.0.1', 'x.test', policy), { allowed: true });
    assert.deepEqual(checkAddress('::ffff:a01:203', 'x.test', policy), { allowed: true });
    assert.equal(checkAddress('10.2.0.1', 'x.test', policy).allowed, false);
    assert.equal(checkAddress('::1', 'x.test', policy).allowed, false);
  });

  it('allows non-public addresses of an allowlisted hostname, case- and trailing-dot-insensitively', () => {
    const policy = parseNetworkAllowlist('fixtures.test');
    assert.deepEqual(checkAddress('10.0.0.5', 'fixtures.test', policy), { allowed: true });
    assert.deepEqual(checkAddress('10.0.0.5', 'FIXTURES.test.', policy), { allowed: true });
    assert.equal(checkAddress('10.0.0.5', 'other.test', policy).allowed, false);
    assert.equal(checkAddress('10.0.0.5', 'sub.fixtures.test', policy).allowed, false);
  });

  it('always refuses metadata addresses, even when their range or hostname is allowlisted', () => {
    const policy = parseNetworkAllowlist(
      '169.254.0.0/16,fc00::/7,::ffff:0:0/96,0.0.0.0/0,::/0,metadata.google.internal',
    );
    for (const ip of [
      '169.254.169.254',
      'fd00:ec2::254',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '169.254.170.2',
    ]) {
      const verdict = checkAddress(ip, 'metadata.google.internal', policy);
      assert.equal(verdict.allowed, false, ip);
      if (!verdict.allowed) assert.match(verdict.reason, /metadata/);
    }
    assert.deepEqual(checkAddress('169.254.1.1', 'x.test', policy), { allowed: true });
  });
});

describe('resolveAllowedAddresses and createGuardedLookup', () => {
  const policy = parseNetworkAllowlist('127.0.0.1');

  it('refuses a name that resolves to a private address', async () => {
    const resolver = stubResolver({ 'internal.example': ['10.0.0.5'] });
    await assert.rejects(resolveAllowedAddresses('internal.example', policy, resolver), (error: unknown) => {
      assert.ok(error instanceof SsrfBlockedError);
      assert.equal(error.code, 'ssrf_blocked');
      assert.equal(error.host, 'internal.example');
      assert.match(error.message, /internal\.example.*10\.0\.0\.5 is a private address/);
      return true;
    });
  });

  it('refuses the whole name when any one of several addresses is disallowed', async () => {
    const resolver = stubResolver({ 'mixed.example': ['93.184.215.14', '2606:4700::1', '192.168.1.20'] });
    const result = await lookup(policy, resolver, 'mixed.example', { all: true });
    assert.ok(result.error instanceof SsrfBlockedError);
    assert.match(result.error.message, /192\.168\.1\.20/);
  });

  it('hands back the checked address (single and all forms)', async () => {
    const resolver = stubResolver({ 'public.example': ['93.184.215.14', '2606:4700::1'] });
    assert.deepEqual(await lookup(policy, resolver, 'public.example'), {
      error: null,
      address: '93.184.215.14',
      family: 4,
    });
    assert.deepEqual(await lookup(policy, resolver, 'public.example', { all: true }), {
      error: null,
      address: [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:4700::1', family: 6 },
      ],
      family: undefined,
    });
    assert.deepEqual(await lookup(policy, resolver, 'public.example', { family: 6 }), {
      error: null,
      address: '2606:4700::1',
      family: 6,
    });
  });

  it('supports the (hostname, family, callback) and (hostname, callback) call forms', async () => {
    const resolver = stubResolver({ 'public.example': ['93.184.215.14', '2606:4700::1'] });
    const guarded = createGuardedLookup(policy, resolver) as unknown as (...args: unknown[]) => void;
    const viaFamily = await new Promise((resolve) =>
      guarded('public.example', 6, (_e: unknown, address: string) => resolve(address)),
    );
    assert.equal(viaFamily, '2606:4700::1');
    const viaCallback = await new Promise((resolve) =>
      guarded('public.example', (_e: unknown, address: string) => resolve(address)),
    );
    assert.equal(viaCallback, '93.184.215.14');
  });

  it('reports ENOTFOUND when no address of the requested family exists', async () => {
    const resolver = stubResolver({ 'v4only.example': ['93.184.215.14'] });
    const result = await lookup(policy, resolver, 'v4only.example', { family: 6 });
    assert.equal(result.error?.code, 'ENOTFOUND');
  });

  it('passes resolver failures through', async () => {
    const result = await lookup(policy, stubResolver({}), 'missing.example');
    assert.equal(result.error?.code, 'ENOTFOUND');
  });

  it('checks IP literals without DNS', async () => {
    assert.deepEqual(await lookup(policy, refusingResolver, '127.0.0.1'), {
      error: null,
      address: '127.0.0.1',
      family: 4,
    });
    const refused = await lookup(policy, refusingResolver, '10.0.0.5');
    assert.ok(refused.error instanceof SsrfBlockedError);
    const mapped = await lookup(PUBLIC_ONLY_POLICY, refusingResolver, '::ffff:169.254.169.254');
    assert.ok(mapped.error instanceof SsrfBlockedError);
  });

  it('allows a hostname-allowlisted name to resolve to a private address', async () => {
    const resolver = stubResolver({ 'fixtures.test': ['10.0.0.5'] });
    const result = await lookup(parseNetworkAllowlist('fixtures.test'), resolver, 'fixtures.test');
    assert.deepEqual(result, { error: null, address: '10.0.0.5', family: 4 });
  });

  it('refuses metadata even for an allowlisted hostname', async () => {
    const resolver = stubResolver({ 'metadata.google.internal': ['169.254.169.254'] });
    const result = await lookup(
      parseNetworkAllowlist('metadata.google.internal,169.254.0.0/16'),
      resolver,
      'metadata.google.internal',
    );
    assert.ok(result.error instanceof SsrfBlockedError);
  });
});

describe('assertUrlAllowed', () => {
  it('refuses schemes other than http and https', async () => {
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://example.com/', 'javascript:alert(1)']) {
      await assert.rejects(assertUrlAllowed(url, PUBLIC_ONLY_POLICY, refusingResolver), SsrfBlockedError, url);
    }
  });

  it('refuses obviously internal targets, including odd IPv4 spellings normalised by the URL parser', async () => {
    const targets = [
      'http://10.0.0.5/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]:8080/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://0x7f.1/',
      'http://2130706433/',
      'http://0177.0.0.1/',
      'https://[fd00:ec2::254]/',
      'http://0/',
    ];
    for (const url of targets) {
      await assert.rejects(assertUrlAllowed(url, PUBLIC_ONLY_POLICY, refusingResolver), SsrfBlockedError, url);
    }
  });

  it('resolves names through the resolver', async () => {
    const resolver = stubResolver({ 'internal.example': ['10.0.0.5'], 'public.example': ['93.184.215.14'] });
    await assert.rejects(
      assertUrlAllowed(new URL('https://internal.example/x'), PUBLIC_ONLY_POLICY, resolver),
      SsrfBlockedError,
    );
    await assertUrlAllowed('https://public.example/x', PUBLIC_ONLY_POLICY, resolver);
    assert.deepEqual(resolver.calls, ['internal.example', 'public.example']);
  });

  it('allows an allowlisted loopback target', async () => {
    await assertUrlAllowed('http://127.0.0.1:3000/', parseNetworkAllowlist('127.0.0.0/8'), refusingResolver);
  });
});

describe('guarded browser contexts', function () {
  this.timeout(60_000);
  const BLOB_BYTES = 1024 * 1024;
  const policy = parseNetworkAllowlist('127.0.0.1');
  let server: Server;
  let internal: Server;
  let internalHits = 0;
  let origin: string;
  let port: number;
  let pool: BrowserPool;

  before(async () => {
    server = http.createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://x');
      const html = (body: string) =>
        response
          .writeHead(200, { 'content-type': 'text/html' })
          .end(`<!doctype html><html><body>${body}</body></html>`);
      switch (url.pathname) {
        case '/sw.js':
          return void response
            .writeHead(200, { 'content-type': 'text/javascript' })
            .end("self.addEventListener('fetch', () => {});");
        case '/blob':
          return void response
            .writeHead(200, { 'content-type': 'application/octet-stream' })
            .end(Buffer.alloc(BLOB_BYTES, 'b'));
        case '/heavy':
          return html(`<script>
            Promise.allSettled(Array.from({ length: 6 }, (_, i) => fetch('/blob?i=' + i).then((r) => r.arrayBuffer())))
              .then((results) => { document.body.dataset.loaded = String(results.filter((r) => r.status === 'fulfilled').length); });
          </script>`);
        case '/light':
          return html(`<script>
            fetch('/blob?single').then((r) => r.arrayBuffer()).then(() => 1, () => 0).then((n) => { document.body.dataset.loaded = String(n); });
          </script>`);
        default:
          return html(`<p>host=${request.headers.host}</p>`);
      }
    });
    internal = http.createServer((_request, response) => {
      internalHits++;
      response.end('internal');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    // The same port on the stand-in internal address, so a proxy that resolved the name itself would get an answer.
    await new Promise<void>((resolve) => internal.listen(port, '127.0.0.2', resolve));
    origin = `http://127.0.0.1:${port}`;
    pool = createBrowserPool({ maxContexts: 2 });
  });

  after(async () => {
    await pool.close();
    server.closeAllConnections();
    internal.closeAllConnections();
    await Promise.all([server, internal].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  });

  afterEach(() => assert.equal(internalHits, 0, 'the stand-in internal server on 127.0.0.2 must never be reached'));

  it('hands the proxy the checked address for page requests, never the name', async function () {
    const proxy = await startFakeProxy({ names: { 'rebind.test': '127.0.0.2' } });
    try {
      const resolver = stubResolver({ 'rebind.test': ['127.0.0.1'] });
      await pool.withContext({ ...GUARDED_CONTEXT_OPTIONS }, async (context) => {
        await guardContext(context, { policy, resolver, proxy: proxyFromTemplate(proxy.urlTemplate, 'de') });
        const page = await context.newPage();
        await page.goto(`http://rebind.test:${port}/`);
        assert.equal(await page.textContent('p'), `host=rebind.test:${port}`);
      });
      const targets = proxy.requests.map((r) => r.target);
      assert.ok(targets.includes(`http://127.0.0.1:${port}/`), JSON.stringify(targets));
      assert.ok(
        targets.every((target) => target.startsWith(`http://127.0.0.1:${port}/`)),
        JSON.stringify(targets),
      );
    } finally {
      await proxy.close();
    }
  });

  it("caps the bytes one page's subresources may buffer, and gives the next page a fresh budget", async function () {
    await pool.withContext({ ...GUARDED_CONTEXT_OPTIONS }, async (context) => {
      await guardContext(context, { policy, maxSubresourceBytesPerPage: Math.floor(2.5 * BLOB_BYTES) });
      const page = await context.newPage();
      await page.goto(`${origin}/heavy`);
      await page.waitForFunction(() => document.body.dataset.loaded !== undefined);
      const loaded = Number(await page.evaluate(() => document.body.dataset.loaded));
      assert.ok(loaded <= 2, `${loaded} of 6 one-megabyte fetches were buffered under a 2.5 MB budget`);
      await page.goto(`${origin}/light`);
      await page.waitForFunction(() => document.body.dataset.loaded !== undefined);
      assert.equal(await page.evaluate(() => document.body.dataset.loaded), '1');
    });
  });

  it('blocks service workers in agent browser sessions (their fetches would bypass the guard)', async function () {
    const registry = createSessionRegistry({ headless: pool, headed: async () => pool });
    try {
      const sessionId = await registry.open({
        headless: true,
        policy,
        proxy: null,
        sensitiveData: [],
        cookies: undefined,
        checkpoint: null,
      });
      const { session } = registry.get(sessionId)!;
      const outcome = await session.navigate(`${origin}/`);
      assert.ok(outcome.ok, JSON.stringify(outcome));
      const registered = await session.currentPage().evaluate(async () => {
        const registration = await navigator.serviceWorker?.register('/sw.js').catch(() => undefined);
        return Boolean(registration?.scope);
      });
      assert.equal(registered, false);
      assert.equal(session.context.serviceWorkers().length, 0);
    } finally {
      await registry.closeAll();
    }
  });
});
