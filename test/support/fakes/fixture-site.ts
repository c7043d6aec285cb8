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
  const body =
    jar.session === 'letmein'
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

export const AGENT_LOGIN = { username: 'alice', password: 'wonderland-42' } as const;
export const AGENT_GOLDEN_TICKET = 'The golden ticket is item 13';
export const AGENT_TAB_TARGET_TEXT = 'You found the other tab';
export const AGENT_SPA_REVEALED = 'The hidden treasure is under the old oak tree.';

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function agentPage(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;
}

async function formFields(req: http.IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function agentLoginPage(error?: string): string {
  return agentPage(
    'Sign in',
    `<h1>Sign in</h1>${error ? `<p class="error">${error}</p>` : ''}
  <form method="post" action="/agent/login">
    <label>Username <input type="text" name="username" autocomplete="username"></label>
    <label>Password <input type="password" name="password" autocomplete="current-password"></label>
    <button type="submit">Sign in</button>
  </form>`,
  );
}

function agentListPage(req: http.IncomingMessage): string {
  const requested = Number(new URL(req.url ?? '/', 'http://fixture.invalid').searchParams.get('page'));
  const page = Number.isInteger(requested) && requested >= 1 && requested <= 3 ? requested : 1;
  const items = Array.from({ length: 5 }, (_, i) => `<li>Item ${(page - 1) * 5 + i + 1}</li>`).join('');
  const previous = page > 1 ? `<a href="/agent/list?page=${page - 1}">Previous page</a>` : '';
  const next = page < 3 ? `<a href="/agent/list?page=${page + 1}">Next page</a>` : '';
  const ticket = page === 3 ? `<p>${AGENT_GOLDEN_TICKET}</p>` : '';
  return agentPage(
    `Catalogue page ${page}`,
    `<h1>Catalogue, page ${page} of 3</h1><ul>${items}</ul>${ticket}<nav>${previous} ${next}</nav>`,
  );
}

const AGENT_FORM_PAGE = agentPage(
  'Order form',
  `<h1>Order</h1>
  <form method="post" action="/agent/form">
    <label>Plan <select name="plan"><option value="basic">Basic</option><option value="pro">Pro</option><option value="enterprise">Enterprise</option></select></label>
    <label>Name <input type="text" name="name" placeholder="Your name"></label>
    <button type="submit">Place order</button>
  </form>`,
);

const AGENT_TABS_PAGE = agentPage(
  'Tabs',
  `<h1>Tabs</h1>
  <p><a href="/agent/tab-target" target="_blank">Open the other tab</a></p>
  <p><button type="button" onclick="window.open('/agent/tab-target?via=script')">Open with script</button></p>`,
);

const AGENT_SPA_PAGE = agentPage(
  'Loading…',
  `<div id="app"></div>
  <script>
    setTimeout(function () {
      var app = document.getElementById('app');
      app.innerHTML = '<h1>Treasure map</h1><button type="button" id="reveal">Show details</button>';
      document.title = 'Treasure map';
      document.getElementById('reveal').addEventListener('click', function () {
        var p = document.createElement('p');
        p.textContent = ${JSON.stringify(AGENT_SPA_REVEALED)};
        app.appendChild(p);
      });
    }, 50);
  </script>`,
);

export const fixtureRoutes: Record<string, FixtureHandler> = {
  '/static': (_req, res) => sendHtml(res, STATIC_PAGE),
  '/spa': (_req, res) => sendHtml(res, SPA_PAGE),
  '/cookie-gated': (req, res) => sendHtml(res, cookieGatedPage(req)),
  '/redirect-to-private': (_req, res, ctx) => redirect(res, `${ctx.privateOrigin}/internal`),
  '/redirect-chain': (_req, res) => redirect(res, '/redirect-chain/hop-2', 301),
  '/redirect-chain/hop-2': (_req, res, ctx) => redirect(res, `${ctx.siteOrigin}/static`, 307),
  '/js-redirect-to-private': (_req, res, ctx) =>
    sendHtml(
      res,
      `<!doctype html><html><head><title>Away</title></head>
    <body><p>Leaving.</p><script>location.href = ${JSON.stringify(ctx.privateOrigin + '/internal')};</script></body></html>`,
    ),
  '/login': (_req, res) => {
    res.writeHead(302, {
      location: '/cookie-gated',
      'set-cookie': ['session=letmein; Path=/; HttpOnly', 'theme=dark; Path=/'],
    });
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
  '/agent/login': async (req, res) => {
    if (req.method !== 'POST') return sendHtml(res, agentLoginPage());
    const fields = await formFields(req);
    if (fields.get('username') !== AGENT_LOGIN.username || fields.get('password') !== AGENT_LOGIN.password) {
      return sendHtml(res, agentLoginPage('Invalid username or password'), 401);
    }
    res.writeHead(302, { location: '/agent/account', 'set-cookie': 'agent_session=ok; Path=/; HttpOnly' });
    res.end();
  },
  '/agent/account': (req, res) =>
    sendHtml(
      res,
      cookiesOf(req).agent_session === 'ok'
        ? agentPage('Account', '<h1>Account</h1><p>Welcome back, alice</p>')
        : agentPage('Account', '<h1>Account</h1><p>Please sign in first.</p><a href="/agent/login">Sign in</a>'),
    ),
  '/agent/list': (req, res) => sendHtml(res, agentListPage(req)),
  '/agent/form': async (req, res) => {
    if (req.method !== 'POST') return sendHtml(res, AGENT_FORM_PAGE);
    const fields = await formFields(req);
    const summary = `Order received: plan=${fields.get('plan') ?? ''} name=${fields.get('name') ?? ''}`;
    sendHtml(res, agentPage('Order received', `<h1>Thank you</h1><p>${escapeHtml(summary)}</p>`));
  },
  '/agent/tabs': (_req, res) => sendHtml(res, AGENT_TABS_PAGE),
  '/agent/tab-target': (_req, res) =>
    sendHtml(res, agentPage('Other tab', `<h1>Other tab</h1><p>${AGENT_TAB_TARGET_TEXT}</p>`)),
  '/agent/spa': (_req, res) => sendHtml(res, AGENT_SPA_PAGE),
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
    count: (path) =>
      path === undefined ? [...byPath.values()].reduce((sum, n) => sum + n, 0) : (byPath.get(path) ?? 0),
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
