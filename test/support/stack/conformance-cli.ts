import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pins from '../../../scripts/tool-pins.json';

/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
 * scripts/tool-pins.json, installed outside the clone by scripts/setup-conformance.sh) against a server as
 * a child process on the Node the tests run on (the project's LTS; the CLI needs Node >= 22), and reads
 * its per-scenario results.
 */

/** The protocol revisions whose frozen requirement sets the CLI runs (`--requirements`). */
export type Revision = '2025-11-25' | '2026-07-28';
export const REVISIONS: readonly Revision[] = ['2025-11-25', '2026-07-28'];

export type CheckStatus = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';

/** One check as the CLI writes it to `<output>/server-<scenario>-<time>/checks.json`. */
export interface ConformanceCheck {
  id: string;
  name: string;
  description: string;
  status: CheckStatus;
  errorMessage?: string;
  details?: unknown;
}

/**
 * A scenario passes when at least one of its checks succeeded and none is a FAILURE or a WARNING (the CLI's
 * own rule for a scenario run alone); SKIPPED and INFO checks do not count either way. A scenario with
 * neither successes nor failures (only SKIPPED/INFO checks) did not apply to the server: `skipped`.
 */
export type Verdict = 'pass' | 'fail' | 'skipped';

export interface ScenarioResult {
  scenario: string;
  verdict: Verdict;
  checks: ConformanceCheck[];
  /** The messages of the failed and warning checks, `<check id>: <message>`. */
  problems: string[];
}

export interface ConformanceRun {
  revision: Revision;
  url: string;
  /** By scenario name, every scenario the requirement set ran (scored or not). */
  scenarios: Map<string, ScenarioResult>;
  /** The CLI's console output, for a failure message. */
  output: string;
}

const CACHE_ROOT = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'scrape-platform');

/** The pinned CLI where scripts/setup-conformance.sh installs it, and the Node to run it with. */
export function conformanceTooling(): { node: string; cli: string; version: string } {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 22) {
    throw new Error(
      `The MCP conformance CLI needs Node >= 22; the tests run on ${process.version}. Run them through npm (scripts/with-node.sh).`,
    );
  }
  const cli = path.join(
    CACHE_ROOT,
    `mcp-conformance-${pins.conformance}`,
    'node_modules',
    '@modelcontextprotocol',
    'conformance',
    'dist',
    'index.js',
  );
  if (!existsSync(cli)) {
    throw new Error(
      `The MCP conformance CLI ${pins.conformance} is not installed (expected ${cli}). Run \`bash scripts/setup-conformance.sh\` (npm test runs it through scripts/setup.sh).`,
    );
  }
  return { node: process.execPath, cli, version: pins.conformance };
}

function assertLoopback(url: string): void {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (!(host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host))) {
    throw new Error(`The conformance suite is only run against loopback servers, not ${url}`);
  }
}

/** `server-<scenario>-<ISO time with : and . replaced by ->` */
const RESULT_DIR = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

function judge(scenario: string, checks: ConformanceCheck[]): ScenarioResult {
  const bad = checks.filter((check) => check.status === 'FAILURE' || check.status === 'WARNING');
  return {
    scenario,
    verdict: bad.length > 0 ? 'fail' : checks.some((check) => check.status === 'SUCCESS') ? 'pass' : 'skipped',
    checks,
    problems: bad.map((check) => `${check.id}: ${check.errorMessage ?? check.status}`),
  };
}

/**
 * Runs `conformance server --requirements <revision>` (or only `scenario` of it) against `url` (loopback
 * only) and returns each scenario's checks. `timeoutMs` is the CLI's per-scenario timeout. The CLI's exit code is not used: it is
 * non-zero whenever any scenario fails, and the callers judge scenario by scenario.
 */
