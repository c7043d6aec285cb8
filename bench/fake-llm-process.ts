/**
 * The fake OpenAI-compatible server (test/support/fakes/fake-openai.ts) as its own process, so the
 * benchmark can count its CPU apart from everything else. Prints `fake LLM listening on <url>`.
 */
import { startFakeOpenAI } from '../test/support/fakes/fake-openai';

void startFakeOpenAI().then((fake) => {
  // It records every request for tests; a benchmark sends thousands: forget them regularly.
  setInterval(() => (fake.requests.length = 0), 2_000).unref();
  process.stdout.write(`fake LLM listening on ${fake.baseURL}\n`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void fake.close().finally(() => process.exit(0)));
});
