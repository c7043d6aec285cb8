import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseDnsServers, type DnsServer } from './net/dns';
import { parseNetworkAllowlist } from './net/ssrf';
import { usdToWholeMicros } from './money';
import { LOG_LEVELS, type LogFormat, type LogLevel } from './log';
import { priceTableFromSetting, type PriceTable } from './billing/pricing';

/** Everything the service reads from the environment, validated once at start. */
export interface Config {
  port: number;
  /**
   * TRUST_PROXY: how many reverse proxies stand in front of the API (`false`/`0`, the default: none;
   * `true`: one; or a count up to 10). Only then are X-Forwarded-For (the client address of the MCP
   * rate limits), X-Forwarded-Host and X-Forwarded-Proto (the origin of apiBaseUrl, mcpUrl and icon
   * URLs when PUBLIC_API_URL / MCP_PUBLIC_URL are unset) believed. docs/operations.md "Behind a proxy".
   */
  trustProxyHops: number;
  dataDir: string;
  /** Unset means the embedded PGlite database under dataDir. */
  databaseUrl: string | null;
  /** Unset means `npm start` runs its own Temporal dev server. */
  temporalAddress: string | null;
  temporalNamespace: string;
  /**
   * WORKFLOW_BUNDLE_PATH: a workflow bundle made beforehand (`npm run bundle:workflows`); workers load it
   * instead of bundling workflows/ at start (a few seconds each). Unset: bundled at start.
   */
  workflowBundlePath: string | null;
  temporalDevPorts: { frontend: number; ui: number };
  /** TEMPORAL_UI_URL: the Temporal Web UI operators open a run's workflow in (default: the dev server's UI). */
  temporalUiUrl: string;
  openai: { baseURL: string | null; apiKey: string | null };
  routerBaseURL: string | null;
  adminToken: string;
  masterKey: Buffer;
  networkAllowlist: string | undefined;
  /**
   * DNS_SERVERS (comma-separated ip, ip:port or [ipv6]:port): the only servers the SSRF guard asks to resolve the
   * names of user URLs (scrapes, the browser's requests, tool and market discovery, webhooks). Unset: the system
   * resolver (/etc/resolv.conf and /etc/hosts). The network policy is built from it by networkPolicyFromConfig.
   */
  dnsServers: DnsServer[];
  proxyUrlTemplate: string | null;
  captcha: { baseURL: string; apiKey: string } | null;
  /** The full browser: headed sessions (under a virtual display) and headless ones when no headless shell is set up. */
  chromiumPath: string;
  /**
   * The binary headless contexts run in: Chromium's headless shell (the old headless mode, no browser UI; what
   * Playwright itself runs for headless) when installed, a third of the full browser's CPU for the same page.
   */
  chromiumHeadlessPath: string;
  browserConcurrency: number;
  syncScrapeTimeoutMs: number;
  agent: {
    maxSteps: number;
    deadlineMs: number;
    /** AGENT_HISTORY_EVENTS: an agent run continues as new once its workflow history has this many events. */
    historyEventsLimit?: number;
    /** AGENT_SOCIAL_TOOL_TIMEOUT_MS: how long one forum/microblog tool call may take before it is retried. */
    socialToolTimeoutMs?: number;
    /**
     * AGENT_TOOL_IMAGES_PER_RESULT (default 4, 0 to 16) and AGENT_TOOL_IMAGE_MAX_KB (default 1024, 1 to
     * 20480): the images of one tool result an agent's model is given (when its price-table entry says
     * `vision`), and the largest; the others are described to it as text.
     */
    toolImages?: { perResult: number; maxBytes: number };
    /** The browser agent's session waits (AGENT_BROWSER_*, see BrowserSessionWaits). */
    browserSession?: BrowserSessionWaits;
  };
  /** The most a job of each kind may reserve of the wallet at admission (HOLD_MAX_USD_*), in micro-USD. */
  holds: HoldLimits;
  /** The pending-job reconciler run by platform workers (PENDING_JOB_*). */
  pendingJobs: { reconcileAfterMs: number; checkEveryMs: number };
  social: { forumApiBase: string; forumAuthBase: string; microblogBase: string | null };
  taskQueues: { platform: string; browser: string };
  skills: SkillsConfig;
  docsMcp: DocsMcpConfig;
  market: MarketConfig;
  /** LOG_LEVEL (default info); LOG_FORMAT json or pretty (unset: pretty under `npm start`, json otherwise). */
  log: { level: LogLevel; format: LogFormat | null };
  metrics: MetricsConfig;
  /** LLM_MODEL_PRICES applied to the built-in table: what the `service` provider accepts and how it is billed. */
  modelPrices: PriceTable;
  automations: AutomationsConfig;
  web: WebConfig;
  oauth: OAuthConfig;
}

