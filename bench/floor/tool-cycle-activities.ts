import type OpenAI from 'openai';
import type { ToolSource } from '../../lib/tools/source';

/**
 * The durable floor of a custom agent's tool-call cycle (bench:tools): the model's decision (one chat
 * completion from the same fake model) and the tool call (over one kept SDK session), each its own
 * activity, with no database, records or billing.
 */
export function createToolCycleFloorActivities(deps: { llm: OpenAI; model: string; source: ToolSource }) {
  return {
    /** The model's next echo call's arguments, or null when it calls anything else (done). */
    async floorDecide(step: number): Promise<Record<string, unknown> | null> {
      const completion = await deps.llm.chat.completions.create({
        model: deps.model,
        messages: [{ role: 'user', content: `step ${step}` }],
        tools: [{ type: 'function', function: { name: 'echo', parameters: { type: 'object' } } }],
        tool_choice: 'required',
      });
      const call = completion.choices[0]?.message?.tool_calls?.[0];
      if (!call || call.type !== 'function' || call.function.name !== 'echo') return null;
      return JSON.parse(call.function.arguments) as Record<string, unknown>;
    },
    async floorCallTool(args: Record<string, unknown>): Promise<string> {
      const result = await deps.source.call('echo', args);
      if (result.isError) throw new Error(result.text);
      return result.text;
    },
  };
}

export type ToolCycleFloorActivities = ReturnType<typeof createToolCycleFloorActivities>;
