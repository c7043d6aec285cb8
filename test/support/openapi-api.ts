import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP API ("Inventory") and two descriptions of it: an OpenAPI 3.1 YAML document and a
 * Swagger 2.0 JSON document. Every request is recorded, so tests can see exactly what a tool call
 * sent (path, query, headers, cookies, body). Credentials: API key in a header (X-API-Key), in the
 * query (api_key), in a cookie (session), a bearer token, and HTTP Basic.
 */
export const API_KEY = 'inv-key-7f3a9c21';
export const QUERY_KEY = 'inv-query-55d1e0';
export const COOKIE_KEY = 'inv-cookie-0b6e44';
export const BEARER_TOKEN = 'inv-bearer-c0ffee99';
export const BASIC_USER = 'alice';
export const BASIC_PASSWORD = 'wonder-land-42';

export interface RecordedApiRequest {
  method: string;
  path: string;
  query: Record<string, string[]>;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface TestOpenApiServer {
  origin: string;
  /** Base URL of the API (the documents' server URL). */
  apiBase: string;
  openapiYaml: string;
  swaggerJson: string;
  /** URLs serving the two documents. */
  openapiYamlUrl: string;
  swaggerJsonUrl: string;
  requests: RecordedApiRequest[];
  /** Requests to the API itself (not to the documents). */
  apiRequests: () => RecordedApiRequest[];
  close: () => Promise<void>;
}

function openapiYaml(apiBase: string): string {
  return `openapi: 3.1.0
info:
  title: Inventory API
  description: Items of a small warehouse.
  version: 2.4.0
servers:
  - url: ${apiBase}
security:
  - headerKey: []
paths:
  /items/{itemId}:
    parameters:
      - name: itemId
        in: path
        required: true
        description: The item's id
        schema: { type: string }
    get:
      operationId: getItem
      summary: Read one item
      description: Returns the item with its stock level.
      parameters:
        - name: verbose
          in: query
          schema: { type: boolean }
        - name: X-Trace-Id
          in: header
          description: Correlation id echoed back
          schema: { type: string }
      responses:
        '200':
          description: The item
          content:
            application/json:
              schema: { $ref: '#/components/schemas/Item' }
    put:
      operationId: replaceItem
      summary: Replace an item
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: '#/components/schemas/NewItem' }
      responses:
        '200': { description: Replaced }
    delete:
      operationId: deleteItem
      summary: Delete an item
      responses:
        '204': { description: Deleted }
  /items:
    get:
      summary: List items
      parameters:
        - name: tag
          in: query
          schema: { type: array, items: { type: string } }
        - name: limit
          in: query
          schema: { type: integer, minimum: 1 }
      responses:
        '200': { description: Items }
    post:
      operationId: create item!
      summary: Create an item
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: '#/components/schemas/NewItem' }
      responses:
        '201': { description: Created }
  /categories/{id}:
    get:
      operationId: getCategory
      summary: A category and its sub-categories (a recursive schema)
      parameters:
        - { name: id, in: path, required: true, schema: { type: string } }
      responses:
        '200':
          description: The category tree
          content:
            application/json:
              schema: { $ref: '#/components/schemas/Category' }
    put:
      operationId: replaceCategory
      summary: Replace a category tree
      parameters:
        - { name: id, in: path, required: true, schema: { type: string } }
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: '#/components/schemas/Category' }
      responses:
        '200': { description: Replaced }
  /report:
    get:
      operationId: getReport
      summary: A plain-text stock report
      parameters:
        - { name: lines, in: query, schema: { type: integer } }
      responses:
        '200': { description: Report, content: { text/plain: { schema: { type: string } } } }
  /label.png:
    get:
      operationId: getLabel
      summary: The warehouse label image
      responses:
        '200': { description: PNG, content: { image/png: { schema: { type: string, format: binary } } } }
  /by-query-key:
    get:
      operationId: whoAmIQuery
      security: [ { queryKey: [] } ]
      responses: { '200': { description: ok } }
  /by-cookie:
    get:
      operationId: whoAmICookie
      security: [ { cookieKey: [] } ]
      responses: { '200': { description: ok } }
  /by-bearer:
    get:
      operationId: whoAmIBearer
      security: [ { bearerAuth: [] } ]
      responses: { '200': { description: ok } }
  /by-basic:
    get:
      operationId: whoAmIBasic
      security: [ { basicAuth: [] } ]
      responses: { '200': { description: ok } }
  /health:
    get:
      operationId: health
      security: []
      responses: { '200': { description: ok } }
components:
  securitySchemes:
    headerKey: { type: apiKey, in: header, name: X-API-Key }
    queryKey: { type: apiKey, in: query, name: api_key }
    cookieKey: { type: apiKey, in: cookie, name: session }
    bearerAuth: { type: http, scheme: bearer }
    basicAuth: { type: http, scheme: basic }
  schemas:
    NewItem:
      type: object
      required: [name]
      properties:
        name: { type: string, description: Display name }
        tags: { type: array, items: { type: string } }
    Item:
      allOf:
        - $ref: '#/components/schemas/NewItem'
        - type: object
          properties:
            id: { type: string }
            stock: { type: integer }
    Category:
      type: object
      properties:
        name: { type: string }
        children:
          type: array
          items: { $ref: '#/components/schemas/Category' }
`;
}

function swaggerJson(host: string): string {
  return JSON.stringify(
    {
      swagger: '2.0',
      info: {
        title: 'Inventory API (Swagger)',
        description: 'Items of a small warehouse, Swagger edition.',
        version: '1.9.0',
      },
      host,
      basePath: '/api',
      schemes: ['http'],
      consumes: ['application/json'],
      produces: ['application/json'],
      securityDefinitions: {
        headerKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        queryKey: { type: 'apiKey', in: 'query', name: 'api_key' },
        basicAuth: { type: 'basic' },
      },
      security: [{ headerKey: [] }],
      paths: {
        '/items/{itemId}': {
          get: {
            operationId: 'getItem',
            summary: 'Read one item',
            parameters: [
              { name: 'itemId', in: 'path', required: true, type: 'string' },
              { name: 'verbose', in: 'query', type: 'boolean' },
              { name: 'X-Trace-Id', in: 'header', type: 'string', description: 'Correlation id echoed back' },
            ],
            responses: { 200: { description: 'The item', schema: { $ref: '#/definitions/Item' } } },
          },
        },
        '/items': {
          post: {
            operationId: 'createItem',
            summary: 'Create an item',
            parameters: [{ name: 'item', in: 'body', required: true, schema: { $ref: '#/definitions/NewItem' } }],
            responses: { 201: { description: 'Created' } },
          },
        },
        '/by-query-key': {
          get: { operationId: 'whoAmIQuery', security: [{ queryKey: [] }], responses: { 200: { description: 'ok' } } },
        },
        '/by-basic': {
          get: { operationId: 'whoAmIBasic', security: [{ basicAuth: [] }], responses: { 200: { description: 'ok' } } },
        },
      },
      definitions: {
        NewItem: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
        },
        Item: {
          type: 'object',
          properties: { id: { type: 'string' }, name: { type: 'string' }, stock: { type: 'integer' } },
        },
      },
    },
    null,
    2,
  );
}

