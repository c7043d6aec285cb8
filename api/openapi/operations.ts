/**
 * The served OpenAPI document as the docs see it: a flat list of operations, each with an
 * operationId (the document's own, else one derived from method and path), and each operation's
 * schemas resolved inline so a reader (or an agent) needs nothing else to call it.
 */

type Json = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string };
  servers?: { url: string }[];
  paths: Record<string, Record<string, Json>>;
  components?: { schemas?: Record<string, unknown>; [key: string]: unknown };
  [key: string]: unknown;
}

export interface OperationSummary {
  operationId: string;
  method: string;
  /** The path as in the document, relative to the server URL (e.g. `/scrape/status/{jobId}`). */
  path: string;
  summary: string;
  tags: string[];
}

export interface ResolvedOperation extends OperationSummary {
  description: string | null;
  /** The server URL the path is relative to (e.g. `/api/v1`). */
  serverUrl: string;
  security: unknown;
  parameters: Json[];
  requestBody: Json | null;
  responses: Record<string, Json>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const pascal = (word: string) => word.replace(/(^|[-_\s.]+)([a-zA-Z0-9])/g, (_, __, c: string) => c.toUpperCase());

/** `post /scrape` → `postScrape`; `get /scrape/status/{jobId}` → `getScrapeStatusByJobId`. */
export function deriveOperationId(method: string, path: string): string {
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((segment) => {
      // A segment may hold a parameter with literal text around it, e.g. `{key}.png`.
      const named = segment.replace(/\{([^}]+)\}/g, (_, name: string) => ` By ${name} `);
      return pascal(named.replace(/[^A-Za-z0-9]+/g, ' ').trim());
    });
  return method.toLowerCase() + parts.join('');
}

/** A copy of the document in which every operation has an operationId. */
export function withOperationIds<T extends OpenApiDocument>(document: T): T {
  const copy = JSON.parse(JSON.stringify(document)) as T;
  for (const [path, item] of Object.entries(copy.paths)) {
    for (const method of Object.keys(item)) {
      if (!METHODS.includes(method)) continue;
      const operation = item[method];
      if (typeof operation.operationId !== 'string') operation.operationId = deriveOperationId(method, path);
    }
  }
  return copy;
}

export function listOperations(document: OpenApiDocument): OperationSummary[] {
  const out: OperationSummary[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      out.push({
        operationId:
          typeof operation.operationId === 'string' ? operation.operationId : deriveOperationId(method, path),
        method: method.toUpperCase(),
        path,
        summary: typeof operation.summary === 'string' ? operation.summary : '',
        tags: Array.isArray(operation.tags) ? (operation.tags as string[]) : [],
      });
    }
  }
  return out;
}

/** Replaces every local `$ref` with the schema it names; a reference back into itself is left as a `$ref`. */
export function resolveRefs(value: unknown, document: OpenApiDocument, seen: string[] = []): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, document, seen));
  if (value === null || typeof value !== 'object') return value;
  const object = value as Json;
  if (typeof object.$ref === 'string' && object.$ref.startsWith('#/')) {
    const ref = object.$ref;
    if (seen.includes(ref)) return { $ref: ref, description: 'recursive reference (see above)' };
    const target = ref
      .slice(2)
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((node, key) => (node && typeof node === 'object' ? (node as Json)[key] : undefined), document);
    if (target === undefined) return object;
    const { $ref: _ref, ...siblings } = object;
    const resolved = resolveRefs(target, document, [...seen, ref]) as Json;
    return { title: ref.split('/').pop(), ...resolved, ...siblings };
  }
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, resolveRefs(v, document, seen)]));
}

export function findOperation(
  document: OpenApiDocument,
  query: { operationId?: string; method?: string; path?: string },
): ResolvedOperation | null {
  const summaries = listOperations(document);
  const wantedPath = query.path ? normalizeOperationPath(query.path, document) : null;
  const match = summaries.find((op) =>
    query.operationId !== undefined
      ? op.operationId === query.operationId
      : op.method === query.method?.toUpperCase() && samePathTemplate(op.path, wantedPath ?? ''),
  );
  if (!match) return null;
  const pathItem = document.paths[match.path];
  const operation = pathItem[match.method.toLowerCase()];
  const shared = Array.isArray(pathItem.parameters) ? (pathItem.parameters as Json[]) : [];
  return {
    ...match,
    description: typeof operation.description === 'string' ? operation.description : null,
    serverUrl: document.servers?.[0]?.url ?? '',
    security: operation.security ?? document.security ?? null,
    parameters: resolveRefs([...shared, ...((operation.parameters as Json[] | undefined) ?? [])], document) as Json[],
    requestBody: operation.requestBody ? (resolveRefs(operation.requestBody, document) as Json) : null,
    responses: resolveRefs(operation.responses ?? {}, document) as Record<string, Json>,
  };
}

