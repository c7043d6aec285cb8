import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadConfig } from '../lib/config';

/**
 * Operator CLI. It reads the same environment as the service (ADMIN_TOKEN or DATA_DIR/admin-token)
 * and talks to the running service's admin API (ADMIN_URL, default http://127.0.0.1:$PORT), so it
 * works while `npm start` holds the embedded database. Prints one JSON line per command.
 */
const USAGE = `usage: npm run --silent admin -- <command> [options]
  create-user --email E [--credit-usd N] [--monthly-operation-limit N] [--automation-limit N] [--plan P]
  credit --user ID --usd N [--idempotency-key K] [--description D]
  set-limits --user ID [--monthly-operation-limit N] [--automation-limit N] [--plan P]
  rotate-key --user ID
  deactivate --user ID
  activate --user ID
  set-router-key --user ID (--key K | --clear)
  import-skills FILE        (JSON Lines of skills directory items; prints counts)
  refresh-skills [--repo owner/name ...]   (refresh the skills directory from GitHub now and wait)
  submissions --market mcp|agent [--status S] [--search Q] [--page N]
                            (market submissions, oldest submitted first; Q: name or slug contains, or an id)
  review --market mcp|agent --submission ID (--approve | --reject --reason R | --disable)
  register-oauth-client --name N --redirect-uri U [--redirect-uri U ...] [--client-id ID] [--confidential | --auth-method M]
                            (an operator-managed OAuth client; a confidential one's secret is printed once)
  oauth-clients             (the operator-managed OAuth clients, no secrets)
  delete-oauth-client --client-id ID   (its grants and tokens end with it)`;

class UsageError extends Error {}

function numberOption(value: string | undefined, name: string, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} must be a non-negative ${integer ? 'integer' : 'number'}`);
  }
  return n;
}

async function call(method: string, path: string, body?: unknown): Promise<unknown> {
  const config = loadConfig();
  const base = (process.env.ADMIN_URL ?? `http://127.0.0.1:${config.port}`).replace(/\/+$/, '');
  let response: Response;
  try {
    response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${config.adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new Error(`cannot reach the service at ${base} (is it running? set ADMIN_URL if it listens elsewhere)`);
  }
  const payload = (await response.json().catch(() => null)) as {
    error?: { message?: string; details?: unknown };
  } | null;
  if (!response.ok) {
    const details = payload?.error?.details ? ` ${JSON.stringify(payload.error.details)}` : '';
    throw new Error(`${response.status}: ${payload?.error?.message ?? response.statusText}${details}`);
  }
  return payload;
}

/** Request bodies stay well under the API's 1 MB limit (JSON escaping can double a line). */
const IMPORT_CHUNK_BYTES = 400_000;

interface ImportCounts {
  inserted: number;
  updated: number;
  unchanged: number;
  skipped: number;
  errors: { line: number; message: string }[];
  embedded: number;
  embeddingError?: string;
}

/** Streams a JSON Lines file to POST /admin/skills/import in chunks and adds up the counts. */
async function importSkills(file: string): Promise<unknown> {
  const total: ImportCounts = { inserted: 0, updated: 0, unchanged: 0, skipped: 0, errors: [], embedded: 0 };
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let chunk: string[] = [];
  let chunkBytes = 0;
  let firstLine = 1;
  let lineNumber = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    const part = (await call('POST', '/admin/skills/import', {
      jsonl: chunk.join('\n') + '\n',
      firstLine,
    })) as ImportCounts;
    total.inserted += part.inserted;
    total.updated += part.updated;
    total.unchanged += part.unchanged;
    total.skipped += part.skipped;
    total.embedded += part.embedded;
    total.errors.push(...part.errors);
    total.embeddingError ??= part.embeddingError;
    firstLine += chunk.length;
    chunk = [];
    chunkBytes = 0;
  };
  for await (const line of lines) {
    lineNumber++;
    const bytes = Buffer.byteLength(JSON.stringify(line));
    if (bytes > IMPORT_CHUNK_BYTES * 2) {
      // Too large for one request: reported here, like any other bad line.
      await flush();
      total.skipped++;
      total.errors.push({ line: lineNumber, message: 'the line is too long to import (over 800 kB)' });
      firstLine = lineNumber + 1;
      continue;
    }
    if (chunkBytes + bytes > IMPORT_CHUNK_BYTES) await flush();
    chunk.push(line);
    chunkBytes += bytes;
  }
  await flush();
  return { file, lines: lineNumber, ...total, errors: total.errors.slice(0, 1000) };
}

function market(value: string | undefined): 'mcp' | 'agent' {
  if (value !== 'mcp' && value !== 'agent') throw new UsageError('--market must be mcp or agent');
  return value;
}