/** The authorization server of the hosted MCP endpoints (api/services/oauth/authorization-server.ts, docs/configuration.md "OAuth"). */
export interface OAuthConfig {
  /** OAUTH_DYNAMIC_REGISTRATION, true (default) or false: whether clients may register themselves (RFC 7591). */
  dynamicRegistration: boolean;
  /**
   * OAUTH_CLIENT_ID_METADATA_DOCUMENTS, true (default) or false: whether a client may be an HTTPS URL whose
   * metadata document is fetched (through the SSRF guard and NETWORK_ALLOWLIST, 64 KiB, 5 s, cached).
   */
  clientIdMetadataDocuments: boolean;
  /** OAUTH_ACCESS_TOKEN_MINUTES, default 10 (1 to 60): an access token's lifetime. */
  accessTokenTtlSeconds: number;
  /** OAUTH_REFRESH_TOKEN_DAYS, default 30 (1 to 365): a refresh token's lifetime (each use rotates it). */
  refreshTokenTtlSeconds: number;
  /**
   * OAUTH_UNUSED_REGISTRATION_HOURS, default 24 (1 to 8760): how long a dynamically registered client lives
   * without an authorization; each approved authorization keeps it as long as its grant can live, and this long after.
   */
  unusedRegistrationTtlSeconds: number;
  /** OAUTH_RATE_LIMIT_PER_IP_PER_MINUTE, default 300 (0: off): requests to /oauth/* per client address, all API processes together. */
  rateLimitPerIpPerMinute: number;
  /** OAUTH_RATE_LIMIT_PER_CLIENT_PER_MINUTE, default 120 (0: off): requests naming one client_id, all processes together. */
  rateLimitPerClientPerMinute: number;
  /** OAUTH_METADATA_FETCHES_PER_MINUTE, default 60 (1 to 10000): client ID metadata documents fetched, all processes together. */
  metadataFetchesPerMinute: number;
}

/** The console's sign-in sessions (web/, docs/console.md "Sessions"). */
export interface WebConfig {
  /** WEB_SESSION_IDLE_MINUTES, default 120 (1 to 10080): a session without a request for this long has ended. */
  sessionIdleMs: number;
  /** WEB_SESSION_MAX_HOURS, default 24 (1 to 720): a session ends this long after sign-in, however busy. */
  sessionMaxMs: number;
}

/** The tool and agent markets. */
export interface MarketConfig {
  /** MARKET_CHARGE_TOKEN_KEY (32+ bytes, hex or base64), generated into DATA_DIR/charge-token.key when unset: signs charge tokens. */
  chargeTokenKey: Buffer;
  /** MARKET_COMMISSION_RATE, default 0.20: the platform's share of market revenue. */
  commissionRate: number;
  /** PUBLIC_API_URL: the origin clients reach the API at (icon URLs, apiBaseUrl); unset means the request's own origin. */
  publicApiUrl: string | null;
  /**
   * MARKET_DRAFT_SLUG_DAYS, default 30: a listing that never reached review (only draft or rejected
   * submissions) and has not changed for this long no longer holds its slug; another listing may take it.
   */
  draftSlugTtlMs: number;
  /** MARKET_VALIDATION_TTL_HOURS, default 24. */
  validationTtlMs: number;
  /** MARKET_EVENT_VERIFICATION_TTL_MINUTES, default 60: how long a verification and its charge token live. */
  eventVerificationTtlMs: number;
  /** MARKET_DISCOVERY_TIMEOUT_MS, default 60000: how long discover/validate wait for the workflow. */
  discoveryTimeoutMs: number;
  /** MARKET_RUN_CHARGE_LIMIT_USD, default 1.00, in micro-USD: the most one market run may charge (and so reserves). */
  runChargeLimitMicros: number;
  /** MCP_PUBLIC_URL: where the hosted market MCP endpoint is advertised (`{url}/mcp/{entryId}`); unset means the API's own origin. Its host is also accepted in Host/Origin. */
  mcpPublicUrl: string | null;
  /**
   * MARKET_RUN_TTL_MINUTES, default 15: how long a market run (and its charge token) accepts provider charges;
   * MARKET_RUN_TTL_SECONDS (10 to 86400), when set, instead (tests live runs of seconds).
   */
  runTtlMs: number;
  /**
   * MARKET_RUN_IDLE_GRACE_SECONDS, default 60 (0 to 3600, below the run TTL): how long a market run
   * still accepts the provider's charges, and keeps its unused hold, after the last call using it
   * ended. Then the hold is released; a later call opens a new run.
   */
  runIdleGraceMs: number;
  /**
   * MARKET_RUN_WINDOW_IDLE_SECONDS, default 5 (0 to 3600, below the run TTL): a credential's hosted calls
   * to a fixed-price or free entry share one market run (a window: one hold, one workflow) while each
   * follows the last within this time; that long after the last call ended the window holds nothing
   * more and its workflow closes and settles it. A later call opens the next window.
   */
  runWindowIdleMs: number;
  /** MARKET_TOOL_CALL_TIMEOUT_MS, default 60000: the bound of one forwarded market tool call. */
  toolCallTimeoutMs: number;
  /** MARKET_RUN_DISPATCH_MS, default 200: how often platform workers start the workflows of newly opened market runs. */
  runDispatchEveryMs: number;
  /** MARKET_TOOL_LIST_CACHE_SECONDS, default 60: how long the upstream tool list (the rug-pull gate's view) is reused. */
  toolListCacheMs: number;
  /** MARKET_MCP_RATE_LIMIT, default 600: requests per minute per client address on /mcp/{entryId}. */
  mcpRateLimitPerMinute: number;
  /**
   * MARKET_CALL_COMMIT, `fast` (default) or `durable`: whether the settlement of a hosted
   * fixed-price call waits for Postgres to flush its WAL before the call is answered. Either way the
   * debit, the provider's revenue and the call's records are one atomic statement; `fast` means a
   * crash of the Postgres server itself may forget the last fraction of a second of such calls (they
   * become free: never doubled, never half-written). docs/using-market-tools.md "How a call is handled inside".
   */
  callCommit: 'fast' | 'durable';
  /** MARKET_TOOL_RESULT_MAX_KB, default 50: the text of a market tool's answer is cut to this many bytes (with a note). */
  toolResultMaxBytes: number;
  /**
   * MARKET_TOOL_RESULT_MAX_BINARY_MB, default 4 (1 to 64): an image, audio or embedded binary block of
   * a market tool's answer larger than this (decoded) fails the call (`too_large`, nothing charged).
   */
  toolResultMaxBinaryBytes: number;
  /**
   * MARKET_INPUT_REQUIRED_TTL_SECONDS, default 600 (10 to 3600): how long a market tool call waiting for
   * the consumer's input (elicitation, sampling, roots: an input-required round) can be continued.
   * Its run keeps the call's hold meanwhile; an unanswered call is not charged.
   */
  inputRequiredTtlMs: number;
  /** MARKET_MCP_MAX_SESSIONS, default 1000: 2025-revision MCP sessions an API process keeps on /mcp/{entryId}. */
  mcpMaxSessions: number;
  /** MARKET_MCP_SESSIONS_PER_CONSUMER, default 20: of those, how many one consumer's credential (or API key) may hold. */
  mcpSessionsPerConsumer: number;
  /** MARKET_MCP_SESSION_IDLE_MINUTES, default 30: a 2025-revision session unused this long is ended. */
  mcpSessionIdleMs: number;
  /**
   * MARKET_SCAN_LLM_MODEL: the model of the service LLM endpoint (OPENAI_BASE_URL / OPENAI_API_KEY) that
   * gives the listing gate's second opinion on every validated source (lib/market/llm-review.ts); unset
   * or `none`: no LLM review (the pattern rules alone). The platform pays its tokens.
   */
  scanLlmModel: string | null;
}