export async function runConformance(
  url: string,
  revision: Revision,
  options: { timeoutMs?: number; scenario?: string } = {},
): Promise<ConformanceRun> {
  assertLoopback(url);
  const { node, cli } = conformanceTooling();
  const outputDir = await mkdtemp(path.join(os.tmpdir(), 'mcp-conformance-'));
  // One scenario runs at the revision's wire as the requirement set would run it (--force: even one the set
  // runs although it is outside the scenario's own version window).
  const selection = options.scenario
    ? ['--scenario', options.scenario, '--spec-version', revision, '--force']
    : ['--requirements', revision];
  const args = [
    cli,
    'server',
    '--url',
    url,
    ...selection,
    '--output-dir',
    outputDir,
    '--timeout',
    String(options.timeoutMs ?? 10_000),
  ];
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(node, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
      let text = '';
      child.stdout.on('data', (chunk) => (text += chunk));
      child.stderr.on('data', (chunk) => (text += chunk));
      child.once('error', reject);
      child.once('exit', () => resolve(text));
    });
    const scenarios = new Map<string, ScenarioResult>();
    for (const entry of await readdir(outputDir)) {
      const scenario = RESULT_DIR.exec(entry)?.[1];
      if (!scenario) continue;
      const file = path.join(outputDir, entry, 'checks.json');
      // A scenario that threw leaves its directory without checks.json; the CLI printed why.
      const checks: ConformanceCheck[] = existsSync(file)
        ? JSON.parse(await readFile(file, 'utf8'))
        : [
            {
              id: scenario,
              name: scenario,
              description: 'Failed to run scenario',
              status: 'FAILURE',
              errorMessage: crashMessage(output, scenario),
            },
          ];
      scenarios.set(scenario, judge(scenario, checks));
    }
    if (scenarios.size === 0)
      throw new Error(`The conformance CLI ran no scenario against ${url}:\n${output.slice(-4000)}`);
    return { revision, url, scenarios, output };
  } finally {
    await rm(outputDir, { recursive: true, force: true });
  }
}

function crashMessage(output: string, scenario: string): string {
  const at = output.indexOf(`Failed to run scenario ${scenario}:`);
  return at < 0
    ? 'the scenario wrote no results'
    : output
        .slice(at, at + 500)
        .split('\n')
        .slice(0, 3)
        .join(' ');
}

/**
 * What a server is expected to pass in one scenario: `'pass'` — the whole scenario; or a list of check ids —
 * each of these checks ran and every occurrence succeeded (for a scenario that mixes what applies to a
 * server with what does not, e.g. `caching` asks for the hints of prompts/list, which a tool server lacks).
 */
export type Expectation = 'pass' | readonly string[];
/** By scenario name. */
export type Expectations = Readonly<Record<string, Expectation>>;

/** Why `expectation` is not met in `run` (empty when it is): `<scenario>: <reason>` lines with the CLI's messages. */
export function unmetExpectation(run: ConformanceRun, scenario: string, expectation: Expectation): string[] {
  const result = run.scenarios.get(scenario);
  if (!result) return [`${scenario}: not run by the CLI`];
  if (expectation === 'pass')
    return result.verdict === 'pass'
      ? []
      : [`${scenario}: ${result.verdict}${result.problems.length ? ` — ${result.problems.join('; ')}` : ''}`];
  return expectation.flatMap((id) => {
    const checks = result.checks.filter((check) => check.id === id);
    if (checks.length === 0) return [`${scenario}: check ${id} did not run`];
    const bad = checks.filter((check) => check.status !== 'SUCCESS');
    return bad.length
      ? [
          `${scenario}: ${id} ${bad.map((check) => `${check.status}${check.errorMessage ? ` (${check.errorMessage})` : ''}`).join(', ')}`,
        ]
      : [];
  });
}

/** Every unmet expectation of `expectations` in `run` (the list a test asserts to be empty). */
export function unmetExpectations(run: ConformanceRun, expectations: Expectations): string[] {
  return Object.entries(expectations).flatMap(([scenario, expectation]) =>
    unmetExpectation(run, scenario, expectation),
  );
}

export interface ScenarioComparison {
  scenario: string;
  /** Whether the expectation is met directly / through the endpoint. */
  direct: boolean;
  through: boolean;
  /** Why it is not met through the endpoint (empty when it is). */
  problems: string[];
}

/**
 * Compares, scenario by scenario, a run against a server directly with a run against an endpoint in front of
 * it (the hosted `/mcp/{entryId}` in front of the conformance fixture): every scenario the server passes
 * directly (the whole scenario), and each of `expectations` (check by check for a scenario it passes only in
 * part), judged on both sides. `regressions` are the scenarios met directly but not through the endpoint —
 * what a test asserts to be empty ("every scenario the fixture passes directly also passes through the hosted
 * endpoint"), so a scenario a new CLI version adds is judged without being listed first.
 */
export function compareRuns(
  direct: ConformanceRun,
  through: ConformanceRun,
  expectations: Expectations,
): { rows: ScenarioComparison[]; regressions: ScenarioComparison[] } {
  if (direct.revision !== through.revision)
    throw new Error(`Comparing runs of different revisions (${direct.revision}, ${through.revision})`);
  const judged: Record<string, Expectation> = { ...expectations };
  for (const [scenario, result] of direct.scenarios) if (result.verdict === 'pass') judged[scenario] = 'pass';
  const rows = Object.entries(judged)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([scenario, expectation]) => {
      const problems = unmetExpectation(through, scenario, expectation);
      return {
        scenario,
        direct: unmetExpectation(direct, scenario, expectation).length === 0,
        through: problems.length === 0,
        problems,
      };
    });
  return { rows, regressions: rows.filter((row) => row.direct && !row.through) };
}
