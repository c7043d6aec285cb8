import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type Router from '@koa/router';
import { createRouter } from '../../api/app';
import { loadConfig } from '../../lib/config';
import { routeListingDeps, routerRoutes } from '../support/router-routes';

/**
 * The public API's routes and its served OpenAPI document (GET /api/v1/openapi.json) agree both
 * ways: every route under the document's server URL (/api/v1) is an operation of the document
 * (same method, same path, same parameter names), and every operation of the document has a route.
 * The routes are those of api/app.ts `createRouter`, built without a database or Temporal (nothing
 * is served from it but the document).
 *
 * Not covered here, because they are not routes of `createRouter`: the pages of web/ and the OAuth
 * authorization server (createApp mounts them as middleware before the router), and each hosted
 * endpoint's /.well-known/oauth-protected-resource/mcp/{entryId} (api/routes/oauth.ts, a discovery
 * document defined by RFC 9728, not part of this API).
 */

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Routes under the server URL that are deliberately not operations of the document, and why. */
const UNDOCUMENTED: Record<string, string> = {
  'GET /api/v1/openapi.json': 'the OpenAPI document itself',
  'GET /api/v1/docs': 'the human docs site (HTML) rendered from the document and docs/*.md',
  'GET /api/v1/docs/style.css': "the docs site's stylesheet",
  'GET /api/v1/docs/readme': "the docs site's page of the operator README",
  'GET /api/v1/docs/guides/{slug}': "the docs site's guide pages (docs/*.md)",
  'GET /api/v1/docs/console/{file}': 'the console screenshots the guides show',
};

/** Route prefixes outside the server URL: not part of the public API the document describes, and why. */
const OUTSIDE_THE_API: Record<string, string> = {
  '/admin/':
    "the operator's API (ADMIN_TOKEN), driven by npm run admin; described in docs/operations.md and docs/configuration.md",
  '/health': 'the readiness probe for the operator',
  '/metrics': "Prometheus' scrape endpoint for the operator",
  '/docs-mcp': 'the docs-search MCP endpoint: its tools describe themselves over MCP (tools/list)',
  '/mcp/': 'the hosted market MCP endpoints: MCP over HTTP, each tool described by tools/list',
};

interface Disagreements {
  /** Routes under the server URL that are neither operations of the document nor listed in UNDOCUMENTED. */
  undocumented: string[];
  /** Operations of the document without a route. */
  unrouted: string[];
  /** Routes outside the server URL under no prefix of OUTSIDE_THE_API. */
  unplaced: string[];
  /** Entries of UNDOCUMENTED that are no longer routes (or have become operations). */
  staleExemptions: string[];
}

/** The document's operations as "METHOD /api/v1/path/{param}". */
function operationsOf(document: { servers?: { url: string }[]; paths: Record<string, object> }): string[] {
  const server = (document.servers?.[0]?.url ?? '').replace(/\/+$/, '');
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => HTTP_METHODS.includes(key))
      .map((method) => `${method.toUpperCase()} ${server}${path}`),
  );
}

function compare(routes: string[], operations: string[], serverUrl: string): Disagreements {
  const inApi = (route: string) => route.split(' ')[1]!.startsWith(`${serverUrl}/`);
  const apiRoutes = routes.filter(inApi);
  return {
    undocumented: apiRoutes.filter((r) => !operations.includes(r) && !(r in UNDOCUMENTED)),
    unrouted: operations.filter((op) => !routes.includes(op)),
    unplaced: routes
      .filter((r) => !inApi(r))
      .filter((r) => !Object.keys(OUTSIDE_THE_API).some((prefix) => r.split(' ')[1]!.startsWith(prefix))),
    staleExemptions: Object.keys(UNDOCUMENTED).filter((r) => !apiRoutes.includes(r) || operations.includes(r)),
  };
}

const NONE: Disagreements = { undocumented: [], unrouted: [], unplaced: [], staleExemptions: [] };

describe('the routes of the API and its served OpenAPI document agree', function () {
  const config = loadConfig({ ADMIN_TOKEN: 'route-listing-admin-token-0123456789abcdef' });
  let router: Router<any>;
  let document: { servers: { url: string }[]; paths: Record<string, Record<string, unknown>> };
  let serverUrl: string;

  before(async function () {
    router = createRouter(routeListingDeps(config));
    // The document as the service serves it, from the same router (no database or Temporal behind it).
    const app = new Koa();
    app.use(router.routes());
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/openapi.json`);
      assert.equal(response.status, 200);
      document = (await response.json()) as typeof document;
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    serverUrl = document.servers[0]!.url.replace(/\/+$/, '');
    assert.equal(serverUrl, '/api/v1');
  });

  it('has an operation for every route under /api/v1 and a route for every operation', function () {
    const routes = routerRoutes(router);
    const operations = operationsOf(document);
    assert.ok(operations.length > 50, `the document lists only ${operations.length} operations`);
    assert.ok(routes.includes('POST /api/v1/scrape') && routes.includes('GET /api/v1/scrape/status/{jobId}'));
    assert.deepEqual(compare(routes, operations, serverUrl), NONE);
  });

  it('names a route added without documentation', function () {
    const withExtra = createRouter(routeListingDeps(config));
    withExtra.get('/api/v1/scrape/preview/:jobId', () => {});
    withExtra.post('/api/v2/scrape', () => {});
    assert.deepEqual(compare(routerRoutes(withExtra), operationsOf(document), serverUrl), {
      ...NONE,
      undocumented: ['GET /api/v1/scrape/preview/{jobId}'],
      unplaced: ['POST /api/v2/scrape'],
    });
  });

  it('names a documented operation that has no route, and a parameter named differently', function () {
    const { ['/scrape/status/{jobId}']: status, ...paths } = document.paths;
    const altered = {
      ...document,
      paths: { ...paths, '/scrape/status/{id}': status!, '/scrape': { ...document.paths['/scrape'], put: {} } },
    };
    assert.deepEqual(compare(routerRoutes(router), operationsOf(altered), serverUrl), {
      ...NONE,
      undocumented: ['GET /api/v1/scrape/status/{jobId}'],
      unrouted: ['PUT /api/v1/scrape', 'GET /api/v1/scrape/status/{id}'],
    });
  });
});
