import type { ToolCallResult, ToolContentBlock } from './types';

/** Tool results go back to the model at most this big (UTF-8 bytes), with a note when they were cut. */
export const DEFAULT_MAX_RESULT_BYTES = 50 * 1024;
/**
 * A binary block of a result (an image, audio, an embedded resource's blob) is passed on up to this
 * many decoded bytes; a larger one makes the call fail with `too_large` (it is never described instead).
 */
export const DEFAULT_MAX_BINARY_BYTES = 4 * 1024 * 1024;

export function cappedResult(
  isError: boolean,
  text: string,
  maxBytes = DEFAULT_MAX_RESULT_BYTES,
  alreadyCut = false,
): ToolCallResult {
  const total = Buffer.byteLength(text);
  if (total <= maxBytes && !alreadyCut) return { isError, text, truncated: false };
  const kept = cutUtf8(text, maxBytes);
  const note = alreadyCut
    ? `\n\n[Result cut: the upstream response was larger than the size limit; only its first ${Buffer.byteLength(kept)} bytes are shown.]`
    : `\n\n[Result cut: showing the first ${Buffer.byteLength(kept)} of ${total} bytes.]`;
  return { isError, text: kept + note, truncated: true };
}

/** The first `maxBytes` bytes of a text, without a broken character at the end. */
function cutUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  return Buffer.from(text)
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
}

interface McpContentBlock {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; text?: string; mimeType?: string; blob?: string };
}

/** An MCP CallToolResult as text: text blocks as they are, other blocks described, structured content as JSON when there is no text. */
export function mcpResultText(result: { content?: unknown; structuredContent?: unknown }): string {
  const blocks = Array.isArray(result.content) ? (result.content as McpContentBlock[]) : [];
  const parts = blocks.map((block) => {
    switch (block.type) {
      case 'text':
        return block.text ?? '';
      case 'image':
      case 'audio':
        return `[${block.type}: ${block.mimeType ?? 'unknown type'}, ${base64Bytes(block.data ?? '')} bytes]`;
      case 'resource_link':
        return `[resource link: ${block.name ?? ''} ${block.uri ?? ''}]`.replace(/\s+\]/, ']');
      case 'resource':
        return (
          block.resource?.text ?? `[resource: ${block.resource?.uri ?? ''} (${block.resource?.mimeType ?? 'binary'})]`
        );
      default:
        return `[${block.type} content]`;
    }
  });
  const text = parts.join('\n');
  if (text.trim() === '' && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return text;
}

/** How many bytes a base64 payload decodes to. */
export function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** A binary block (image, audio, or an embedded resource's blob) of more than `maxBytes` decoded bytes. */
export interface OversizedBlock {
  what: string;
  bytes: number;
}

/** The first block of the answer whose binary payload is over the limit, or null. */
export function oversizedBinary(result: { content?: unknown }, maxBytes: number): OversizedBlock | null {
  if (!Array.isArray(result.content)) return null;
  for (const block of result.content as McpContentBlock[]) {
    const payload =
      block.type === 'image' || block.type === 'audio'
        ? block.data
        : block.type === 'resource'
          ? block.resource?.blob
          : undefined;
    if (typeof payload !== 'string' || payload.length <= maxBytes) continue;
    const bytes = base64Bytes(payload);
    if (bytes > maxBytes) {
      const what =
        block.type === 'resource'
          ? `an embedded resource (${block.resource?.mimeType ?? 'binary'})`
          : `${block.type === 'image' ? 'an image' : 'audio'} (${block.mimeType ?? 'unknown type'})`;
      return { what, bytes };
    }
  }
  return null;
}

/** A text block with nothing but its text: the answer it makes up alone is `text`. */
function isPlainText(block: unknown): block is { type: 'text'; text: string } {
  if (!block || typeof block !== 'object') return false;
  const b = block as Record<string, unknown>;
  if (b.type !== 'text' || typeof b.text !== 'string') return false;
  for (const key in b) if (key !== 'type' && key !== 'text') return false;
  return true;
}

/** The protocol's own result `_meta` keys (the responding server's identity and the like): not part of the tool's answer. */
const PROTOCOL_META_PREFIX = 'io.modelcontextprotocol/';

/**
 * An MCP tool result as the runtime returns it: `text` for a model (mcpResultText, capped at
 * `maxTextBytes`), and, when the answer is more than one plain text block, its blocks as sent with
 * their text cut to the same budget (the block where the cap falls carries the note; later text
 * blocks and text resources are left out). `structuredContent` and `_meta` are kept as sent. Check
 * oversizedBinary() first: binary payloads are passed on whole.
 */
export function mcpToolResult(
  result: { content?: unknown; structuredContent?: unknown; isError?: unknown; _meta?: unknown },
  maxTextBytes = DEFAULT_MAX_RESULT_BYTES,
): ToolCallResult {
  const isError = result.isError === true;
  const rendered = mcpResultText(result);
  const answer = cappedResult(isError, rendered, maxTextBytes);
  const blocks = Array.isArray(result.content) ? (result.content as ToolContentBlock[]) : [];
  if (!(blocks.length === 1 && isPlainText(blocks[0]) && blocks[0].text === rendered))
    answer.content = capBlocks(blocks, maxTextBytes);
  if (
    result.structuredContent &&
    typeof result.structuredContent === 'object' &&
    !Array.isArray(result.structuredContent)
  ) {
    answer.structuredContent = result.structuredContent as Record<string, unknown>;
  }
  if (result._meta && typeof result._meta === 'object') {
    const meta = Object.fromEntries(
      Object.entries(result._meta as Record<string, unknown>).filter(([key]) => !key.startsWith(PROTOCOL_META_PREFIX)),
    );
    if (Object.keys(meta).length) answer.meta = meta;
  }
  return answer;
}

function capBlocks(blocks: ToolContentBlock[], maxBytes: number): ToolContentBlock[] {
  let budget = maxBytes;
  let cut = false;
  let left = 0;
  const kept: ToolContentBlock[] = [];
  for (const block of blocks) {
    const text =
      block.type === 'text'
        ? block.text
        : block.type === 'resource' && 'text' in block.resource
          ? block.resource.text
          : null;
    if (typeof text !== 'string') {
      kept.push(block);
      continue;
    }
    if (cut) {
      left++;
      continue;
    }
    const bytes = Buffer.byteLength(text);
    if (bytes <= budget) {
      budget -= bytes;
      kept.push(block);
      continue;
    }
    cut = true;
    const shown = cutUtf8(text, budget);
    const note = `\n\n[Result cut: showing the first ${Buffer.byteLength(shown)} of ${bytes} bytes of this block.]`;
    if (block.type === 'text') kept.push({ ...block, text: shown + note });
    else if (block.type === 'resource') kept.push({ ...block, resource: { ...block.resource, text: shown + note } });
  }
  if (left > 0)
    kept.push({
      type: 'text',
      text: `[Result cut: ${left} more text block${left > 1 ? 's' : ''} left out: the text of a result is capped at ${maxBytes} bytes.]`,
    });
  return kept;
}

/** The blocks of an answer: as the tool sent them, or its one text block. */
export function resultContent(result: ToolCallResult): ToolContentBlock[] {
  return result.content ?? [{ type: 'text', text: result.text }];
}