/** The read-only docs-search MCP endpoint (served at /docs-mcp on the API origin). */
export interface DocsMcpConfig {
  /** DOCS_MCP_URL: the address to advertise when it is not /docs-mcp on the API origin; its host is also accepted in Host/Origin. */
  url: string | null;
  /** DOCS_MCP_RATE_LIMIT: requests per minute per client address. */
  rateLimitPerMinute: number;
}

/** Who may read GET /metrics, and where worker processes export theirs (docs/operations.md "Metrics"). */
export interface MetricsConfig {
  /** METRICS_TOKEN: the bearer token GET /metrics accepts; unset means the admin token. */
  token: string | null;
  /** WORKER_METRICS_HOST: the interface the worker metrics listeners bind (default 127.0.0.1). */
  workerHost: string;
  /** WORKER_METRICS_PORT: the Temporal SDK's Prometheus exporter (worker, task and workflow metrics); unset = off. */
  workerPort: number | null;
  /** WORKER_APP_METRICS_PORT: `npm run worker`'s own series (job durations, webhook outcomes); unset = off. */
  workerAppPort: number | null;
}

export interface AutomationsConfig {
  /** AUTOMATION_MIN_INTERVAL_MINUTES (default 5, decimals allowed): a cron that fires more often is refused. */
  minIntervalMinutes: number;
}

/** The skills directory: its GitHub source, embeddings and AI search. */
export interface SkillsConfig {
  /** GITHUB_API_BASE, default https://api.github.com (tests point it at a loopback fake). */
  githubApiBase: string;
  /** SKILLS_GITHUB_REPOS: comma-separated owner/repo list; empty means no GitHub source and no refresh Schedule. */
  githubRepos: string[];
  githubToken: string | null;
  /** EMBEDDINGS_MODEL on the service LLM endpoint; null (EMBEDDINGS_MODEL=none) disables embeddings. */
  embeddingsModel: string | null;
  /** EMBEDDINGS_DIMENSIONS: ask the model for shorter vectors (text-embedding-3 models); null = the model's own size. */
  embeddingsDimensions: number | null;
  /** SKILLS_AI_MODEL: the model that plans and reranks AI searches. */
  aiModel: string;
  /** SKILLS_AI_RERANK: whether the LLM reranks the top 30 fused candidates. */
  rerank: boolean;
  refreshIntervalMinutes: number;
}

