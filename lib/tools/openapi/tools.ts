import type { OpenApiDocument } from './document';
import type { SourceParam, ToolAnnotations, ToolDefinition } from '../types';

/**
 * Turns a validated Swagger 2.0 / OpenAPI 3.x document into tools, one per operation:
 * - name from operationId, else method + path, sanitised to [A-Za-z0-9_-], at most 64 characters, unique;
 * - path, query, header and cookie parameters as top-level properties, the request body as `body`;
 * - description from summary and description;
 * - annotations from the method: GET/HEAD/OPTIONS read-only, and those plus PUT/DELETE idempotent.
 * Local `$ref`s are inlined; a recursive one is cut at its second occurrence, and an external one (never
 * resolved) becomes an unconstrained schema, so every tool schema is finite plain JSON.
 */

export type ParameterLocation = 'path' | 'query' | 'header' | 'cookie';

export interface OperationParameter {
  /** Name on the wire. */
  name: string;
  /** Name of the tool argument (sanitised, unique within the tool). */
  property: string;
  in: ParameterLocation;
  required: boolean;
  schema: Record<string, unknown>;
}

export interface OperationBody {
  /** Name of the tool argument holding the body: `body` (unless a parameter already has that name). */
  property: string;
  required: boolean;
  mediaType: string;
  schema: Record<string, unknown>;
}

export type SecuritySchemeKind = 'apiKey' | 'bearer' | 'basic';

export interface SecurityScheme {
  /** Key in securitySchemes / securityDefinitions. */
  key: string;
  kind: SecuritySchemeKind;
  in: 'header' | 'query' | 'cookie';
  /** Header, query or cookie name (Authorization for bearer and basic). */
  name: string;
}

export interface OpenApiOperation {
  toolName: string;
  method: string;
  path: string;
  parameters: OperationParameter[];
  body: OperationBody | null;
  /** Alternatives, each a list of scheme keys that must all be applied; [] means no auth; an empty alternative means auth is optional. */
  security: string[][];
  /** Server URL template for this operation (OpenAPI 3 operation/path servers), or null for the document's. */
  serverTemplate: string | null;
  /** The variables of serverTemplate (empty when it is null). */
  serverVariables: Record<string, ServerVariable>;
  tool: ToolDefinition;
}

export interface ServerVariable {
  default: string;
  enum?: string[];
  description?: string;
}

