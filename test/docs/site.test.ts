import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildOpenApiDocument } from '../../api/openapi/document';
import { loadDocSources } from '../../api/docs/load';
import {
  codeBlocks,
  isSafeHref,
  linkTargets,
  parseInfoString,
  parseMarkdown,
  renderBlocks,
} from '../../api/docs/markdown-to-html';
import { deriveOperationId, withOperationIds, type OpenApiDocument } from '../../api/openapi/operations';
import { buildDocsSite, DOCS_PAGE_PATH, type DocsSite } from '../../api/docs/site';
import { searchTerms, stem } from '../../api/docs/text';
import { docsImageUrl } from '../../api/routes/docs';

const ALLOWED_TAG =
  /<\/?(p|h[1-6]|a|code|pre|ul|ol|li|em|strong|table|thead|tbody|tr|th|td|blockquote|hr)((?: [a-z]+="[^"<>]*")*)>/g;

/** Every tag the renderer emitted is one of the harmless ones, with harmless attributes; nothing else is markup. */
function assertOnlySafeMarkup(html: string): void {
  for (const match of html.matchAll(ALLOWED_TAG)) {
    for (const [, name, value] of match[2].matchAll(/ ([a-z]+)="([^"]*)"/g)) {
      assert.ok(['href', 'id', 'class', 'start'].includes(name), `attribute ${name} in ${match[0]}`);
      if (name === 'href') assert.ok(isSafeHref(value.replace(/&amp;/g, '&')), `unsafe href ${value}`);
    }
  }
  const rest = html.replace(ALLOWED_TAG, '');
  assert.ok(!rest.includes('<') && !rest.includes('>'), `unexpected markup in: ${rest.slice(0, 300)}`);
}

