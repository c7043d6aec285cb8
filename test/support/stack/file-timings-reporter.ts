import Mocha from 'mocha';

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;

/**
 * mocha's spec reporter, then each test file's wall time (its hooks included), slowest first, so the
 * next slow file is seen the day it lands. A file's time runs from its first top-level suite's start to
 * its last one's end; the root hooks after the last file (ledger reconciliation, stopping the stack) are
 * printed on their own line.
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
      const file = suite.file ?? suite.title;
      perFile.set(file, (perFile.get(file) ?? 0) + (lastFileEnd - start));
    });
    runner.once(EVENT_RUN_END, () => {
      const rows = [...perFile].sort((a, b) => b[1] - a[1]);
      const total = Date.now() - runStart;
      const seconds = (ms: number) => (ms / 1000).toFixed(1).padStart(7);
      const root = process.cwd() + '/';
      console.log('\n  Wall time per test file (hooks included), slowest first:');
      for (const [file, ms] of rows) console.log(`  ${seconds(ms)} s  ${file.replace(root, '')}`);
      console.log(`  ${seconds(Date.now() - lastFileEnd)} s  (root hooks after the last file)`);
      console.log(`  ${seconds(total)} s  in all, ${rows.length} files\n`);
    });
  }
}

export = SpecWithFileTimings;
