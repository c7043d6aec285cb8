import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { fieldListToJsonSchema, type FieldSpec } from '../../lib/llm/structured-output';

/** The `done` tool every agent loop offers: the final answer, and the structured data when the run asks for it. */
export function doneTool(
  structuredOutput: FieldSpec[] | undefined,
  finishes: 'the run' | 'the current task',
): ChatCompletionTool {
  const properties: Record<string, unknown> = {
    success: { type: 'boolean', description: 'false when the task could not be completed' },
    answer: { type: 'string', description: 'The final answer to the task, in plain text' },
  };
  if (structuredOutput)
    properties.data = { ...fieldListToJsonSchema(structuredOutput), description: 'The requested structured output' };
  return {
    type: 'function',
    function: {
      name: 'done',
      description: `Finish ${finishes} with the final answer` + (structuredOutput ? ' and the structured data' : ''),
      parameters: {
        type: 'object',
        properties,
        required: structuredOutput ? ['success', 'data'] : ['success', 'answer'],
        additionalProperties: false,
      },
    },
  };
}

/** A tool call's arguments as the model wrote them: an object, whatever it sent. */
export function parseToolArguments(raw: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(raw || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : { value: parsed };
  } catch {
    return { invalid_arguments: raw.slice(0, 500) };
  }
}
