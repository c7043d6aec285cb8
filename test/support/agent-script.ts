import type { FakeReply, RecordedRequest } from './fakes/fake-openai';

/** The text of the latest observation the agent sent to the model. */
export function observationText(request: RecordedRequest): string {
  const messages = request.body.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const content = messages[i].content;
    const parts = Array.isArray(content) ? content : [{ type: 'text', text: content ?? '' }];
    const text = parts.find((p) => p.type === 'text' && String(p.text).startsWith('Current observation'))?.text;
    if (text) return String(text);
  }
  throw new Error('no observation in this request');
}

/** The index of the first interactive element whose line matches `pattern`, e.g. /Next page/. */
export function elementIndex(observation: string, pattern: RegExp): number {
  for (const line of observation.split('\n')) {
    const match = /^\s*\[(\d+)\]/.exec(line);
    if (match && pattern.test(line)) return Number(match[1]);
  }
  throw new Error(`no element matching ${pattern} in:\n${observation}`);
}

export const act = (name: string, args: object = {}, goal?: string): FakeReply => ({
  toolCalls: [{ name, arguments: args }],
  content: goal,
});
export const actMany = (calls: [string, object][], goal?: string): FakeReply => ({
  toolCalls: calls.map(([name, args]) => ({ name, arguments: args })),
  content: goal,
});

/** A reply computed from the observation of the request it answers. */
export const onPage =
  (decide: (observation: string, request: RecordedRequest) => FakeReply): FakeReply =>
  (request) =>
    decide(observationText(request), request);

export function isAgentDecision(request: RecordedRequest): boolean {
  return request.kind === 'chat' && Array.isArray(request.body.tools) && request.body.tools.length > 0;
}

export function toolNames(request: RecordedRequest): string[] {
  return (request.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
}
