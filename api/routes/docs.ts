import { readFileSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { Config } from '../../lib/config';
import { escapeHtml, parseMarkdown, renderBlocks } from '../docs/markdown-to-html';
import type { Guide } from '../docs/guides';
import { DOCS_PAGE_PATH, guidePageUrl, operationAnchor, type DocsSite } from '../docs/site';
import { advertisedDocsMcpUrl } from '../mcp/docs';
import { notFound } from '../errors';
import type { AppState } from '../context';

/**
 * The human documentation, rendered on the server: the guides (Markdown → HTML, every piece of text
 * escaped) and the API reference from the OpenAPI document, with an anchor per operation
 * (`#operation/<operationId>`) and per schema (`#schema/<Name>`). The pages run no script at all
 * (Content-Security-Policy forbids it) and load nothing from elsewhere.
 */

type Json = Record<string, any>;

const STYLESHEET = `
body{font:15px/1.55 system-ui,sans-serif;margin:0;color:#1d2330;background:#fff}
.layout{display:flex;max-width:1200px;margin:0 auto}
nav{width:250px;flex:none;padding:1.5rem 1rem;border-right:1px solid #e3e7ee;position:sticky;top:0;align-self:flex-start;max-height:100vh;overflow:auto;font-size:14px}
nav h2{font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:#5b6475;margin:1.2rem 0 .4rem}
nav ul{list-style:none;padding:0;margin:0} nav li{margin:.2rem 0} nav a{text-decoration:none;color:#1d4f91}
main{flex:1;min-width:0;padding:1.5rem 2rem 4rem}
a{color:#1d4f91} h1,h2,h3,h4{line-height:1.25} h1{margin-top:0}
a.anchor{color:inherit;text-decoration:none}
code,pre{background:#f4f6f9;border-radius:4px;font-size:13px} code{padding:.1rem .3rem} pre{padding:.7rem;overflow:auto} pre code{padding:0}
table{border-collapse:collapse;margin:1rem 0;font-size:14px} th,td{border:1px solid #d7dce5;padding:.3rem .6rem;vertical-align:top;text-align:left}
td.align-right,th.align-right{text-align:right} td.align-center,th.align-center{text-align:center}
blockquote{margin:1rem 0;padding:.1rem 1rem;border-left:4px solid #d7dce5;color:#444}
.op{border:1px solid #d7dce5;border-radius:6px;margin:1rem 0;padding:.6rem 1rem}
.m{display:inline-block;min-width:4.2rem;font-weight:700;text-transform:uppercase}
.get{color:#1769aa}.post{color:#2e7d32}.patch{color:#a86b00}.delete{color:#b3261e}.put{color:#6a1b9a}
.summary{color:#5b6475;margin:.2rem 0 .8rem} .guides li{margin:.5rem 0}
details{margin:.3rem 0}
img{max-width:100%;height:auto;border:1px solid #d7dce5;border-radius:4px}
`;

const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

const OPENAPI_URL = '/api/v1/openapi.json';
const e = escapeHtml;
const refName = (ref: string) => ref.split('/').pop() ?? ref;

function page(site: DocsSite, title: string, body: string, current: string): string {
  const guideLinks = site.guides
    .map(
      (g) =>
        `<li><a href="${e(guidePageUrl(g))}"${current === g.slug ? ' aria-current="page"' : ''}>${e(g.title)}</a></li>`,
    )
    .join('');
  const tagLinks = site.tags
    .map((tag) => `<li><a href="${DOCS_PAGE_PATH}#tag/${e(encodeURIComponent(tag))}">${e(tag)}</a></li>`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)}</title><link rel="stylesheet" href="${DOCS_PAGE_PATH}/style.css"></head>
<body><div class="layout"><nav>
<p><a href="${DOCS_PAGE_PATH}"><strong>${e(site.openapi.info.title)}</strong></a><br>version ${e(site.version)}</p>
<h2>Guides</h2><ul>${guideLinks}</ul>
<h2>API reference</h2><ul>${tagLinks}<li><a href="${DOCS_PAGE_PATH}#schemas">Schemas</a></li><li><a href="${OPENAPI_URL}">openapi.json</a></li></ul>
<h2>Operators</h2><ul><li><a href="${DOCS_PAGE_PATH}/readme">README</a></li></ul>
</nav><main>
${body}
</main></div></body></html>`;
}

function schemaLabel(schema: unknown): string {
  if (!schema || typeof schema !== 'object') return '<code>any</code>';
  const s = schema as Json;
  if (typeof s.$ref === 'string')
    return `<a href="#schema/${e(refName(s.$ref))}"><code>${e(refName(s.$ref))}</code></a>`;
  if (Array.isArray(s.oneOf)) return s.oneOf.map(schemaLabel).join(' | ');
  if (s.type === 'array') return `${schemaLabel(s.items)}[]`;
  const inline = `<details><summary><code>${e(Array.isArray(s.type) ? s.type.join(' | ') : String(s.type ?? 'object'))}</code></summary><pre>${e(JSON.stringify(s, null, 2))}</pre></details>`;
  return s.properties
    ? inline
    : `<code>${e(Array.isArray(s.type) ? s.type.join(' | ') : String(s.type ?? 'any'))}</code>`;
}

function jsonSchemaOf(holder: Json | undefined): unknown {
  return holder?.content?.['application/json']?.schema;
}

function renderOperation(site: DocsSite, path: string, method: string, op: Json): string {
  const server = site.openapi.servers?.[0]?.url ?? '';
  const params = (op.parameters ?? []) as Json[];
  const paramRows = params
    .map(
      (p) =>
        `<tr><td><code>${e(String(p.name))}</code></td><td>${e(String(p.in))}</td><td>${p.required ? 'yes' : 'no'}</td><td>${schemaLabel(p.schema)}</td><td>${e(String(p.description ?? ''))}</td></tr>`,
    )
    .join('');
  const body = op.requestBody ? `<p>Request body: ${schemaLabel(jsonSchemaOf(op.requestBody))}</p>` : '';
  const responses = Object.entries((op.responses ?? {}) as Record<string, Json>)
    .map(
      ([code, r]) =>
        `<li><code>${e(code)}</code> ${e(String(r.description ?? ''))}${jsonSchemaOf(r) ? ` — ${schemaLabel(jsonSchemaOf(r))}` : ''}</li>`,
    )
    .join('');
  const id = operationAnchor(String(op.operationId));
  return `<section class="op" id="${e(id)}"><h3><a class="anchor" href="#${e(id)}"><span class="m ${e(method)}">${e(method)}</span> <code>${e(server + path)}</code></a></h3>
<p class="summary">${e(String(op.summary ?? ''))} <small>(operationId <code>${e(String(op.operationId))}</code>)</small></p>${body}
${paramRows ? `<table><thead><tr><th>Parameter</th><th>In</th><th>Required</th><th>Type</th><th>Description</th></tr></thead><tbody>${paramRows}</tbody></table>` : ''}
<p>Responses</p><ul>${responses}</ul></section>`;
}

function referencePage(site: DocsSite, docsMcpUrl: string): string {
  const doc = site.openapi;
  const description = renderBlocks(parseMarkdown(doc.info.description ?? '').blocks);
  const guides = site.guides
    .map((g) => `<li><a href="${e(guidePageUrl(g))}">${e(g.title)}</a> — ${e(g.summary)}</li>`)
    .join('\n');
  const groups = site.tags.map((tag) => {
    const ops = site.operations
      .filter((op) => op.tags[0] === tag)
      .map((op) =>
        renderOperation(site, op.path, op.method.toLowerCase(), doc.paths[op.path][op.method.toLowerCase()] as Json),
      )
      .join('\n');
    return `<h2 id="tag/${e(encodeURIComponent(tag))}">${e(tag)}</h2>\n${ops}`;
  });
  const untagged = site.operations
    .filter((op) => op.tags.length === 0)
    .map((op) =>
      renderOperation(site, op.path, op.method.toLowerCase(), doc.paths[op.path][op.method.toLowerCase()] as Json),
    );
  const schemas = Object.entries(doc.components?.schemas ?? {})
    .map(
      ([name, schema]) =>
        `<details id="schema/${e(name)}"><summary><code>${e(name)}</code></summary><pre>${e(JSON.stringify(schema, null, 2))}</pre></details>`,
    )
    .join('\n');
  return `<h1>${e(doc.info.title)} ${e(doc.info.version)}</h1>
<p>The reference below is generated from <a href="${OPENAPI_URL}">openapi.json</a> (OpenAPI ${e(doc.openapi)}). Agents can search these docs over MCP at <code>${e(docsMcpUrl)}</code> (no API key needed).</p>
<h2 id="guides">Guides</h2>
<ul class="guides">
${guides}
</ul>
<h2 id="reference">API reference</h2>
${description}
${groups.join('\n')}
${untagged.join('\n')}
<h2 id="schemas">Schemas</h2>
${schemas}`;
}

function guidePage(site: DocsSite, guide: Guide): string {
  return renderBlocks(guide.parsed.blocks, { resolveLink: site.resolveLink, resolveImage: docsImageUrl });
}

/** The pictures of the guides: PNG files in docs/console (the console's screenshots), served by the docs site. */
const DOCS_IMAGES_DIR = path.join(__dirname, '..', '..', 'docs', 'console');
const DOCS_IMAGE = /^(?:\.\/)?(?:docs\/)?console\/([a-z0-9][a-z0-9-]{0,63}\.png)$/;

/** `console/x.png` (or `docs/console/x.png`) in a guide → its address on the docs site; anything else is not shown. */
export function docsImageUrl(src: string): string | null {
  const name = DOCS_IMAGE.exec(src)?.[1];
  return name ? `${DOCS_PAGE_PATH}/console/${name}` : null;
}

function sendHtml(ctx: Context, html: string) {
  ctx.set(SECURITY_HEADERS);
  ctx.type = 'html';
  ctx.body = html;
}

export function docsRoutes(site: DocsSite, config: Pick<Config, 'docsMcp'>): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/openapi.json', (ctx) => {
    ctx.body = site.openapi;
  });
  router.get('/docs', (ctx) => {
    sendHtml(
      ctx,
      page(
        site,
        `${site.openapi.info.title} — documentation`,
        referencePage(site, advertisedDocsMcpUrl(config, `${ctx.protocol}://${ctx.host}`)),
        '',
      ),
    );
  });
  router.get('/docs/style.css', (ctx) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.type = 'text/css';
    ctx.body = STYLESHEET;
  });
  router.get('/docs/console/:file', (ctx) => {
    const file = String(ctx.params.file);
    if (!/^[a-z0-9][a-z0-9-]{0,63}\.png$/.test(file)) throw notFound('Picture');
    let body: Buffer;
    try {
      body = readFileSync(path.join(DOCS_IMAGES_DIR, file));
    } catch {
      throw notFound('Picture');
    }
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.type = 'image/png';
    ctx.body = body;
  });
  router.get('/docs/readme', (ctx) => {
    if (!site.readme) throw notFound('README');
    sendHtml(ctx, page(site, `${site.readme.title} — documentation`, guidePage(site, site.readme), 'readme'));
  });
  router.get('/docs/guides/:slug', (ctx) => {
    const guide = site.guides.find((g) => g.slug === ctx.params.slug);
    if (!guide) throw notFound(`Guide "${ctx.params.slug}"`);
    sendHtml(ctx, page(site, `${guide.title} — documentation`, guidePage(site, guide), guide.slug));
  });
  return router;
}
