import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type RequestKind = 'chat' | 'embeddings' | 'models' | 'unknown';

export interface RecordedContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

export interface RecordedMessage {
  role: string;
  content?: string | RecordedContentPart[] | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  [key: string]: unknown;
}

export interface RecordedBody {
  model?: string;
  messages?: RecordedMessage[];
  response_format?: {
    type: string;
    json_schema?: { name?: string; schema?: Record<string, unknown>; strict?: boolean | null };
  };
  tools?: unknown[];
  temperature?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  input?: string | string[] | number[] | number[][];
  dimensions?: number;
  encoding_format?: 'float' | 'base64';
  [key: string]: unknown;
}

export interface RecordedRequest {
  kind: RequestKind;
  method: string;
  /** Path as received, without query string (e.g. `/v1/chat/completions`). */
  path: string;
  headers: http.IncomingHttpHeaders;
  body: RecordedBody;
  /** Set when the client disconnected before the response was complete. */
  clientAborted: boolean;
}

export interface FakeToolCall {
  name: string;
  arguments: object;
}

export type FakeReply =
  | { content: string; finishReason?: 'stop' | 'length' | 'content_filter' }
  | { json: unknown }
  | { toolCalls: FakeToolCall[]; content?: string }
  | { refusal: string }
  | { status: number; error: string; type?: string; code?: string }
  | ((request: RecordedRequest) => FakeReply | Promise<FakeReply>);

type ResolvedReply = Exclude<FakeReply, (request: RecordedRequest) => unknown>;

export interface FakeOpenAIOptions {
  /** When set, requests whose `Authorization: Bearer …` differs get a 401. */
  requireApiKey?: string;
  embeddingDimensions?: number;
  latencyMs?: number;
  models?: readonly string[];
}

export interface HeldRequest {
  /** Lets the held chat request (or, if none arrived yet, the next one) proceed. */
  release(): void;
  /** Resolves when the held chat request has reached the server. */
  reached: Promise<RecordedRequest>;
}

export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string;
  requests: RecordedRequest[];
  /** Scripted chat replies, consumed first-in first-out before the default responder. */
  enqueue(...replies: FakeReply[]): void;
  pendingReplies(): number;
  setDefault(reply: FakeReply): void;
  setLatency(ms: number): void;
  /** Makes the next chat request wait until released. */
  hold(): HeldRequest;
  reset(): void;
  close(): Promise<void>;
}

const DEFAULT_EMBEDDING_DIMENSIONS = 256;
const DEFAULT_MODELS = ['gpt-4o-mini', 'gpt-4o', 'text-embedding-3-small'];
const MAX_INSTANCE_DEPTH = 12;
const CHARS_PER_TOKEN = 4;
const FAKE_STRING = 'fake';
const FALLBACK_URL = 'https://example.com/';

type Json = Record<string, unknown>;

function isJsonObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / CHARS_PER_TOKEN));
}

function messageText(content: RecordedMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('\n');
}

function promptChars(messages: readonly RecordedMessage[]): number {
  return messages.reduce(
    (sum, message) =>
      sum + messageText(message.content).length + (message.tool_calls ? JSON.stringify(message.tool_calls).length : 0),
    0,
  );
}

function userText(body: RecordedBody): string {
  return (body.messages ?? [])
    .filter((message) => message.role === 'user')
    .map((message) => messageText(message.content))
    .join('\n\n');
}

function firstUrl(text: string): string | undefined {
  return /https?:\/\/[^\s)>\]"']+/.exec(text)?.[0];
}

function labelledLine(text: string, label: string): string | undefined {
  const value = new RegExp(`^\\s*${label}:[ \\t]*(.+)$`, 'im').exec(text)?.[1]?.trim();
  return value && value !== '(none)' ? value : undefined;
}

function titleFrom(text: string): string {
  return (
    labelledLine(text, 'title') ??
    /^#{1,6}\s+(.+)$/m.exec(text)?.[1]?.trim() ??
    text
      .split('\n')
      .map((line) => line.trim())
      .find(Boolean)
      ?.slice(0, 80) ??
    FAKE_STRING
  );
}

function summaryFrom(text: string): string {
  return labelledLine(text, 'description') ?? (text.replace(/\s+/g, ' ').trim().slice(0, 200) || FAKE_STRING);
}

const FORMAT_EXAMPLES: Record<string, string> = {
  'date-time': '2024-01-01T00:00:00Z',
  date: '2024-01-01',
  time: '00:00:00Z',
  email: 'fake@example.com',
  uuid: '00000000-0000-4000-8000-000000000000',
  hostname: 'example.com',
  ipv4: '127.0.0.1',
};

