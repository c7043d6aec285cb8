import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError, loadConfig } from '../lib/config';

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
    assert.deepEqual(loadConfig({ DATA_DIR: dataDir, AGENT_TOOL_IMAGES_PER_RESULT: '0', AGENT_TOOL_IMAGE_MAX_KB: '256' }).agent.toolImages, { perResult: 0, maxBytes: 256 * 1024 });
  });

  it('never follows a planted symlink when creating a key file: it refuses, writing nothing', function () {
    const elsewhere = path.join(dataDir, 'elsewhere');
    symlinkSync(elsewhere, path.join(dataDir, 'master.key'));
    assert.throws(
      () => loadConfig({ DATA_DIR: dataDir, ADMIN_TOKEN: 'a'.repeat(32) }),
      (err: unknown) => err instanceof ConfigError && err.message.includes('MASTER_KEY') && err.message.includes('master.key'),
    );
    assert.ok(!existsSync(elsewhere), 'the secret was written through the symlink');
  });

  it('reads the key another starting process is still writing, rather than a half-created file', async function () {
    this.timeout(60_000);
    // Another process has created master.key (exclusively) but not yet written it when this one starts.
    const keyFile = path.join(dataDir, 'master.key');
    writeFileSync(keyFile, '', { mode: 0o600 });
    const code = `const { loadConfig } = require(${JSON.stringify(path.resolve(__dirname, '../lib/config'))});
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

describe('docker-compose.yml', function () {
  it('publishes nothing but the API beyond this host (the Temporal UI and frontend have no login of their own)', function () {
    const compose = parseYaml(readFileSync(path.join(__dirname, '..', 'docker-compose.yml'), 'utf8')) as { services: Record<string, { ports?: string[] }> };
    const published = Object.entries(compose.services).flatMap(([service, definition]) => (definition.ports ?? []).map((port) => ({ service, port: String(port) })));
    assert.ok(published.some(({ service }) => service === 'temporal-ui'), 'the Temporal UI is published for the operator on this host');
    for (const { service, port } of published) {
      if (service === 'api') continue;
      assert.match(port, /^127\.0\.0\.1:/, `${service} publishes ${port} on every interface`);
    }
  });

  it('runs Temporal with eager activity execution, like the embedded dev server', function () {
    type Service = { environment?: Record<string, string>; configs?: { source: string; target: string }[] };
    const compose = parseYaml(readFileSync(path.join(__dirname, '..', 'docker-compose.yml'), 'utf8')) as {
      services: Record<string, Service>;
      configs: Record<string, { content: string }>;
    };
    const temporal = compose.services.temporal!;
    const mounted = temporal.configs?.find((c) => `/etc/temporal/${temporal.environment?.DYNAMIC_CONFIG_FILE_PATH}` === c.target);
    assert.ok(mounted, 'DYNAMIC_CONFIG_FILE_PATH names the mounted dynamic config');
    const dynamicConfig = parseYaml(compose.configs[mounted.source]!.content) as Record<string, { value: unknown }[]>;
    assert.deepEqual(dynamicConfig['system.enableActivityEagerExecution'], [{ value: true }]);
  });
});