export interface OpenApiModel {
  title: string | null;
  description: string | null;
  operations: OpenApiOperation[];
  schemes: Map<string, SecurityScheme>;
  /** The document's server URL template (may be relative; may contain {variables}), or null. */
  serverTemplate: string | null;
  serverVariables: Record<string, ServerVariable>;
  params: SourceParam[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const READ_ONLY = new Set(['GET', 'HEAD', 'OPTIONS']);
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);
const MAX_NAME = 64;
const MAX_DESCRIPTION = 4000;
/** Upper bound on schema nodes inlined per tool, against documents whose refs expand exponentially. */
const SCHEMA_NODE_BUDGET = 20_000;

export function buildOpenApiModel(loaded: OpenApiDocument): OpenApiModel {
  const { doc } = loaded;
  const swagger = loaded.version === 'swagger-2.0';
  const resolver = new RefInliner(doc);
  const schemes = securitySchemes(doc, swagger);
  const names = new Set<string>();
  const operations: OpenApiOperation[] = [];
  for (const [path, rawItem] of Object.entries<any>(doc.paths ?? {})) {
    const pathItem = resolver.deref(rawItem) ?? {};
    for (const method of METHODS) {
      const operation = resolver.deref(pathItem[method]);
      if (!operation || typeof operation !== 'object') continue;
      operations.push(buildOperation({ doc, swagger, resolver, path, pathItem, method, operation, names }));
    }
  }
  const server = swagger
    ? swaggerServer(doc, loaded.location)
    : { template: doc.servers?.[0]?.url ?? null, variables: serverVariables(doc.servers?.[0]) };
  return {
    title: nonEmpty(doc.info?.title),
    description: nonEmpty(doc.info?.description),
    operations,
    schemes,
    serverTemplate: server.template,
    serverVariables: server.variables,
    params: sourceParams(operations, schemes, server.variables),
  };
}

interface OperationInput {
  doc: Record<string, any>;
  swagger: boolean;
  resolver: RefInliner;
  path: string;
  pathItem: Record<string, any>;
  method: (typeof METHODS)[number];
  operation: Record<string, any>;
  names: Set<string>;
}

function buildOperation(input: OperationInput): OpenApiOperation {
  const { doc, swagger, resolver, path, pathItem, method, operation, names } = input;
  const httpMethod = method.toUpperCase();
  const toolName = uniqueName(
    operation.operationId ? sanitizeName(String(operation.operationId)) : '',
    `${method}_${path}`,
    names,
  );
  const budget = { remaining: SCHEMA_NODE_BUDGET };
  const rawParameters = mergeParameters(resolver, pathItem.parameters, operation.parameters);
  const parameters: OperationParameter[] = [];
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const taken = new Set<string>();
  let body: Omit<OperationBody, 'property'> | null = null;
  const formFields: { name: string; required: boolean; schema: Record<string, unknown> }[] = [];

  for (const parameter of rawParameters) {
    const location = parameter.in as string;
    if (swagger && location === 'body') {
      body = {
        required: parameter.required === true,
        mediaType: preferredMediaType(operation.consumes ?? doc.consumes ?? ['application/json']),
        schema: resolver.inline(parameter.schema ?? {}, budget),
      };
      continue;
    }
    if (swagger && location === 'formData') {
      formFields.push({
        name: parameter.name,
        required: parameter.required === true,
        schema: swaggerParameterSchema(parameter),
      });
      continue;
    }
    if (!['path', 'query', 'header', 'cookie'].includes(location)) continue;
    const schema = withDescription(
      swagger ? swaggerParameterSchema(parameter) : parameterSchema(parameter, resolver, budget),
      parameter.description,
    );
    const property = uniqueProperty(parameter.name, location, taken);
    const isRequired = location === 'path' || parameter.required === true;
    parameters.push({
      name: parameter.name,
      property,
      in: location as ParameterLocation,
      required: isRequired,
      schema,
    });
    properties[property] = schema;
    if (isRequired) required.push(property);
  }

  if (formFields.length > 0) {
    body = {
      required: formFields.some((field) => field.required),
      mediaType: 'application/x-www-form-urlencoded',
      schema: {
        type: 'object',
        properties: Object.fromEntries(formFields.map((field) => [field.name, field.schema])),
        required: formFields.filter((field) => field.required).map((field) => field.name),
      },
    };
  }
  if (!swagger && operation.requestBody) body = requestBody(resolver.deref(operation.requestBody), resolver, budget);
  const bodyWithProperty = body && { ...body, property: uniqueProperty('body', 'request', taken) };
  if (bodyWithProperty) {
    properties[bodyWithProperty.property] = withDescription(
      bodyWithProperty.schema,
      `Request body (${bodyWithProperty.mediaType})`,
    );
    if (bodyWithProperty.required) required.push(bodyWithProperty.property);
  }

  const annotations: ToolAnnotations = {
    readOnlyHint: READ_ONLY.has(httpMethod),
    idempotentHint: IDEMPOTENT.has(httpMethod),
  };
  if (httpMethod === 'DELETE') annotations.destructiveHint = true;
  const security = effectiveSecurity(operation.security ?? doc.security);
  const server = swagger ? undefined : (operation.servers?.[0] ?? pathItem.servers?.[0]);
  const serverTemplate = typeof server?.url === 'string' ? server.url : null;
  return {
    toolName,
    method: httpMethod,
    path,
    parameters,
    body: bodyWithProperty,
    security,
    serverTemplate,
    serverVariables: serverTemplate ? serverVariables(server) : {},
    tool: {
      name: toolName,
      description: describe(operation, httpMethod, path),
      inputSchema: {
        type: 'object',
        properties,
        ...(required.length > 0 && { required }),
        additionalProperties: false,
      },
      annotations,
    },
  };
}

function describe(operation: Record<string, any>, method: string, path: string): string {
  const summary = nonEmpty(operation.summary);
  const description = nonEmpty(operation.description);
  const text =
    summary && description && !description.startsWith(summary)
      ? `${summary}\n\n${description}`
      : (description ?? summary ?? `${method} ${path}`);
  return text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION - 1)}…` : text;
}

function mergeParameters(resolver: RefInliner, pathLevel: unknown, operationLevel: unknown): Record<string, any>[] {
  const byKey = new Map<string, Record<string, any>>();
  for (const list of [pathLevel, operationLevel]) {
    if (!Array.isArray(list)) continue;
    for (const raw of list) {
      const parameter = resolver.deref(raw);
      if (parameter && typeof parameter.name === 'string') byKey.set(`${parameter.in}:${parameter.name}`, parameter);
    }
  }
  return [...byKey.values()];
}

function parameterSchema(
  parameter: Record<string, any>,
  resolver: RefInliner,
  budget: Budget,
): Record<string, unknown> {
  if (parameter.schema) return resolver.inline(parameter.schema, budget);
  const media = parameter.content && Object.values<any>(parameter.content)[0];
  return media?.schema ? resolver.inline(media.schema, budget) : { type: 'string' };
}

const SWAGGER_SCHEMA_KEYS = [
  'type',
  'format',
  'items',
  'enum',
  'default',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'multipleOf',
];

function swaggerParameterSchema(parameter: Record<string, any>): Record<string, unknown> {
  const schema: Record<string, unknown> = {};
  for (const key of SWAGGER_SCHEMA_KEYS) if (parameter[key] !== undefined) schema[key] = parameter[key];
  if (schema.type === 'file') {
    schema.type = 'string';
    schema.description = 'File content';
  }
  return schema;
}

function requestBody(
  raw: Record<string, any> | null,
  resolver: RefInliner,
  budget: Budget,
): Omit<OperationBody, 'property'> | null {
  const content: Record<string, any> = raw?.content ?? {};
  const mediaType = preferredMediaType(Object.keys(content));
  if (!mediaType) return null;
  return {
    required: raw?.required === true,
    mediaType,
    schema: resolver.inline(content[mediaType]?.schema ?? {}, budget),
  };
}

/** JSON first, then form encoding, then text; the first listed otherwise. */
function preferredMediaType(types: string[]): string {
  const lower = types.map((type) => type.toLowerCase());
  const pick =
    lower.find(
      (type) =>
        type === 'application/json' || /^application\/[\w.+-]*\+json/.test(type) || type.startsWith('application/json'),
    ) ??
    lower.find((type) => type.startsWith('application/x-www-form-urlencoded')) ??
    lower.find((type) => type.startsWith('text/')) ??
    lower[0];
  return pick ?? '';
}

function effectiveSecurity(requirements: unknown): string[][] {
  if (!Array.isArray(requirements)) return [];
  return requirements
    .filter((r) => r && typeof r === 'object')
    .map((requirement) => Object.keys(requirement as object));
}

function securitySchemes(doc: Record<string, any>, swagger: boolean): Map<string, SecurityScheme> {
  const definitions: Record<string, any> = (swagger ? doc.securityDefinitions : doc.components?.securitySchemes) ?? {};
  const schemes = new Map<string, SecurityScheme>();
  for (const [key, definition] of Object.entries(definitions)) {
    if (!definition || typeof definition !== 'object') continue;
    const type = String(definition.type ?? '');
    if (
      type === 'apiKey' &&
      ['header', 'query', 'cookie'].includes(definition.in) &&
      typeof definition.name === 'string'
    ) {
      schemes.set(key, { key, kind: 'apiKey', in: definition.in, name: definition.name });
    } else if ((type === 'http' && /^basic$/i.test(definition.scheme ?? '')) || type === 'basic') {
      schemes.set(key, { key, kind: 'basic', in: 'header', name: 'Authorization' });
    } else if (type === 'http' || type === 'oauth2' || type === 'openIdConnect') {
      // http bearer (and other token schemes), and OAuth tokens obtained elsewhere, go in Authorization.
      schemes.set(key, { key, kind: 'bearer', in: 'header', name: 'Authorization' });
    }
  }
  return schemes;
}

function swaggerServer(
  doc: Record<string, any>,
  location: URL | null,
): { template: string | null; variables: Record<string, ServerVariable> } {
  const schemes: string[] = Array.isArray(doc.schemes) ? doc.schemes : [];
  const scheme = schemes.includes('https') ? 'https' : (schemes[0] ?? location?.protocol.replace(':', '') ?? 'https');
  const host = doc.host ?? location?.host;
  const basePath = typeof doc.basePath === 'string' ? doc.basePath : '';
  return { template: host ? `${scheme}://${host}${basePath}` : basePath || null, variables: {} };
}