async function main(argv: string[]): Promise<unknown> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    strict: true,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      'credit-usd': { type: 'string' },
      'monthly-operation-limit': { type: 'string' },
      'automation-limit': { type: 'string' },
      plan: { type: 'string' },
      user: { type: 'string' },
      usd: { type: 'string' },
      'idempotency-key': { type: 'string' },
      description: { type: 'string' },
      key: { type: 'string' },
      clear: { type: 'boolean' },
      repo: { type: 'string', multiple: true },
      market: { type: 'string' },
      status: { type: 'string' },
      search: { type: 'string' },
      page: { type: 'string' },
      submission: { type: 'string' },
      approve: { type: 'boolean' },
      reject: { type: 'boolean' },
      disable: { type: 'boolean' },
      reason: { type: 'string' },
      name: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      'client-id': { type: 'string' },
      confidential: { type: 'boolean' },
      'auth-method': { type: 'string' },
    },
  });
  if (positionals.length > (command === 'import-skills' ? 1 : 0))
    throw new UsageError(`unexpected argument "${positionals.at(-1)}"`);
  const user = () => {
    if (!values.user) throw new UsageError('--user is required');
    return encodeURIComponent(values.user);
  };
  const limits = () => ({
    monthlyOperationLimit: numberOption(values['monthly-operation-limit'], 'monthly-operation-limit', true),
    automationLimit: numberOption(values['automation-limit'], 'automation-limit', true),
    plan: values.plan,
  });
  switch (command) {
    case 'create-user': {
      if (!values.email) throw new UsageError('--email is required');
      const created = (await call('POST', '/admin/users', {
        email: values.email,
        creditUsd: numberOption(values['credit-usd'], 'credit-usd', false),
        ...limits(),
      })) as { userId: string; apiKey: string };
      return { userId: created.userId, apiKey: created.apiKey };
    }
    case 'credit': {
      const usd = numberOption(values.usd, 'usd', false);
      if (!usd) throw new UsageError('--usd must be a positive amount');
      return call('POST', `/admin/users/${user()}/credit`, {
        amountUsd: usd,
        idempotencyKey: values['idempotency-key'] ?? randomUUID(),
        description: values.description,
      });
    }
    case 'set-limits':
      return call('PATCH', `/admin/users/${user()}/subscription`, limits());
    case 'rotate-key':
      return call('POST', `/admin/users/${user()}/rotate-key`);
    case 'deactivate':
      return call('PATCH', `/admin/users/${user()}/subscription`, { status: 'inactive' });
    case 'activate':
      return call('PATCH', `/admin/users/${user()}/subscription`, { status: 'active' });
    case 'set-router-key':
      if (!values.key && !values.clear) throw new UsageError('give --key K or --clear');
      return call('PUT', `/admin/users/${user()}/router-key`, { routerApiKey: values.clear ? null : values.key });
    case 'import-skills':
      if (!positionals[0]) throw new UsageError('import-skills needs a FILE');
      return importSkills(positionals[0]);
    case 'refresh-skills':
      return call('POST', '/admin/skills/refresh', {
        wait: true,
        ...(values.repo?.length ? { repos: values.repo } : {}),
      });
    case 'submissions': {
      const query = new URLSearchParams({
        pageSize: '100',
        page: String(numberOption(values.page, 'page', true) ?? 1),
      });
      if (values.status) query.set('status', values.status);
      if (values.search) query.set('q', values.search);
      return call('GET', `/admin/market/${market(values.market)}/submissions?${query}`);
    }
    case 'review': {
      if (!values.submission) throw new UsageError('--submission is required');
      const chosen = (['approve', 'reject', 'disable'] as const).filter((action) => values[action]);
      if (chosen.length !== 1) throw new UsageError('give exactly one of --approve, --reject --reason R, --disable');
      if (chosen[0] === 'reject' && !values.reason) throw new UsageError('--reject needs --reason R');
      return call(
        'POST',
        `/admin/market/${market(values.market)}/submissions/${encodeURIComponent(values.submission)}/review`,
        {
          action: chosen[0],
          ...(values.reason !== undefined && { reason: values.reason }),
        },
      );
    }
    case 'register-oauth-client': {
      if (!values.name) throw new UsageError('--name is required');
      if (!values['redirect-uri']?.length) throw new UsageError('give at least one --redirect-uri');
      if (values.confidential && values['auth-method'])
        throw new UsageError('give --confidential or --auth-method, not both');
      return call('POST', '/admin/oauth/clients', {
        name: values.name,
        redirectUris: values['redirect-uri'],
        ...(values['client-id'] !== undefined && { clientId: values['client-id'] }),
        tokenEndpointAuthMethod: values['auth-method'] ?? (values.confidential ? 'client_secret_basic' : 'none'),
      });
    }
    case 'oauth-clients':
      return call('GET', '/admin/oauth/clients');
    case 'delete-oauth-client': {
      if (!values['client-id']) throw new UsageError('--client-id is required');
      await call('DELETE', `/admin/oauth/clients/${encodeURIComponent(values['client-id'])}`);
      return { clientId: values['client-id'], deleted: true };
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"` : 'a command is required');
  }
}

main(process.argv.slice(2)).then(
  (result) => console.log(JSON.stringify(result)),
  (err) => {
    console.error(err instanceof UsageError ? `${err.message}\n${USAGE}` : `admin: ${(err as Error).message}`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
