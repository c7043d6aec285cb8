/**
 * Which test files the runner (`npm test`, test/support/runner/run.ts) treats specially. Paths are relative to
 * the repository, as `npm test` lists them.
 */

/**
 * Suites at the level of processes: they start `npm start`, kill worker or API processes on purpose, cut
 * Postgres off, restart Temporal, or run the official conformance CLI. `npm run test:fast` leaves them out;
 * `npm test` and CI always run them.
 */
export const PROCESS_LEVEL: readonly string[] = [
  'test/platform/faults.test.ts',
  'test/platform/embedded-start.test.ts',
  'test/platform/embedded-temporal.test.ts',
  'test/scrape/worker-crash.test.ts',
  'test/agents/agent-worker-crash.test.ts',
  'test/agents/custom-agents-crash.test.ts',
  'test/docs/mcp-conformance.test.ts',
  'test/market/mcp-conformance-hosted.test.ts',
  'test/web/oauth-conformance.test.ts',
];

/**
 * Suites that run alone, before the other lanes start: what they provoke depends on timing that a
 * second file running beside them would disturb (a 10 s Postgres outage that must find jobs in flight, a
 * Temporal restart that must catch activities mid-flight). The `npm start` suites run beside the others: they
 * wait on what they observe and own their ports and DATA_DIR.
 */
export const ALONE: readonly string[] = [
  'test/platform/faults.test.ts',
  // PGlite (Postgres compiled to WebAssembly) in the test's own process: a lane process that had run some 50
  // files first crashed once in V8's bookkeeping of WebAssembly code pages (SIGTRAP, "Check failed:
  // jit_page_->allocations_.erase(addr) == 1") as pglite.test.ts started an instance; run early, in lane 0's
  // young process, they keep clear of that.
  'test/market/pglite.test.ts',
  'test/web/oauth.test.ts',
];