function serverVariables(server: Record<string, any> | undefined): Record<string, ServerVariable> {
  const variables: Record<string, ServerVariable> = {};
  for (const [name, variable] of Object.entries<any>(server?.variables ?? {})) {
    variables[name] = {
      default: String(variable?.default ?? ''),
      ...(Array.isArray(variable?.enum) && { enum: variable.enum.map(String) }),
      ...(typeof variable?.description === 'string' && { description: variable.description }),
    };
  }
  return variables;
}

/** What a caller must (or may) provide: the credentials the security schemes name, and the server URL variables. */
function sourceParams(
  operations: OpenApiOperation[],
  schemes: Map<string, SecurityScheme>,
  variables: Record<string, ServerVariable>,
): SourceParam[] {
  const params = new Map<string, SourceParam>();
  const usedSchemes = new Set(operations.flatMap((operation) => operation.security.flat()));
  const requiredSchemes = new Set(
    operations.flatMap((operation) => {
      const alternatives = operation.security;
      if (alternatives.length === 0 || alternatives.some((alternative) => alternative.length === 0)) return [];
      return alternatives[0].filter((key) => alternatives.every((alternative) => alternative.includes(key)));
    }),
  );
  for (const scheme of schemes.values()) {
    if (!usedSchemes.has(scheme.key)) continue;
    const key = `${scheme.in}:${scheme.name.toLowerCase()}`;
    const existing = params.get(key);
    const description = schemeDescription(scheme);
    if (existing) {
      existing.required ||= requiredSchemes.has(scheme.key);
      if (!existing.description.includes(description)) existing.description += ` Or: ${description}`;
      continue;
    }
    params.set(key, {
      name: scheme.name,
      in: scheme.in,
      required: requiredSchemes.has(scheme.key),
      secret: true,
      description,
    });
  }
  for (const [name, variable] of Object.entries(variables)) {
    const choices = variable.enum ? ` One of: ${variable.enum.join(', ')}.` : '';
    params.set(`server:${name}`, {
      name,
      in: 'server',
      required: variable.default === '',
      secret: false,
      description: `${variable.description ? `${variable.description}. ` : ''}Server URL variable {${name}}${variable.default ? `, default "${variable.default}"` : ''}.${choices}`,
    });
  }
  return [...params.values()];
}

