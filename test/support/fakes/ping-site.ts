import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Pages that call home every 200 ms while they are open in a browser: a page whose context was closed
 * stops calling, so a test can see from outside whether a browser context is still alive.
 */
export interface PingSite {
  url: string;
  /** A page (an empty script mount, so a scrape needs the browser) that pings `/ping/<tag>`; `hang` adds an image that never loads. */
  pageUrl(tag: string, options?: { hang?: boolean }): string;
  pings(tag: string): number;
  /** Resolves once the page with this tag has pinged (it is open in a browser). */
  waitForPing(tag: string, timeoutMs?: number): Promise<void>;
  /** True once no ping arrived for `quietMs`; false if pings still arrive after `timeoutMs`. */
  becomesQuiet(tag: string, quietMs?: number, timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

const PING_EVERY_MS = 200;

export async function startPingSite(): Promise<PingSite> {
  const hits = new Map<string, number>();
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://ping.invalid');
    const page = /^\/page\/([\w-]+)$/.exec(url.pathname);
    const ping = /^\/ping\/([\w-]+)$/.exec(url.pathname);
    if (page) {
      const tag = page[1];
      const image = url.searchParams.get('hang') === '1' ? '<img src="/hang" alt="">' : '';
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      response.end(
        `<!doctype html><html><head><title>Ping ${tag}</title></head><body><div id="root"></div>${image}` +
          `<script>document.getElementById('root').textContent = 'Live page ${tag}';` +
          `setInterval(function () { fetch('/ping/${tag}?t=' + Date.now()).catch(function () {}); }, ${PING_EVERY_MS});</script></body></html>`,
      );
      return;
    }
    if (ping) {
      hits.set(ping[1], (hits.get(ping[1]) ?? 0) + 1);
      response.writeHead(204, { 'cache-control': 'no-store' });
      response.end();
      return;
    }
    if (url.pathname === '/hang') return; // never answers
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pings = (tag: string) => hits.get(tag) ?? 0;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  return {
    url: base,
    pageUrl: (tag, options = {}) => `${base}/page/${tag}${options.hang ? '?hang=1' : ''}`,
    pings,
    async waitForPing(tag, timeoutMs = 90_000) {
      const deadline = Date.now() + timeoutMs;
      while (pings(tag) === 0) {
        if (Date.now() > deadline) throw new Error(`page ${tag} never pinged`);
        await sleep(100);
      }
    },
    async becomesQuiet(tag, quietMs = 1_500, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const before = pings(tag);
        await sleep(quietMs);
        if (pings(tag) === before) return true;
      }
      return false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
