import { createHash, createHmac, createPrivateKey, randomBytes } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import { localhostAllowedHostnames } from '@modelcontextprotocol/server';
import { Provider, errors, interactionPolicy, type OidcAccessToken, type OidcInteraction } from 'oidc-provider';
import type { Db } from '../../../db/connect';
import { loadCallEntryCached } from '../market/call-path';
import {
  endGrantFamily,
  extendOAuthRecord,
  findLiveMarketGrant,
  oauthAdapterFactory,
  type OAuthPayload,
  saveMarketGrant,
  type MarketGrant,
} from '../../../db/repos/oauth';
import { operatorClientMetadata } from '../../../db/repos/oauth-clients';
import { recordMarketCredential, type CredentialBudgets } from '../../../db/repos/market-credentials';
import { takeRateLimit } from '../../../db/repos/rate-limits';
import type { Config } from '../../../lib/config';
import { issueMcpCredential, paramsSchemaHash } from '../../../lib/market/credential';
import type { MarketCallEntry } from '../../../lib/market/tool-call';
import type { SourceParamValues } from '../../../lib/tools/types';
import { ApiError } from '../../errors';
import { marketMcpUrl } from '../shared/public-urls';
import { log } from '../../../lib/log';
import { fetchBuffered } from '../../../lib/net/buffered-fetch';
import type { NetworkPolicy } from '../../../lib/net/ssrf';

/**
 * The authorization server of the hosted MCP endpoints (issue 25), built on oidc-provider: the
 * authorization code flow with PKCE (S256 only), resource indicators binding each token to one
 * `/mcp/{entryId}` (RFC 8707), `iss` in the authorization response (RFC 9207), refresh tokens rotated
 * on every use, revocation (RFC 7009), dynamic client registration (RFC 7591) unless
 * OAUTH_DYNAMIC_REGISTRATION=false. Its endpoints live under /oauth; its metadata (RFC 8414) at
 * /.well-known/oauth-authorization-server. Sign-in and consent are the console's (web/routes/oauth.tsx).
 */
