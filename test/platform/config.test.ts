import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError, loadConfig } from '../../lib/config';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../workers/temporal-cli';

describe('configuration', function () {
  let dataDir: string;
  beforeEach(() => (dataDir = mkdtempSync(path.join(os.tmpdir(), 'config-test-'))));
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('applies the embedded defaults and generates dev secrets once under DATA_DIR', function () {
    const config = loadConfig({ DATA_DIR: dataDir });
    assert.equal(config.port, 3000);
    assert.equal(config.databaseUrl, null);
    assert.equal(config.temporalAddress, null);
    assert.equal(config.temporalNamespace, 'default');
    assert.deepEqual(config.temporalDevPorts, { frontend: 7233, ui: 8233 });
    assert.equal(config.market.callCommit, 'fast');
    assert.equal(loadConfig({ DATA_DIR: dataDir, MARKET_CALL_COMMIT: 'durable' }).market.callCommit, 'durable');
    assert.equal(config.masterKey.length, 32);
    assert.ok(existsSync(path.join(dataDir, 'master.key')));
    assert.equal(readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim(), config.adminToken);
    const again = loadConfig({ DATA_DIR: dataDir });
    assert.equal(again.adminToken, config.adminToken);
    assert.ok(again.masterKey.equals(config.masterKey));
  });

  it('reads every documented variable', function () {
    const config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '8080',
      DATABASE_URL: 'postgres://u@db:5432/app',
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'prod',
      OPENAI_BASE_URL: 'https://llm.example.com/v1/',
      OPENAI_API_KEY: 'sk-x',
      ROUTER_BASE_URL: 'https://router.example.com/api/v1',
      ADMIN_TOKEN: 'a'.repeat(32),
      MASTER_KEY: 'ab'.repeat(32),
      NETWORK_ALLOWLIST: 'localhost,10.0.0.0/8',
    });
    assert.equal(config.port, 8080);
    assert.equal(config.databaseUrl, 'postgres://u@db:5432/app');
    assert.equal(config.temporalAddress, 'temporal:7233');
    assert.equal(config.temporalNamespace, 'prod');
    assert.equal(config.openai.baseURL, 'https://llm.example.com/v1');
    assert.equal(config.routerBaseURL, 'https://router.example.com/api/v1');
    assert.equal(config.masterKey.toString('hex'), 'ab'.repeat(32));
    assert.equal(config.networkAllowlist, 'localhost,10.0.0.0/8');
    assert.ok(!existsSync(path.join(dataDir, 'master.key')));
  });

  it("bounds the tool images an agent's model is given (AGENT_TOOL_IMAGES_PER_RESULT, AGENT_TOOL_IMAGE_MAX_KB)", function () {
    assert.deepEqual(loadConfig({ DATA_DIR: dataDir }).agent.toolImages, { perResult: 4, maxBytes: 1024 * 1024 });
    assert.deepEqual(
      loadConfig({ DATA_DIR: dataDir, AGENT_TOOL_IMAGES_PER_RESULT: '0', AGENT_TOOL_IMAGE_MAX_KB: '256' }).agent
        .toolImages,
      { perResult: 0, maxBytes: 256 * 1024 },
    );
  });

  it('never follows a planted symlink when creating a key file: it refuses, writing nothing', function () {
    const elsewhere = path.join(dataDir, 'elsewhere');
    symlinkSync(elsewhere, path.join(dataDir, 'master.key'));
    assert.throws(
      () => loadConfig({ DATA_DIR: dataDir, ADMIN_TOKEN: 'a'.repeat(32) }),
      (err: unknown) =>
        err instanceof ConfigError && err.message.includes('MASTER_KEY') && err.message.includes('master.key'),
    );
    assert.ok(!existsSync(elsewhere), 'the secret was written through the symlink');
  });

  it('reads the key another starting process is still writing, rather than a half-created file', async function () {
    this.timeout(60_000);
    // Another process has created master.key (exclusively) but not yet written it when this one starts.
    const keyFile = path.join(dataDir, 'master.key');
    writeFileSync(keyFile, '', { mode: 0o600 });
    const code = `const { loadConfig } = require(${JSON.stringify(path.resolve(__dirname, '../../lib/config'))});
      process.stderr.write('loading\\n');
      process.stdout.write(loadConfig({ DATA_DIR: ${JSON.stringify(dataDir)}, ADMIN_TOKEN: 'a'.repeat(32) }).masterKey.toString('hex'));`;
    const child = spawn(process.execPath, ['-r', 'tsx/cjs', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const loading = new Promise<void>((resolve) => child.stderr.on('data', () => err.includes('loading') && resolve()));
    const written = 'cd'.repeat(32);
    await loading;
    await new Promise((resolve) => setTimeout(resolve, 300));
    writeFileSync(keyFile, `${written}\n`);
    assert.equal(await exited, 0, err);
    assert.equal(out, written);
  });

  const invalid: [string, Record<string, string>][] = [
    ['PORT', { PORT: 'eighty' }],
    ['PORT', { PORT: '70000' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x' }],
    ['TEMPORAL_ADDRESS', { TEMPORAL_ADDRESS: 'http://temporal' }],
    ['OPENAI_BASE_URL', { OPENAI_BASE_URL: 'not a url' }],
    ['MASTER_KEY', { MASTER_KEY: 'too-short' }],
    ['ADMIN_TOKEN', { ADMIN_TOKEN: 'short' }],
    ['NETWORK_ALLOWLIST', { NETWORK_ALLOWLIST: 'localhost,300.1.1.1/40' }],
    ['CAPTCHA_SOLVER_URL', { CAPTCHA_SOLVER_URL: 'http://solver.example.com' }],
    ['PROXY_URL', { PROXY_URL: '::not a url::' }],
    ['AGENT_MAX_STEPS', { AGENT_MAX_STEPS: '0' }],
    ['AGENT_TOOL_IMAGES_PER_RESULT', { AGENT_TOOL_IMAGES_PER_RESULT: '17' }],
    ['AGENT_TOOL_IMAGE_MAX_KB', { AGENT_TOOL_IMAGE_MAX_KB: '0' }],
    ['MARKET_CALL_COMMIT', { MARKET_CALL_COMMIT: 'sometimes' }],
  ];
  for (const [variable, env] of invalid) {
    it(`stops with an error naming ${variable} for ${JSON.stringify(env)}`, function () {
      assert.throws(
        () => loadConfig({ DATA_DIR: dataDir, ...env }),
        (err: unknown) => err instanceof ConfigError && err.message.includes(variable),
      );
    });
  }
});

type ComposeService = {
  image?: string;
  environment?: Record<string, string>;
  configs?: { source: string; target: string }[];
  depends_on?: Record<string, { condition: string }>;
  entrypoint?: string[];
  ports?: string[];
  healthcheck?: unknown;
};
type Compose = { services: Record<string, ComposeService>; configs: Record<string, { content: string }> };

const readCompose = () =>
  parseYaml(readFileSync(path.join(__dirname, '..', '..', 'docker-compose.yml'), 'utf8'), { merge: true }) as Compose;

/** Compose interpolates config content and commands: `$$` is a literal `$`. */
const interpolated = (text: string) => {
  assert.doesNotMatch(text.replace(/\$\$/g, ''), /\$/, 'a `$` compose would interpolate');
  return text.replace(/\$\$/g, '$');
};

/**
 * Runs a one-shot container's entrypoint here: the config files it mounts placed under a scratch directory
 * (`files`: target → content), and fake Temporal tools (`fakes`: name → shell body) that log their arguments.
 */
function runEntrypoint(entrypoint: string[], files: Record<string, string>, fakes: Record<string, string>) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'compose-entrypoint-'));
  try {
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    for (const [name, body] of Object.entries(fakes))
      writeFileSync(path.join(bin, name), `#!/bin/sh\necho "${name} $*" >> "${dir}/calls"\n${body}\n`, { mode: 0o755 });
    const local = (target: string) => path.join(dir, 'mounted', target);
    for (const [target, content] of Object.entries(files)) {
      mkdirSync(path.dirname(local(target)), { recursive: true });
      writeFileSync(local(target), interpolated(content));
    }
    const [command, ...args] = entrypoint.map((arg) => (arg in files ? local(arg) : interpolated(arg)));
    const result = spawnSync(command!, args, { env: { PATH: `${bin}:/usr/bin:/bin` }, encoding: 'utf8' });
    const calls = existsSync(path.join(dir, 'calls'))
      ? readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n')
      : [];
    return { status: result.status, calls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('docker-compose.yml', function () {
  it('publishes nothing but the API beyond this host (the Temporal UI and frontend have no login of their own)', function () {
    const compose = readCompose();
    const published = Object.entries(compose.services).flatMap(([service, definition]) =>
      (definition.ports ?? []).map((port) => ({ service, port: String(port) })),
    );
    assert.ok(
      published.some(({ service }) => service === 'temporal-ui'),
      'the Temporal UI is published for the operator on this host',
    );
    for (const { service, port } of published) {
      if (service === 'api') continue;
      assert.match(port, /^127\.0\.0\.1:/, `${service} publishes ${port} on every interface`);
    }
  });

  it('runs Temporal with the dynamic config of the embedded dev server (eager activities, transfer-queue reads)', function () {
    const compose = readCompose();
    const temporal = compose.services.temporal!;
    const mounted = temporal.configs?.find(
      (c) => `/etc/temporal/${temporal.environment?.DYNAMIC_CONFIG_FILE_PATH}` === c.target,
    );
    assert.ok(mounted, 'DYNAMIC_CONFIG_FILE_PATH names the mounted dynamic config');
    const dynamicConfig = parseYaml(compose.configs[mounted.source]!.content) as Record<string, { value: unknown }[]>;
    assert.ok(Object.keys(DEV_SERVER_DYNAMIC_CONFIG).includes('system.enableActivityEagerExecution'));
    for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG))
      assert.deepEqual(dynamicConfig[key], [{ value }], `compose's Temporal sets ${key} as the dev server does`);
  });

  it('uses maintained Temporal images: the server image, admin-tools for schema and namespace, one pinned release', function () {
    const { services } = readCompose();
    const images = Object.values(services).flatMap((s) => (s.image?.startsWith('temporalio/') ? [s.image] : []));
    for (const image of images) {
      assert.doesNotMatch(image, /^temporalio\/(auto-setup|web)[:@]/, `${image} is deprecated and no longer patched`);
      assert.match(image, /:\d+\.\d+\.\d+$/, `${image} is not pinned to a release`);
    }
    const tag = (image: string | undefined) => image?.split(':')[1];
    assert.match(services.temporal!.image!, /^temporalio\/server:/);
    for (const oneShot of ['temporal-schema', 'temporal-namespace']) {
      assert.match(services[oneShot]!.image!, /^temporalio\/admin-tools:/, oneShot);
      assert.equal(
        tag(services[oneShot]!.image),
        tag(services.temporal!.image),
        `${oneShot} runs the server's release`,
      );
    }
    assert.equal(
      services.temporal!.depends_on?.['temporal-schema']?.condition,
      'service_completed_successfully',
      'the server starts on a set-up schema',
    );
    for (const service of ['api', 'worker']) {
      assert.equal(
        services[service]!.depends_on?.['temporal-namespace']?.condition,
        'service_completed_successfully',
        `${service} waits for the namespace`,
      );
    }
    assert.equal(services['temporal-namespace']!.depends_on?.temporal?.condition, 'service_healthy');
    assert.ok(services.temporal!.healthcheck, 'the server has a health check to wait on');
  });

  it('sets up both Temporal databases on the Postgres the server uses, again at every start without harm', function () {
    const compose = readCompose();
    const schema = compose.services['temporal-schema']!;
    const server = compose.services.temporal!.environment!;
    const files = Object.fromEntries((schema.configs ?? []).map((c) => [c.target, compose.configs[c.source]!.content]));
    assert.equal(schema.environment?.SQL_PASSWORD, server.POSTGRES_PWD, 'the password the server connects with');
    const { status, calls } = runEntrypoint(schema.entrypoint!, files, { 'temporal-sql-tool': 'exit 0' });
    assert.equal(status, 0);
    const connection = `--plugin ${server.DB} --ep ${server.POSTGRES_SEEDS} -p ${server.DB_PORT} -u ${server.POSTGRES_USER}`;
    assert.deepEqual(calls, [
      `temporal-sql-tool ${connection} --db temporal create`,
      `temporal-sql-tool ${connection} --db temporal setup-schema -v 0.0`,
      `temporal-sql-tool ${connection} --db temporal update-schema -d /etc/temporal/schema/postgresql/v12/temporal/versioned`,
      `temporal-sql-tool ${connection} --db temporal_visibility create`,
      `temporal-sql-tool ${connection} --db temporal_visibility setup-schema -v 0.0`,
      `temporal-sql-tool ${connection} --db temporal_visibility update-schema -d /etc/temporal/schema/postgresql/v12/visibility/versioned`,
    ]);
    const failing = runEntrypoint(schema.entrypoint!, files, { 'temporal-sql-tool': 'exit 1' });
    assert.notEqual(failing.status, 0, 'a failed step fails the container, so the server does not start');
    assert.equal(failing.calls.length, 1);
  });

  it('creates the namespace the service uses once, and leaves it alone when it exists', function () {
    const compose = readCompose();
    const namespace = compose.services['temporal-namespace']!;
    const serviceNamespace = compose.services.api!.environment!.TEMPORAL_NAMESPACE;
    assert.equal(serviceNamespace, compose.services.worker!.environment!.TEMPORAL_NAMESPACE);
    assert.equal(namespace.environment?.TEMPORAL_ADDRESS, compose.services.api!.environment!.TEMPORAL_ADDRESS);
    const absent = runEntrypoint(
      namespace.entrypoint!,
      {},
      { temporal: 'case "$*" in *describe*) exit 1;; esac; exit 0' },
    );
    assert.equal(absent.status, 0);
    assert.deepEqual(absent.calls, [
      'temporal operator cluster health',
      `temporal operator namespace describe -n ${serviceNamespace}`,
      `temporal operator namespace create -n ${serviceNamespace} --retention 24h`,
    ]);
    const present = runEntrypoint(namespace.entrypoint!, {}, { temporal: 'exit 0' });
    assert.equal(present.status, 0);
    assert.deepEqual(present.calls, [
      'temporal operator cluster health',
      `temporal operator namespace describe -n ${serviceNamespace}`,
    ]);
    const down = runEntrypoint(namespace.entrypoint!, {}, { temporal: 'exit 1' });
    assert.notEqual(down.status, 0, 'a server that is not healthy yet fails the container, which restarts');
  });
});
