import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  createRequestStateCodec,
  fromJsonSchema,
  hostHeaderValidationResponse,
  inputRequired,
  inputResponse,
  isLegacyRequest,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  McpServer,
  originValidationResponse,
  WebStandardStreamableHTTPServerTransport,
  type CallToolResult,
  type ClientCapabilities,
  type EventStore,
  type JSONRPCMessage,
  type InputRequests,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { runConformance, type ConformanceRun, type Expectations, type Revision } from '../stack/conformance-cli';

/**
 * A tool server on loopback that implements the *tool* scenarios of the official MCP conformance suite
 * (`@modelcontextprotocol/conformance`, see scripts/setup-conformance.sh): the tool names and behaviour each
 * scenario checks, for the 2025 revisions (initialize handshake, Streamable HTTP sessions, so the tools can send
 * sampling/elicitation requests, log messages and progress back to the client while a call runs) and for the
 * stateless 2026-07-28 revision (per-request envelope, input-required results, `requestState`).
 *
 * Written with the SDK v2 server: 2026-07-28 traffic goes to `createMcpHandler` (strict, per-request
 * instances); 2025-era traffic is routed with `isLegacyRequest` to sessionful Streamable HTTP transports, one
 * McpServer per session. Resources, prompts and completions are not part of a market entry and are not served.
 */
export interface ConformanceServer {
  /** The MCP endpoint, e.g. http://127.0.0.1:1234/mcp */
  url: string;
  close: () => Promise<void>;
}

/**
 * What the fixture passes, per revision: every scenario of the suite's requirement set that concerns a tool
 * server. Tool scenarios (what a market entry's tools do) and the transport scenarios any tool server is held
 * to. Not here, because a market entry exposes tools only: completions, resources, prompts (and the
 * `input-required-result-non-tool-request` scenario, which uses a prompt), and the tasks extension, which the
 * SDK v2 server does not implement. docs/mcp-conformance.md has the table.
 */
export const FIXTURE_EXPECTATIONS: Record<Revision, Expectations> = {
  '2025-11-25': {
    'tools-list': 'pass',
    'tools-call-simple-text': 'pass',
    'tools-call-image': 'pass',
    'tools-call-audio': 'pass',
    'tools-call-embedded-resource': 'pass',
    'tools-call-mixed-content': 'pass',
    'tools-call-error': 'pass',
    'tools-call-with-logging': 'pass',
    'tools-call-with-progress': 'pass',
    'tools-call-sampling': 'pass',
    'tools-call-elicitation': 'pass',
    'elicitation-sep1034-defaults': 'pass',
    'elicitation-sep1330-enums': 'pass',
    'json-schema-2020-12': 'pass',
    // Transport and lifecycle.
    'server-initialize': 'pass',
    ping: 'pass',
    'logging-set-level': 'pass',
    'server-session-lifecycle': 'pass',
    'server-sse-multiple-streams': 'pass',
    'server-sse-polling': 'pass',
    'dns-rebinding-protection': 'pass',
  },
  '2026-07-28': {
    'tools-list': 'pass',
    'tools-call-simple-text': 'pass',
    'tools-call-image': 'pass',
    'tools-call-audio': 'pass',
    'tools-call-embedded-resource': 'pass',
    'tools-call-mixed-content': 'pass',
    'tools-call-error': 'pass',
    'tools-call-with-progress': 'pass',
    'json-schema-2020-12': 'pass',
    'input-required-result-basic-elicitation': 'pass',
    'input-required-result-basic-sampling': 'pass',
    'input-required-result-basic-list-roots': 'pass',
    'input-required-result-request-state': 'pass',
    'input-required-result-multiple-input-requests': 'pass',
    'input-required-result-multi-round': 'pass',
    'input-required-result-missing-input-response': 'pass',
    'input-required-result-result-type': 'pass',
    'input-required-result-unsupported-methods': 'pass',
    'input-required-result-tampered-state': 'pass',
    'input-required-result-capability-check': 'pass',
    'input-required-result-ignore-extra-params': 'pass',
    'input-required-result-validate-input': 'pass',
    // The hints of tools/list; those of prompts/list and the resource lists are another server's concern.
    caching: [
      'sep-2549-tools-list-caching-hints',
      'sep-2549-ttl-non-negative',
      'sep-2549-cache-scope-valid',
      'wire-schema-valid',
    ],
    // Transport: the stateless serving (with the suite's diagnostic tools), SEP-2243 headers (the
    // Mcp-Param-* checks use test_param_header), concurrent streams, DNS-rebinding protection.
    'server-stateless': 'pass',
    'http-header-validation': 'pass',
    'http-custom-header-server-validation': 'pass',
    'server-sse-multiple-streams': 'pass',
    'dns-rebinding-protection': 'pass',
  },
};

