import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { guardContext } from '../../activities/browser/guarded-routing';
import { createBrowserPool, type BrowserPool } from '../../activities/browser/pool';
import { renderPage } from '../../activities/browser/render';
import { proxyFromTemplate } from '../../lib/net/proxy';
import { parseNetworkAllowlist, SsrfBlockedError } from '../../lib/net/ssrf';
import { findFetchError } from '../../lib/net/transport';
import { htmlToPage } from '../../lib/page/convert';
import { normalizeCookies } from '../../lib/page/cookies';
import { GATED_SECRET, SPA_SENTENCE, startFixtureSite, type FixtureSite } from '../support/fakes/fixture-site';

describe('browser rendering behind the SSRF guard', function () {
  this.timeout(60_000);

  const policy = parseNetworkAllowlist('127.0.0.1');
  let site: FixtureSite;
  let pool: BrowserPool;

  before(async () => {
    site = await startFixtureSite({
      // A navigation that takes a while to answer, then redirects: the page is "navigating" for ~1 s.
      '/slow-hop': async (_req, res) => {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        res.writeHead(302, { location: '/redirect-chain' });
        res.end();
      },
    });
    pool = createBrowserPool({ maxContexts: 2 });
  });

  after(async () => {
    await pool?.close();
    await site?.close();
  });

  it('renders a script-built page and finds the client-rendered sentence', async () => {
    const rendered = await renderPage(pool, { url: `${site.url}/spa`, policy });
    assert.equal(rendered.status, 200);
    assert.equal(rendered.finalUrl, `${site.url}/spa`);
    assert.equal(rendered.title, 'SPA Ready');
    assert.ok(rendered.browserMs > 0);
    assert.ok(rendered.html.includes(SPA_SENTENCE));
    assert.ok(htmlToPage(rendered.html, rendered.finalUrl).markdown.includes(SPA_SENTENCE));
  });

  it('sends cookies given in each accepted form', async () => {
    const url = `${site.url}/cookie-gated`;
    const forms: unknown[] = [
      'session=letmein',
      { session: 'letmein' },
      [{ name: 'session', value: 'letmein', httpOnly: true }],
    ];
    for (const form of forms) {
      const rendered = await renderPage(pool, { url, policy, cookies: normalizeCookies(form, url), waitFor: 'load' });
      assert.ok(rendered.html.includes(GATED_SECRET), `form ${JSON.stringify(form)} did not unlock the page`);
    }
    const anonymous = await renderPage(pool, { url, policy, waitFor: 'load' });
    assert.ok(anonymous.html.includes('Please log in'));
  });

  it('follows a redirect chain hop by hop through the guard', async () => {
    const hopsBefore = site.hits('/redirect-chain/hop-2');
    const rendered = await renderPage(pool, { url: `${site.url}/redirect-chain`, policy });
    assert.equal(rendered.finalUrl, `${site.url}/static`);
    assert.equal(rendered.status, 200);
    assert.equal(rendered.title, 'Field Guide to Urban Beekeeping');
    assert.equal(site.hits('/redirect-chain/hop-2'), hopsBefore + 1);
  });

  it('keeps cookies set by a redirect response', async () => {
    const rendered = await renderPage(pool, { url: `${site.url}/login`, policy, waitFor: 'load' });
    assert.equal(rendered.finalUrl, `${site.url}/cookie-gated`);
    assert.ok(rendered.html.includes(GATED_SECRET));
    assert.ok(rendered.html.includes('theme=dark'));
  });

  it('runs onLoaded before capturing and waits for the navigation it starts', async () => {
    const rendered = await renderPage(pool, {
      url: `${site.url}/spa`,
      policy,
      onLoaded: async (page) => {
        assert.ok((await page.content()).includes(SPA_SENTENCE));
        await page.evaluate(() => {
          location.href = '/redirect-chain';
        });
      },
    });
    assert.equal(rendered.finalUrl, `${site.url}/static`);
    assert.equal(rendered.title, 'Field Guide to Urban Beekeeping');
  });

  it('captures the document a slow navigation started by onLoaded ends on, not the page it left', async () => {
    for (const trigger of ['location', 'click'] as const) {
      const rendered = await renderPage(pool, {
        url: `${site.url}/spa`,
        policy,
        onLoaded: async (page) => {
          if (trigger === 'location') {
            // A script starts the navigation a moment later; onLoaded returns once its request is out, so the
            // renderer finds it in flight (a timer that fires after capture began is a later page, not this case).
            await Promise.all([
              page.waitForRequest((request) => request.url().endsWith('/slow-hop')),
              page.evaluate(() => setTimeout(() => (location.href = '/slow-hop'), 20)),
            ]);
          } else {
            await page.evaluate(() => {
              const a = document.createElement('a');
              a.href = '/slow-hop';
              a.id = 'go';
              a.textContent = 'go';
              document.body.appendChild(a);
            });
            await page.click('#go', { noWaitAfter: true });
          }
        },
      });
      assert.equal(rendered.finalUrl, `${site.url}/static`, trigger);
      assert.equal(rendered.title, 'Field Guide to Urban Beekeeping', trigger);
      assert.ok(rendered.html.includes('Field Guide to Urban Beekeeping'), trigger);
    }
  });

  it('blocks a redirect to a host outside the allowlist', async () => {
    await assert.rejects(
      renderPage(pool, { url: `${site.url}/redirect-to-private`, policy }),
      (error: unknown) =>
        error instanceof SsrfBlockedError &&
        error.host === '127.0.0.2' &&
        /navigation blocked by SSRF guard/.test(error.message),
    );
    assert.equal(site.privateHits(), 0);
  });

  it('blocks direct and script-initiated navigations to a private host', async () => {
    await assert.rejects(renderPage(pool, { url: `${site.privateUrl}/internal`, policy }), SsrfBlockedError);
    await assert.rejects(renderPage(pool, { url: `${site.url}/js-redirect-to-private`, policy }), SsrfBlockedError);
    assert.equal(site.privateHits(), 0);
  });

  it('blocks subresources, redirected subresources and WebSockets to a private host', async () => {
    const blocked = await pool.withContext({}, async (context) => {
      const guard = await guardContext(context, { policy });
      const page = await context.newPage();
      await page.goto(`${site.url}/subresource-to-private`, { waitUntil: 'load' });
      await page.waitForLoadState('networkidle', { timeout: 5_000 }).catch(() => undefined);
      return guard.blocked;
    });
    const blockedPaths = blocked.map((entry) => new URL(entry.url).pathname).sort();
    for (const path of [
      '/internal-fetch',
      '/internal-socket',
      '/internal.css',
      '/internal.js',
      '/internal.png',
      '/redirect-to-private',
    ]) {
      assert.ok(blockedPaths.includes(path), `${path} was not blocked (blocked: ${blockedPaths.join(', ')})`);
    }
    assert.ok(
      blocked.every((entry) => entry.host.startsWith('127.0.0.2')),
      JSON.stringify(blocked),
    );
    assert.ok(blocked.every((entry) => !entry.isMainFrameNavigation));
    assert.equal(site.privateHits(), 0);

    const rendered = await renderPage(pool, { url: `${site.url}/subresource-to-private`, policy });
    assert.equal(rendered.title, 'Leaky');
    assert.equal(site.privateHits(), 0);
  });

  it("fails a navigation the proxy cannot carry as the proxy's failure, not the page's", async () => {
    const unused = http.createServer();
    await new Promise<void>((resolve) => unused.listen(0, '127.0.0.1', resolve));
    const closedPort = (unused.address() as AddressInfo).port;
    await new Promise((resolve) => unused.close(resolve));
    const proxy = proxyFromTemplate(`http://user:secret-pass@127.0.0.1:${closedPort}`, 'DE');
    await assert.rejects(renderPage(pool, { url: `${site.url}/static`, policy, proxy }), (error: unknown) => {
      assert.equal(findFetchError(error)?.code, 'proxy', String(error));
      assert.match((error as Error).message, /Could not reach the proxy/);
      return true;
    });
  });

  it('gives up on pages slower than the timeout', async () => {
    await assert.rejects(renderPage(pool, { url: `${site.url}/slow`, policy, timeoutMs: 500 }), {
      name: 'TimeoutError',
    });
    const rendered = await renderPage(pool, { url: `${site.url}/slow`, policy, timeoutMs: 10_000 });
    assert.ok(rendered.html.includes('Finally here.'));
  });

  it('never opened a connection to the private server', () => {
    assert.equal(site.privateConnections(), 0);
  });

  describe('browser pool', () => {
    it('limits concurrent contexts and always closes them', async () => {
      const small = createBrowserPool({ maxContexts: 2 });
      try {
        let active = 0;
        let peak = 0;
        const contexts: { pages: () => unknown[] }[] = [];
        await Promise.all(
          Array.from({ length: 5 }, () =>
            small.withContext({}, async (context) => {
              contexts.push(context);
              active++;
              peak = Math.max(peak, active);
              await new Promise((resolve) => setTimeout(resolve, 100));
              active--;
            }),
          ),
        );
        assert.equal(peak, 2);
        await assert.rejects(
          small.withContext({}, async () => {
            throw new Error('task failed');
          }),
          /task failed/,
        );
        assert.equal(active, 0);
      } finally {
        await small.close();
      }
    });

    it('gives unguarded contexts no network access', async () => {
      const hitsBefore = site.hits('/static');
      await pool.withContext({}, async (context) => {
        const page = await context.newPage();
        await assert.rejects(page.goto(`${site.url}/static`, { timeout: 10_000 }), /ERR_PROXY_CONNECTION_FAILED/);
      });
      assert.equal(site.hits('/static'), hitsBefore);
    });

    it('relaunches Chromium after it disconnects', async () => {
      const small = createBrowserPool({ maxContexts: 1 });
      try {
        await small.withContext({}, async (context) => {
          await context.browser()?.close();
        });
        const version = await small.withContext({}, async (context) => context.browser()?.version());
        assert.match(version ?? '', /^\d+\./);
      } finally {
        await small.close();
      }
      await assert.rejects(
        small.withContext({}, async () => undefined),
        /closed/,
      );
    });
  });
});
