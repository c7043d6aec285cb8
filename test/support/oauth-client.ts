import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import type {
  FetchLike,
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { Page } from 'playwright-core';

/**
 * A native MCP client's OAuth side, as the official SDK v2 asks of an application: an
 * OAuthClientProvider keeping everything in memory, a loopback redirect URI served by a small HTTP
 * server on 127.0.0.1, and a browser (Playwright) standing in for the person who signs in and
 * consents. The SDK does the rest (discovery from the 401, registration, PKCE, the token exchange,
 * refresh).
 */

/** The loopback redirect target (RFC 8252 §7.3): records every authorization response it receives. */
export interface LoopbackRedirect {
  url: string;
  /** The next authorization response's query (waits for it). */
  next(timeoutMs?: number): Promise<URLSearchParams>;
  close(): Promise<void>;
}

export async function startLoopbackRedirect(): Promise<LoopbackRedirect> {
  const received: URLSearchParams[] = [];
  const waiters: ((params: URLSearchParams) => void)[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    const waiter = waiters.shift();
    if (waiter) waiter(url.searchParams);
    else received.push(url.searchParams);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      '<!doctype html><html lang="en"><head><title>Signed in</title></head><body><p>You can close this window.</p></body></html>',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    next(timeoutMs = 30_000) {
      const ready = received.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error('no authorization response reached the redirect URI')),
          timeoutMs,
        );
        waiters.push((params) => {
          clearTimeout(timer);
          resolve(params);
        });
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface InMemoryOAuthClientOptions {
  redirect: LoopbackRedirect;
  clientName: string;
  /** The client's ID metadata document URL (HTTPS): the client identifies itself with it instead of registering. */
  clientMetadataUrl?: string;
  /**
   * The person's part, given the authorization URL the SDK built: open it in a browser, sign in,
   * consent. Left out, the client only records where it would have sent the person.
   */
  signIn?: (authorizationUrl: URL) => Promise<void>;
}

/** An OAuthClientProvider holding its registration, tokens, PKCE verifier and discovery state in memory. */
export class InMemoryOAuthClient implements OAuthClientProvider {
  readonly clientMetadataUrl?: string;
  /** Every authorization URL the SDK sent the person to. */
  readonly authorizationUrls: URL[] = [];
  /** Every token set the SDK saved (the first from the code exchange, then one per refresh). */
  readonly savedTokens: StoredOAuthTokens[] = [];
  signIn?: (authorizationUrl: URL) => Promise<void>;
  private client?: StoredOAuthClientInformation;
  private stored?: StoredOAuthTokens;
  private verifier?: string;
  private discovery?: OAuthDiscoveryState;
  private expectedState?: string;

  constructor(private readonly options: InMemoryOAuthClientOptions) {
    this.clientMetadataUrl = options.clientMetadataUrl;
    this.signIn = options.signIn;
  }

  get redirectUrl(): string {
    return this.options.redirect.url;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.clientName,
      redirect_uris: [this.options.redirect.url],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state(): string {
    this.expectedState = randomBytes(16).toString('base64url');
    return this.expectedState;
  }

  clientInformation(): StoredOAuthClientInformation | undefined {
    return this.client;
  }

  saveClientInformation(info: StoredOAuthClientInformation): void {
    this.client = info;
  }

  tokens(): StoredOAuthTokens | undefined {
    return this.stored;
  }

  saveTokens(tokens: StoredOAuthTokens): void {
    this.stored = tokens;
    this.savedTokens.push(tokens);
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    this.authorizationUrls.push(authorizationUrl);
    if (this.signIn) await this.signIn(authorizationUrl);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    assert.ok(this.verifier, 'no PKCE verifier saved');
    return this.verifier;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'client') this.client = undefined;
    if (scope === 'all' || scope === 'tokens') this.stored = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }

  /** The authorization response the redirect URI received, its `state` checked (the SDK leaves that to the application). */
  async authorizationResponse(): Promise<URLSearchParams> {
    const params = await this.options.redirect.next();
    assert.equal(params.get('state'), this.expectedState, 'the authorization response carries the state sent');
    return params;
  }
}

/**
 * The person in the browser: opens the authorization URL, signs in to the console with an API key if
 * asked, fills the consent form (the listing's parameters, an optional cap) and allows; the browser
 * then lands on the loopback redirect URI. Returns the client name the consent page showed.
 */
export async function signInAndAllow(
  page: Page,
  authorizationUrl: URL,
  options: { apiKey: string; params?: Record<string, string>; capUsd?: string; redirectUrl: string },
): Promise<string> {
  await page.goto(authorizationUrl.toString());
  if (new URL(page.url()).pathname === '/console/sign-in') {
    await page.focus('#api_key');
    await page.keyboard.type(options.apiKey);
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname.startsWith('/oauth/interaction/'));
  }
  const clientName = await page.locator('#client-name').innerText();
  for (const [name, value] of Object.entries(options.params ?? {})) await page.fill(`#param-${name}`, value);
  if (options.capUsd) await page.fill('#cap', options.capUsd);
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((u) => u.href.startsWith(options.redirectUrl));
  return clientName;
}

/** A fetch that records what the SDK asked of the network (method, address, status), in order. */
export function recordingFetch(): { fetch: FetchLike; requests: { method: string; url: URL; status: number }[] } {
  const requests: { method: string; url: URL; status: number }[] = [];
  return {
    requests,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const url = new URL(input instanceof Request ? input.url : String(input));
      requests.push({
        method: (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase(),
        url,
        status: response.status,
      });
      return response;
    },
  };
}

/**
 * What an MCP application does with the SDK to connect to an OAuth-protected server: connect (the
 * server answers 401; the SDK discovers, registers and sends the person to the browser, where
 * `oauth.signIn` plays them), finishAuth with what the redirect URI received, connect again.
 */
export async function connectWithOAuth(
  url: string,
  oauth: InMemoryOAuthClient,
  fetchFn?: FetchLike,
): Promise<{ client: Client; answer: URLSearchParams }> {
  const options = { authProvider: oauth, ...(fetchFn && { fetch: fetchFn }) };
  const first = new StreamableHTTPClientTransport(new URL(url), options);
  const refused = new Client({ name: 'sdk-oauth', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await assert.rejects(refused.connect(first), (err) => err instanceof UnauthorizedError);
  const answer = await oauth.authorizationResponse();
  assert.ok(answer.get('code'), `no code in the authorization response: ${answer.toString()}`);
  await first.finishAuth(answer);
  await first.close();
  const client = new Client({ name: 'sdk-oauth', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), options));
  return { client, answer };
}