/** A 1×1 red PNG. */
const RED_PIXEL_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

/** A valid WAV file: 16-bit mono PCM at 8 kHz, 10 ms of silence. */
function silentWav(): string {
  const samples = 80;
  const data = samples * 2;
  const wav = Buffer.alloc(44 + data);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + data, 4);
  wav.write('WAVEfmt ', 8, 'ascii');
  wav.writeUInt32LE(16, 16); // fmt chunk size
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // channels
  wav.writeUInt32LE(8000, 24); // sample rate
  wav.writeUInt32LE(8000 * 2, 28); // byte rate
  wav.writeUInt16LE(2, 32); // block align
  wav.writeUInt16LE(16, 34); // bits per sample
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(data, 40);
  return wav.toString('base64');
}
const SILENT_WAV = silentWav();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
const NO_ARGS = z.object({});
type JsonSchema = Parameters<typeof fromJsonSchema>[0];

/** The input schema the json-schema-2020-12 scenario expects to find unchanged in tools/list. */
const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
} as const;

/** Elicitation asking for a name (the multi-round-trip scenarios' first question). */
const askName = (message = 'What is your name?') =>
  inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  });

/** The capabilities the client declared: per request on 2026-07-28, at initialize on a 2025 session. */
function clientCapabilities(server: McpServer, ctx: ServerContext): ClientCapabilities {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return (
    (envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined) ??
    server.server.getClientCapabilities() ??
    {}
  );
}

interface SharedState {
  codec: ReturnType<typeof createRequestStateCodec<Record<string, unknown>>>;
  /** Whether test_trigger_tool_change has added its extra tool (the tool list changed). */
  extraToolAdded: boolean;
  toolsChanged: () => void;
}

