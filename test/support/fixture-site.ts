import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FixtureContext = {
  siteOrigin: string;
  privateOrigin: string;
};

export type FixtureHandler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  ctx: FixtureContext,
) => void | Promise<void>;

export type FixtureSite = {
  url: string;
  privateUrl: string;
  hits: (path: string) => number;
  privateHits: (path?: string) => number;
  privateConnections: () => number;
  close: () => Promise<void>;
};

export const SPA_SENTENCE = 'This sentence was rendered by client-side JavaScript.';
export const GATED_SECRET = 'The vault combination is 31-41-59.';

function sendHtml(res: http.ServerResponse, html: string, status = 200): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(html);
}

function redirect(res: http.ServerResponse, location: string, status = 302): void {
  res.writeHead(status, { location, 'content-type': 'text/plain' });
  res.end(`Redirecting to ${location}`);
}

function cookiesOf(req: http.IncomingMessage): Record<string, string> {
  const jar: Record<string, string> = {};
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) jar[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return jar;
}

const STATIC_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Field Guide to Urban Beekeeping</title>
  <meta name="description" content="A practical introduction to keeping bees on city rooftops.">
  <meta property="og:title" content="Urban Beekeeping (OG)">
  <style>body { font-family: serif; }</style>
  <script type="application/ld+json">{"@type":"Article"}</script>
</head>
<body>
  <nav><a href="/">Home</a> <a href="/about">About</a></nav>
  <div id="cookie-banner" class="cookie-consent">We use cookies. <button>Accept</button></div>
  <article>
    <h1>Field Guide to Urban Beekeeping</h1>
    <p>Keeping bees in the city is easier than most people think. Rooftops offer sun, shelter and
      a surprising variety of flowering plants within a short flight of the hive.</p>
    <h2>What you need</h2>
    <ul>
      <li>A hive body with frames</li>
      <li>A smoker and a hive tool</li>
      <li>Protective veil and gloves</li>
    </ul>
    <h2>Seasonal calendar</h2>
    <table>
      <thead><tr><th>Season</th><th>Task</th></tr></thead>
      <tbody>
        <tr><td>Spring</td><td>Inspect the queen</td></tr>
        <tr><td>Autumn</td><td>Harvest honey</td></tr>
      </tbody>
    </table>
    <p>Read the <a href="/guides/hive-setup">hive setup guide</a>, the
      <a href="https://example.org/pollinators#intro">pollinator census</a> and
      <a href="/guides/hive-setup">the same guide again</a>.
      <a href="mailto:bees@example.org">Email us</a> or <a href="javascript:void(0)">do nothing</a>.</p>
    <img src="/images/hive.png" alt="A rooftop hive">
  </article>
  <script>console.log('analytics');</script>
</body>
</html>`;

const SPA_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Loading…</title></head>
<body>
  <div id="root"></div>
  <noscript>You need to enable JavaScript to run this app.</noscript>
  <script>
    setTimeout(function () {
      var root = document.getElementById('root');
      var h1 = document.createElement('h1');
      h1.textContent = 'Client Rendered';
      var p = document.createElement('p');
      p.textContent = ${JSON.stringify(SPA_SENTENCE)};
      root.appendChild(h1);
      root.appendChild(p);
      document.title = 'SPA Ready';
    }, 50);
  </script>
</body>
</html>`;

function cookieGatedPage(req: http.IncomingMessage): string {
  const jar = cookiesOf(req);
  const body = jar.session === 'letmein'
    ? `<h1>Members area</h1><p>${GATED_SECRET}</p><p>theme=${jar.theme ?? 'none'}</p>`
    : '<h1>Please log in</h1>';
  return `<!doctype html><html><head><title>Gated</title></head><body>${body}</body></html>`;
}

