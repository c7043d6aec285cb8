/**
 * The fake OpenAI-compatible server (test/support/fakes/fake-openai.ts) as its own process, so the
 * benchmark can count its CPU apart from everything else. Prints `fake LLM listening on <url>`.
 *
 * FAKE_LLM_AGENT=navigate-then-done (bench:soak): a browser agent's decision navigates to the first
 * loopback URL of its task, and once the observation shows that page, finishes (`done`); every other
 * request gets the fake's built-in reply.
 */
import { builtInReply, startFakeOpenAI, type FakeReply, type RecordedRequest } from '../test/support/fakes/fake-openai';
import { isAgentDecision, observationText, toolNames } from '../test/support/agent-script';

function navigateThenDone(request: RecordedRequest): FakeReply {
  if (!isAgentDecision(request) || !toolNames(request).includes('done')) return builtInReply(request);
  const texts = (request.body.messages ?? []).flatMap((m) =>
    Array.isArray(m.content) ? m.content.map((p) => String(p.text ?? '')) : [String(m.content ?? '')],
  );
  const target = texts.map((t) => /Open (http:\/\/127\.0\.0\.1:\d+\/\S+)/.exec(t)?.[1]).find(Boolean);
  let observation = '';
  try {
    observation = observationText(request);
  } catch {
    // no observation yet
  }
  if (!target || observation.includes(new URL(target).pathname))
    return { toolCalls: [{ name: 'done', arguments: { success: true, answer: 'soak: page opened' } }] };
  return { toolCalls: [{ name: 'navigate', arguments: { url: target } }] };
}

void startFakeOpenAI().then((fake) => {
  // It records every request for tests; a benchmark sends thousands: forget them regularly.
  setInterval(() => (fake.requests.length = 0), 2_000).unref();
  if (process.env.FAKE_LLM_AGENT === 'navigate-then-done') fake.setDefault(navigateThenDone);
  process.stdout.write(`fake LLM listening on ${fake.baseURL}\n`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void fake.close().finally(() => process.exit(0)));
});