describe('docs: guides, Markdown rendering and the index', function () {
  let site: DocsSite;
  const builtAt = new Date('2026-11-30T12:00:00Z');

  before(function () {
    site = buildDocsSite({ ...loadDocSources(), openapi: buildOpenApiDocument() as OpenApiDocument, builtAt });
  });

  describe('the guides in docs/', function () {
    it('each have a title, a summary and a distinct order, and the README is read too', function () {
      assert.ok(site.guides.length >= 8, `only ${site.guides.length} guides`);
      for (const guide of site.guides) assert.deepEqual(guide.problems, [], guide.path);
      assert.equal(new Set(site.guides.map((g) => g.order)).size, site.guides.length, 'two guides share an order');
      assert.equal(site.readme?.path, 'README.md');
    });

    it('link only to guides, sections, operations and schemas that exist', function () {
      const operationIds = new Set(site.operations.map((op) => op.operationId));
      const schemas = new Set(Object.keys(site.openapi.components?.schemas ?? {}));
      const pages = new Map([...site.guides, site.readme!].map((g) => [site.pageUrl(g.path), g]));
      let operationLinks = 0;
      for (const guide of [...site.guides, site.readme!]) {
        for (const href of linkTargets(guide.parsed.blocks)) {
          if (/^(https?|mailto):/.test(href)) continue;
          const target = site.resolveLink(href);
          const where = `${guide.path}: ${href} (→ ${target})`;
          const reference = new RegExp(`^${DOCS_PAGE_PATH}#(operation|schema)/(.+)$`).exec(target);
          if (reference) {
            if (reference[1] === 'operation') operationLinks++;
            assert.ok(
              (reference[1] === 'operation' ? operationIds : schemas).has(reference[2]),
              `${where}: no such ${reference[1]}`,
            );
            continue;
          }
          if (target === DOCS_PAGE_PATH) continue;
          const [page, anchor] = target.startsWith('#')
            ? [site.pageUrl(guide.path), target.slice(1)]
            : target.split('#');
          const linked = pages.get(page);
          assert.ok(linked, `${where}: not a page of the docs site`);
          if (anchor)
            assert.ok(
              linked.sections.some((s) => s.anchor === anchor),
              `${where}: no such section`,
            );
        }
      }
      assert.ok(operationLinks >= 10, 'the guides link to the reference');
    });

    it('mark runnable samples with an info string the tests understand', function () {
      const runnable = site.guides.flatMap((g) => codeBlocks(g.parsed.blocks)).filter((b) => b.attrs.exec);
      assert.ok(runnable.length >= 20, `${runnable.length} runnable samples`);
      for (const block of runnable) assert.ok(['sh', 'ts'].includes(block.lang), `exec sample in ${block.lang}`);
      assert.deepEqual(parseInfoString('sh exec expect="code":"x"'), {
        lang: 'sh',
        attrs: { exec: true, expect: '"code":"x"' },
      });
    });
  });

  describe('Markdown rendering', function () {
    it('escapes raw HTML and drops links with other schemes than http(s) and mailto', function () {
      const html = renderBlocks(
        parseMarkdown(
          [
            '# Hi <script>alert(1)</script>',
            '<img src=x onerror=alert(1)>',
            '[a](javascript:alert(1)) [b](JAVASCRIPT:alert(1)) [c](data:text/html,<script>x</script>) [d](java\tscript:x)',
            '[ok](https://example.com/?a=1&b="2") [rel](webhooks.md#x) <mailto:a@example.com>',
            '`</code><script>` and **bold <b>** and *em*',
            '```html onload=x',
            '</code></pre><script>alert(1)</script>',
            '```',
            '| a<b> | `c|d` |',
            '|---|---|',
            '| <i>x</i> | y |',
          ].join('\n'),
        ).blocks,
      );
      assertOnlySafeMarkup(html);
      assert.doesNotMatch(html, /javascript:|data:text/i);
      assert.match(html, /<a href="https:\/\/example\.com\/\?a=1&amp;b=&quot;2&quot;">ok<\/a>/);
      assert.match(html, /&lt;\/code&gt;&lt;\/pre&gt;&lt;script&gt;/);
      assert.match(html, /<strong>bold &lt;b&gt;<\/strong> and <em>em<\/em>/);
    });

    it('shows only the pictures the docs site serves: another image is its alt text, escaped', function () {
      const text = [
        '![The market](console/market.png) ![Remote](https://example.com/x.png) ![<b>x</b>](javascript:alert(1))',
        '![Up](../console/x.png) ![Also](docs/console/usage.png) [![Nested](console/run.png)](console.md)',
      ].join('\n');
      const html = renderBlocks(parseMarkdown(text).blocks, { resolveImage: docsImageUrl });
      assert.match(html, /<img src="\/api\/v1\/docs\/console\/market\.png" alt="The market">/);
      assert.match(html, /<img src="\/api\/v1\/docs\/console\/usage\.png" alt="Also">/);
      assert.match(html, /<img src="\/api\/v1\/docs\/console\/run\.png" alt="Nested">/);
      assert.doesNotMatch(html, /example\.com|javascript:|x\.png/);
      assert.match(html, /Remote &lt;b&gt;x&lt;\/b&gt;/);
      assertOnlySafeMarkup(html.replace(/<img src="\/api\/v1\/docs\/console\/[a-z0-9-]+\.png" alt="[^"<>]*">/g, ''));
      assert.doesNotMatch(renderBlocks(parseMarkdown(text).blocks), /<img/, 'no picture unless the site resolves it');
    });

    it('never emits markup it was not asked for, whatever the text', function () {
      const markdownish = fc.string({
        unit: fc.constantFrom(
          '<',
          '>',
          '"',
          "'",
          '&',
          '[',
          ']',
          '(',
          ')',
          '*',
          '`',
          '#',
          '|',
          '-',
          '\n',
          ' ',
          'a',
          'javascript:',
          'https://x',
          '\\',
          '1.',
          '>',
        ),
      });
      fc.assert(
        fc.property(markdownish, (text) => assertOnlySafeMarkup(renderBlocks(parseMarkdown(text).blocks))),
        { numRuns: 400 },
      );
    });

    it('gives headings GitHub-style ids, distinct when titles repeat', function () {
      const { headings } = parseMarkdown("# Guide\n## Keep passwords out of the model's view\n## Limits\n### Limits");
      assert.deepEqual(
        headings.map((h) => h.id),
        ['guide', 'keep-passwords-out-of-the-models-view', 'limits', 'limits-1'],
      );
    });

    it('parses nested lists, loose items and tables', function () {
      const { blocks } = parseMarkdown('- a\n  - b\n- c\n\n1. x\n\n   more\n2. y\n\n| h | i |\n|:-|-:|\n| 1 | 2 |');
      assert.deepEqual(
        blocks.map((b) => b.type),
        ['list', 'list', 'table'],
      );
      const html = renderBlocks(blocks);
      assert.match(html, /<li>a\n<ul>\n<li>b<\/li>\n<\/ul><\/li>/);
      assert.match(html, /<li><p>x<\/p>\n<p>more<\/p><\/li>/);
      assert.match(html, /<th class="align-left">h<\/th><th class="align-right">i<\/th>/);
    });
  });

  describe('search terms', function () {
    it('stem words as Porter does and drop words that carry no meaning', function () {
      const expected: Record<string, string> = {
        caresses: 'caress',
        ponies: 'poni',
        relational: 'relat',
        hopping: 'hop',
        generalizations: 'gener',
        verifying: 'verifi',
        signatures: 'signatur',
      };
      for (const [word, stemmed] of Object.entries(expected)) assert.equal(stem(word), stemmed, word);
      assert.deepEqual(searchTerms("How do I keep a password out of the model's view?"), [
        'keep',
        'password',
        'model',
        'view',
      ]);
      assert.deepEqual(searchTerms('sensitive_data X-API-Key'), ['sensit', 'data', 'api', 'kei']);
    });
  });

  describe('the index', function () {
    it('holds one entry per section of every guide and the README, and one per operation', function () {
      const documents = [...site.guides, site.readme!];
      const sectionEntries = site.entries.filter((e) => e.kind !== 'operation');
      assert.equal(
        sectionEntries.length,
        documents.reduce((n, g) => n + g.sections.filter((s) => s.ownMarkdown.split('\n').length > 1).length, 0),
      );
      assert.deepEqual(
        site.entries.filter((e) => e.kind === 'operation').map((e) => e.anchor),
        site.operations.map((op) => `operation/${op.operationId}`),
      );
      assert.equal(new Set(site.entries.map((e) => e.id)).size, site.entries.length);
      assert.deepEqual(site.search('the and of how', 10), [], 'a query of only common words finds nothing');
      for (const op of site.operations) {
        const hits = site.search(`${op.method} ${op.path} ${op.summary}`, 5);
        assert.ok(
          hits.some((h) => h.anchor === `operation/${op.operationId}`),
          `${op.operationId} is not found by its own summary`,
        );
      }
    });

    it('stamps every hit with the API version and the build time', function () {
      const [hit] = site.search('webhook signature', 1);
      assert.equal(hit.version, '1.0.0');
      assert.equal(hit.indexedAt, builtAt.toISOString());
      assert.equal(hit.url, `${DOCS_PAGE_PATH}/guides/webhooks#${hit.anchor}`);
    });

    it('reads a guide, one section, or an operation, and says what exists when asked for something that does not', function () {
      const whole = site.readDoc('docs/webhooks.md');
      assert.ok(
        whole.ok &&
          whole.markdown.startsWith('# Webhooks') &&
          whole.sections.some((s) => s.anchor === 'verifying-the-signature'),
      );
      for (const path of ['webhooks', 'webhooks.md', `${DOCS_PAGE_PATH}/guides/webhooks`])
        assert.ok(site.readDoc(path).ok, path);
      const section = site.readDoc('docs/webhooks.md', '#verifying-the-signature');
      assert.ok(section.ok);
      assert.match(section.markdown, /^## Verifying the signature/);
      assert.match(section.markdown, /### In Python/, 'a section includes its subsections');
      assert.doesNotMatch(section.markdown, /## Delivery and retries/);
      const op = site.readDoc('openapi.json', 'operation/createScrapeJob');
      assert.ok(op.ok && /POST \/api\/v1\/scrape/.test(op.markdown) && /structured_output/.test(op.markdown));
      const missing = site.readDoc('docs/nope.md');
      assert.ok(!missing.ok && /docs\/webhooks\.md/.test(missing.message));
      const noSection = site.readDoc('docs/webhooks.md', 'nope');
      assert.ok(!noSection.ok && /verifying-the-signature/.test(noSection.message));
    });

    it('resolves every schema of an operation inline, found by id or by method and path', function () {
      const op = site.getOperation({ operationId: 'createScrapeJob' })!;
      assert.doesNotMatch(JSON.stringify(op), /"\$ref"/);
      const body = (op.requestBody as any).content['application/json'].schema;
      assert.equal(body.title, 'ScrapeRequest');
      assert.ok(body.properties.url && body.properties.structured_output);
      assert.equal((op.responses['400'] as any).content['application/json'].schema.title, 'ErrorResponse');
      for (const path of [
        '/scrape/status/{jobId}',
        '/api/v1/scrape/status/{id}',
        'http://localhost:3000/api/v1/scrape/status/0c9f2a64-3f0e-4a7c-9d51-6f3c2b1a0e99?x=1',
      ]) {
        assert.equal(site.getOperation({ method: 'get', path })?.operationId, 'getScrapeJob', path);
      }
      assert.equal(site.getOperation({ method: 'DELETE', path: '/scrape' }), null);
    });

    it('keeps an operationId the document gives and derives one where it gives none', function () {
      const doc = {
        openapi: '3.1.0',
        info: { title: 't', version: '9' },
        paths: { '/a/{id}': { get: { operationId: 'readA' }, delete: {} } },
      } as OpenApiDocument;
      const withIds = withOperationIds(doc);
      assert.equal(withIds.paths['/a/{id}'].get.operationId, 'readA');
      assert.equal(withIds.paths['/a/{id}'].delete.operationId, 'deleteAById');
      assert.equal(deriveOperationId('get', '/skills/directory/ai-search'), 'getSkillsDirectoryAiSearch');
      assert.equal(doc.paths['/a/{id}'].delete.operationId, undefined, 'the input document is not changed');
    });
  });
});