export interface HoldLimits {
  scrape: number;
  agentic: number;
  automation: number;
  'custom-agent': number;
  /** An agent-market run (HOLD_MAX_USD_AGENT_MARKET, default 2). */
  'agent-market': number;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
  }
}

type Env = Record<string, string | undefined>;

/** WORKFLOW_BUNDLE_PATH, resolved; a path that names no file stops the start here rather than at the first worker. */
function workflowBundlePath(env: Env): string | null {
  const given = optional(env, 'WORKFLOW_BUNDLE_PATH');
  if (given === null) return null;
  const resolved = path.resolve(given);
  if (!existsSync(resolved))
    throw new ConfigError(
      'WORKFLOW_BUNDLE_PATH',
      `names no file (${resolved}); make one with npm run bundle:workflows`,
    );
  return resolved;
}

function optional(env: Env, name: string): string | null {
  const value = env[name]?.trim();
  return value ? value : null;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = optional(env, name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = optional(env, name);
  if (raw === null) return fallback;
  if (!(values as readonly string[]).includes(raw))
    throw new ConfigError(name, `must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

function url(env: Env, name: string): string | null {
  const raw = optional(env, name);
  if (raw === null) return null;
  try {
    const parsed = new URL(raw);
    if (!['http:', 'https:'].includes(parsed.protocol)) throw new Error();
  } catch {
    throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

/** A positive USD amount given as a decimal (e.g. "0.50"), as whole micro-USD. */
function usdAmount(env: Env, name: string, fallbackUsd: number): number {
  const raw = optional(env, name);
  if (raw === null) return usdToWholeMicros(fallbackUsd)!;
  const micros = /^\d+(\.\d+)?$/.test(raw) ? usdToWholeMicros(Number(raw)) : null;
  if (micros === null || micros <= 0 || micros > 1_000_000_000_000) {
    throw new ConfigError(
      name,
      `must be a positive USD amount of at most 1000000 with at most 6 decimals, got "${raw}"`,
    );
  }
  return micros;
}

const SECRET_FILE_WAIT_MS = 5_000;

/**
 * Reads a secret from the environment, or from (creating if needed) a file under dataDir for the embedded default.
 * The file is created exclusively (O_EXCL: never follows a planted symlink, never overwrites), so when two processes
 * start at once exactly one generates the secret and the other reads it, waiting for the writer to finish.
 */
function secretOrLocalFile(env: Env, name: string, dataDir: string, file: string, generate: () => string): string {
  const fromEnv = optional(env, name);
  if (fromEnv !== null) return fromEnv;
  const target = path.join(dataDir, file);
  mkdirSync(dataDir, { recursive: true });
  const value = generate();
  let fd: number;
  try {
    fd = openSync(target, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readWrittenSecret(name, target);
  }
  try {
    writeSync(fd, `${value}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return value;
}

/** The writer puts the whole value in one small write, so an empty file means it has not written yet. */
function readWrittenSecret(name: string, target: string): string {
  const deadline = Date.now() + SECRET_FILE_WAIT_MS;
  for (;;) {
    let content: string;
    try {
      content = readFileSync(target, 'utf8');
    } catch (err) {
      throw new ConfigError(
        name,
        `comes from ${target}, which exists but cannot be read (${(err as NodeJS.ErrnoException).code}); remove that file or set ${name}`,
      );
    }
    if (content.trim() !== '') return content.trim();
    if (Date.now() > deadline)
      throw new ConfigError(name, `comes from ${target}, which is empty; remove that file or set ${name}`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
}

function parseMasterKey(raw: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError('MASTER_KEY', 'must be 32 bytes, as 64 hex characters or base64');
  return key;
}

/** TRUST_PROXY: false/0 (default), true (one proxy) or the number of proxies in front of the API (1-10). */
function trustProxyHops(env: Env): number {
  const raw = optional(env, 'TRUST_PROXY')?.toLowerCase() ?? null;
  if (raw === null || raw === 'false') return 0;
  if (raw === 'true') return 1;
  if (!/^\d+$/.test(raw) || Number(raw) > 10)
    throw new ConfigError(
      'TRUST_PROXY',
      `must be true, false or the number of proxies in front of the API (0-10), got "${raw}"`,
    );
  return Number(raw);
}

function fraction(env: Env, name: string, fallback: number): number {
  const raw = optional(env, name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw) || value < 0 || value > 1)
    throw new ConfigError(name, `must be a number between 0 and 1, got "${raw}"`);
  return value;
}

/**
 * How long a browser agent's run waits on its browser session's worker. Tests set seconds; the defaults
 * are a deployment's. Sessions heartbeat every 2 s, so a heartbeat timeout is at least 5 s.
 */
export interface BrowserSessionWaits {
  /** AGENT_BROWSER_OPEN_WAIT_SECONDS, default 60 (1 to 3600): the least a run waits for a free browser (else its deadline). */
  openWaitMinMs: number;
  /** AGENT_BROWSER_OPEN_HEARTBEAT_SECONDS, default 30 (5 to 600): an open waiting for a slot without a heartbeat this long failed. */
  openHeartbeatTimeoutMs: number;
  /** AGENT_BROWSER_KEEPER_HEARTBEAT_SECONDS, default 20 (5 to 600): a session's keeper without a heartbeat this long means its worker is gone. */
  keeperHeartbeatTimeoutMs: number;
  /** AGENT_BROWSER_UNCLAIMED_SESSION_SECONDS, default 120 (1 to 3600): a session no run holds is closed after this long. */
  unclaimedSessionMs: number;
}

/** MARKET_DRAFT_SLUG_DAYS when unset. */
export const DEFAULT_DRAFT_SLUG_DAYS = 30;

function marketConfig(env: Env, dataDir: string): MarketConfig {
  const rawKey = secretOrLocalFile(env, 'MARKET_CHARGE_TOKEN_KEY', dataDir, 'charge-token.key', () =>
    randomBytes(32).toString('hex'),
  );
  const chargeTokenKey =
    /^[0-9a-fA-F]+$/.test(rawKey) && rawKey.length % 2 === 0
      ? Buffer.from(rawKey, 'hex')
      : Buffer.from(rawKey, 'base64');
  if (chargeTokenKey.length < 32)
    throw new ConfigError('MARKET_CHARGE_TOKEN_KEY', 'must be at least 32 bytes, as hex or base64');
  const runTtlMinutesMs = integer(env, 'MARKET_RUN_TTL_MINUTES', 15, 1, 24 * 60) * 60_000;
  const runTtlMs =
    optional(env, 'MARKET_RUN_TTL_SECONDS') === null
      ? runTtlMinutesMs
      : integer(env, 'MARKET_RUN_TTL_SECONDS', 0, 10, 24 * 3_600) * 1_000;
  const lifetime = optional(env, 'MARKET_RUN_TTL_SECONDS')
    ? `MARKET_RUN_TTL_SECONDS = ${runTtlMs / 1_000}`
    : `MARKET_RUN_TTL_MINUTES = ${runTtlMs / 60_000}`;
  const runIdleGraceMs = integer(env, 'MARKET_RUN_IDLE_GRACE_SECONDS', 60, 0, 3_600) * 1_000;
  if (runIdleGraceMs >= runTtlMs) {
    throw new ConfigError(
      'MARKET_RUN_IDLE_GRACE_SECONDS',
      `must be shorter than a market run's lifetime (${lifetime}), got ${runIdleGraceMs / 1_000}`,
    );
  }
  const runWindowIdleMs = integer(env, 'MARKET_RUN_WINDOW_IDLE_SECONDS', 5, 0, 3_600) * 1_000;
  if (runWindowIdleMs >= runTtlMs) {
    throw new ConfigError(
      'MARKET_RUN_WINDOW_IDLE_SECONDS',
      `must be shorter than a market run's lifetime (${lifetime}), got ${runWindowIdleMs / 1_000}`,
    );
  }
  return {
    chargeTokenKey,
    commissionRate: fraction(env, 'MARKET_COMMISSION_RATE', 0.2),
    publicApiUrl: url(env, 'PUBLIC_API_URL'),
    draftSlugTtlMs: integer(env, 'MARKET_DRAFT_SLUG_DAYS', DEFAULT_DRAFT_SLUG_DAYS, 1, 3_650) * 86_400_000,
    validationTtlMs: integer(env, 'MARKET_VALIDATION_TTL_HOURS', 24, 1, 24 * 30) * 3_600_000,
    eventVerificationTtlMs: integer(env, 'MARKET_EVENT_VERIFICATION_TTL_MINUTES', 60, 1, 24 * 60) * 60_000,
    discoveryTimeoutMs: integer(env, 'MARKET_DISCOVERY_TIMEOUT_MS', 60_000, 1_000, 600_000),
    runChargeLimitMicros: usdAmount(env, 'MARKET_RUN_CHARGE_LIMIT_USD', 1),
    mcpPublicUrl: url(env, 'MCP_PUBLIC_URL'),
    runTtlMs,
    runIdleGraceMs,
    runWindowIdleMs,
    toolCallTimeoutMs: integer(env, 'MARKET_TOOL_CALL_TIMEOUT_MS', 60_000, 1_000, 600_000),
    runDispatchEveryMs: integer(env, 'MARKET_RUN_DISPATCH_MS', 200, 10, 60_000),
    toolListCacheMs: integer(env, 'MARKET_TOOL_LIST_CACHE_SECONDS', 60, 0, 3_600) * 1_000,
    mcpRateLimitPerMinute: integer(env, 'MARKET_MCP_RATE_LIMIT', 600, 1, 1_000_000),
    callCommit: oneOf(env, 'MARKET_CALL_COMMIT', ['fast', 'durable'] as const, 'fast'),
    toolResultMaxBytes: integer(env, 'MARKET_TOOL_RESULT_MAX_KB', 50, 1, 10_240) * 1024,
    toolResultMaxBinaryBytes: integer(env, 'MARKET_TOOL_RESULT_MAX_BINARY_MB', 4, 1, 64) * 1024 * 1024,
    inputRequiredTtlMs: integer(env, 'MARKET_INPUT_REQUIRED_TTL_SECONDS', 600, 10, 3_600) * 1_000,
    mcpMaxSessions: integer(env, 'MARKET_MCP_MAX_SESSIONS', 1_000, 1, 1_000_000),
    mcpSessionsPerConsumer: integer(env, 'MARKET_MCP_SESSIONS_PER_CONSUMER', 20, 1, 10_000),
    mcpSessionIdleMs: integer(env, 'MARKET_MCP_SESSION_IDLE_MINUTES', 30, 1, 24 * 60) * 60_000,
    scanLlmModel: ((model) => (model && model.toLowerCase() !== 'none' ? model : null))(
      optional(env, 'MARKET_SCAN_LLM_MODEL'),
    ),
  };
}

function skillsConfig(env: Env): SkillsConfig {
  const repos = (optional(env, 'SKILLS_GITHUB_REPOS') ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  for (const repo of repos) {
    if (!/^[\w.-]+\/[\w.-]+$/.test(repo))
      throw new ConfigError('SKILLS_GITHUB_REPOS', `must be a comma-separated list of owner/repo, got "${repo}"`);
  }
  const embeddingsModel = optional(env, 'EMBEDDINGS_MODEL') ?? 'text-embedding-3-small';
  const rerank = (optional(env, 'SKILLS_AI_RERANK') ?? 'true').toLowerCase();
  if (!['true', 'false', '1', '0'].includes(rerank))
    throw new ConfigError('SKILLS_AI_RERANK', `must be true or false, got "${rerank}"`);
  return {
    githubApiBase: url(env, 'GITHUB_API_BASE') ?? 'https://api.github.com',
    githubRepos: [...new Set(repos)],
    githubToken: optional(env, 'GITHUB_TOKEN'),
    embeddingsModel: ['none', 'off'].includes(embeddingsModel.toLowerCase()) ? null : embeddingsModel,
    embeddingsDimensions:
      optional(env, 'EMBEDDINGS_DIMENSIONS') === null ? null : integer(env, 'EMBEDDINGS_DIMENSIONS', 0, 16, 8192),
    aiModel: optional(env, 'SKILLS_AI_MODEL') ?? 'gpt-4o-mini',
    rerank: rerank === 'true' || rerank === '1',
    refreshIntervalMinutes: integer(env, 'SKILLS_REFRESH_INTERVAL_MINUTES', 360, 5, 7 * 24 * 60),
  };
}

function logConfig(env: Env): Config['log'] {
  const level = (optional(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(level as LogLevel))
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  const format = optional(env, 'LOG_FORMAT')?.toLowerCase() ?? null;
  if (format !== null && format !== 'json' && format !== 'pretty')
    throw new ConfigError('LOG_FORMAT', `must be json or pretty, got "${format}"`);
  return { level: level as LogLevel, format };
}

function modelPrices(env: Env): PriceTable {
  try {
    return priceTableFromSetting(optional(env, 'LLM_MODEL_PRICES'));
  } catch (err) {
    throw new ConfigError(
      'LLM_MODEL_PRICES',
      `${(err as Error).message} (format: model=inputUsdPer1M:outputUsdPer1M[:vision|:text],… or a JSON object; model=off withdraws a default model)`,
    );
  }
}

function automationsConfig(env: Env): AutomationsConfig {
  const raw = optional(env, 'AUTOMATION_MIN_INTERVAL_MINUTES');
  if (raw === null) return { minIntervalMinutes: 5 };
  if (!/^\d+(\.\d+)?$/.test(raw))
    throw new ConfigError('AUTOMATION_MIN_INTERVAL_MINUTES', `must be a number of minutes, got "${raw}"`);
  const minutes = Number(raw);
  if (minutes < 1 / 60 || minutes > 7 * 24 * 60)
    throw new ConfigError(
      'AUTOMATION_MIN_INTERVAL_MINUTES',
      `must be between one second (0.0167) and a week (10080), got ${raw}`,
    );
  return { minIntervalMinutes: minutes };
}

export function loadConfig(env: Env = process.env): Config {
  const dataDir = path.resolve(optional(env, 'DATA_DIR') ?? '.data');
  const databaseUrl = optional(env, 'DATABASE_URL');
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// URL');
  }
  const temporalAddress = optional(env, 'TEMPORAL_ADDRESS');
  if (temporalAddress !== null && !/^[\w.-]+:\d+$/.test(temporalAddress)) {
    throw new ConfigError('TEMPORAL_ADDRESS', `must be host:port, got "${temporalAddress}"`);
  }
  const networkAllowlist = optional(env, 'NETWORK_ALLOWLIST') ?? undefined;
  try {
    parseNetworkAllowlist(networkAllowlist);
  } catch (err) {
    throw new ConfigError('NETWORK_ALLOWLIST', `is invalid: ${(err as Error).message}`);
  }
  let dnsServers: DnsServer[];
  try {
    dnsServers = parseDnsServers(optional(env, 'DNS_SERVERS'));
  } catch (err) {
    throw new ConfigError('DNS_SERVERS', `is invalid: ${(err as Error).message}`);
  }
  const captchaUrl = url(env, 'CAPTCHA_SOLVER_URL');
  const captchaKey = optional(env, 'CAPTCHA_SOLVER_KEY');
  if ((captchaUrl === null) !== (captchaKey === null)) {
    throw new ConfigError('CAPTCHA_SOLVER_URL', 'and CAPTCHA_SOLVER_KEY must be set together');
  }
  const proxyUrlTemplate = optional(env, 'PROXY_URL');
  if (proxyUrlTemplate !== null) {
    try {
      new URL(proxyUrlTemplate.replace(/\{country\}/g, 'us'));
    } catch {
      throw new ConfigError('PROXY_URL', 'must be a URL such as http://user-{country}:pass@proxy:8080');
    }
  }
  const config: Config = {
    port: integer(env, 'PORT', 3000, 0, 65535),
    trustProxyHops: trustProxyHops(env),
    dataDir,
    databaseUrl,
    temporalAddress,
    temporalNamespace: optional(env, 'TEMPORAL_NAMESPACE') ?? 'default',
    workflowBundlePath: workflowBundlePath(env),
    temporalDevPorts: {
      frontend: integer(env, 'TEMPORAL_DEV_PORT', 7233, 1, 65535),
      ui: integer(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535),
    },
    temporalUiUrl:
      url(env, 'TEMPORAL_UI_URL') ?? `http://localhost:${integer(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535)}`,
    openai: { baseURL: url(env, 'OPENAI_BASE_URL'), apiKey: optional(env, 'OPENAI_API_KEY') },
    routerBaseURL: url(env, 'ROUTER_BASE_URL'),
    adminToken: secretOrLocalFile(env, 'ADMIN_TOKEN', dataDir, 'admin-token', () =>
      randomBytes(24).toString('base64url'),
    ),
    masterKey: parseMasterKey(
      secretOrLocalFile(env, 'MASTER_KEY', dataDir, 'master.key', () => randomBytes(32).toString('hex')),
    ),
    networkAllowlist,
    dnsServers,
    proxyUrlTemplate,
    captcha: captchaUrl && captchaKey ? { baseURL: captchaUrl, apiKey: captchaKey } : null,
    chromiumPath: optional(env, 'CHROMIUM_PATH') ?? '/usr/bin/chromium',
    chromiumHeadlessPath: headlessChromiumPath(env),
    browserConcurrency: integer(env, 'BROWSER_CONCURRENCY', 4, 1, 64),
    syncScrapeTimeoutMs: integer(env, 'SYNC_SCRAPE_TIMEOUT_MS', 120_000, 1_000, 900_000),
    social: {
      forumApiBase: url(env, 'FORUM_API_BASE') ?? 'https://oauth.reddit.com',
      forumAuthBase: url(env, 'FORUM_AUTH_BASE') ?? 'https://www.reddit.com',
      microblogBase: url(env, 'MICROBLOG_BASE'),
    },
    agent: {
      maxSteps: integer(env, 'AGENT_MAX_STEPS', 30, 1, 500),
      deadlineMs: integer(env, 'AGENT_DEADLINE_MS', 15 * 60_000, 5_000, 24 * 3_600_000),
      historyEventsLimit: integer(env, 'AGENT_HISTORY_EVENTS', 5_000, 50, 40_000),
      socialToolTimeoutMs: integer(env, 'AGENT_SOCIAL_TOOL_TIMEOUT_MS', 120_000, 1_000, 900_000),
      toolImages: {
        perResult: integer(env, 'AGENT_TOOL_IMAGES_PER_RESULT', 4, 0, 16),
        maxBytes: integer(env, 'AGENT_TOOL_IMAGE_MAX_KB', 1_024, 1, 20_480) * 1024,
      },
      browserSession: {
        openWaitMinMs: integer(env, 'AGENT_BROWSER_OPEN_WAIT_SECONDS', 60, 1, 3_600) * 1_000,
        openHeartbeatTimeoutMs: integer(env, 'AGENT_BROWSER_OPEN_HEARTBEAT_SECONDS', 30, 5, 600) * 1_000,
        keeperHeartbeatTimeoutMs: integer(env, 'AGENT_BROWSER_KEEPER_HEARTBEAT_SECONDS', 20, 5, 600) * 1_000,
        unclaimedSessionMs: integer(env, 'AGENT_BROWSER_UNCLAIMED_SESSION_SECONDS', 120, 1, 3_600) * 1_000,
      },
    },
    holds: {
      scrape: usdAmount(env, 'HOLD_MAX_USD_SCRAPE', 0.5),
      agentic: usdAmount(env, 'HOLD_MAX_USD_AGENTIC', 2),
      automation: usdAmount(env, 'HOLD_MAX_USD_AUTOMATION', 2),
      'custom-agent': usdAmount(env, 'HOLD_MAX_USD_CUSTOM_AGENT', 2),
      'agent-market': usdAmount(env, 'HOLD_MAX_USD_AGENT_MARKET', 2),
    },
    pendingJobs: {
      reconcileAfterMs: integer(env, 'PENDING_JOB_RECONCILE_AFTER_MS', 60_000, 500, 24 * 3_600_000),
      checkEveryMs: integer(env, 'PENDING_JOB_CHECK_EVERY_MS', 30_000, 200, 3_600_000),
    },
    taskQueues: {
      platform: optional(env, 'PLATFORM_TASK_QUEUE') ?? 'platform',
      browser: optional(env, 'BROWSER_TASK_QUEUE') ?? 'browser',
    },
    skills: skillsConfig(env),
    docsMcp: {
      url: url(env, 'DOCS_MCP_URL'),
      rateLimitPerMinute: integer(env, 'DOCS_MCP_RATE_LIMIT', 120, 1, 1_000_000),
    },
    market: marketConfig(env, dataDir),
    log: logConfig(env),
    metrics: {
      token: optional(env, 'METRICS_TOKEN'),
      workerHost: optional(env, 'WORKER_METRICS_HOST') ?? '127.0.0.1',
      workerPort:
        optional(env, 'WORKER_METRICS_PORT') === null ? null : integer(env, 'WORKER_METRICS_PORT', 0, 1, 65535),
      workerAppPort:
        optional(env, 'WORKER_APP_METRICS_PORT') === null ? null : integer(env, 'WORKER_APP_METRICS_PORT', 0, 1, 65535),
    },
    modelPrices: modelPrices(env),
    automations: automationsConfig(env),
    web: {
      sessionIdleMs: integer(env, 'WEB_SESSION_IDLE_MINUTES', 120, 1, 7 * 24 * 60) * 60_000,
      sessionMaxMs: integer(env, 'WEB_SESSION_MAX_HOURS', 24, 1, 720) * 3_600_000,
    },
    oauth: {
      dynamicRegistration: oneOf(env, 'OAUTH_DYNAMIC_REGISTRATION', ['true', 'false'], 'true') === 'true',
      clientIdMetadataDocuments: oneOf(env, 'OAUTH_CLIENT_ID_METADATA_DOCUMENTS', ['true', 'false'], 'true') === 'true',
      accessTokenTtlSeconds: integer(env, 'OAUTH_ACCESS_TOKEN_MINUTES', 10, 1, 60) * 60,
      refreshTokenTtlSeconds: integer(env, 'OAUTH_REFRESH_TOKEN_DAYS', 30, 1, 365) * 86_400,
      unusedRegistrationTtlSeconds: integer(env, 'OAUTH_UNUSED_REGISTRATION_HOURS', 24, 1, 8_760) * 3_600,
      rateLimitPerIpPerMinute: integer(env, 'OAUTH_RATE_LIMIT_PER_IP_PER_MINUTE', 300, 0, 1_000_000),
      rateLimitPerClientPerMinute: integer(env, 'OAUTH_RATE_LIMIT_PER_CLIENT_PER_MINUTE', 120, 0, 1_000_000),
      metadataFetchesPerMinute: integer(env, 'OAUTH_METADATA_FETCHES_PER_MINUTE', 60, 1, 10_000),
    },
  };
  if (config.metrics.token !== null && config.metrics.token.length < 16)
    throw new ConfigError('METRICS_TOKEN', 'must be at least 16 characters');
  if (!config.modelPrices.accepts(config.skills.aiModel)) {
    throw new ConfigError(
      'SKILLS_AI_MODEL',
      `"${config.skills.aiModel}" is not in the LLM price table (add it with LLM_MODEL_PRICES)`,
    );
  }
  if (config.adminToken.length < 16) throw new ConfigError('ADMIN_TOKEN', 'must be at least 16 characters');
  return config;
}

/** Debian's package chromium-headless-shell installs it here. */
const HEADLESS_SHELL_PATH = '/usr/bin/chromium-headless-shell';

/**
 * CHROMIUM_HEADLESS_PATH when set; else the headless shell when installed and CHROMIUM_PATH is not set (a
 * CHROMIUM_PATH of one's own is taken for both); else the full browser.
 */
export function headlessChromiumPath(env: Env = process.env): string {
  const chosen = optional(env, 'CHROMIUM_HEADLESS_PATH');
  if (chosen) return chosen;
  const full = optional(env, 'CHROMIUM_PATH');
  if (full) return full;
  return existsSync(HEADLESS_SHELL_PATH) ? HEADLESS_SHELL_PATH : '/usr/bin/chromium';
}
