import http from 'node:http';
import type { FuzzRequest } from './requests';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });

/**
 * Sends a request exactly as generated (any header value Node accepts, any body bytes), which
 * fetch would refuse or normalise. Rejects only when the server does not answer at all.
 */
export function sendRaw(baseUrl: string, request: FuzzRequest, timeoutMs = 90_000): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== null) headers['content-length'] = request.body.length;
    let answered = false;
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.target,
        headers,
        agent,
        timeout: timeoutMs,
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs}ms`)));
    // A server that answers early (413) may close while the body is still being written.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.end(request.body ?? undefined);
  });
}