/** Accepts `/scrape`, `/api/v1/scrape` or a full URL, and drops the query string. */
function normalizeOperationPath(path: string, document: OpenApiDocument): string {
  let p = path.trim();
  try {
    if (/^https?:\/\//i.test(p)) p = new URL(p).pathname;
  } catch {
    /* not a URL after all */
  }
  p = p.replace(/[?#].*$/, '');
  const server = document.servers?.[0]?.url ?? '';
  if (server.startsWith('/') && server !== '/' && (p === server || p.startsWith(`${server}/`)))
    p = p.slice(server.length);
  if (!p.startsWith('/')) p = `/${p}`;
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}

/** `/scrape/status/{jobId}` matches itself, `/scrape/status/{id}` and `/scrape/status/0c9f…`. */
function samePathTemplate(template: string, candidate: string): boolean {
  const a = template.split('/');
  const b = candidate.split('/');
  return (
    a.length === b.length && a.every((segment, i) => segment === b[i] || (/^\{.+\}$/.test(segment) && b[i] !== ''))
  );
}

// ---------------------------------------------------------------------------------------------
// Markdown and search text of an operation

function schemaName(schema: unknown): string {
  if (!schema || typeof schema !== 'object') return 'any';
  const s = schema as Json;
  if (typeof s.title === 'string') return s.title;
  for (const union of [s.oneOf, s.anyOf]) if (Array.isArray(union)) return union.map(schemaName).join(' | ');
  // A named schema refined in place (e.g. a JobRecord whose result is an AgentResult) is shown by its name.
  if (Array.isArray(s.allOf))
    return (
      s.allOf
        .map(schemaName)
        .filter((name) => name !== 'object')
        .join(' & ') || 'object'
    );
  if (Array.isArray(s.type)) return s.type.join(' | ');
  if (s.type === 'array') return `${schemaName(s.items)}[]`;
  return typeof s.type === 'string' ? s.type : 'object';
}

/** `name (type, required): description` for each property, one level deep. */
function propertyLines(schema: unknown): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const s = schema as Json;
  const properties = s.properties && typeof s.properties === 'object' ? (s.properties as Record<string, Json>) : {};
  const required = Array.isArray(s.required) ? (s.required as string[]) : [];
  return Object.entries(properties).map(([name, prop]) => {
    const parts = [
      schemaName(prop),
      required.includes(name) ? 'required' : null,
      prop.default !== undefined ? `default ${JSON.stringify(prop.default)}` : null,
    ].filter(Boolean);
    const enumText = Array.isArray(prop.enum) ? ` One of ${prop.enum.map((v) => `\`${String(v)}\``).join(', ')}.` : '';
    return `- \`${name}\` (${parts.join(', ')})${prop.description ? `: ${String(prop.description)}` : ''}${enumText}`;
  });
}

function bodySchema(holder: Json | null): unknown {
  const content = holder?.content as Record<string, Json> | undefined;
  return content?.['application/json']?.schema;
}

export function operationMarkdown(op: ResolvedOperation): string {
  const lines = [`## ${op.method} ${op.serverUrl}${op.path}`, '', op.summary, ''];
  lines.push(`Operation id: \`${op.operationId}\`${op.tags.length ? `; tags: ${op.tags.join(', ')}` : ''}.`, '');
  if (op.description) lines.push(op.description, '');
  if (op.parameters.length) {
    lines.push('### Parameters', '');
    for (const p of op.parameters) {
      lines.push(
        `- \`${String(p.name)}\` (${String(p.in)}${p.required ? ', required' : ''}, ${schemaName(p.schema)})${p.description ? `: ${String(p.description)}` : ''}`,
      );
    }
    lines.push('');
  }
  const request = bodySchema(op.requestBody);
  if (request) {
    lines.push(`### Request body: ${schemaName(request)}`, '', ...propertyLines(request), '');
  }
  lines.push('### Responses', '');
  for (const [status, response] of Object.entries(op.responses)) {
    const schema = bodySchema(response);
    lines.push(`- **${status}**: ${String(response.description ?? '')}${schema ? ` (\`${schemaName(schema)}\`)` : ''}`);
  }
  lines.push(
    '',
    'Schemas, resolved inline:',
    '',
    '```json',
    JSON.stringify(
      {
        requestBody: request ?? null,
        responses: Object.fromEntries(Object.entries(op.responses).map(([s, r]) => [s, bodySchema(r) ?? null])),
      },
      null,
      2,
    ),
    '```',
  );
  return lines.join('\n');
}

/** Words that describe the operation, for the search index. */
export function operationSearchText(op: ResolvedOperation): string {
  const out = [op.summary, op.description ?? ''];
  for (const p of op.parameters) out.push(`${String(p.name)} ${String(p.description ?? '')}`);
  const request = bodySchema(op.requestBody);
  if (request) out.push(...propertyLines(request).map((line) => line.replace(/^- /, '').replace(/`/g, '')));
  for (const [status, response] of Object.entries(op.responses))
    out.push(`${status} ${String(response.description ?? '')}`);
  return out.filter(Boolean).join('\n');
}
