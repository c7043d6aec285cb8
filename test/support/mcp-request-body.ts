import type http from 'node:http';

/**
 * The JSON-RPC body of a request to a test MCP server, read once so the server can look at it (which
 * method, which headers came with a tools/call) before handing it to the SDK's Node handler, which
 * then does not read the stream again. Undefined for an empty or non-JSON body (the SDK answers those).
 */
export async function readMcpBody(req: http.IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  try {
    return raw ? JSON.parse(raw) : undefined;
  } catch {
    return undefined;
  }
}
