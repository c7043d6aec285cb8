import { base64Bytes, cappedResult, DEFAULT_MAX_RESULT_BYTES, mcpResultText } from './result';
import type { ToolCallResult, ToolContentBlock } from './types';

/**
 * The images of a tool's answer, for an agent's model: an image block, or an embedded resource
 * whose blob is an image (`image/*`). How the model gets them (as image input, or described) is
 * decided where the answer is kept for it (activities/agent/tool-images.ts).
 */
export interface ToolImage {
  /** The position of its block in the answer. */
  block: number;
  mimeType: string;
  /** Base64, as the tool sent it. */
  data: string;
  /** Decoded size in bytes. */
  bytes: number;
}

/** Where an image kept for the model is (a row of agent_tool_images), as the workflow may carry it: never the bytes. */
export interface ToolImageRef {
  id: string;
  mimeType: string;
  bytes: number;
}

/** What became of one image of an answer: kept for the model, or only described (with why, when the model could have seen it). */
export type KeptToolImage = { ref: ToolImageRef } | { notShown: string | null };

/** Keeps the images of one answer of a run's tool for the run's model. */
export interface ToolImageKeeper {
  keep(jobId: string, tool: string, images: ToolImage[]): Promise<KeptToolImage[]>;
}

/** The images of an answer, in block order. */
export function imagesOf(result: Pick<ToolCallResult, 'content'>): ToolImage[] {
  const images: ToolImage[] = [];
  for (const [block, content] of (result.content ?? []).entries()) {
    const image = imageOf(content);
    if (image) images.push({ block, ...image, bytes: base64Bytes(image.data) });
  }
  return images;
}

function imageOf(block: ToolContentBlock): { mimeType: string; data: string } | null {
  if (block.type === 'image' && typeof block.data === 'string') return { mimeType: block.mimeType, data: block.data };
  if (block.type === 'resource' && 'blob' in block.resource && typeof block.resource.blob === 'string') {
    const mimeType = block.resource.mimeType ?? '';
    if (mimeType.toLowerCase().startsWith('image/')) return { mimeType, data: block.resource.blob };
  }
  return null;
}

/** The image types chat models take as input (OpenAI and Anthropic alike), with how their bytes begin. */
const MODEL_IMAGE_TYPES: Record<string, (bytes: Buffer) => boolean> = {
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/gif': (b) => /^GIF8[79]a$/.test(b.subarray(0, 6).toString('latin1')),
  'image/webp': (b) =>
    b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
};

/**
 * Why a model could not take this image as input (null: it can): a type other than PNG, JPEG, GIF
 * or WebP, or bytes that do not begin as their type says (a model's API refuses the whole request
 * for an image it cannot read).
 */
export function modelImageProblem(mimeType: string, bytes: Buffer): string | null {
  const looksRight = MODEL_IMAGE_TYPES[mimeType.trim().toLowerCase()];
  if (!looksRight) return `${mimeType || 'an unknown type'} is not an image type models take (PNG, JPEG, GIF, WebP)`;
  if (!looksRight(bytes)) return `its bytes are not ${mimeType.trim().toLowerCase()}`;
  return null;
}

/** What the model reads of one image: `[image: image/png, 12345 bytes, returned by tool snapshot]`, with why it is not shown when it could have been. */
export function describeToolImage(
  image: Pick<ToolImage, 'mimeType' | 'bytes'>,
  tool: string,
  notShown: string | null = null,
): string {
  return `[image: ${image.mimeType || 'unknown type'}, ${image.bytes} bytes, returned by tool ${tool}${notShown ? `; not shown: ${notShown}` : ''}]`;
}

/**
 * The answer as text for a model with each image replaced by `describe(image, n)` (n: its place
 * among the answer's images); every other block, and structured content, as the answer's text
 * renders them (mcpResultText), cut to `maxBytes` like it.
 */
export function textWithImagesDescribed(
  result: ToolCallResult,
  describe: (image: ToolImage, n: number) => string,
  maxBytes = DEFAULT_MAX_RESULT_BYTES,
): { text: string; truncated: boolean } {
  const images = imagesOf(result);
  if (images.length === 0 || !result.content) return { text: result.text, truncated: result.truncated };
  const byBlock = new Map(images.map((image, n) => [image.block, describe(image, n)]));
  const content = result.content.map((block, i): ToolContentBlock =>
    byBlock.has(i) ? { type: 'text', text: byBlock.get(i)! } : block,
  );
  const answer = cappedResult(
    result.isError,
    mcpResultText({ content, structuredContent: result.structuredContent }),
    maxBytes,
  );
  return { text: answer.text, truncated: result.truncated || answer.truncated };
}
