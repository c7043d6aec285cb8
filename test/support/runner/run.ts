import { fork, type ChildProcess } from 'node:child_process';
import { globSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeWorkflowBundle } from '../../../workers/workflow-bundle';
import type { FileResult, FromLane, ToLane } from './messages';
import { ALONE, PROCESS_LEVEL } from './suites';
import { keepTimings, lastTimings, timingsTable } from './timings';

/**
 * `npm test` (and `npm run test:fast`): every test file, in lanes that run side by side (TEST_LANES, default
 * 2), each lane a process with its own harness running one file at a time, the slowest files first; then
 * the files that must run alone (suites.ts ALONE). Prints each file's report as it ends, one summary in
 * mocha's words ("N passing", "N failing" and the failures), and each file's wall time, slowest first.
 *
 *   npm test [-- FILE...]          every file (or the files named)
 *   npm run test:fast [-- FILE...] without the process-level suites (suites.ts PROCESS_LEVEL)
 */

const ROOT = path.resolve(__dirname, '..', '..', '..');
const args = process.argv.slice(2);
const fast = args.includes('--fast');
const named = args.filter((arg) => !arg.startsWith('--')).map((file) => path.relative(ROOT, path.resolve(file)));
const laneCount = Math.max(1, Number(process.env.TEST_LANES ?? 2));

const files = (named.length ? named : globSync('test/**/*.test.ts', { cwd: ROOT }).sort()).filter(
  (file) => !(fast && PROCESS_LEVEL.includes(file)),
);
const known = lastTimings();
/** The last run's time, else a guess from the file's size (a clean machine has no last run): ~1.5 ms a byte. */
const expectedMs = (file: string) => known[file] ?? statSync(path.join(ROOT, file)).size * 1.5;
const slowestFirst = (a: string, b: string) => expectedMs(b) - expectedMs(a);
const together = files.filter((file) => !ALONE.includes(file)).sort(slowestFirst);
const alone = files.filter((file) => ALONE.includes(file)).sort(slowestFirst);

interface Lane {
  index: number;
  child: ChildProcess;
  /** What the lane printed outside its reports (logs, warnings) since its last file ended. */
  output: string;
  busy: string | null;
  finished: boolean;
}

const perFile = new Map<string, number>();
const failures: string[] = [];
let passes = 0;
let filesDone = 0;

/** As mocha prints a run's duration: 850ms, 42s, 13m. */
function duration(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${Math.round(ms / 1_000)}s`;
  return `${Math.round(ms / 60_000)}m`;
}

function print(text: string) {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

function recordFailures(texts: string[]) {
  for (const text of texts) failures.push(text.replace(/^(\s*)1\) /, `$1${failures.length + 1}) `));
}

async function main(): Promise<number> {
  const started = Date.now();
  if (files.length === 0) {
    print(`no test files${named.length ? ` among ${named.join(', ')}` : ''}`);
    return 1;
  }
  // The workflows bundled once for the whole run: every harness and every worker process loads this file.
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'scrape-test-run-'));
  const bundle = path.join(runDir, 'workflow-bundle.js');
  await writeWorkflowBundle(bundle);
  const lanes = Math.min(laneCount, files.length);
  print(
    `${files.length} test files in ${lanes} lane${lanes > 1 ? 's' : ''}${alone.length ? `, ${alone.length} of them alone first` : ''}${fast ? ' (test:fast: without the process-level suites)' : ''}`,
  );
  try {
    await runLanes(lanes, bundle);
  } finally {
    rmSync(runDir, { recursive: true, force: true });
  }
  print(`\n  ${passes} passing (${duration(Date.now() - started)})`);
  if (failures.length) {
    print(`  ${failures.length} failing\n`);
    for (const text of failures) print(text);
  }
  const missing = files.filter((file) => !perFile.has(file));
  if (missing.length) print(`\n  files that never ended: ${missing.join(', ')}`);
  print(timingsTable(perFile, [[`in all, ${filesDone} files`, Date.now() - started]]));
  keepTimings(perFile);
  return failures.length || missing.length ? 1 : 0;
}

function runLanes(count: number, bundle: string): Promise<void> {
  const queue = [...together];
  const lanes: Lane[] = [];
  return new Promise<void>((resolve) => {
    const next = (lane: Lane) => {
      const message = nextFor();
      if (message.kind === 'file') lane.busy = message.file;
      lane.child.send(message);
    };
    // The files that run alone go first, to lane 0, while its harness is fresh (nothing an earlier file left
    // running beside them) and before the other lanes start (not even their harnesses run beside them); then
    // the rest go to whichever lane is free.
    let alonePhase = alone.length > 0;
    const endAlonePhase = () => {
      alonePhase = false;
      if (queue.length > 0) for (let index = 1; index < count; index++) startLane(index);
    };
    const nextFor = (): ToLane => {
      if (alonePhase) {
        const file = alone.shift();
        if (file) return { kind: 'file', file };
        endAlonePhase();
      }
      const file = queue.shift();
      return file ? { kind: 'file', file } : { kind: 'finish' };
    };
    const flush = (lane: Lane) => {
      if (lane.output) print(lane.output);
      lane.output = '';
    };
    const onMessage = (lane: Lane, message: FromLane) => {
      if (message.kind === 'ready') return next(lane);
      if (message.kind === 'file-done') {
        done(lane, message);
        return next(lane);
      }
      flush(lane);
      lane.finished = true;
      recordFailures(message.failures);
      if (lanes.every((other) => other.finished)) return resolve();
    };
    const done = (lane: Lane, result: FileResult) => {
      lane.busy = null;
      flush(lane);
      print(result.report);
      perFile.set(result.file, result.ms);
      passes += result.passes;
      filesDone++;
      recordFailures(result.failures);
    };
    const startLane = (index: number) => {
      const child = fork(path.join(__dirname, 'lane.ts'), [], {
        cwd: ROOT,
        env: { ...process.env, TEST_LANE: String(index), TEST_WORKFLOW_BUNDLE: bundle },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      const lane: Lane = { index, child, output: '', busy: null, finished: false };
      lanes.push(lane);
      child.stdout!.on('data', (chunk) => (lane.output += chunk));
      child.stderr!.on('data', (chunk) => (lane.output += chunk));
      child.on('message', (message: FromLane) => onMessage(lane, message));
      child.once('exit', (code, signal) => {
        if (lane.finished) return;
        flush(lane);
        lane.finished = true;
        recordFailures([
          `  1) lane ${index} ended (${signal ?? `exit ${code}`})${lane.busy ? ` while running ${lane.busy}` : ''}\n`,
        ]);
        // Files that were to run alone go unrun (reported as never ended); the others still run.
        if (alonePhase) endAlonePhase();
        if (lanes.every((other) => other.finished)) resolve();
      });
    };
    startLane(0);
    if (!alonePhase) for (let index = 1; index < count; index++) startLane(index);
  });
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
