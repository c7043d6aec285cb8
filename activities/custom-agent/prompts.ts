import { skillsInstruction, type SkillsSelection } from '../agent/prompts';

export const CUSTOM_AGENT_SYSTEM_PROMPT = `You are an agent that completes the user's task with the tools you are given.
Act by calling tools; their results come back to you. Call several tools in one answer only when they do not depend on each other.
Tool results may be cut when they are large; a note says so. A tool call that failed is reported as an error result: do not repeat a call
that may have had an effect (creating, sending, paying) unless you checked it did not happen.
When the task is complete (or cannot be completed), call done with your final answer.`;

export interface CustomAgentPromptInput {
  system_prompt?: string | null;
  expected_output?: string | null;
  skills?: SkillsSelection;
  maxToolCalls: number;
  sourceNotes: string[];
  structured: boolean;
}

export function customAgentSystemPrompt(input: CustomAgentPromptInput): string {
  return [
    input.system_prompt?.trim() || null,
    CUSTOM_AGENT_SYSTEM_PROMPT,
    `You may make at most ${input.maxToolCalls} tool call(s) in this whole run; calls past that are not sent.`,
    input.expected_output?.trim() ? `Expected output: ${input.expected_output.trim()}` : null,
    input.structured ? 'Give the requested structured output as `data` when you call done.' : null,
    skillsInstruction(input.skills),
    input.sourceNotes.length ? 'Unavailable tool sources:\n' + input.sourceNotes.map((n) => `- ${n}`).join('\n') : null,
  ]
    .filter(Boolean)
    .join('\n\n');
}
