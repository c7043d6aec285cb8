import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseNetworkAllowlist } from './net/ssrf';

/** Everything the service reads from the environment, validated once at start. */
export interface Config {
  port: number;
  dataDir: string;
  /** Unset means the embedded PGlite database under dataDir. */
  databaseUrl: string | null;
  /** Unset means `npm start` runs its own Temporal dev server. */
  temporalAddress: string | null;
  temporalNamespace: string;
  temporalDevPorts: { frontend: number; ui: number };
  openai: { baseURL: string | null; apiKey: string | null };
  routerBaseURL: string | null;
  adminToken: string;
  masterKey: Buffer;
  networkAllowlist: string | undefined;
  proxyUrlTemplate: string | null;
  captcha: { baseURL: string; apiKey: string } | null;
  chromiumPath: string;
  browserConcurrency: number;
  syncScrapeTimeoutMs: number;
  agent: { maxSteps: number; deadlineMs: number };
  social: { forumApiBase: string; forumAuthBase: string; microblogBase: string | null };
  taskQueues: { platform: string; browser: string };
  skills: SkillsConfig;
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

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
  }
}

type Env = Record<string, string | undefined>;

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
      throw new ConfigError(name, `comes from ${target}, which exists but cannot be read (${(err as NodeJS.ErrnoException).code}); remove that file or set ${name}`);
    }
    if (content.trim() !== '') return content.trim();
    if (Date.now() > deadline) throw new ConfigError(name, `comes from ${target}, which is empty; remove that file or set ${name}`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
}

function parseMasterKey(raw: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError('MASTER_KEY', 'must be 32 bytes, as 64 hex characters or base64');
  return key;
}

function skillsConfig(env: Env): SkillsConfig {
  const repos = (optional(env, 'SKILLS_GITHUB_REPOS') ?? '').split(',').map((r) => r.trim()).filter(Boolean);
  for (const repo of repos) {
    if (!/^[\w.-]+\/[\w.-]+$/.test(repo)) throw new ConfigError('SKILLS_GITHUB_REPOS', `must be a comma-separated list of owner/repo, got "${repo}"`);
  }
  const embeddingsModel = optional(env, 'EMBEDDINGS_MODEL') ?? 'text-embedding-3-small';
  const rerank = (optional(env, 'SKILLS_AI_RERANK') ?? 'true').toLowerCase();
  if (!['true', 'false', '1', '0'].includes(rerank)) throw new ConfigError('SKILLS_AI_RERANK', `must be true or false, got "${rerank}"`);
  return {
    githubApiBase: url(env, 'GITHUB_API_BASE') ?? 'https://api.github.com',
    githubRepos: [...new Set(repos)],
    githubToken: optional(env, 'GITHUB_TOKEN'),
    embeddingsModel: ['none', 'off'].includes(embeddingsModel.toLowerCase()) ? null : embeddingsModel,
    embeddingsDimensions: optional(env, 'EMBEDDINGS_DIMENSIONS') === null ? null : integer(env, 'EMBEDDINGS_DIMENSIONS', 0, 16, 8192),
    aiModel: optional(env, 'SKILLS_AI_MODEL') ?? 'gpt-4o-mini',
    rerank: rerank === 'true' || rerank === '1',
    refreshIntervalMinutes: integer(env, 'SKILLS_REFRESH_INTERVAL_MINUTES', 360, 5, 7 * 24 * 60),
  };
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
    dataDir,
    databaseUrl,
    temporalAddress,
    temporalNamespace: optional(env, 'TEMPORAL_NAMESPACE') ?? 'default',
    temporalDevPorts: {
      frontend: integer(env, 'TEMPORAL_DEV_PORT', 7233, 1, 65535),
      ui: integer(env, 'TEMPORAL_UI_PORT', 8233, 1, 65535),
    },
    openai: { baseURL: url(env, 'OPENAI_BASE_URL'), apiKey: optional(env, 'OPENAI_API_KEY') },
    routerBaseURL: url(env, 'ROUTER_BASE_URL'),
    adminToken: secretOrLocalFile(env, 'ADMIN_TOKEN', dataDir, 'admin-token', () => randomBytes(24).toString('base64url')),
    masterKey: parseMasterKey(
      secretOrLocalFile(env, 'MASTER_KEY', dataDir, 'master.key', () => randomBytes(32).toString('hex')),
    ),
    networkAllowlist,
    proxyUrlTemplate,
    captcha: captchaUrl && captchaKey ? { baseURL: captchaUrl, apiKey: captchaKey } : null,
    chromiumPath: optional(env, 'CHROMIUM_PATH') ?? '/usr/bin/chromium',
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
    },
    taskQueues: {
      platform: optional(env, 'PLATFORM_TASK_QUEUE') ?? 'platform',
      browser: optional(env, 'BROWSER_TASK_QUEUE') ?? 'browser',
    },
    skills: skillsConfig(env),
  };
  if (config.adminToken.length < 16) throw new ConfigError('ADMIN_TOKEN', 'must be at least 16 characters');
  return config;
}
