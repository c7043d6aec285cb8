/** The fuzz test's budget of generated requests when FUZZ_REQUESTS is not set. */
export const DEFAULT_FUZZ_REQUESTS = 5_200;

/**
 * The number of requests the fuzz test sends: FUZZ_REQUESTS when set (a positive integer), else the
 * default. Under CI (the CI variable set) it may raise the budget, never lower it: a lowered budget
 * would pass with less proven and nothing would say so.
 */
export function fuzzBudget(env: Record<string, string | undefined>): number {
  const raw = env.FUZZ_REQUESTS?.trim();
  if (!raw) return DEFAULT_FUZZ_REQUESTS;
  const requested = Number(raw);
  if (!Number.isSafeInteger(requested) || requested <= 0)
    throw new Error(`FUZZ_REQUESTS=${JSON.stringify(env.FUZZ_REQUESTS)} is not a positive integer`);
  if (env.CI && requested < DEFAULT_FUZZ_REQUESTS)
    throw new Error(
      `FUZZ_REQUESTS=${requested} would lower the fuzz budget below its default ${DEFAULT_FUZZ_REQUESTS} under CI (CI=${env.CI}): unset it`,
    );
  return requested;
}
