import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { useHarness, type Harness } from '../support/stack/harness';
import { buildOpenApiDocument } from '../../api/openapi/document';

const ROOT = path.join(__dirname, '..', '..');
const REDOCLY = path.join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

/** `redocly lint` on a file with this repository's redocly.yaml: its JSON report (problems also on exit code 1). */
async function lint(file: string): Promise<LintReport> {
  const run = promisify(execFile)(
    process.execPath,
    [REDOCLY, 'lint', file, '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json'],
    {
      cwd: ROOT,
      // No usage data and no update check: the lint works offline.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const stdout = await run.then(
    (result) => result.stdout,
    (err: { stdout?: string }) => err.stdout ?? '',
  );
  return JSON.parse(stdout) as LintReport;
}

/** Every `$ref` in the document (a remote one would make the linter fetch it). */
function refsOf(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((item) => refsOf(item, out));
  else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string') out.push(inner);
      else refsOf(inner, out);
    }
  }
  return out;
}

describe('OpenAPI document: Redocly lint', function () {
  let h: Harness;
  let dir: string;
  let served: any;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    dir = mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
    const response = await h.http('GET', '/api/v1/openapi.json');
    assert.equal(response.status, 200);
    served = response.body;
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves the document as written: every operation names its own operationId, one per operation', function () {
    // The docs site derives an id for an operation that has none; the served document equal to the
    // written one means none was derived.
    assert.deepEqual(served, JSON.parse(JSON.stringify(buildOpenApiDocument())));
    const ids = Object.values(
      served.paths as Record<string, Record<string, { operationId?: string; tags?: string[] }>>,
    ).flatMap((item) =>
      Object.values(item).map((operation) => {
        assert.ok(operation.tags && operation.tags.length > 0, `${operation.operationId} has no tags`);
        return operation.operationId;
      }),
    );
    assert.ok(ids.length >= 40, `${ids.length} operations`);
    for (const id of ids) assert.match(String(id), /^[a-z][A-Za-z]+$/);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  });

  it('lints clean with the recommended rules (redocly.yaml), offline', async function () {
    this.timeout(120_000);
    const remote = refsOf(served).filter((ref) => !ref.startsWith('#'));
    assert.deepEqual(remote, [], 'only local $refs: the lint reads nothing from the network');
    const file = path.join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(served, null, 2));
    const report = await lint(file);
    const problems = report.problems.map(
      (p) => `${p.severity} ${p.ruleId} at ${p.location.map((l) => l.pointer).join(', ')}: ${p.message}`,
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
  });

  it('finds the problems it is there to find (a document with them does not pass)', async function () {
    this.timeout(120_000);
    const broken = JSON.parse(JSON.stringify(served));
    delete broken.paths['/scrape'].post.operationId;
    broken.components.schemas.NeverUsed = { type: 'object' };
    broken.components.schemas.ScrapeRequest.required = [
      ...broken.components.schemas.ScrapeRequest.required,
      'no_such_field',
    ];
    const file = path.join(dir, 'broken.json');
    writeFileSync(file, JSON.stringify(broken, null, 2));
    const report = await lint(file);
    assert.deepEqual([...new Set(report.problems.map((p) => p.ruleId))].sort(), [
      'no-required-schema-properties-undefined',
      'no-unused-components',
      'operation-operationId',
    ]);
  });
});
