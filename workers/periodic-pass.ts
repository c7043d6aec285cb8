import { log } from '../lib/log';

export interface PeriodicPass {
  /** Stops the passes and waits for the one under way. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` at once and then every `everyMs`, never two at a time (a tick while one is under way
 * is skipped). A failed pass is logged at warn as `<name> pass failed`; the next tick tries again.
 * `pass` receives `stopped()` to end a long pass early once stop() was called.
 */
export function startPeriodicPass(
  name: string,
  everyMs: number,
  pass: (stopped: () => boolean) => Promise<void>,
): PeriodicPass {
  let current: Promise<void> | null = null;
  let stopped = false;
  const tick = () => {
    if (current || stopped) return;
    current = pass(() => stopped)
      .catch((err) => {
        if (!stopped) log().warn({ err }, `${name} pass failed`);
      })
      .finally(() => {
        current = null;
      });
  };
  const timer = setInterval(tick, everyMs);
  timer.unref();
  tick();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await current;
    },
  };
}
