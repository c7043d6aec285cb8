// Network rule: every packet in this file goes to 127.0.0.0/8.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { useHarness, type Harness } from '../support/stack/harness';
import { act, actMany, isAgentDecision } from '../support/agent-script';
import { admin } from '../support/market';
import type { RecordedMessage, RecordedRequest } from '../support/fakes/fake-openai';
import { workflowsHolding } from '../support/workflow-history';

/**
 * Agents see the images their tools return: a model whose price-table entry says `vision` gets them
 * as image input (data URLs, after the tool results), any other model reads them described; the
 * bytes go from the tool to Postgres to the model's request, never through a workflow history.
 */

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG_START = Buffer.from([0xff, 0xd8, 0xff, 0xe0]);
/** AGENT_TOOL_IMAGE_MAX_KB's default, in bytes; AGENT_TOOL_IMAGES_PER_RESULT's default. */
const IMAGE_MAX_BYTES = 1024 * 1024;
const IMAGES_PER_RESULT = 4;

/** Bytes of a made-up image of this size (a PNG signature, or another start, then random bytes: unique to this run). */
function imageBytes(size: number, start = PNG_SIGNATURE): Buffer {
  return Buffer.concat([start, randomBytes(size - start.length)]);
}

interface ImageMcpServer {
  url: string;
  /** The image `snapshot {name}` answers with. */
  images: Map<string, Buffer>;
  /** The images `album` answers with: PNG image blocks, the second an embedded JPEG resource. */
  album: Buffer[];
  close(): Promise<void>;
}

