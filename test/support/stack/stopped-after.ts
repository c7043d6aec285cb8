import type { IsolatedStack } from './harness';

/**
 * For a describe block that starts isolated stacks: call it in the block's body, hand it each stack it starts
 * (`stacks.add(await h.startIsolatedStack(...))`), and the block's `after` hook stops them all, so no worker of
 * this file polls on into a later file.
 */
export function stoppedAfter(): { add(stack: IsolatedStack): IsolatedStack } {
  const started: IsolatedStack[] = [];
  after(async () => {
    await Promise.all(started.splice(0).map((stack) => stack.stop()));
  });
  return {
    add(stack) {
      started.push(stack);
      return stack;
    },
  };
}