function schemeDescription(scheme: SecurityScheme): string {
  switch (scheme.kind) {
    case 'apiKey':
      return `API key (security scheme "${scheme.key}"), sent as the ${scheme.name} ${scheme.in === 'header' ? 'header' : scheme.in === 'query' ? 'query parameter' : 'cookie'}.`;
    case 'bearer':
      return `Bearer token (security scheme "${scheme.key}"), sent as "Authorization: Bearer <token>"; give the token, with or without the "Bearer " prefix.`;
    case 'basic':
      return `HTTP Basic credentials (security scheme "${scheme.key}"): give "user:password", sent as "Authorization: Basic <base64>".`;
  }
}

export function sanitizeName(raw: string): string {
  return raw
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/_{2,}/g, '_')
    .replace(/^[_-]+|[_-]+$/g, '')
    .slice(0, MAX_NAME);
}

function uniqueName(preferred: string, fallback: string, taken: Set<string>): string {
  const base = preferred || sanitizeName(fallback) || 'operation';
  let name = base;
  for (let n = 2; taken.has(name); n++) {
    const suffix = `_${n}`;
    name = `${base.slice(0, MAX_NAME - suffix.length)}${suffix}`;
  }
  taken.add(name);
  return name;
}

function uniqueProperty(wireName: string, location: string, taken: Set<string>): string {
  const clean = (text: string) => text.replace(/[^A-Za-z0-9_.-]+/g, '_').slice(0, MAX_NAME) || 'param';
  let property = clean(wireName);
  if (taken.has(property)) property = clean(`${wireName}_${location}`);
  for (let n = 2; taken.has(property); n++) property = clean(`${wireName}_${location}_${n}`);
  taken.add(property);
  return property;
}

