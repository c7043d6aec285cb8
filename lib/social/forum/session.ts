/** One signed-in connection to the forum: the OAuth token, the rate limit, write spacing, and what an HTTP answer means. */
import { fetchBuffered, type BufferedResponse } from '../../net/buffered-fetch';
import { FetchError, ssrfRefusal } from '../../net/transport';
import { errorDetail } from './answers';
import { ForumError, type ForumErrorCode } from './errors';
import { asObject, parseJson, positiveNumber, truncate } from './json';
import type { ForumCredentials, ForumEndpoints, ForumMode, ForumTransport } from './types';

const DEFAULT_USER_AGENT = 'server:scrape-platform:0.1.0';
const MAX_RATE_LIMIT_WAIT_MS = 10_000;
const DEFAULT_TOKEN_LIFETIME_SECONDS = 3_600;
const MAX_TOKEN_REFRESH_MARGIN_MS = 30_000;

type Query = Record<string, string | number | undefined>;

interface ApiRequest {
  method: 'GET' | 'POST';
  path: string;
  query?: Query;
  form?: Record<string, string>;
  write?: boolean;
}

interface AccessToken {
  value: string;
  refreshAt: number;
}

interface RateLimitState {
  remaining: number;
  resetAt: number;
}

export function forumMode(creds: ForumCredentials): ForumMode {
  return creds.forumUsername && creds.forumPassword ? 'password' : 'client_credentials';
}

export class ForumSession {
  readonly mode: ForumMode;
  private readonly apiBase: string;
  private readonly tokenUrl: string;
  private readonly userAgent: string;
  private token: AccessToken | null = null;
  private pendingGrant: Promise<AccessToken> | null = null;
  private rateLimit: RateLimitState | null = null;
  private nextWriteAt = 0;

  constructor(
    endpoints: ForumEndpoints,
    private readonly creds: ForumCredentials,
    private readonly transport: ForumTransport,
    private readonly minWriteIntervalMs: number,
  ) {
    this.mode = forumMode(creds);
    this.apiBase = baseUrl(endpoints.apiBase, 'API');
    this.tokenUrl = `${baseUrl(endpoints.authBase, 'auth')}/api/v1/access_token`;
    this.userAgent =
      creds.forumUserAgent?.trim() ||
      (this.mode === 'password' ? `${DEFAULT_USER_AGENT} (by /u/${creds.forumUsername})` : DEFAULT_USER_AGENT);
  }

  async accessToken(): Promise<string> {
    if (this.token && Date.now() < this.token.refreshAt) return this.token.value;
    this.pendingGrant ??= this.grant().finally(() => {
      this.pendingGrant = null;
    });
    this.token = await this.pendingGrant;
    return this.token.value;
  }

  async call(request: ApiRequest): Promise<unknown> {
    if (request.write) await this.awaitWriteSlot();
    let response = await this.sendAuthorized(request);
    if (response.status === 401) {
      response = await this.sendAuthorized(request);
      if (response.status === 401) {
        throw this.error('invalid_credentials', 'The forum rejected the access token even after signing in again', {
          status: 401,
        });
      }
    }
    return this.interpret(response, request);
  }

