import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import Ajv from 'ajv';

import { htmlToPage, needsBrowser } from '../../lib/page/convert';
import { cookieHeaderFor, cookiesJsonSchema, normalizeCookies, type PageCookie } from '../../lib/page/cookies';
import { startFixtureSite, GATED_SECRET, type FixtureSite } from '../support/fakes/fixture-site';
import { PATHOLOGICAL_PAGES, type PathologicalResult } from '../support/fakes/pathological-pages';

async function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ html: string; contentType: string; finalUrl: string }> {
  const response = await fetch(url, { headers });
  return {
    html: await response.text(),
    contentType: response.headers.get('content-type') ?? '',
    finalUrl: response.url,
  };
}

describe('page conversion', () => {
  let site: FixtureSite;

  before(async () => {
    site = await startFixtureSite();
  });

  after(async () => {
    await site.close();
  });

  describe('htmlToPage on /static', () => {
    let markdown: string;
    let metadata: ReturnType<typeof htmlToPage>['metadata'];

    before(async () => {
      const { html, finalUrl } = await get(`${site.url}/static`);
      ({ markdown, metadata } = htmlToPage(html, finalUrl));
    });

    it('extracts title, description and language', () => {
      assert.equal(metadata.title, 'Field Guide to Urban Beekeeping');
      assert.equal(metadata.description, 'A practical introduction to keeping bees on city rooftops.');
      assert.equal(metadata.language, 'en');
    });

    it('keeps headings, lists and tables', () => {
      assert.match(markdown, /^# Field Guide to Urban Beekeeping$/m);
      assert.match(markdown, /^## What you need$/m);
      assert.match(markdown, /^- A smoker and a hive tool$/m);
      assert.match(markdown, /^\| Season \| Task \|$/m);
      assert.match(markdown, /^\| --- \| --- \|$/m);
      assert.match(markdown, /^\| Autumn \| Harvest honey \|$/m);
    });

    it('writes absolute links and images and drops script links', () => {
      assert.ok(markdown.includes(`[hive setup guide](${site.url}/guides/hive-setup)`));
      assert.ok(markdown.includes(`![A rooftop hive](${site.url}/images/hive.png)`));
      assert.ok(!markdown.includes('javascript:'));
      assert.ok(markdown.includes('do nothing'));
    });

    it('drops scripts, styles, navigation and cookie banners', () => {
      assert.ok(!markdown.includes('analytics'));
      assert.ok(!markdown.includes('font-family'));
      assert.ok(!markdown.includes('We use cookies'));
      assert.ok(!markdown.includes('[Home]'));
    });

    it('lists absolute, deduplicated http(s) links', () => {
      const urls = metadata.links.map((link) => link.url);
      assert.deepEqual(urls, [
        `${site.url}/`,
        `${site.url}/about`,
        `${site.url}/guides/hive-setup`,
        'https://example.org/pollinators',
      ]);
      assert.equal(metadata.links[2].text, 'hive setup guide');
    });
  });

  describe('htmlToPage edge cases', () => {
    it('falls back to og:title and og:description', () => {
      const html =
        '<html><head><meta property="og:title" content="OG Title"><meta property="og:description" content="OG description"></head><body><p>x</p></body></html>';
      const { metadata } = htmlToPage(html, 'http://127.0.0.1/');
      assert.equal(metadata.title, 'OG Title');
      assert.equal(metadata.description, 'OG description');
      assert.equal(metadata.language, null);
    });

    it('resolves against <base href> and caps the link list at 500', () => {
      const anchors = Array.from({ length: 600 }, (_, i) => `<a href="p${i}">p${i}</a>`).join('');
      const html = `<html><head><base href="http://127.0.0.1/docs/"></head><body>${anchors}</body></html>`;
      const { metadata, markdown } = htmlToPage(html, 'http://127.0.0.1/other/page');
      assert.equal(metadata.links.length, 500);
      assert.equal(metadata.links[0].url, 'http://127.0.0.1/docs/p0');
      assert.ok(markdown.includes('[p1](http://127.0.0.1/docs/p1)'));
    });

    it('handles fragments without <html>', () => {
      const { markdown } = htmlToPage('<h2>Hi</h2><p>there <b>you</b></p>', 'http://127.0.0.1/');
      assert.equal(markdown, '## Hi\n\nthere **you**');
    });
  });

  describe('pathological pages (a hostile page must not stall the worker)', function () {
    // Converted in a process of their own. What each costs in CPU time is a benchmark's figure (npm run
    // bench:hostile-inputs), not a test's: here every page converts and keeps its text.
    let results: Record<string, PathologicalResult>;

    before(async function () {
      this.timeout(300_000);
      const script = path.join(__dirname, '..', 'support', 'fakes', 'pathological-pages.ts');
      const { stdout } = await promisify(execFile)(process.execPath, ['-r', 'tsx/cjs', script], {
        maxBuffer: 16 * 1024 * 1024,
        timeout: 280_000,
      });
      results = JSON.parse(stdout);
    });

    for (const name of Object.keys(PATHOLOGICAL_PAGES)) {
      it(`converts ${name}`, function () {
        const result = results[name];
        assert.equal(result.error, undefined, result.error);
      });
    }

    it('keeps the text of those pages', function () {
      const spaces = results['a <pre> of 300k spaces between words'];
      assert.match(spaces.markdownHead, /^```\nstart {100}/);
      assert.match(spaces.markdownTail, / {100}end\n```$/);
      assert.equal(spaces.markdownChars, '```\nstart'.length + 300_000 + 'end\n```'.length);
      assert.match(results['a <pre> line ending in 300k spaces'].markdownHead, /^```\nstart\nnext line\n```$/);
      assert.equal(results['a paragraph with 1 MB whitespace runs of spaces, tabs and newlines'].markdownHead, 'a b c');
      assert.equal(results['100k nested divs'].markdownHead, 'deep text');
      assert.equal(results['100k unclosed nested list items'].markdownTail.trim().endsWith('deepest item'), true);
      assert.match(results['20k nested inline elements'].markdownHead, /inner/);
      assert.match(results['600 nested links around 1 MB of text'].markdownTail, /word\]\(http:\/\/127\.0\.0\.1\/x\)$/);
      const tenMegabytes = results['10 MB of text in paragraphs'];
      assert.ok(tenMegabytes.htmlBytes >= 10_000_000);
      assert.ok(
        tenMegabytes.markdownChars > 0.8 * tenMegabytes.htmlBytes,
        `${tenMegabytes.markdownChars} chars of markdown`,
      );
      assert.match(
        tenMegabytes.markdownHead,
        /^Bees forage across the city rooftops and return with pollen\. Bees forage/,
      );
    });

    it('bounds nesting without losing text: deeper elements are ignored, their text kept', function () {
      const deep = '<div>'.repeat(2_000) + '<b>bold</b> and <i>italic</i>' + '</div>'.repeat(2_000) + '<p>after</p>';
      assert.equal(htmlToPage(deep, 'http://127.0.0.1/').markdown, 'bold and italic\n\nafter');
      const shallow = '<div>'.repeat(50) + '<b>bold</b>' + '</div>'.repeat(50);
      assert.equal(htmlToPage(shallow, 'http://127.0.0.1/').markdown, '**bold**');
    });
  });

  describe('needsBrowser', () => {
    it('says a static article does not need a browser', async () => {
      const { html, contentType } = await get(`${site.url}/static`);
      assert.equal(needsBrowser(html, contentType).needed, false);
    });

    it('says the SPA needs a browser because its mount point is empty', async () => {
      const { html, contentType } = await get(`${site.url}/spa`);
      const verdict = needsBrowser(html, contentType);
      assert.equal(verdict.needed, true);
      assert.match(verdict.reason, /#root/);
    });

    it('never asks for a browser for non-HTML content', async () => {
      const { html, contentType } = await get(`${site.url}/json`);
      assert.deepEqual(needsBrowser(html, contentType).needed, false);
      assert.equal(
        needsBrowser('<html><body><div id="app"></div><script>x()</script></body></html>', 'text/plain').needed,
        false,
      );
    });

    it('recognises other JavaScript-only pages', () => {
      const noscript =
        '<html><body><noscript>Please enable JavaScript to continue.</noscript><p>Loading</p><script src="/a.js"></script></body></html>';
      assert.equal(needsBrowser(noscript, 'text/html').needed, true);
      const jsRedirect = '<html><body><script>window.location.href = "/next";</script></body></html>';
      assert.equal(needsBrowser(jsRedirect, 'text/html').needed, true);
      const nextEmpty = '<html><body><div id="__next"></div><script src="/_next/app.js"></script></body></html>';
      assert.equal(needsBrowser(nextEmpty, 'text/html; charset=utf-8').needed, true);
    });

    it('does not ask for a browser when a server-rendered app already has content', () => {
      const paragraph = '<p>' + 'Server rendered text. '.repeat(30) + '</p>';
      const html = `<html><body><div id="__next"><h1>Article</h1>${paragraph}</div><script src="/_next/app.js"></script></body></html>`;
      assert.equal(needsBrowser(html, 'text/html').needed, false);
    });
  });

  describe('cookies', () => {
    const target = 'http://127.0.0.1:8080/cookie-gated';

    it('accepts a header string, an object and an array of cookie objects', () => {
      const forms: unknown[] = [
        'session=letmein; theme=dark',
        { session: 'letmein', theme: 'dark' },
        [
          { name: 'session', value: 'letmein' },
          { name: 'theme', value: 'dark', path: '/', httpOnly: true, sameSite: 'strict' },
        ],
      ];
      for (const form of forms) {
        const cookies = normalizeCookies(form, target);
        assert.deepEqual(
          cookies.map((c) => [c.name, c.value, c.domain, c.path]),
          [
            ['session', 'letmein', '127.0.0.1', '/'],
            ['theme', 'dark', '127.0.0.1', '/'],
          ],
        );
        assert.equal(cookieHeaderFor(cookies, target), 'session=letmein; theme=dark');
      }
    });

    it('rejects malformed input with readable messages', () => {
      assert.throws(() => normalizeCookies('novalue', target), /pair 1 .* name=value/);
      assert.throws(() => normalizeCookies({ a: 1 }, target), /cookie "a" must have a string value/);
      assert.throws(() => normalizeCookies([{ name: 'a b', value: 'x' }], target), /item 0 has an invalid name/);
      assert.throws(() => normalizeCookies([{ name: 'a', value: 'x;y' }], target), /item 0 has a value containing/);
      assert.throws(
        () => normalizeCookies([{ name: 'a', value: 'x', path: 'docs' }], target),
        /path that does not start with/,
      );
      assert.throws(() => normalizeCookies([{ name: 'a', value: 'x', sameSite: 'None' }], target), /without secure/);
      assert.throws(() => normalizeCookies(42, target), /expected/);
    });

    it('matches domain, path, secure and expiry', () => {
      const cookie = (overrides: Partial<PageCookie>): PageCookie => ({
        name: 'c',
        value: '1',
        domain: 'example.test',
        path: '/',
        httpOnly: false,
        secure: false,
        sameSite: 'Lax',
        ...overrides,
      });
      assert.equal(cookieHeaderFor([cookie({})], 'http://sub.example.test/'), undefined);
      assert.equal(cookieHeaderFor([cookie({ domain: '.example.test' })], 'http://sub.example.test/'), 'c=1');
      assert.equal(cookieHeaderFor([cookie({ path: '/docs' })], 'http://example.test/docs/a'), 'c=1');
      assert.equal(cookieHeaderFor([cookie({ path: '/docs' })], 'http://example.test/docsx'), undefined);
      assert.equal(cookieHeaderFor([cookie({ secure: true })], 'http://example.test/'), undefined);
      assert.equal(cookieHeaderFor([cookie({ secure: true })], 'https://example.test/'), 'c=1');
      assert.equal(cookieHeaderFor([cookie({ expires: 1 })], 'http://example.test/'), undefined);
    });

    it('exposes a JSON Schema that validates the three forms', () => {
      const validate = new Ajv({ strict: true }).compile(cookiesJsonSchema);
      assert.ok(validate('a=1'));
      assert.ok(validate({ a: '1' }));
      assert.ok(validate([{ name: 'a', value: '1', secure: true }]));
      assert.ok(!validate({ a: 1 }));
      assert.ok(!validate([{ name: 'a' }]));
      assert.ok(!validate(5));
    });

    it('gets the gated page with every form over a plain fetch', async () => {
      const url = `${site.url}/cookie-gated`;
      for (const form of ['session=letmein', { session: 'letmein' }, [{ name: 'session', value: 'letmein' }]]) {
        const header = cookieHeaderFor(normalizeCookies(form, url), url);
        const { html } = await get(url, header ? { cookie: header } : {});
        assert.ok(html.includes(GATED_SECRET), `form ${JSON.stringify(form)} did not unlock the page`);
      }
      const { html } = await get(url);
      assert.ok(html.includes('Please log in'));
    });
  });
});