/** A real MCP server (SDK v2, stateless, loopback) whose tools answer with images. */
async function startImageMcpServer(): Promise<ImageMcpServer> {
  const images = new Map<string, Buffer>();
  const album = Array.from({ length: IMAGES_PER_RESULT + 1 }, (_, i) =>
    imageBytes(300 + i, i === 1 ? JPEG_START : PNG_SIGNATURE),
  );
  const build = () => {
    const server = new McpServer({ name: 'image-tools', version: '1.0.0' });
    server.registerTool(
      'snapshot',
      {
        description: 'Takes a snapshot by name.',
        inputSchema: z.object({ name: z.string(), mimeType: z.string().default('image/png') }),
        annotations: { readOnlyHint: true },
      },
      async ({ name, mimeType }) => {
        const image = images.get(name);
        if (!image) return { isError: true, content: [{ type: 'text', text: `no snapshot named ${name}` }] };
        return {
          content: [
            { type: 'text', text: `snapshot ${name}` },
            { type: 'image', mimeType, data: image.toString('base64') },
          ],
        };
      },
    );
    server.registerTool(
      'album',
      { description: 'Returns an album of images.', inputSchema: z.object({}), annotations: { readOnlyHint: true } },
      async () => ({
        content: [
          { type: 'text', text: `an album of ${album.length}` },
          ...album.map((image, i) =>
            i === 1
              ? {
                  type: 'resource' as const,
                  resource: { uri: 'album://2.jpg', mimeType: 'image/jpeg', blob: image.toString('base64') },
                }
              : { type: 'image' as const, mimeType: 'image/png', data: image.toString('base64') },
          ),
        ],
      }),
    );
    return server;
  };
  const handler = toNodeHandler(createMcpHandler(build));
  const server = http.createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return void res.writeHead(404).end();
    handler(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    images,
    album,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const dataUrl = (mimeType: string, bytes: Buffer) => `data:${mimeType};base64,${bytes.toString('base64')}`;

/** The image parts of a request's messages, as [mime type, decoded bytes]. */
function imagesSent(messages: RecordedMessage[]): [string, Buffer][] {
  return messages.flatMap((m) =>
    Array.isArray(m.content)
      ? m.content.flatMap((part) => {
          if (part.type !== 'image_url') return [];
          const url = String((part.image_url as { url: string }).url);
          const match = /^data:([^;]+);base64,(.*)$/s.exec(url);
          assert.ok(match, `an image part that is not a data URL: ${url.slice(0, 80)}`);
          return [[match[1], Buffer.from(match[2], 'base64')] as [string, Buffer]];
        })
      : [],
  );
}

function toolMessages(request: RecordedRequest): string[] {
  return (request.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

/** What the model reads of an image: its description. */
const described = (bytes: number, tool: string, notShown?: string, mimeType = 'image/png') =>
  `[image: ${mimeType}, ${bytes} bytes, returned by tool ${tool}${notShown ? `; not shown: ${notShown}` : ''}]`;

/** Every text of a request's messages. */
function textsOf(messages: RecordedMessage[]): string[] {
  return messages.flatMap((m) =>
    Array.isArray(m.content) ? m.content.map((p) => String(p.text ?? '')) : [String(m.content ?? '')],
  );
}

describe('agents see the images their tools return', function () {
  this.timeout(180_000);
  let h: Harness;
  let apiKey: string;
  let tools: ImageMcpServer;

  before(async () => {
    h = await useHarness();
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
    tools = await startImageMcpServer();
  });
  after(async () => {
    h.llm.reset();
    await tools?.close();
  });

  const source = () => [{ type: 'remote_mcp', name: 'Camera', source_url: tools.url }];

  async function runCustomAgent(model: string, task: string) {
    const accepted = await h.http('POST', '/api/v1/agents/run', {
      apiKey,
      body: { task, llm_model: model, custom_mcps: source() },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const run = await h.waitForJob(apiKey, `/api/v1/agents/runs/${accepted.body.jobId}`);
    assert.equal(run.status, 'completed', run.error);
    const job = await h.db.selectFrom('jobs').select('workflow_id').where('id', '=', run.id).executeTakeFirstOrThrow();
    return { run, workflowId: job.workflow_id };
  }

  /** Neither the image's base64 nor its data URL is anywhere in the decoded workflow history (its runs and children). */
  async function assertNotInHistory(workflowId: string, image: Buffer) {
    const base64 = image.toString('base64');
    const middle = Math.floor(base64.length / 2);
    for (const needle of [base64.slice(0, 64), base64.slice(middle, middle + 64), base64.slice(-64)]) {
      assert.deepEqual(
        await workflowsHolding(h.client, [workflowId], needle),
        [],
        'image bytes in the workflow history',
      );
    }
  }

  it("gives a vision model the exact image bytes after the tool's text, only for its latest tool results, and keeps them out of the workflow history", async function () {
    const [first, second] = [imageBytes(5_000), imageBytes(7_000)];
    tools.images.set('first', first).set('second', second);
    const since = h.llm.requests.length;
    h.llm.enqueue(
      act('snapshot', { name: 'first' }, 'Look'),
      act('snapshot', { name: 'second' }, 'Look again'),
      act('done', { success: true, answer: 'two snapshots seen' }),
    );
    const { run, workflowId } = await runCustomAgent('gpt-4o-mini', 'Take two snapshots and describe them');
    assert.equal(run.result.answer, 'two snapshots seen');
    assert.deepEqual(
      run.toolCalls.map((c: any) => [c.tool, c.status]),
      [
        ['snapshot', 'completed'],
        ['snapshot', 'completed'],
      ],
    );

    const sent = h.llm.requests.slice(since).filter(isAgentDecision);
    assert.equal(sent.length, 3);
    // The tool message keeps the answer's text, the image described in its place.
    assert.deepEqual(toolMessages(sent[1]), [`snapshot first\n${described(first.length, 'snapshot')}`]);
    const messages = sent[1].body.messages!;
    const toolAt = messages.findIndex((m) => m.role === 'tool');
    const shown = messages[toolAt + 1];
    assert.equal(shown.role, 'user', 'the images follow the tool message');
    const parts = shown.content as { type: string; text?: string; image_url?: { url: string } }[];
    const callId = String(messages[toolAt].tool_call_id);
    assert.deepEqual(
      parts.map((p) => (p.type === 'text' ? p.text : p.image_url?.url)),
      [
        'The images your latest tool calls returned (their tool messages describe them):',
        `Tool call ${callId} (snapshot):`,
        dataUrl('image/png', first),
      ],
    );
    assert.deepEqual(imagesSent(messages), [['image/png', first]]);

    // The next decision shows the latest result's image only; the first stays described.
    assert.deepEqual(toolMessages(sent[2]), [
      `snapshot first\n${described(first.length, 'snapshot')}`,
      `snapshot second\n${described(second.length, 'snapshot')}`,
    ]);
    assert.deepEqual(imagesSent(sent[2].body.messages!), [['image/png', second]]);
    assert.equal(sent[2].body.messages!.at(-1)?.role, 'user');

    // The history holds the answer the workflow passed on (its text, the image's description), never its bytes.
    assert.equal((await workflowsHolding(h.client, [workflowId], described(first.length, 'snapshot'))).length, 1);
    await assertNotInHistory(workflowId, first);
    await assertNotInHistory(workflowId, second);
    const kept = await h.db.selectFrom('agent_tool_images').select('id').where('job_id', '=', run.id).execute();
    assert.deepEqual(kept, [], 'the images are dropped when the run ends');
  });

  it('describes the images to a model without vision and sends it no image part', async function () {
    const image = imageBytes(4_000);
    tools.images.set('plain', image);
    const since = h.llm.requests.length;
    h.llm.enqueue(act('snapshot', { name: 'plain' }), act('done', { success: true, answer: 'described' }));
    const { run, workflowId } = await runCustomAgent('o3-mini', 'Take a snapshot');
    const sent = h.llm.requests.slice(since).filter(isAgentDecision);
    assert.equal(sent.length, 2);
    assert.deepEqual(toolMessages(sent[1]), [`snapshot plain\n${described(image.length, 'snapshot')}`]);
    for (const request of sent) assert.deepEqual(imagesSent(request.body.messages!), []);
    assert.ok(!JSON.stringify(sent.map((r) => r.body)).includes(image.toString('base64').slice(0, 64)));
    assert.deepEqual(
      await h.db.selectFrom('agent_tool_images').select('id').where('job_id', '=', run.id).execute(),
      [],
    );
    await assertNotInHistory(workflowId, image);
  });

  it('describes an image over the byte cap, the images past the per-result count and images a model cannot read, and shows the rest', async function () {
    const big = imageBytes(IMAGE_MAX_BYTES + 1);
    const fake = randomBytes(2_000);
    const vector = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>');
    tools.images.set('big', big).set('fake', fake).set('vector', vector);
    const since = h.llm.requests.length;
    h.llm.enqueue(
      actMany(
        [
          ['album', {}],
          ['snapshot', { name: 'big' }],
          ['snapshot', { name: 'fake' }],
          ['snapshot', { name: 'vector', mimeType: 'image/svg+xml' }],
        ],
        'All of them',
      ),
      act('done', { success: true, answer: 'seen what I could' }),
    );
    const { workflowId } = await runCustomAgent('gpt-4o-mini', 'Look at the album and the snapshots');
    const sent = h.llm.requests.slice(since).filter(isAgentDecision);
    assert.equal(sent.length, 2);
    const album = tools.album;
    assert.deepEqual(toolMessages(sent[1]), [
      [
        `an album of ${album.length}`,
        described(album[0].length, 'album'),
        described(album[1].length, 'album', undefined, 'image/jpeg'),
        described(album[2].length, 'album'),
        described(album[3].length, 'album'),
        described(album[4].length, 'album', `only the first ${IMAGES_PER_RESULT} images of a result are shown`),
      ].join('\n'),
      `snapshot big\n${described(big.length, 'snapshot', `larger than the ${IMAGE_MAX_BYTES}-byte limit for images shown to the model`)}`,
      `snapshot fake\n${described(fake.length, 'snapshot', 'its bytes are not image/png')}`,
      `snapshot vector\n${described(vector.length, 'snapshot', 'image/svg+xml is not an image type models take (PNG, JPEG, GIF, WebP)', 'image/svg+xml')}`,
    ]);
    assert.deepEqual(imagesSent(sent[1].body.messages!), [
      ['image/png', album[0]],
      ['image/jpeg', album[1]],
      ['image/png', album[2]],
      ['image/png', album[3]],
    ]);
    for (const image of [big, fake, album[4]]) await assertNotInHistory(workflowId, image);
  });

  it("an agent-market run's model sees the image its owner's tool returned in its next step", async function () {
    const agentProvider = await h.createUser({ creditUsd: 1 });
    const consumer = await h.createUser({ creditUsd: 5 });
    const created = await h.http('POST', '/api/v1/agent-market/submissions', {
      apiKey: agentProvider.apiKey,
      body: {
        name: `Snapshot agent ${randomBytes(3).toString('hex')}`,
        description: 'Looks at a snapshot through its camera tool',
        priceUsd: 0,
        suggestedLlmProvider: 'service',
        suggestedLlmModel: 'gpt-4o-mini',
        runMode: 'template',
        systemPrompt: 'Use the snapshot tool.',
        promptTemplate: 'Take the snapshot {{name}} and describe it.',
        inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        customMcpSelections: [{ type: 'remote_mcp', name: 'Camera', source_url: tools.url, tool_names: ['snapshot'] }],
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(
      (
        await h.http('POST', `/api/v1/agent-market/submissions/${created.body.id}/submit`, {
          apiKey: agentProvider.apiKey,
        })
      ).status,
      200,
    );
    assert.equal(
      (await admin(h, ['review', '--market', 'agent', '--submission', created.body.id, '--approve'])).status,
      'approved',
    );

    const image = imageBytes(6_000);
    tools.images.set('market', image);
    const since = h.llm.requests.length;
    h.llm.enqueue(act('snapshot', { name: 'market' }, 'Take it'), act('done', { success: true, answer: 'a snapshot' }));
    const accepted = await h.http('POST', `/api/v1/agent-market/agents/${created.body.publicId}/run`, {
      apiKey: consumer.apiKey,
      body: { inputs: { name: 'market' } },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const run = await h.waitForJob(consumer.apiKey, `/api/v1/agent-market/runs/${accepted.body.jobId}`);
    assert.equal(run.status, 'completed', run.error);

    const sent = h.llm.requests.slice(since).filter(isAgentDecision);
    assert.equal(sent.length, 2);
    // The step's outcome describes the image; the next step's request shows it before the observation.
    const outcome = run.result.steps.flatMap((s: any) => s.outcomes).find((o: any) => o.action.startsWith('snapshot'));
    assert.equal(outcome?.message, `result: snapshot market\n${described(image.length, 'snapshot')}`);
    const messages = sent[1].body.messages!;
    assert.ok(
      textsOf(messages).some((text) =>
        text.includes(`result: snapshot market\n${described(image.length, 'snapshot')}`),
      ),
      'the previous steps show the description',
    );
    const shown = messages.find(
      (m) =>
        Array.isArray(m.content) &&
        m.content.some(
          (p) => p.type === 'text' && /^The images your tool calls of step 1 returned/.test(String(p.text)),
        ),
    );
    assert.ok(shown, 'the images message');
    assert.ok(
      messages.indexOf(shown!) <
        messages.findIndex(
          (m) => Array.isArray(m.content) && m.content.some((p) => /^Current observation/.test(String(p.text ?? ''))),
        ),
    );
    assert.deepEqual(imagesSent([shown!]), [['image/png', image]]);
    assert.deepEqual(
      imagesSent(sent[0].body.messages!).filter(([, bytes]) => bytes.equals(image)),
      [],
      'not before the call',
    );
    await assertNotInHistory(`agent-market-${run.id}`, image);
    assert.deepEqual(
      await h.db.selectFrom('agent_tool_images').select('id').where('job_id', '=', run.id).execute(),
      [],
    );
  });
});