function withDescription(schema: Record<string, unknown>, description: unknown): Record<string, unknown> {
  return typeof description === 'string' && description.trim() && !schema.description
    ? { ...schema, description: description.trim() }
    : schema;
}

function nonEmpty(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

interface Budget {
  remaining: number;
}

/** Inlines local `$ref`s of one document; never follows a non-local one. */
class RefInliner {
  constructor(private readonly doc: Record<string, any>) {}

  /** The object a (possibly `$ref`) node stands for, one level deep (for path items, parameters, request bodies). */
  deref(node: any): any {
    let current = node;
    for (
      let hops = 0;
      current && typeof current === 'object' && typeof current.$ref === 'string' && hops < 16;
      hops++
    ) {
      current = this.pointer(current.$ref);
    }
    return current && typeof current === 'object' && typeof current.$ref === 'string' ? null : current;
  }

  inline(node: any, budget: Budget, stack: string[] = []): Record<string, unknown> {
    const result = this.copy(node, budget, stack);
    return result && typeof result === 'object' && !Array.isArray(result) ? (result as Record<string, unknown>) : {};
  }

  private copy(node: any, budget: Budget, stack: string[]): unknown {
    if (--budget.remaining < 0) return {};
    if (Array.isArray(node)) return node.map((item) => this.copy(item, budget, stack));
    if (!node || typeof node !== 'object') return node;
    if (typeof node.$ref === 'string') {
      const { $ref: ref, ...siblings } = node;
      const extra = this.copy(siblings, budget, stack) as Record<string, unknown>;
      if (!ref.startsWith('#'))
        return { ...extra, description: extra.description ?? `External reference ${ref} (not resolved)` };
      if (stack.includes(ref))
        return { ...extra, description: extra.description ?? `Recursive ${refName(ref)} (not expanded further)` };
      const target = this.pointer(ref);
      if (target === undefined) return { ...extra, description: extra.description ?? `Unresolvable reference ${ref}` };
      const resolved = this.copy(target, budget, [...stack, ref]);
      return resolved && typeof resolved === 'object' && !Array.isArray(resolved)
        ? { ...resolved, ...extra }
        : resolved;
    }
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'xml' || key === 'externalDocs' || key === 'example' || key === 'examples' || key.startsWith('x-'))
        continue;
      out[key] = this.copy(value, budget, stack);
    }
    return out;
  }

  private pointer(ref: string): any {
    if (!ref.startsWith('#')) return undefined;
    const parts = ref
      .slice(1)
      .split('/')
      .filter((part, index) => index > 0 || part !== '')
      .map((part) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~'));
    let current: any = this.doc;
    for (const part of parts) {
      if (current === null || typeof current !== 'object' || !(part in current)) return undefined;
      current = current[part];
    }
    return current;
  }
}

function refName(ref: string): string {
  return ref.split('/').pop() ?? ref;
}