function fakeString(schema: Json, fieldName: string | undefined, text: string): string {
  const format = typeof schema.format === 'string' ? schema.format : undefined;
  let value: string;
  if (format === 'uri' || format === 'url' || /url|link|href/i.test(fieldName ?? ''))
    value = firstUrl(text) ?? FALLBACK_URL;
  else if (format && FORMAT_EXAMPLES[format]) value = FORMAT_EXAMPLES[format];
  else if (/title|name|headline|heading/i.test(fieldName ?? '')) value = titleFrom(text);
  else if (/summary|description|abstract|content|text|body|excerpt/i.test(fieldName ?? '')) value = summaryFrom(text);
  else value = FAKE_STRING;
  if (typeof schema.maxLength === 'number') value = value.slice(0, schema.maxLength);
  if (typeof schema.minLength === 'number' && value.length < schema.minLength)
    value = value.padEnd(schema.minLength, 'x');
  return value;
}

function fakeNumber(schema: Json, integer: boolean): number {
  const step = integer ? 1 : 0.5;
  if (typeof schema.minimum === 'number') return integer ? Math.ceil(schema.minimum) : schema.minimum;
  if (typeof schema.exclusiveMinimum === 'number')
    return integer ? Math.floor(schema.exclusiveMinimum) + 1 : schema.exclusiveMinimum + step;
  if (typeof schema.maximum === 'number' && schema.maximum < 0)
    return integer ? Math.floor(schema.maximum) : schema.maximum;
  return 0;
}

function resolveRef(root: Json, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  return ref
    .slice(1)
    .split('/')
    .filter(Boolean)
    .map((segment) => decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, segment) => (isJsonObject(node) ? node[segment] : undefined), root);
}

function schemaType(schema: Json): string | undefined {
  if (typeof schema.type === 'string') return schema.type;
  if (Array.isArray(schema.type)) return schema.type.find((type) => type !== 'null') ?? schema.type[0];
  if ('properties' in schema) return 'object';
  if ('items' in schema) return 'array';
  return undefined;
}

function mergeAllOf(schema: Json): Json {
  const parts = (schema.allOf as unknown[]).filter(isJsonObject);
  return parts.reduce<Json>(
    (merged, part) => ({
      ...merged,
      ...part,
      properties: { ...(merged.properties as Json | undefined), ...(part.properties as Json | undefined) },
      required: [...((merged.required as string[]) ?? []), ...((part.required as string[]) ?? [])],
    }),
    { ...schema, allOf: undefined },
  );
}

/** A small value that satisfies common JSON Schemas, with strings borrowed from `text` where the field name fits. */
export function minimalInstance(schema: unknown, root: Json, text: string, fieldName?: string, depth = 0): unknown {
  if (!isJsonObject(schema) || depth > MAX_INSTANCE_DEPTH) return null;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (typeof schema.$ref === 'string')
    return minimalInstance(resolveRef(root, schema.$ref), root, text, fieldName, depth + 1);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives) && alternatives.length > 0) {
    const preferred = alternatives.find((option) => isJsonObject(option) && option.type !== 'null') ?? alternatives[0];
    return minimalInstance(preferred, root, text, fieldName, depth + 1);
  }
  if (Array.isArray(schema.allOf)) return minimalInstance(mergeAllOf(schema), root, text, fieldName, depth + 1);
  switch (schemaType(schema)) {
    case 'object': {
      const properties = isJsonObject(schema.properties) ? schema.properties : {};
      return Object.fromEntries(
        Object.entries(properties).map(([key, child]) => [key, minimalInstance(child, root, text, key, depth + 1)]),
      );
    }
    case 'array': {
      const count = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return Array.from({ length: count }, () => minimalInstance(schema.items, root, text, fieldName, depth + 1));
    }
    case 'string':
      return fakeString(schema, fieldName, text);
    case 'integer':
      return fakeNumber(schema, true);
    case 'number':
      return fakeNumber(schema, false);
    case 'boolean':
      return false;
    default:
      return null;
  }
}

export function builtInReply(request: RecordedRequest): FakeReply {
  const format = request.body.response_format;
  const schema = format?.json_schema?.schema;
  if (format?.type === 'json_schema' && isJsonObject(schema)) {
    return { json: minimalInstance(schema, schema, userText(request.body)) };
  }
  if (format?.type === 'json_object') return { json: {} };
  return { content: 'ok' };
}

