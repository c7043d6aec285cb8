import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
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
  set-router-key --user ID (--key K | --clear)`;

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
  const payload = (await response.json().catch(() => null)) as { error?: { message?: string; details?: unknown } } | null;
  if (!response.ok) {
    const details = payload?.error?.details ? ` ${JSON.stringify(payload.error.details)}` : '';
    throw new Error(`${response.status}: ${payload?.error?.message ?? response.statusText}${details}`);
  }
  return payload;
}

async function main(argv: string[]): Promise<unknown> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    strict: true,
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
    },
  });
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