const PNG_BYTES = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function authorized(req: http.IncomingMessage, query: URLSearchParams, path: string): boolean {
  const cookies = Object.fromEntries(
    (req.headers.cookie ?? '').split(';').map((part) => part.trim().split('=') as [string, string]),
  );
  switch (path) {
    case '/api/health':
      return true;
    case '/api/by-query-key':
      return query.get('api_key') === QUERY_KEY;
    case '/api/by-cookie':
      return cookies.session === COOKIE_KEY;
    case '/api/by-bearer':
      return req.headers.authorization === `Bearer ${BEARER_TOKEN}`;
    case '/api/by-basic':
      return req.headers.authorization === `Basic ${Buffer.from(`${BASIC_USER}:${BASIC_PASSWORD}`).toString('base64')}`;
    default:
      return req.headers['x-api-key'] === API_KEY;
  }
}

export async function startOpenApiServer(): Promise<TestOpenApiServer> {
  const requests: RecordedApiRequest[] = [];
  let documents = { yaml: '', json: '' };
  let created = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const query: Record<string, string[]> = {};
      url.searchParams.forEach((value, key) => (query[key] ??= []).push(value));
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? 'GET', path: url.pathname, query, headers: req.headers, body });
      const path = url.pathname;
      if (path === '/openapi.yaml')
        return void res.writeHead(200, { 'content-type': 'application/yaml' }).end(documents.yaml);
      if (path === '/swagger.json')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(documents.json);
      if (!path.startsWith('/api/')) return json(res, 404, { error: 'no such route' });
      if (!authorized(req, url.searchParams, path)) return json(res, 401, { error: 'missing or wrong credentials' });
      const item = /^\/api\/items\/([^/]+)$/.exec(path);
      if (item && req.method === 'GET') {
        return json(res, 200, {
          id: decodeURIComponent(item[1]),
          name: 'Blue widget',
          stock: 12,
          verbose: url.searchParams.get('verbose'),
          trace: req.headers['x-trace-id'] ?? null,
        });
      }
      if (item && (req.method === 'PUT' || req.method === 'DELETE'))
        return req.method === 'PUT' ? json(res, 200, { id: item[1], replaced: true }) : void res.writeHead(204).end();
      if (path === '/api/items' && req.method === 'POST') {
        const parsed = JSON.parse(body || '{}');
        return json(res, 201, { id: `item-${++created}`, ...parsed });
      }
      if (path === '/api/items' && req.method === 'GET')
        return json(res, 200, {
          items: [],
          tags: url.searchParams.getAll('tag'),
          limit: url.searchParams.get('limit'),
        });
      if (path === '/api/report') {
        const lines = Number(url.searchParams.get('lines') ?? '3');
        const text = Array.from({ length: lines }, (_, i) => `line ${i + 1}: ${'stock '.repeat(10)}`).join('\n');
        return void res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(text);
      }
      if (path === '/api/label.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(PNG_BYTES);
      if (path === '/api/categories/root' && req.method === 'PUT')
        return json(res, 200, { replaced: JSON.parse(body || 'null') });
      if (path === '/api/categories/root')
        return json(res, 200, { name: 'root', children: [{ name: 'tools', children: [] }] });
      if (path.startsWith('/api/by-') || path === '/api/health')
        return json(res, 200, { ok: true, via: path.slice('/api/by-'.length) });
      json(res, 404, { error: 'no such route' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  documents = { yaml: openapiYaml(`${origin}/api`), json: swaggerJson(`127.0.0.1:${port}`) };
  return {
    origin,
    apiBase: `${origin}/api`,
    openapiYaml: documents.yaml,
    swaggerJson: documents.json,
    openapiYamlUrl: `${origin}/openapi.yaml`,
    swaggerJsonUrl: `${origin}/swagger.json`,
    requests,
    apiRequests: () => requests.filter((request) => request.path.startsWith('/api/')),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
