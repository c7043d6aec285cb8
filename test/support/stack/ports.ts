import { createServer } from 'node:net';

/**
 * Ports for servers that must be told their port before they bind it (a Temporal dev server, an API process).
 * Each lane of `npm test` (TEST_LANE) takes its ports from a block of its own below the kernel's ephemeral
 * range (32768+, where port-0 binds and outgoing connections take theirs), and hands out each port once:
 * another lane, or this lane's next caller, cannot be given the port a caller is about to bind.
 */
const BLOCK_SIZE = 1_000;
const FIRST_BLOCK = 20_000;
const lane = Number(process.env.TEST_LANE ?? 0);
const blockStart = FIRST_BLOCK + (lane % 12) * BLOCK_SIZE;
// Where in the block this process starts: differs between runs, so a port a killed run left bound is skipped.
let offset = Math.floor(Math.random() * BLOCK_SIZE);

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port of this lane's block that nothing holds now and that no earlier call of this process was given. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < BLOCK_SIZE; tries++) {
    const port = blockStart + (offset++ % BLOCK_SIZE);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${blockStart}-${blockStart + BLOCK_SIZE - 1}`);
}
