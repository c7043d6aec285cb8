import Router from '@koa/router';
import { buildOpenApiDocument } from '../openapi';

/** A self-contained page that renders the OpenAPI document (no CDN assets). */
const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1d2330}
h1{margin-bottom:.2rem} .op{border:1px solid #d7dce5;border-radius:6px;margin:1rem 0;padding:.6rem 1rem}
.m{display:inline-block;min-width:4.2rem;font-weight:700;text-transform:uppercase}
.get{color:#1769aa}.post{color:#2e7d32}.patch{color:#a86b00}.delete{color:#b3261e}.put{color:#6a1b9a}
code,pre{background:#f4f6f9;border-radius:4px;padding:.1rem .3rem} pre{padding:.6rem;overflow:auto;font-size:13px}
details{margin:.3rem 0} .desc{white-space:pre-wrap}
</style></head><body>
<h1 id="title">API reference</h1><div id="desc" class="desc"></div><div id="ops"></div><h2>Schemas</h2><div id="schemas"></div>
<script>
const esc = (s) => String(s ?? '').replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);
fetch('openapi.json').then((r) => r.json()).then((doc) => {
  document.getElementById('title').textContent = doc.info.title + ' ' + doc.info.version;
  document.getElementById('desc').textContent = doc.info.description;
  const ops = [];
  for (const [path, item] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(item)) {
    const responses = Object.entries(op.responses).map(([code, r]) => '<li><code>' + code + '</code> ' + esc(r.description) + '</li>').join('');
    const params = (op.parameters || []).map((p) => '<li><code>' + esc(p.name) + '</code> (' + p.in + ')' + (p.description ? ' ' + esc(p.description) : '') + '</li>').join('');
    const body = op.requestBody ? '<p>Body: <code>' + esc(op.requestBody.content['application/json'].schema.$ref.split('/').pop()) + '</code></p>' : '';
    ops.push('<div class="op"><span class="m ' + method + '">' + method + '</span> <code>' + esc(doc.servers[0].url + path) + '</code><p>' + esc(op.summary) + '</p>' + body + (params ? '<p>Parameters</p><ul>' + params + '</ul>' : '') + '<p>Responses</p><ul>' + responses + '</ul></div>');
  }
  document.getElementById('ops').innerHTML = ops.join('');
  document.getElementById('schemas').innerHTML = Object.entries(doc.components.schemas).map(([name, s]) =>
    '<details><summary><code>' + esc(name) + '</code></summary><pre>' + esc(JSON.stringify(s, null, 2)) + '</pre></details>').join('');
});
</script></body></html>`;

export function docsRoutes(): Router {
  const router = new Router();
  const document = buildOpenApiDocument();
  router.get('/openapi.json', (ctx) => {
    ctx.body = document;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'html';
    ctx.body = DOCS_PAGE;
  });
  return router;
}
