import type { ToolCallResult } from './types';

/** Tool results go back to the model at most this big (UTF-8 bytes), with a note when they were cut. */
export const DEFAULT_MAX_RESULT_BYTES = 50 * 1024;

export function cappedResult(isError: boolean, text: string, maxBytes = DEFAULT_MAX_RESULT_BYTES, alreadyCut = false): ToolCallResult {
  const total = Buffer.byteLength(text);
  if (total <= maxBytes && !alreadyCut) return { isError, text, truncated: false };
  const kept = total <= maxBytes ? text : Buffer.from(text).subarray(0, maxBytes).toString('utf8').replace(/\uFFFD+$/, '');
  const note = alreadyCut
    ? `\n\n[Result cut: the upstream response was larger than the size limit; only its first ${Buffer.byteLength(kept)} bytes are shown.]`
    : `\n\n[Result cut: showing the first ${Buffer.byteLength(kept)} of ${total} bytes.]`;
  return { isError, text: kept + note, truncated: true };
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
        return `[${block.type}: ${block.mimeType ?? 'unknown type'}, ${Math.floor(((block.data?.length ?? 0) * 3) / 4)} bytes]`;
      case 'resource_link':
        return `[resource link: ${block.name ?? ''} ${block.uri ?? ''}]`.replace(/\s+\]/, ']');
      case 'resource':
        return block.resource?.text ?? `[resource: ${block.resource?.uri ?? ''} (${block.resource?.mimeType ?? 'binary'})]`;
      default:
        return `[${block.type} content]`;
    }
  });
  const text = parts.join('\n');
  if (text.trim() === '' && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return text;
}