function subresourceToPrivatePage(ctx: FixtureContext): string {
  const wsUrl = ctx.privateOrigin.replace(/^http/, 'ws') + '/internal-socket';
  return `<!doctype html><html><head><title>Leaky</title>
  <link rel="preconnect" href="${ctx.privateOrigin}">
  <link rel="dns-prefetch" href="${ctx.privateOrigin}">
  <link rel="stylesheet" href="${ctx.privateOrigin}/internal.css">
  </head><body><h1>Leaky page</h1><p>This page tries to load resources from a private host.</p>
  <img src="${ctx.privateOrigin}/internal.png" alt="internal">
  <img src="/redirect-to-private" alt="redirected image">
  <script src="${ctx.privateOrigin}/internal.js"></script>
  <script>
    fetch(${JSON.stringify(ctx.privateOrigin + '/internal-fetch')}).catch(function () {});
    try { new WebSocket(${JSON.stringify(wsUrl)}); } catch (e) {}
  </script>
  </body></html>`;
}

export const fixtureRoutes: Record<string, FixtureHandler> = {
  '/static': (_req, res) => sendHtml(res, STATIC_PAGE),
  '/spa': (_req, res) => sendHtml(res, SPA_PAGE),
  '/cookie-gated': (req, res) => sendHtml(res, cookieGatedPage(req)),
  '/redirect-to-private': (_req, res, ctx) => redirect(res, `${ctx.privateOrigin}/internal`),
  '/redirect-chain': (_req, res) => redirect(res, '/redirect-chain/hop-2', 301),
  '/redirect-chain/hop-2': (_req, res, ctx) => redirect(res, `${ctx.siteOrigin}/static`, 307),
  '/js-redirect-to-private': (_req, res, ctx) => sendHtml(res, `<!doctype html><html><head><title>Away</title></head>
    <body><p>Leaving.</p><script>location.href = ${JSON.stringify(ctx.privateOrigin + '/internal')};</script></body></html>`),
  '/login': (_req, res) => {
    res.writeHead(302, { location: '/cookie-gated', 'set-cookie': ['session=letmein; Path=/; HttpOnly', 'theme=dark; Path=/'] });
    res.end();
  },
  '/subresource-to-private': (_req, res, ctx) => sendHtml(res, subresourceToPrivatePage(ctx)),
  '/slow': async (_req, res) => {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    sendHtml(res, '<!doctype html><html><head><title>Slow</title></head><body><p>Finally here.</p></body></html>');
  },
  '/json': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: true, items: [1, 2, 3] }));
  },
};

function listen(server: http.Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
  });
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

function pathOf(req: http.IncomingMessage): string {
  return new URL(req.url ?? '/', 'http://fixture.invalid').pathname;
}

function counter(): { add: (path: string) => void; count: (path?: string) => number } {
  const byPath = new Map<string, number>();
  return {
    add: (path) => byPath.set(path, (byPath.get(path) ?? 0) + 1),
    count: (path) => path === undefined
      ? [...byPath.values()].reduce((sum, n) => sum + n, 0)
      : byPath.get(path) ?? 0,
  };
}

export async function startFixtureSite(extraRoutes: Record<string, FixtureHandler> = {}): Promise<FixtureSite> {
  const routes = { ...fixtureRoutes, ...extraRoutes };
  const siteHits = counter();
  const privateHits = counter();
  const ctx: FixtureContext = { siteOrigin: '', privateOrigin: '' };

  let privateConnections = 0;
  const privateServer = http.createServer((req, res) => {
    privateHits.add(pathOf(req));
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('internal secret: private server reached');
  });
  privateServer.on('connection', () => privateConnections++);
  privateServer.on('upgrade', (req, socket) => {
    privateHits.add(pathOf(req));
    socket.destroy();
  });

  const site = http.createServer((req, res) => {
    const path = pathOf(req);
    siteHits.add(path);
    const handler = routes[path];
    if (!handler) {
      sendHtml(res, '<!doctype html><html><body><h1>Not found</h1></body></html>', 404);
      return;
    }
    Promise.resolve(handler(req, res, ctx)).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  });

  const privatePort = await listen(privateServer, '127.0.0.2');
  const sitePort = await listen(site, '127.0.0.1');
  ctx.siteOrigin = `http://127.0.0.1:${sitePort}`;
  ctx.privateOrigin = `http://127.0.0.2:${privatePort}`;

  return {
    url: ctx.siteOrigin,
    privateUrl: ctx.privateOrigin,
    hits: (path) => siteHits.count(path),
    privateHits: (path) => privateHits.count(path),
    privateConnections: () => privateConnections,
    close: async () => {
      await Promise.all([closeServer(site), closeServer(privateServer)]);
    },
  };
}
