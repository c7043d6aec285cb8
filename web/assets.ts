import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import type { WebState } from './context';

/**
 * The static files the pages use, read once at start: htmx and its SSE extension and uPlot from
 * node_modules (no CDN, no bundler), and our own stylesheet. Each is served at
 * `/assets/<content hash>/<name>`, so it can be cached for a year: a changed file has a new address.
 */
interface Asset {
  name: string;
  type: string;
  body: Buffer;
  hash: string;
}

const packageFile = (pkg: string, file: string) =>
  path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);

const SOURCES: Record<string, { file: string; type: string }> = {
  'htmx.min.js': { file: packageFile('htmx.org', 'dist/htmx.min.js'), type: 'text/javascript; charset=utf-8' },
  'hx-sse.min.js': { file: packageFile('htmx.org', 'dist/ext/hx-sse.min.js'), type: 'text/javascript; charset=utf-8' },
  'uplot.min.js': { file: packageFile('uplot', 'dist/uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  'uplot.min.css': { file: packageFile('uplot', 'dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
  'web.css': { file: path.join(__dirname, 'assets', 'web.css'), type: 'text/css; charset=utf-8' },
};

export type AssetName = keyof typeof SOURCES & string;

function load(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const [name, source] of Object.entries(SOURCES)) {
    // Source-map comments would send browsers' developer tools looking for files we do not serve.
    const text = readFileSync(source.file, 'utf8').replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, '\n');
    const body = Buffer.from(text, 'utf8');
    assets.set(name, {
      name,
      type: source.type,
      body,
      hash: createHash('sha256').update(body).digest('hex').slice(0, 12),
    });
  }
  return assets;
}

let loaded: Map<string, Asset> | null = null;
const assets = () => (loaded ??= load());

/** The address of an asset (with its content hash). */
export function assetUrl(name: AssetName): string {
  const asset = assets().get(name);
  if (!asset) throw new Error(`unknown asset ${name}`);
  return `/assets/${asset.hash}/${name}`;
}

export function assetRoutes(): Router {
  const router = new Router<WebState>();
  router.get('/assets/:hash/:name', (ctx) => {
    const asset = assets().get(ctx.params.name);
    if (!asset || asset.hash !== ctx.params.hash) return; // the pages' 404
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('ETag', `"${asset.hash}"`);
    ctx.type = asset.type;
    ctx.body = asset.body;
  });
  return router;
}