  private async sendAuthorized(request: ApiRequest): Promise<BufferedResponse> {
    const token = await this.accessToken();
    await this.awaitRateLimit();
    const response = await this.send(`${this.apiBase}${request.path}${queryString(request.query)}`, {
      method: request.method,
      headers: {
        authorization: `bearer ${token}`,
        'user-agent': this.userAgent,
        accept: 'application/json',
        ...(request.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: request.form ? new URLSearchParams(request.form).toString() : undefined,
    });
    this.recordRateLimit(response.headers);
    if (response.status === 401 && this.token?.value === token) this.token = null;
    return response;
  }

  private async grant(): Promise<AccessToken> {
    const form: Record<string, string> =
      this.mode === 'password'
        ? { grant_type: 'password', username: this.creds.forumUsername ?? '', password: this.creds.forumPassword ?? '' }
        : { grant_type: 'client_credentials' };
    const basic = Buffer.from(`${this.creds.forumClientId}:${this.creds.forumClientSecret}`).toString('base64');
    const requestedAt = Date.now();
    const response = await this.send(this.tokenUrl, {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        'user-agent': this.userAgent,
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(form).toString(),
    });
    const body = asObject(parseJson(response.body));
    const oauthError = typeof body?.error === 'string' ? body.error : undefined;
    if (oauthError === 'invalid_grant') {
      throw this.error(
        'invalid_credentials',
        'The forum rejected the username or password (invalid_grant); a script app only accepts accounts listed as its developers, and accounts with two-factor authentication are not supported',
        { status: response.status },
      );
    }
    if (
      response.status === 401 ||
      response.status === 403 ||
      oauthError === 'invalid_client' ||
      oauthError === 'unauthorized_client'
    ) {
      throw this.error(
        'invalid_credentials',
        `The forum rejected the client ID or client secret (HTTP ${response.status})`,
        {
          status: response.status,
        },
      );
    }
    if (response.status === 429) throw this.rateLimitedError(response);
    if (oauthError && response.status < 500) {
      throw this.error('bad_request', `The forum refused to issue an access token: ${truncate(oauthError)}`, {
        status: response.status,
      });
    }
    if (response.status < 200 || response.status >= 300) {
      throw this.error('upstream', `The forum's token endpoint answered HTTP ${response.status}`, {
        status: response.status,
      });
    }
    const value = body?.access_token;
    if (typeof value !== 'string' || value === '') {
      throw this.error('upstream', 'The forum answered the token request without an access token', {
        status: response.status,
      });
    }
    const lifetimeMs = positiveNumber(body?.expires_in, DEFAULT_TOKEN_LIFETIME_SECONDS) * 1000;
    return { value, refreshAt: requestedAt + lifetimeMs - Math.min(MAX_TOKEN_REFRESH_MARGIN_MS, lifetimeMs / 10) };
  }

  private interpret(response: BufferedResponse, request: ApiRequest): unknown {
    const { status } = response;
    const what = `${request.method} ${request.path}`;
    if (status >= 200 && status < 300) {
      const parsed = parseJson(response.body);
      if (parsed === undefined)
        throw this.error('upstream', `The forum answered ${what} with something other than JSON`, { status });
      return parsed;
    }
    if (status >= 300 && status < 400) {
      const location = response.headers.location ?? '';
      if (location.includes('/subreddits/search'))
        throw this.error('not_found', `${what}: that community does not exist`, { status });
      throw this.error('upstream', `The forum answered ${what} with an unexpected redirect (HTTP ${status})`, {
        status,
      });
    }
    const detail = errorDetail(response.body);
    const suffix = detail ? `: ${detail}` : '';
    if (status === 429) throw this.rateLimitedError(response);
    if (status === 400 || status === 422)
      throw this.error('bad_request', `The forum refused ${what} (HTTP ${status})${suffix}`, { status });
    if (status === 403)
      throw this.error('forbidden', `The forum did not allow ${what} (HTTP 403)${suffix}`, { status });
    if (status === 404)
      throw this.error('not_found', `The forum found nothing at ${what} (HTTP 404)${suffix}`, { status });
    throw this.error('upstream', `The forum failed on ${what} (HTTP ${status})${suffix}`, { status });
  }

  private async send(
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string },
  ): Promise<BufferedResponse> {
    try {
      return await fetchBuffered(url, {
        ...init,
        policy: this.transport.policy,
        proxy: this.transport.proxy ?? null,
        timeoutMs: this.transport.timeoutMs,
        maxRedirects: 0,
      });
    } catch (error) {
      if (ssrfRefusal(error)) {
        throw this.error(
          'upstream',
          `The network policy does not allow connecting to the forum: ${(error as Error).message}`,
          { cause: error },
        );
      }
      if (error instanceof FetchError)
        throw this.error('upstream', `Could not reach the forum: ${error.message}`, { cause: error });
      throw error;
    }
  }

  private async awaitWriteSlot(): Promise<void> {
    const now = Date.now();
    const slot = Math.max(now, this.nextWriteAt);
    this.nextWriteAt = slot + this.minWriteIntervalMs;
    if (slot > now) await sleep(slot - now);
  }

  private async awaitRateLimit(): Promise<void> {
    const state = this.rateLimit;
    if (!state) return;
    if (state.remaining < 1) {
      const waitMs = state.resetAt - Date.now();
      if (waitMs > MAX_RATE_LIMIT_WAIT_MS) {
        const retryAfterSeconds = Math.ceil(waitMs / 1000);
        throw this.error('rate_limited', `The forum's rate limit is used up; retry in ${retryAfterSeconds} s`, {
          retryAfterSeconds,
        });
      }
      if (waitMs > 0) await sleep(waitMs);
      if (this.rateLimit === state) this.rateLimit = null;
      return;
    }
    state.remaining -= 1;
  }

  private recordRateLimit(headers: Record<string, string>): void {
    const remaining = Number.parseFloat(headers['x-ratelimit-remaining'] ?? '');
    const resetSeconds = Number.parseFloat(headers['x-ratelimit-reset'] ?? '');
    if (Number.isFinite(remaining) && Number.isFinite(resetSeconds)) {
      this.rateLimit = { remaining, resetAt: Date.now() + resetSeconds * 1000 };
    }
  }

  private rateLimitedError(response: BufferedResponse): ForumError {
    const seconds = Number.parseFloat(response.headers['retry-after'] ?? response.headers['x-ratelimit-reset'] ?? '');
    const retryAfterSeconds = Number.isFinite(seconds) ? Math.max(0, Math.ceil(seconds)) : undefined;
    const when = retryAfterSeconds === undefined ? 'later' : `in ${retryAfterSeconds} s`;
    return this.error(
      'rate_limited',
      `The forum is rate limiting this client (HTTP ${response.status}); retry ${when}`,
      {
        status: response.status,
        retryAfterSeconds,
      },
    );
  }

  private error(
    code: ForumErrorCode,
    message: string,
    details: ConstructorParameters<typeof ForumError>[2] = {},
  ): ForumError {
    return new ForumError(code, this.redact(message), details);
  }

  readonly redact = (text: string): string => {
    const secrets = [this.creds.forumClientSecret, this.creds.forumPassword, this.token?.value].filter(
      (secret): secret is string => typeof secret === 'string' && secret !== '',
    );
    return secrets.reduce((redacted, secret) => redacted.split(secret).join('[redacted]'), text);
  };
}

function baseUrl(value: string, which: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ForumError('bad_request', `The forum ${which} base URL is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ForumError('bad_request', `The forum ${which} base URL must be http(s)`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) params.set(key, String(value));
  }
  params.set('raw_json', '1');
  return `?${params.toString()}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
