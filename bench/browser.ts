/**
 * Headless browser binary benchmark (`npm run bench:browser`): the CPU Chromium spends per page in the full
 * browser (CHROMIUM_PATH, /usr/bin/chromium) and in its headless shell (CHROMIUM_HEADLESS_PATH, by default
 * /usr/bin/chromium-headless-shell), the two binaries a headless browser pool can run, in one run.
 *
 * Each round launches one binary the way the platform's pool does (createBrowserPool: the same flags, network
 * isolation off since the page is a loopback server's), opens BENCH_BROWSER_PAGES contexts (default 20) one
 * after another, each loading a loopback page with a script, reading its content and taking a screenshot (what
 * a rendered scrape does), then closes the browser. Rounds alternate binaries (BENCH_BROWSER_ROUNDS, default
 * 3 each). CPU is counted from /proc for the browser's whole process tree (renderers, GPU and utility
 * processes, live and reaped), so the machine's other load changes wall times but hardly the CPU counted.
 * Prints a table and, last, one JSON line with every figure; the ratio is shell / full.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import os from 'node:os';
import { createBrowserPool } from '../activities/browser/pool';
import { headlessChromiumPath } from '../lib/config';
import { descendantsOf, cpuMeter } from './proc-cpu';

const PAGES = Number(process.env.BENCH_BROWSER_PAGES ?? 20);
const ROUNDS = Number(process.env.BENCH_BROWSER_ROUNDS ?? 3);
const FULL = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHELL = headlessChromiumPath();

const PAGE = `<!doctype html><html><head><title>Catalogue</title></head><body><main><h1>Catalogue</h1>${'<p>An item with a description long enough to wrap over a few lines of the page.</p>'.repeat(60)}</main><script>document.querySelector('h1').textContent += ' (rendered)';</script></body></html>`;

async function round(executablePath: string, url: string): Promise<{ cpuSeconds: number; wallMs: number }> {
  const meter = cpuMeter([{ name: 'browser', pids: () => descendantsOf(process.pid), tree: true }]);
  const started = Date.now();
  const measuring = await meter.start();
  const pool = createBrowserPool({ executablePath, maxContexts: 1, isolateNetwork: false });
  for (let i = 0; i < PAGES; i++) {
    await pool.withContext({}, async (context) => {
      const page = await context.newPage();
      await page.goto(url);
      await page.content();
      await page.screenshot({ fullPage: true });
    });
  }
  // Counted before the close: the browser's own time and its reaped renderers' are in its /proc entry until then.
  const { browser } = await measuring.stop();
  await pool.close();
  return { cpuSeconds: browser, wallMs: Date.now() - started };
}

async function main() {
  if (SHELL === FULL) {
    console.log(`No headless shell installed (CHROMIUM_HEADLESS_PATH resolves to ${SHELL}): nothing to compare.`);
    return;
  }
  const server = createServer((_request, response) => {
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.end(PAGE);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  const loadAtStart = os.loadavg()[0];
  const results: Record<'full' | 'shell', { cpuSeconds: number; wallMs: number }[]> = { full: [], shell: [] };
  for (let i = 0; i < ROUNDS; i++) {
    results.full.push(await round(FULL, url));
    results.shell.push(await round(SHELL, url));
  }
  server.close();
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const summary = Object.fromEntries(
    (['full', 'shell'] as const).map((kind) => [
      kind,
      {
        cpuMsPerPage: Math.round((median(results[kind].map((r) => r.cpuSeconds)) * 1000) / PAGES),
        wallMsPerPage: Math.round(median(results[kind].map((r) => r.wallMs)) / PAGES),
      },
    ]),
  ) as Record<'full' | 'shell', { cpuMsPerPage: number; wallMsPerPage: number }>;
  const ratio = Math.round((summary.shell.cpuMsPerPage / summary.full.cpuMsPerPage) * 100) / 100;
  console.log(`\n${PAGES} pages per round, ${ROUNDS} rounds per binary (medians), browser launch included`);
  console.log('                                         CPU ms/page   wall ms/page');
  console.log(
    `full browser   ${FULL.padEnd(34)} ${String(summary.full.cpuMsPerPage).padStart(8)} ${String(summary.full.wallMsPerPage).padStart(13)}`,
  );
  console.log(
    `headless shell ${SHELL.padEnd(34)} ${String(summary.shell.cpuMsPerPage).padStart(8)} ${String(summary.shell.wallMsPerPage).padStart(13)}`,
  );
  console.log(
    `ratio (shell / full) of CPU per page: ${ratio}x; load average ${loadAtStart.toFixed(2)} → ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores`,
  );
  console.log(
    JSON.stringify({
      pages: PAGES,
      rounds: ROUNDS,
      binaries: { full: FULL, shell: SHELL },
      ...summary,
      ratio,
      results,
    }),
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
