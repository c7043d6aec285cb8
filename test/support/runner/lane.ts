import path from 'node:path';
import { format } from 'node:util';
import Mocha from 'mocha';
import { sql } from 'kysely';
import { runningHarness, stopHarness } from '../stack/harness';
import { assertLedgerReconciles } from '../ledger-reconciliation';
import type { FileResult, FromLane, ToLane } from './messages';

/**
 * One lane of `npm test` (run.ts forks it): runs the test files the runner hands it, one at a time, each in a
 * fresh mocha instance in this process, so the files of a lane share one harness (one database, one Temporal
 * dev server, one set of fakes) as the files of a serial run do. At the end the books of its database must
 * balance, then the harness stops.
 */

const ROOT = path.resolve(__dirname, '..', '..', '..');
const { timeout } = require(path.join(ROOT, '.mocharc.json')) as { timeout: number };
const Base = Mocha.reporters.Base;

/** What mocha's reporters print goes into the current file's report, not to this lane's stdout. */
let printed = '';
Base.consoleLog = (...args: unknown[]) => {
  printed += format(...args) + '\n';
};

/** Each failure as mocha lists it, on its own, so the runner can number all of a run's failures in order. */
function listed(failures: Mocha.Test[]): string[] {
  return failures.map((failure) => {
    const before = printed;
    printed = '';
    Base.list([failure]);
    const text = printed;
    printed = before;
    return text;
  });
}

/** The spec reporter without its per-file summary: the runner prints one for the whole run. */
class FileReporter extends Mocha.reporters.Spec {
  failuresText: string[] = [];
  override epilogue(): void {
    this.failuresText = listed((this as unknown as { failures: Mocha.Test[] }).failures);
  }
}

function send(message: FromLane): Promise<void> {
  return new Promise((resolve, reject) =>
    process.send!(message, (err: Error | null) => (err ? reject(err) : resolve())),
  );
}

/**
 * The market runs a file opened that a call still uses when it ends (calls_in_flight > 0): their workflows look
 * at them until they expire (MARKET_RUN_TTL_MINUTES), on into later files. Named in the file's report so the
 * file can end them (issue 33); not a failure.
 */
async function busyMarketRunsSince(since: Date): Promise<string> {
  const harness = runningHarness();
  if (!harness) return '';
  try {
    const { rows } = await sql<{ id: string }>`
      select id from market_runs
      where status = 'open' and calls_in_flight > 0 and expires_at > now() and created_at >= ${since}`.execute(
      (await harness).db,
    );
    return rows.length === 0
      ? ''
      : `  note: ${rows.length} market run(s) this file opened are still in use as it ends: ${rows.map((r) => r.id).join(', ')}\n`;
  } catch {
    return '';
  }
}

async function runFile(file: string): Promise<FileResult> {
  printed = '';
  const started = Date.now();
  const mocha = new Mocha({ timeout, forbidOnly: true, forbidPending: true, color: false });
  const reporters: FileReporter[] = [];
  mocha.reporter(
    class extends FileReporter {
      constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
        super(runner, options);
        reporters.push(this);
      }
    },
  );
  mocha.addFile(path.join(ROOT, file));
  try {
    const passes = await new Promise<number>((resolve) => {
      const runner = mocha.run(() => resolve(runner.stats?.passes ?? 0));
    });
    printed += await busyMarketRunsSince(new Date(started));
    return { file, report: printed, failures: reporters[0]?.failuresText ?? [], passes, ms: Date.now() - started };
  } catch (err) {
    // The file did not load (a syntax or import error): one failure for the file.
    const text = `  1) ${file}\n     ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`;
    return { file, report: printed, failures: [text], passes: 0, ms: Date.now() - started };
  } finally {
    mocha.dispose();
  }
}

/** The lane's end: the books of every account of its database balance, then its stack stops. */
async function finish(): Promise<FromLane> {
  const started = Date.now();
  const failures: string[] = [];
  try {
    const harness = runningHarness();
    if (harness) await assertLedgerReconciles((await harness).db);
  } catch (err) {
    failures.push(
      `  1) lane ${process.env.TEST_LANE}: the ledger reconciliation after its last file\n     ${err instanceof Error ? err.message : String(err)}\n`,
    );
  } finally {
    await stopHarness();
  }
  return { kind: 'finished', failures, ms: Date.now() - started };
}

process.on('message', (message: ToLane) => {
  void (async () => {
    if (message.kind === 'file') await send({ kind: 'file-done', ...(await runFile(message.file)) });
    else {
      await send(await finish());
      process.exit(0);
    }
  })().catch((err) => {
    console.error('lane failed:', err);
    process.exit(1);
  });
});

void send({ kind: 'ready' });
