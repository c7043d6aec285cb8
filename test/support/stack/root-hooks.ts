import { runningHarness, stopHarness } from './harness';
import { assertLedgerReconciles } from '../ledger-reconciliation';

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    try {
      // After the whole suite, before the harness stops: the books of every account must balance.
      const started = runningHarness();
      if (started) await assertLedgerReconciles((await started).db);
    } finally {
      await stopHarness();
    }
  },
};