export const OAUTH_PREFIX = '/oauth';
/** The one scope of the market endpoints. */
export const MCP_SCOPE = 'mcp';
const KNOWN_SCOPES = new Set(['openid', MCP_SCOPE, 'offline_access']);
export const interactionPath = (uid: string) => `${OAUTH_PREFIX}/interaction/${uid}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const AUTHORIZATION_SERVER_METADATA = /^\/\.well-known\/oauth-authorization-server(\/oauth)?\/?$/;

export interface OAuthDeps {
  db: Db;
  config: Config;
  /** What the authorization server may fetch (client metadata documents): NETWORK_ALLOWLIST's policy. */
  policy: NetworkPolicy;
}

/** A client metadata document is small and quick to fetch, or it is refused. */
const METADATA_DOCUMENT_MAX_BYTES = 64 * 1024;
const METADATA_DOCUMENT_TIMEOUT_MS = 5_000;

/**
 * The `fetch` oidc-provider uses (client ID metadata documents): the platform's guarded client, so that
 * every address is checked against the SSRF policy (a private or loopback address is refused unless
 * allowlisted), with a size limit and a timeout, no redirects followed, no cookies, no proxy, and a
 * number of fetches a minute shared by every process.
 */
function guardedFetch(policy: NetworkPolicy, db: Db, fetchesPerMinute: number) {
  return async (url: string | URL, options: { method?: string; headers?: Headers }): Promise<Response> => {
    // At most OAUTH_METADATA_FETCHES_PER_MINUTE documents a minute, every process together: a flood of new
    // client_ids cannot make the server fetch without end.
    const verdict = await takeRateLimit(db, 'oauth:metadata-fetch', fetchesPerMinute);
    if (!verdict.allowed) throw new Error('too many client metadata documents fetched; try again shortly');
    const accept = options.headers?.get('accept') ?? 'application/json';
    const answer = await fetchBuffered(String(url), {
      policy,
      method: options.method ?? 'GET',
      headers: { accept },
      timeoutMs: METADATA_DOCUMENT_TIMEOUT_MS,
      maxBytes: METADATA_DOCUMENT_MAX_BYTES,
      maxRedirects: 0,
      // The default store plus NODE_EXTRA_CA_CERTS as the file reads now (an operator's private CA).
      extraCa: [],
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) headers.set(name, value);
    const nullBody = [101, 204, 205, 304].includes(answer.status);
    return new Response(nullBody ? null : new Uint8Array(answer.body), { status: answer.status, headers });
  };
}

export interface OAuthServer {
  /** The authorization server's endpoints (/oauth/…, but not the interaction pages) and its metadata. */
  middleware: Middleware;
  /** The issuer answering at this request's origin (PUBLIC_API_URL when set). */
  issuer(ctx: Context): string;
  provider(ctx: Context): Provider;
  /** The canonical resource identifier of an entry's endpoint (its advertised URL). */
  resource(ctx: Context, entryId: string): string;
  /** Where the entry's protected resource metadata (RFC 9728) is served. */
  resourceMetadataUrl(ctx: Context, entryId: string): string;
  /** The entry id of a resource identifier of this server, or null. */
  entryOfResource(ctx: Context, resource: string): string | null;
  /** The live market grant an access token for `entryId`'s endpoint stands for, or why it is refused. */
  resolveAccessToken(
    ctx: Context,
    token: string,
    entryId: string,
  ): Promise<{ grant: MarketGrant; token: OidcAccessToken } | { refused: string; insufficientScope?: true }>;
  /**
   * Approves an interaction: the grant (one resource, scope `mcp`) and the market credential it stands
   * for; returns where the browser goes next (back into the authorization flow). `resource` is the one
   * the client named, or the endpoint of the listing the person chose when the client named none
   * (RFC 8707 is optional): the authorization request is then completed with it (and with scope `mcp`
   * when the client asked for none), so the code and its tokens are bound to that one endpoint. Earlier
   * grants of the same account to the same client for the same entry stay: every device its own sign-in
   * (with client ID metadata documents every install of an app has the same client id).
   */
  approve(
    ctx: Context,
    interaction: OidcInteraction,
    input: {
      userId: string;
      apiKeyId: string;
      clientName: string;
      entry: MarketCallEntry;
      resource: string;
      params: SourceParamValues;
      capMicros: number | null;
      /** The device this sign-in is for: the name the person gave it, the consenting browser's user agent. */
      device: { name: string | null; userAgent: string | null };
      /** What the grant's credential may spend in all and per calendar month (UTC): migration 0028. */
      budgets?: CredentialBudgets;
    },
  ): Promise<string>;
  /** Refuses an interaction (access_denied to the client); returns where the browser goes next. */
  deny(ctx: Context): Promise<string>;
}

/**
 * oidc-provider's prompts plus one consent check: an authorization is consented to on the console's
 * page every time (it makes the market grant: entry, parameters, cap), even when the client asked for
 * no scope the other checks would find missing.
 */
function consentEveryTime() {
  const policy = interactionPolicy.base();
  policy
    .get('consent')!
    .checks.add(
      new interactionPolicy.Check(
        'market_grant_missing',
        'every authorization is approved on the consent page',
        'consent_required',
        (ctx) =>
          ctx.oidc.result?.consent?.grantId
            ? interactionPolicy.Check.NO_NEED_TO_PROMPT
            : interactionPolicy.Check.REQUEST_PROMPT,
      ),
    );
  return policy;
}

/** Secrets of the authorization server, derived from MASTER_KEY (never a constant in the code). */
function derive(masterKey: Buffer, purpose: string): Buffer {
  return createHmac('sha256', masterKey).update(`oauth:${purpose}`).digest();
}

/** An Ed25519 signing key whose seed derives from MASTER_KEY: every API process signs with the same key. */
function signingJwk(masterKey: Buffer): Record<string, unknown> {
  const seed = derive(masterKey, 'signing-key');
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  const jwk = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' });
  return {
    ...jwk,
    alg: 'EdDSA',
    use: 'sig',
    kid: derive(masterKey, 'signing-key-id').toString('base64url').slice(0, 16),
  };
}

/** The client's address: the first forwarded one behind TRUST_PROXY_HOPS proxies, else the socket's. */
function addressOf(ctx: Context): string {
  const hops = ctx.app.proxy ? ctx.app.maxIpsCount : 0;
  const forwarded = hops > 0 ? ctx.ips : [];
  return hops > 0 && forwarded.length >= hops ? forwarded[0]! : (ctx.socket.remoteAddress ?? 'unknown');
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * The secrets of dynamically registered confidential clients (RFC 7591): HMAC(MASTER_KEY, client_id), issued
 * once in the registration response and derived again when the client authenticates, so that the database
 * holds only its SHA-256 (`client_secret_sha256` in the client's record), as it holds API keys. A client
 * whose stored hash no longer matches (MASTER_KEY changed) has no secret and authenticates no more.
 */
function dynamicClientSecrets(masterKey: Buffer) {
  const key = derive(masterKey, 'dcr-client-secret');
  const secretOf = (clientId: string) => createHmac('sha256', key).update(clientId).digest('base64url');
  const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');
  // oidc-provider asks for the id, then for the secret, with the same request context.
  const issuing = new WeakMap<object, string>();
  return {
    newClientId(ctx: object): string {
      const clientId = randomBytes(16).toString('base64url');
      issuing.set(ctx, clientId);
      return clientId;
    },
    secretFor(ctx: object): string {
      const clientId = issuing.get(ctx);
      if (!clientId) throw new Error('a client secret was asked for before its client id');
      return secretOf(clientId);
    },
    toStored(payload: OAuthPayload): OAuthPayload {
      const { client_secret: secret, ...rest } = payload;
      return typeof secret === 'string' ? { ...rest, client_secret_sha256: sha256(secret) } : payload;
    },
    fromStored(payload: OAuthPayload): OAuthPayload {
      const { client_secret_sha256: hash, ...rest } = payload;
      if (typeof hash !== 'string') return payload;
      const secret = secretOf(String(rest.client_id));
      return sha256(secret) === hash ? { ...rest, client_secret: secret } : rest;
    },
  };
}

export function createOAuthServer(deps: OAuthDeps): OAuthServer {
  const { config, db } = deps;
  const dcrSecrets = dynamicClientSecrets(config.masterKey);
  const stored = oauthAdapterFactory(db);
  // Clients in the spec's order: operator-managed ones first (oauth_clients), then those registered
  // dynamically (the adapter's Client records); oidc-provider resolves a client ID metadata document
  // only when neither knows the client_id.
  const adapter = (model: string) => {
    const base = stored(model);
    const wrapped = {
      ...base,
      // A code or refresh token is consumed in one statement: a second use (concurrent or a replay of a rotated
      // refresh token) ends the whole family (RFC 9700 §4.14.2): the grant, its tokens, the market credential.
      consume: async (id: string) => {
        const result = await base.consume(id);
        if (result.consumed) return result;
        if (result.grantId) await endGrantFamily(db, config.masterKey, result.grantId);
        throw new errors.InvalidGrant(
          model === 'AuthorizationCode'
            ? 'authorization code already consumed'
            : model === 'RefreshToken'
              ? 'refresh token already used'
              : `${model} already used`,
        );
      },
    };
    if (model === 'Grant') {
      // oidc-provider destroys a grant when it revokes it (RFC 7009 revocation of a refresh token, a reused
      // refresh token or code, the end of a session): the market grant and the credential it holds end with it.
      return { ...wrapped, destroy: (id: string) => endGrantFamily(db, config.masterKey, id) };
    }
    if (model !== 'Client') return wrapped;
    return {
      ...wrapped,
      // A dynamically registered client lives OAUTH_UNUSED_REGISTRATION_HOURS unless an authorization uses it (approve).
      upsert: (id: string, payload: OAuthPayload) =>
        base.upsert(id, dcrSecrets.toStored(payload), config.oauth.unusedRegistrationTtlSeconds),
      find: async (id: string) => {
        // Every request naming a client finds it: OAUTH_RATE_LIMIT_PER_CLIENT_PER_MINUTE, every process together.
        if (config.oauth.rateLimitPerClientPerMinute > 0) {
          const verdict = await takeRateLimit(
            db,
            `oauth:client:${id.slice(0, 300)}`,
            config.oauth.rateLimitPerClientPerMinute,
          );
          if (!verdict.allowed)
            throw new errors.InvalidRequest(
              `too many requests for this client; retry in ${verdict.retryAfterSeconds} s`,
              429,
            );
        }
        const operator = await operatorClientMetadata(db, config.masterKey, id);
        if (operator) return operator;
        const registered = await base.find(id);
        return registered && dcrSecrets.fromStored(registered);
      },
    };
  };
  const jwk = signingJwk(config.masterKey);
  const cookieKey = derive(config.masterKey, 'cookies').toString('base64url');
  const configured = [config.market.publicApiUrl, config.market.mcpPublicUrl]
    .filter((u): u is string => !!u)
    .map((u) => new URL(u).hostname);
  const allowedHosts = new Set([...localhostAllowedHostnames(), ...configured]);
  const providers = new Map<string, Provider>();

  const issuerOf = (ctx: Context): string => {
    if (config.market.publicApiUrl) return new URL(config.market.publicApiUrl).origin;
    if (!allowedHosts.has(ctx.hostname))
      throw new ApiError(403, 'host_not_allowed', 'The authorization server does not answer for this Host');
    return `${ctx.protocol}://${ctx.host}`;
  };
  const resourceOf = (issuer: string, entryId: string) => marketMcpUrl(config, issuer, entryId);
  const entryOf = (issuer: string, resource: string): string | null => {
    const match = /\/mcp\/([^/?#]+)$/.exec(resource);
    const id = match?.[1] ?? '';
    return UUID.test(id) && resourceOf(issuer, id) === resource ? id : null;
  };

  function build(issuer: string): Provider {
    const provider = new Provider(issuer, {
      adapter,
      clients: [],
      jwks: { keys: [jwk] },
      cookies: {
        keys: [cookieKey],
        names: { session: 'oauth_session', interaction: 'oauth_interaction', resume: 'oauth_resume' },
      },
      scopes: [MCP_SCOPE, 'offline_access'],
      claims: { openid: ['sub'] },
      responseTypes: ['code'],
      pkce: { required: () => true },
      clientDefaults: {
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        id_token_signed_response_alg: 'EdDSA',
      },
      enabledJWA: { idTokenSigningAlgValues: ['EdDSA'] },
      routes: {
        authorization: `${OAUTH_PREFIX}/authorize`,
        token: `${OAUTH_PREFIX}/token`,
        registration: `${OAUTH_PREFIX}/register`,
        revocation: `${OAUTH_PREFIX}/revoke`,
        introspection: `${OAUTH_PREFIX}/introspect`,
        jwks: `${OAUTH_PREFIX}/jwks`,
        end_session: `${OAUTH_PREFIX}/session/end`,
        userinfo: `${OAUTH_PREFIX}/userinfo`,
        pushed_authorization_request: `${OAUTH_PREFIX}/par`,
        code_verification: `${OAUTH_PREFIX}/device`,
        device_authorization: `${OAUTH_PREFIX}/device/auth`,
        backchannel_authentication: `${OAUTH_PREFIX}/backchannel`,
        challenge: `${OAUTH_PREFIX}/challenge`,
        credential: `${OAUTH_PREFIX}/credential`,
      },
      features: {
        devInteractions: { enabled: false },
        userinfo: { enabled: false },
        revocation: { enabled: true },
        registration: {
          enabled: config.oauth.dynamicRegistration,
          // A dynamically registered confidential client's secret is derived from its id (dcrSecrets): the
          // database keeps only its hash, never the secret.
          idFactory: (ctx: object) => dcrSecrets.newClientId(ctx),
          secretFactory: async (ctx: object) => dcrSecrets.secretFor(ctx),
        },
        clientIdMetadataDocument: {
          enabled: config.oauth.clientIdMetadataDocuments,
          ack: 'draft-02',
          cacheDuration: { min: 60, max: 86_400 },
        },
        resourceIndicators: {
          enabled: true,
          defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string) => oneOf,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx: unknown, indicator: string) => {
            const entryId = entryOf(issuer, indicator);
            const entry = entryId ? await loadCallEntryCached(db, config.masterKey, entryId) : null;
            if (!entry) throw new errors.InvalidTarget('the resource is not the endpoint of a live market entry');
            return {
              scope: MCP_SCOPE,
              audience: indicator,
              accessTokenTTL: config.oauth.accessTokenTtlSeconds,
              accessTokenFormat: 'opaque',
            };
          },
        },
      },
      fetch: guardedFetch(deps.policy, db, config.oauth.metadataFetchesPerMinute),
      ttl: {
        AccessToken: config.oauth.accessTokenTtlSeconds,
        AuthorizationCode: 60,
        Interaction: 3_600,
        Session: 3_600,
        Grant: config.oauth.refreshTokenTtlSeconds,
        RefreshToken: config.oauth.refreshTokenTtlSeconds,
      },
      issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) =>
        client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: () => true,
      // A grant lives on its own, not with the browser's sign-in at the authorization server: without this, codes
      // and tokens (unless offline_access was asked for) are bound to that session's one grant per client, so a
      // second authorization of the same client in the same browser (another install, another listing) would
      // end the first one's tokens, and every token would end with the session (an hour). Grants end when
      // revoked (Connected apps, the client, reuse) or when they expire.
      expiresWithSession: async () => false,
      // Every authorization is consented to (the grant is one entry's, with its parameters and cap): only
      // the grant the consent page just made is loaded, never an earlier one of the browser's session.
      loadExistingGrant: async (ctx: { oidc: { result?: { consent?: { grantId?: string } }; provider: Provider } }) => {
        const grantId = ctx.oidc.result?.consent?.grantId;
        return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
      },
      findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
      interactions: {
        url: async (_ctx: unknown, interaction: { uid: string }) => interactionPath(interaction.uid),
        policy: consentEveryTime(),
      },
      renderError: async (ctx: Context, out: Record<string, string>) => {
        ctx.type = 'html';
        ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorization failed</title></head><body><main><h1>Authorization failed</h1><p>${escapeHtml(out.error ?? 'error')}: ${escapeHtml(out.error_description ?? '')}</p></main></body></html>`;
      },
    });
    provider.proxy = config.trustProxyHops > 0;
    provider.on('server_error', (_ctx, err) => log().error({ err }, 'authorization server failed'));
    return provider;
  }

  const providerOf = (ctx: Context): Provider => {
    const issuer = issuerOf(ctx);
    let provider = providers.get(issuer);
    if (!provider) {
      provider = build(issuer);
      providers.set(issuer, provider);
    }
    return provider;
  };

  const middleware: Middleware = async (ctx: Context, next: Next) => {
    const metadata = AUTHORIZATION_SERVER_METADATA.test(ctx.path);
    const own = ctx.path.startsWith(`${OAUTH_PREFIX}/`) && !ctx.path.startsWith(`${OAUTH_PREFIX}/interaction/`);
    if (!metadata && !own) return next();
    const provider = providerOf(ctx);
    if (config.oauth.rateLimitPerIpPerMinute > 0) {
      const verdict = await takeRateLimit(db, `oauth:ip:${addressOf(ctx)}`, config.oauth.rateLimitPerIpPerMinute);
      if (!verdict.allowed)
        throw new ApiError(
          429,
          'rate_limited',
          `Too many requests from this address; retry in ${verdict.retryAfterSeconds} s`,
          undefined,
          { 'Retry-After': String(verdict.retryAfterSeconds) },
        );
    }
    // RFC 8414 metadata is oidc-provider's discovery document (the issuer has no path).
    if (metadata) ctx.req.url = '/.well-known/openid-configuration';
    ctx.respond = false;
    await provider.callback()(ctx.req, ctx.res);
  };

  return {
    middleware,
    issuer: issuerOf,
    provider: providerOf,
    resource: (ctx, entryId) => resourceOf(issuerOf(ctx), entryId),
    resourceMetadataUrl: (ctx, entryId) => {
      const resource = new URL(resourceOf(issuerOf(ctx), entryId));
      return `${resource.origin}/.well-known/oauth-protected-resource${resource.pathname}`;
    },
    entryOfResource: (ctx, resource) => entryOf(issuerOf(ctx), resource),
    async resolveAccessToken(ctx, value, entryId) {
      const token = await providerOf(ctx).AccessToken.find(value);
      if (!token || token.isExpired) return { refused: 'The access token is not valid (unknown, expired or revoked)' };
      const audiences = Array.isArray(token.aud) ? token.aud : token.aud ? [token.aud] : [];
      if (!audiences.includes(resourceOf(issuerOf(ctx), entryId)))
        return { refused: 'This access token was issued for another resource' };
      // A token for this endpoint without the endpoint's scope (a refresh that asked for other scopes only).
      if (
        !String(token.scope ?? '')
          .split(' ')
          .includes(MCP_SCOPE)
      )
        return { refused: `This access token lacks the ${MCP_SCOPE} scope`, insufficientScope: true };
      const grant = await findLiveMarketGrant(db, token.grantId);
      if (!grant || grant.entryId !== entryId || grant.userId !== token.accountId)
        return { refused: 'The grant of this access token has been revoked' };
      return { grant, token };
    },
    async approve(ctx, interaction, input) {
      const provider = providerOf(ctx);
      const clientId = String(interaction.params.client_id);
      const requestedScope = String(interaction.params.scope ?? '')
        .split(' ')
        .filter(Boolean);
      const named = interaction.params.resource;
      const namedNone = named === undefined || (Array.isArray(named) && named.length === 0);
      const scopeMissing = !requestedScope.includes(MCP_SCOPE);
      if (namedNone || scopeMissing) {
        // Completed with what the person approved: the chosen endpoint, and the endpoints' scope.
        if (namedNone) interaction.params.resource = input.resource;
        if (scopeMissing) interaction.params.scope = [...requestedScope, MCP_SCOPE].join(' ');
        await interaction.save(Math.max(1, interaction.exp - Math.floor(Date.now() / 1000)));
      }
      const grant = new provider.Grant({ accountId: input.userId, clientId });
      grant.addResourceScope(input.resource, MCP_SCOPE);
      // The scopes the client asked for that this server knows (`mcp` is also an authorization server scope).
      const requested = [...new Set([...requestedScope, MCP_SCOPE])].filter((s) => KNOWN_SCOPES.has(s));
      if (requested.length) grant.addOIDCScope(requested.join(' '));
      const grantId = await grant.save();
      // A dynamically registered client in use lives as long as this grant can, and the unused time after it.
      await extendOAuthRecord(
        db,
        'Client',
        clientId,
        new Date(Date.now() + (config.oauth.refreshTokenTtlSeconds + config.oauth.unusedRegistrationTtlSeconds) * 1000),
      );
      const { token, claims } = issueMcpCredential(config.masterKey, {
        entryId: input.entry.entryId,
        userId: input.userId,
        apiKeyId: input.apiKeyId,
        params: input.params,
        paramsSchemaHash: paramsSchemaHash(input.entry.requiredUserParamsSchema),
        capMicros: input.capMicros,
      });
      // Recorded as the grant's (listed under connected apps, revoked with the grant, never alone).
      await recordMarketCredential(db, {
        id: claims.id,
        userId: input.userId,
        entryId: input.entry.entryId,
        apiKeyId: input.apiKeyId,
        source: 'oauth',
        label: input.clientName,
        capMicros: input.capMicros,
        ...input.budgets,
        createdAt: new Date(claims.iat),
      });
      await saveMarketGrant(db, {
        grantId,
        userId: input.userId,
        entryId: input.entry.entryId,
        clientId,
        clientName: input.clientName,
        credential: token,
        credentialId: claims.id,
        device: input.device,
      });
      return provider.interactionResult(
        ctx.req,
        ctx.res,
        { login: { accountId: input.userId }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
    },
    async deny(ctx) {
      return providerOf(ctx).interactionResult(
        ctx.req,
        ctx.res,
        { error: 'access_denied', error_description: 'The person declined the authorization' },
        { mergeWithLastSubmission: false },
      );
    },
  };
}
