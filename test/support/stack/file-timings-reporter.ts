import path from 'node:path';
import Mocha from 'mocha';
import { timingsTable } from '../runner/timings';

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;

/**
 * mocha's spec reporter, then each test file's wall time (its hooks included), slowest first, for a run of
 * mocha itself (`npm run test:file`); `npm test` prints the same table from its lanes. A file's time runs
 * from its first top-level suite's start to its last one's end.
 */
class SpecWithFileTimings extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    const began = new Map<Mocha.Suite, number>();
    const perFile = new Map<string, number>();
    const runStart = Date.now();
    let lastFileEnd = runStart;
    runner.on(EVENT_SUITE_BEGIN, (suite: Mocha.Suite) => {
      if (suite.parent?.root) began.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite: Mocha.Suite) => {
      const start = began.get(suite);
      if (start === undefined) return;
      lastFileEnd = Date.now();
      const file = suite.file ? path.relative(process.cwd(), suite.file) : suite.title;
      perFile.set(file, (perFile.get(file) ?? 0) + (lastFileEnd - start));
    });
    runner.once(EVENT_RUN_END, () => {
      Mocha.reporters.Base.consoleLog(
        timingsTable(perFile, [
          ['(root hooks after the last file)', Date.now() - lastFileEnd],
          [`in all, ${perFile.size} files`, Date.now() - runStart],
        ]),
      );
    });
  }
}

export = SpecWithFileTimings;
