import { stopHarness } from './harness';

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopHarness();
  },
};