function buildServer(shared: SharedState): McpServer {
  const server = new McpServer(
    { name: 'conformance-fixture', version: '1.0.0' },
    {
      capabilities: { logging: {}, tools: { listChanged: true } },
      instructions: "The conformance suite's tool scenarios.",
      requestState: { verify: (state, ctx) => shared.codec.verify(state, ctx) },
    },
  );
  const mint = (payload: Record<string, unknown>) => shared.codec.mint(payload);
  const state = (ctx: ServerContext) => ctx.mcpReq.requestState<Record<string, unknown>>();

  // ---- Content types (tools-call-simple-text, -image, -audio, -embedded-resource, -mixed-content, -error) ----
  server.registerTool('test_simple_text', { description: 'Returns a simple text.', inputSchema: NO_ARGS }, async () =>
    text('This is a simple text response for testing.'),
  );
  server.registerTool(
    'test_image_content',
    { description: 'Returns a 1x1 red PNG image.', inputSchema: NO_ARGS },
    async () => ({
      content: [{ type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' }],
    }),
  );
  server.registerTool(
    'test_audio_content',
    { description: 'Returns 10 ms of silence as a WAV file.', inputSchema: NO_ARGS },
    async () => ({
      content: [{ type: 'audio', data: SILENT_WAV, mimeType: 'audio/wav' }],
    }),
  );
  server.registerTool(
    'test_embedded_resource',
    { description: 'Returns an embedded text resource.', inputSchema: NO_ARGS },
    async () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.',
          },
        },
      ],
    }),
  );
  server.registerTool(
    'test_multiple_content_types',
    { description: 'Returns text, an image and an embedded resource.', inputSchema: NO_ARGS },
    async () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 }),
          },
        },
      ],
    }),
  );
  server.registerTool(
    'test_error_handling',
    { description: 'Always answers with a tool error.', inputSchema: NO_ARGS },
    async () => ({
      isError: true,
      content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
    }),
  );

  // ---- Notifications during a call (tools-call-with-logging, tools-call-with-progress) ----
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Logs three messages while it runs.', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      await ctx.mcpReq.log('info', 'Tool execution started');
      await sleep(50);
      await ctx.mcpReq.log('info', 'Tool processing data');
      await sleep(50);
      await ctx.mcpReq.log('info', 'Tool execution completed');
      return text('Tool with logging executed successfully');
    },
  );
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress 0, 50 and 100 of 100.', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progressToken !== undefined)
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 100 },
          });
        if (progress < 100) await sleep(50);
      }
      return text('Tool with progress executed successfully');
    },
  );

  // ---- Requests back to the client during a call (2025: real requests; 2026-07-28: input-required results) ----
  server.registerTool(
    'test_sampling',
    { description: "Asks the client's model to answer the prompt.", inputSchema: z.object({ prompt: z.string() }) },
    async ({ prompt }, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'completion');
      if (answer.kind !== 'sampling') {
        return inputRequired({
          inputRequests: {
            completion: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
              maxTokens: 100,
            }),
          },
        });
      }
      const content = answer.result.content;
      const said = Array.isArray(content) ? content : [content];
      return text(
        `LLM response: ${said.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join(' ')}`,
      );
    },
  );
  server.registerTool(
    'test_elicitation',
    {
      description: 'Asks the user for a username and an email address.',
      inputSchema: z.object({ message: z.string() }),
    },
    async ({ message }, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'user');
      if (answer.kind !== 'elicit') {
        return inputRequired({
          inputRequests: {
            user: inputRequired.elicit({
              message,
              requestedSchema: {
                type: 'object',
                properties: {
                  username: { type: 'string', description: "User's response" },
                  email: { type: 'string', description: "User's email address" },
                },
                required: ['username', 'email'],
              },
            }),
          },
        });
      }
      return text(`User response: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    },
  );
  server.registerTool(
    'test_elicitation_sep1034_defaults',
    { description: 'Elicits one field of each primitive type, each with a default.', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'defaults');
      if (answer.kind !== 'elicit') {
        return inputRequired({
          inputRequests: {
            defaults: inputRequired.elicit({
              message: 'Please review and update the form fields with defaults',
              requestedSchema: {
                type: 'object',
                properties: {
                  name: { type: 'string', description: 'User name', default: 'John Doe' },
                  age: { type: 'integer', description: 'User age', default: 30 },
                  score: { type: 'number', description: 'User score', default: 95.5 },
                  status: {
                    type: 'string',
                    description: 'User status',
                    enum: ['active', 'inactive', 'pending'],
                    default: 'active',
                  },
                  verified: { type: 'boolean', description: 'Verification status', default: true },
                },
                required: [],
              },
            }),
          },
        });
      }
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    },
  );
  server.registerTool(
    'test_elicitation_sep1330_enums',
    {
      description: 'Elicits the five enum variants (untitled/titled single and multi select, legacy enumNames).',
      inputSchema: NO_ARGS,
    },
    async (_args, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'enums');
      if (answer.kind !== 'elicit') {
        return inputRequired({
          inputRequests: {
            enums: inputRequired.elicit({
              message: 'Please select options from the enum fields',
              requestedSchema: {
                type: 'object',
                properties: {
                  untitledSingle: {
                    type: 'string',
                    description: 'Select one option',
                    enum: ['option1', 'option2', 'option3'],
                  },
                  titledSingle: {
                    type: 'string',
                    description: 'Select one option with titles',
                    oneOf: [
                      { const: 'value1', title: 'First Option' },
                      { const: 'value2', title: 'Second Option' },
                      { const: 'value3', title: 'Third Option' },
                    ],
                  },
                  legacyEnum: {
                    type: 'string',
                    description: 'Select one option (legacy)',
                    enum: ['opt1', 'opt2', 'opt3'],
                    enumNames: ['Option One', 'Option Two', 'Option Three'],
                  },
                  untitledMulti: {
                    type: 'array',
                    description: 'Select multiple options',
                    items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
                  },
                  titledMulti: {
                    type: 'array',
                    description: 'Select multiple options with titles',
                    items: {
                      anyOf: [
                        { const: 'value1', title: 'First Choice' },
                        { const: 'value2', title: 'Second Choice' },
                        { const: 'value3', title: 'Third Choice' },
                      ],
                    },
                  },
                },
                required: [],
              },
            }),
          },
        });
      }
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    },
  );

  // ---- Tool definitions (json-schema-2020-12; the SEP-2243 Mcp-Param header declaration) ----
  server.registerTool(
    'json_schema_2020_12_tool',
    { description: 'Tool with JSON Schema 2020-12 features', inputSchema: fromJsonSchema(JSON_SCHEMA_2020_12) },
    async (args) => text(`received ${JSON.stringify(args)}`),
  );
  server.registerTool(
    'test_param_header',
    {
      description: 'Echoes its region argument, which clients also send in the Mcp-Param-Region header.',
      // x-mcp-header is a SEP-2243 extension keyword the JSON Schema type does not know.
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: { region: { type: 'string', 'x-mcp-header': 'Region' } },
        required: ['region'],
      } as JsonSchema),
    },
    async (args) => text(`region: ${(args as { region: string }).region}`),
  );

  // ---- Multi-round-trip requests (input-required-result-*, 2026-07-28; the legacy shim relays them on 2025) ----
  server.registerTool(
    'test_input_required_result_elicitation',
    { description: "Asks the user's name, then greets them.", inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_name', z.object({ name: z.string() }));
      if (!answer) return inputRequired({ inputRequests: { user_name: askName() } });
      return text(`Hello, ${answer.name}!`);
    },
  );
  server.registerTool(
    'test_input_required_result_sampling',
    { description: "Asks the client's model a question.", inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'capital_question');
      if (answer.kind !== 'sampling') {
        return inputRequired({
          inputRequests: {
            capital_question: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
              maxTokens: 100,
            }),
          },
        });
      }
      const block = Array.isArray(answer.result.content) ? answer.result.content[0] : answer.result.content;
      return text(`The model said: ${block?.type === 'text' ? block.text : `[${block?.type}]`}`);
    },
  );
  server.registerTool(
    'test_input_required_result_list_roots',
    { description: "Lists the client's roots.", inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'client_roots');
      if (answer.kind !== 'roots') return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
      return text(`Roots: ${answer.roots.map((root) => root.uri).join(', ') || '(none)'}`);
    },
  );
  server.registerTool(
    'test_input_required_result_request_state',
    { description: 'Asks for a confirmation, carrying its state in requestState.', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const echoed = state(ctx);
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', z.object({ ok: z.boolean() }));
      if (echoed?.step === 'confirm' && answer) return text(`state-ok: confirmed=${answer.ok}`);
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: 'Please confirm',
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          }),
        },
        requestState: await mint({ step: 'confirm' }),
      });
    },
  );
  server.registerTool(
    'test_input_required_result_multiple_inputs',
    { description: 'Asks for an elicitation, a sampling and the roots in one round.', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const responses = ctx.mcpReq.inputResponses;
      const name = acceptedContent(responses, 'user_name', z.object({ name: z.string() }));
      const greeting = inputResponse(responses, 'greeting');
      const roots = inputResponse(responses, 'client_roots');
      if (state(ctx)?.step === 'all' && name && greeting.kind === 'sampling' && roots.kind === 'roots') {
        return text(`Got name ${name.name}, a greeting from the model and ${roots.roots.length} root(s)`);
      }
      return inputRequired({
        inputRequests: {
          user_name: askName(),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
            maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
        requestState: await mint({ step: 'all' }),
      });
    },
  );
  server.registerTool(
    'test_input_required_result_multi_round',
    { description: 'Asks two questions, one per round.', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const echoed = state(ctx);
      if (echoed?.round === 2) {
        const color = acceptedContent(ctx.mcpReq.inputResponses, 'step2', z.object({ color: z.string() }));
        if (color) return text(`${String(echoed.name)} likes ${color.color}`);
      }
      if (echoed?.round === 1) {
        const name = acceptedContent(ctx.mcpReq.inputResponses, 'step1', z.object({ name: z.string() }));
        if (name) {
          return inputRequired({
            inputRequests: {
              step2: inputRequired.elicit({
                message: 'Step 2: What is your favorite color?',
                requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
              }),
            },
            requestState: await mint({ round: 2, name: name.name }),
          });
        }
      }
      return inputRequired({
        inputRequests: { step1: askName('Step 1: What is your name?') },
        requestState: await mint({ round: 1 }),
      });
    },
  );
  server.registerTool(
    'test_input_required_result_tampered_state',
    { description: 'Signs its requestState; a tampered one is refused.', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', z.object({ ok: z.boolean() }));
      if (state(ctx)?.step === 'confirm' && answer) return text('state verified');
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: 'Please confirm',
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          }),
        },
        requestState: await mint({ step: 'confirm' }),
      });
    },
  );
  server.registerTool(
    'test_input_required_result_capabilities',
    {
      description: 'Asks only for what the client declared it can answer (sampling, elicitation).',
      inputSchema: NO_ARGS,
    },
    async (_args, ctx) => {
      const capabilities = clientCapabilities(server, ctx);
      const responses = ctx.mcpReq.inputResponses;
      if (responses && Object.keys(responses).length > 0)
        return text(`answered: ${Object.keys(responses).sort().join(', ')}`);
      const inputRequests: InputRequests = {};
      if (capabilities.sampling) {
        inputRequests.summary = inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Summarise the day' } }],
          maxTokens: 50,
        });
      }
      if (capabilities.elicitation) inputRequests.user_name = askName();
      if (Object.keys(inputRequests).length === 0)
        return text('The client can answer neither sampling nor elicitation; nothing to ask.');
      return inputRequired({ inputRequests });
    },
  );

  // ---- Stateless serving diagnostics (server-stateless, 2026-07-28) ----
  server.registerTool(
    'test_missing_capability',
    {
      description: "Needs the client's sampling capability (refused with -32021 when it is not declared).",
      inputSchema: NO_ARGS,
    },
    async (_args, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'sample');
      if (answer.kind === 'sampling') return text('sampled');
      return inputRequired({
        inputRequests: {
          sample: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
            maxTokens: 20,
          }),
        },
      });
    },
  );
  server.registerTool(
    'test_streaming_elicitation',
    { description: 'Reports progress, then asks the user a question.', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      if (progressToken !== undefined)
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 2 } });
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'user_name', z.object({ name: z.string() }));
      if (!answer) return inputRequired({ inputRequests: { user_name: askName() } });
      return text(`Hello, ${answer.name}!`);
    },
  );
  server.registerTool(
    'test_logging_tool',
    { description: 'Logs a message (only when the client asked for logs).', inputSchema: NO_ARGS },
    async (_args, ctx) => {
      await ctx.mcpReq.log('info', 'test_logging_tool ran');
      return text('logged');
    },
  );
  server.registerTool(
    'test_trigger_tool_change',
    { description: 'Adds a tool, so the tool list changes.', inputSchema: NO_ARGS },
    async () => {
      shared.extraToolAdded = true;
      shared.toolsChanged();
      return text('tool list changed');
    },
  );
  server.registerTool(
    'test_reconnection',
    {
      description: 'Closes its SSE stream mid-call (2025 sessions); the client resumes it with Last-Event-ID.',
      inputSchema: NO_ARGS,
    },
    async (_args, ctx) => {
      await sleep(50);
      ctx.http?.closeSSE?.();
      await sleep(200);
      return text('Reconnection test completed');
    },
  );
  if (shared.extraToolAdded) {
    server.registerTool(
      'test_added_tool',
      { description: 'Added by test_trigger_tool_change.', inputSchema: NO_ARGS },
      async () => text('added'),
    );
  }
  return server;
}

/** Keeps every event of the process's SSE streams, so a client can resume a stream with Last-Event-ID. */
function memoryEventStore(): EventStore {
  const events = new Map<string, { streamId: string; message: JSONRPCMessage }>();
  let next = 0;
  return {
    async storeEvent(streamId, message) {
      const eventId = `${streamId}_${String(++next).padStart(8, '0')}`;
      events.set(eventId, { streamId, message });
      return eventId;
    },
    async getStreamIdForEventId(eventId) {
      return events.get(eventId)?.streamId;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const streamId = events.get(lastEventId)?.streamId;
      if (!streamId) return '';
      for (const [eventId, event] of events) {
        if (event.streamId === streamId && eventId > lastEventId) await send(eventId, event.message);
      }
      return streamId;
    },
  };
}

/** 2025-era serving: Streamable HTTP with sessions (resumable streams), one McpServer per session. */
function sessionfulLegacyHandler(newServer: () => McpServer) {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const eventStore = memoryEventStore();
  const notFound = () =>
    Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 });
  return {
    sessions,
    async fetch(request: Request): Promise<Response> {
      const sessionId = request.headers.get('mcp-session-id');
      if (sessionId) {
        const transport = sessions.get(sessionId);
        return transport ? transport.handleRequest(request) : notFound();
      }
      if (request.method !== 'POST') {
        return Response.json(
          { jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no session id' }, id: null },
          { status: 400 },
        );
      }
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, transport),
        onsessionclosed: (id) => void sessions.delete(id),
        eventStore,
        retryInterval: 500,
      });
      const server = newServer();
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
        void server.close();
      };
      await server.connect(transport);
      const response = await transport.handleRequest(request);
      // Not an initialize request: refused, and no session was made for it.
      if (!transport.sessionId) void transport.close();
      return response;
    },
  };
}

/**
 * `revisions: '2025'` serves only the 2025 revisions (sessions), like most servers deployed today: its tools
 * then ask for input by sending requests to the client mid-call (the SDK's legacy shim) and log to the session.
 */
export async function startConformanceServer(options: { revisions?: 'all' | '2025' } = {}): Promise<ConformanceServer> {
  const shared: SharedState = {
    codec: createRequestStateCodec<Record<string, unknown>>({ key: randomBytes(32), ttlSeconds: 600 }),
    extraToolAdded: false,
    toolsChanged: () => modern.notify.toolsChanged(),
  };
  const modern = createMcpHandler(() => buildServer(shared), { legacy: 'reject' });
  const legacy = sessionfulLegacyHandler(() => buildServer(shared));
  const allowedHosts = localhostAllowedHostnames();
  const allowedOrigins = localhostAllowedOrigins();

  const node = toNodeHandler({
    async fetch(request: Request): Promise<Response> {
      const path = new URL(request.url).pathname;
      if (path !== '/mcp') return new Response('not found', { status: 404 });
      // DNS-rebinding protection: only localhost names in Host and Origin.
      const refused =
        hostHeaderValidationResponse(request, allowedHosts) ?? originValidationResponse(request, allowedOrigins);
      if (refused) return refused;
      if (await isLegacyRequest(request)) return legacy.fetch(request);
      if (options.revisions === '2025')
        return Response.json(
          { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: null },
          { status: 404 },
        );
      return modern.fetch(request);
    },
  });
  const server = http.createServer((req, res) => {
    node(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await modern.close();
      await Promise.all([...legacy.sessions.values()].map((transport) => transport.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const directRuns = new Map<Revision, Promise<ConformanceRun>>();

/**
 * The conformance CLI's run against the fixture directly at `revision`, once per revision per process: the
 * fixture is the same code wherever it is started, so the files that judge it (test/docs/mcp-conformance)
 * and compare with it (test/market/mcp-conformance-hosted) share one run. The run gets a fixture of its own,
 * closed when the run ends. A failed run is not kept: the next caller runs it again.
 */
export function directFixtureRun(revision: Revision): Promise<ConformanceRun> {
  let run = directRuns.get(revision);
  if (!run) {
    run = (async () => {
      const fixture = await startConformanceServer();
      try {
        return await runConformance(fixture.url, revision);
      } finally {
        await fixture.close();
      }
    })();
    directRuns.set(revision, run);
    run.catch(() => directRuns.delete(revision));
  }
  return run;
}
