/** One HTTP connection to the microblog site through the SSRF guard: same-origin only, cookies kept, 429s waited out within a bound. */
import { fetchBuffered, type BufferedResponse } from '../../net/buffered-fetch';
import { FetchError, ssrfRefusal } from '../../net/transport';
import { CookieJar } from './cookies';
import { MicroblogError } from './errors';
import type { MicroblogTransport } from './types';

const USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
const DEFAULT_TIMEOUT_MS = 15_000;
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;
const MAX_RATE_LIMIT_WAIT_MS = 10_000;
const MAX_RATE_LIMIT_RETRIES = 2;

interface MicroblogRequest {
  method: 'GET' | 'POST';
  /** A path under the base URL, or an absolute URL on the same origin. */
  target: string | URL;
  form?: Record<string, string>;
  json?: unknown;
  headers?: Record<string, string>;
}

export class MicroblogConnection {
  readonly jar: CookieJar;

  constructor(
    private readonly base: URL,
    private readonly transport: MicroblogTransport,
    cookies: Record<string, string> = {},
  ) {
    this.jar = new CookieJar(cookies);
  }

  async send(request: MicroblogRequest): Promise<BufferedResponse> {
    for (let attempt = 0; ; attempt++) {
      const response = await this.sendOnce(request);
      if (response.status !== 429) return response;
      const waitMs = retryAfterMs(response.headers['retry-after']);
      if (waitMs === undefined || waitMs > MAX_RATE_LIMIT_WAIT_MS || attempt >= MAX_RATE_LIMIT_RETRIES) {
        throw rateLimited(waitMs);
      }
      await sleep(waitMs);
    }
  }

  redirectTarget(response: BufferedResponse): URL {
    const location = response.headers.location;
    if (!location)
      throw new MicroblogError('upstream', `Microblog answered HTTP ${response.status} without a Location`);
    return this.sameOrigin(new URL(location, response.url));
  }

  private async sendOnce(request: MicroblogRequest): Promise<BufferedResponse> {
    const url = typeof request.target === 'string' ? this.pathUrl(request.target) : this.sameOrigin(request.target);
    const headers: Record<string, string> = {
      'user-agent': USER_AGENT,
      accept:
        request.json === undefined && !url.pathname.includes('/api/')
          ? 'text/html,application/xhtml+xml'
          : 'application/json',
      ...request.headers,
    };
    const cookie = this.jar.header();
    if (cookie) headers.cookie = cookie;
    let body: string | undefined;
    if (request.form) {
      body = new URLSearchParams(request.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      headers['content-type'] = 'application/json';
    }
    if (request.method === 'POST') headers.origin = this.base.origin;
    let response: BufferedResponse;
    try {
      response = await fetchBuffered(url, {
        policy: this.transport.policy,
        proxy: this.transport.proxy ?? null,
        timeoutMs: this.transport.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxBytes: MAX_RESPONSE_BYTES,
        maxRedirects: 0,
        method: request.method,
        headers,
        body,
      });
    } catch (error) {
      throw networkFailure(error);
    }
    this.jar.absorb(response.setCookies);
    return response;
  }

  private pathUrl(path: string): URL {
    const url = new URL(this.base);
    url.pathname = this.base.pathname.replace(/\/+$/, '') + path.replace(/\?.*$/, '');
    url.search = path.includes('?') ? path.slice(path.indexOf('?')) : '';
    return url;
  }

  private sameOrigin(url: URL): URL {
    if (url.origin !== this.base.origin) {
      throw new MicroblogError(
        'upstream',
        `Microblog sent the client to another site (${url.origin}); refusing to follow`,
      );
    }
    return url;
  }
}

export function parseBase(base: string): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new MicroblogError('bad_request', 'Microblog base URL is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new MicroblogError('bad_request', `Microblog base URL must use http: or https:, got ${url.protocol}`);
  }
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  return url;
}

function retryAfterMs(header: string | undefined): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function rateLimited(waitMs: number | undefined): MicroblogError {
  const advice = waitMs === undefined ? '' : `; retry in ${Math.ceil(waitMs / 1000)} s`;
  return new MicroblogError('rate_limited', `Microblog is rate limiting this account${advice}`, {
    retryAfterMs: waitMs,
  });
}

function networkFailure(error: unknown): MicroblogError {
  if (error instanceof MicroblogError) return error;
  if (ssrfRefusal(error)) {
    return new MicroblogError(
      'upstream',
      `Microblog is not reachable under the network policy: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (error instanceof FetchError) {
    return new MicroblogError('upstream', `Could not reach Microblog: ${error.message}`, { cause: error });
  }
  return new MicroblogError('upstream', 'Could not reach Microblog', { cause: error });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