function fakeEmbedding(text: string, dimensions: number): number[] {
  const values: number[] = [];
  for (let block = 0; values.length < dimensions; block += 1) {
    const digest = createHash('sha256').update(`${block}\u0000${text}`).digest();
    for (let offset = 0; offset + 4 <= digest.length && values.length < dimensions; offset += 4) {
      values.push((digest.readUInt32BE(offset) / 0xffffffff) * 2 - 1);
    }
  }
  const norm = Math.sqrt(values.reduce((sum, value) => sum + value * value, 0)) || 1;
  return values.map((value) => Math.fround(value / norm));
}

function embeddingInputs(input: RecordedBody['input']): string[] | undefined {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((item) => typeof item === 'string')) return input as string[];
  if (input.every((item) => typeof item === 'number')) return [JSON.stringify(input)];
  return (input as unknown[]).map((item) => JSON.stringify(item));
}

function errorType(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status === 404) return { type: 'invalid_request_error', code: 'not_found' };
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function requestKind(method: string, route: string): RequestKind {
  if (method === 'POST' && route === '/chat/completions') return 'chat';
  if (method === 'POST' && route === '/embeddings') return 'embeddings';
  if (method === 'GET' && (route === '/models' || route.startsWith('/models/'))) return 'models';
  return 'unknown';
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface PendingHold {
  reach(request: RecordedRequest): void;
  released: Promise<void>;
  release(): void;
}

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  const script: FakeReply[] = [];
  const waitingHolds: PendingHold[] = [];
  const everyHold = new Set<PendingHold>();
  const models = options.models ?? DEFAULT_MODELS;
  let defaultReply: FakeReply = builtInReply;
  let latencyMs = options.latencyMs ?? 0;
  let sequence = 0;

  const releaseAllHolds = () => {
    everyHold.forEach((hold) => hold.release());
    everyHold.clear();
    waitingHolds.length = 0;
  };

  function sendJson(response: http.ServerResponse, status: number, payload: unknown): void {
    if (response.destroyed) return;
    const body = JSON.stringify(payload);
    response.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'x-request-id': `req_fake_${sequence}`,
    });
    response.end(body);
  }

  function sendError(
    response: http.ServerResponse,
    status: number,
    message: string,
    overrides: { type?: string; code?: string } = {},
  ) {
    const defaults = errorType(status);
    sendJson(response, status, {
      error: { message, type: overrides.type ?? defaults.type, param: null, code: overrides.code ?? defaults.code },
    });
  }

  async function resolveReply(request: RecordedRequest): Promise<ResolvedReply> {
    let reply: FakeReply = script.shift() ?? defaultReply;
    while (typeof reply === 'function') reply = await reply(request);
    return reply;
  }

  function chatMessage(reply: Exclude<ResolvedReply, { status: number }>) {
    if ('toolCalls' in reply) {
      const toolCalls = reply.toolCalls.map((call) => ({
        id: `call_fake_${++sequence}`,
        type: 'function' as const,
        function: { name: call.name, arguments: JSON.stringify(call.arguments) },
      }));
      return {
        message: { role: 'assistant' as const, content: reply.content ?? null, refusal: null, tool_calls: toolCalls },
        finishReason: 'tool_calls',
        outputChars: (reply.content ?? '').length + JSON.stringify(reply.toolCalls).length,
      };
    }
    if ('refusal' in reply) {
      return {
        message: { role: 'assistant' as const, content: null, refusal: reply.refusal },
        finishReason: 'stop',
        outputChars: reply.refusal.length,
      };
    }
    const content = 'json' in reply ? JSON.stringify(reply.json) : reply.content;
    const finishReason = 'finishReason' in reply && reply.finishReason ? reply.finishReason : 'stop';
    return {
      message: { role: 'assistant' as const, content, refusal: null },
      finishReason,
      outputChars: content.length,
    };
  }

  async function handleChat(recorded: RecordedRequest, response: http.ServerResponse): Promise<void> {
    const hold = waitingHolds.shift();
    if (hold) {
      hold.reach(recorded);
      await hold.released;
    }
    if (latencyMs > 0) await delay(latencyMs);
    const reply = await resolveReply(recorded);
    if ('status' in reply) {
      sendError(response, reply.status, reply.error, reply);
      return;
    }
    const { message, finishReason, outputChars } = chatMessage(reply);
    const promptTokens = estimateTokens(promptChars(recorded.body.messages ?? []));
    const completionTokens = estimateTokens(outputChars);
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    };
    const envelope = {
      id: `chatcmpl-fake-${++sequence}`,
      created: Math.floor(Date.now() / 1000),
      model: recorded.body.model ?? 'unknown',
      system_fingerprint: 'fp_fake',
    };
    if (!recorded.body.stream) {
      sendJson(response, 200, {
        ...envelope,
        object: 'chat.completion',
        choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
        usage,
      });
      return;
    }
    const chunk = (choices: unknown[], extra: Json = {}) =>
      `data: ${JSON.stringify({ ...envelope, object: 'chat.completion.chunk', choices, ...extra })}\n\n`;
    const toolCallDeltas =
      'tool_calls' in message ? message.tool_calls?.map((call, index) => ({ index, ...call })) : undefined;
    const events = [
      chunk([{ index: 0, delta: { ...message, tool_calls: toolCallDeltas }, finish_reason: null, logprobs: null }]),
      chunk([{ index: 0, delta: {}, finish_reason: finishReason, logprobs: null }]),
      ...(recorded.body.stream_options?.include_usage ? [chunk([], { usage })] : []),
      'data: [DONE]\n\n',
    ];
    if (response.destroyed) return;
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    response.end(events.join(''));
  }

  function handleEmbeddings(recorded: RecordedRequest, response: http.ServerResponse): void {
    const inputs = embeddingInputs(recorded.body.input);
    if (!inputs) {
      sendError(response, 400, "'input' must be a non-empty string or array");
      return;
    }
    const requested = recorded.body.dimensions;
    const dimensions =
      typeof requested === 'number' && Number.isInteger(requested) && requested > 0
        ? requested
        : (options.embeddingDimensions ?? DEFAULT_EMBEDDING_DIMENSIONS);
    const asBase64 = recorded.body.encoding_format === 'base64';
    const data = inputs.map((text, index) => {
      const vector = fakeEmbedding(text, dimensions);
      const embedding = asBase64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
      return { object: 'embedding', index, embedding };
    });
    const promptTokens = inputs.reduce((sum, text) => sum + estimateTokens(text.length), 0);
    sendJson(response, 200, {
      object: 'list',
      data,
      model: recorded.body.model ?? 'unknown',
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    });
  }

  function handleModels(route: string, response: http.ServerResponse): void {
    const describe = (id: string) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'fake-openai' });
    if (route === '/models') {
      sendJson(response, 200, { object: 'list', data: models.map(describe) });
      return;
    }
    const id = decodeURIComponent(route.slice('/models/'.length));
    if (models.includes(id)) sendJson(response, 200, describe(id));
    else sendError(response, 404, `The model '${id}' does not exist`, { code: 'model_not_found' });
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const method = request.method ?? 'GET';
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    const route = path.replace(/^\/v1(?=\/)/, '').replace(/(?<=.)\/+$/, '');
    const rawBody = await readBody(request);
    let body: RecordedBody = {};
    let malformedBody = false;
    if (rawBody.trim()) {
      try {
        const parsed: unknown = JSON.parse(rawBody);
        if (isJsonObject(parsed)) body = parsed as RecordedBody;
        else malformedBody = true;
      } catch {
        malformedBody = true;
      }
    }
    const recorded: RecordedRequest = {
      kind: requestKind(method, route),
      method,
      path,
      headers: request.headers,
      body,
      clientAborted: false,
    };
    requests.push(recorded);
    response.on('close', () => {
      if (!response.writableFinished) recorded.clientAborted = true;
    });

    if (options.requireApiKey !== undefined && request.headers.authorization !== `Bearer ${options.requireApiKey}`) {
      sendError(response, 401, 'Incorrect API key provided.');
      return;
    }
    if (malformedBody) {
      sendError(response, 400, 'We could not parse the JSON body of your request.');
      return;
    }
    switch (recorded.kind) {
      case 'chat':
        await handleChat(recorded, response);
        return;
      case 'embeddings':
        if (latencyMs > 0) await delay(latencyMs);
        handleEmbeddings(recorded, response);
        return;
      case 'models':
        handleModels(route, response);
        return;
      default:
        sendError(response, 404, `Invalid URL (${method} ${path})`);
    }
  }

  const server = http.createServer((request, response) => {
    response.on('error', () => undefined);
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendError(response, 500, `fake-openai: ${(error as Error)?.message ?? String(error)}`);
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...replies) => {
      script.push(...replies);
    },
    pendingReplies: () => script.length,
    setDefault: (reply) => {
      defaultReply = reply;
    },
    setLatency: (ms) => {
      latencyMs = Math.max(0, ms);
    },
    hold: () => {
      let release!: () => void;
      let reach!: (request: RecordedRequest) => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const reached = new Promise<RecordedRequest>((resolve) => (reach = resolve));
      const pending: PendingHold = { reach, released, release };
      waitingHolds.push(pending);
      everyHold.add(pending);
      return { release, reached };
    },
    reset: () => {
      requests.length = 0;
      script.length = 0;
      defaultReply = builtInReply;
      latencyMs = options.latencyMs ?? 0;
      releaseAllHolds();
    },
    close: async () => {
      releaseAllHolds();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
