import { randomUUID } from 'node:crypto';
import type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { Db } from '../../db/connect';
import {
  listConversationBefore,
  listConversationNewestFirst,
  putConversationMessage,
  replaceConversationFrom,
} from '../../db/repos/custom-agent-runs';
import { findSkillMdContent } from '../../db/skills/catalogue';
import { toolImagesOfReplies } from '../../db/repos/agent-tool-images';
import type { SkillsBody } from '../../lib/schemas/custom-agents';
import { doneTool, parseToolArguments } from './model-tools';
import type { CustomAgentRunRequest } from './job';
import { customAgentSystemPrompt, type SkillsSelection } from './prompts';
import { imagesMessage } from './tool-images';
import { asTool, readToolbox } from './toolbox';

/**
 * The conversation memory of tool-only runs (custom agents): the whole exchange with the model, in
 * order (custom_agent_messages by seq). The workflow holds the next position: each decision rewrites
 * the conversation from its position (a retried attempt replaces what an earlier one wrote), and each
 * call of an answer gets its tool message at the position the workflow gave it.
 */

/** A call of the model's answer, with the model's id of it (its tool message answers that id). */
export interface ConversationCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** Where a call's answer goes in the conversation: its position and the model's id of the call. */
export interface ConversationReply {
  seq: number;
  callId: string;
}

/** The contract's skills (an array of AgentSkillSelection) or a SkillsConfig, as the prompt helper reads it. */
async function skillsOf(db: Db, skills: SkillsBody | undefined): Promise<SkillsSelection | undefined> {
  const selected = Array.isArray(skills) ? skills : skills?.mode === 'selected' ? (skills.selected ?? []) : [];
  if (selected.length === 0) return undefined;
  const filled = await Promise.all(
    selected.map(async (skill) => {
      const ref = skill as { provider?: string; externalId?: string };
      if (skill.skillMdContent || !ref.provider || !ref.externalId) return skill;
      return {
        ...skill,
        skillMdContent: await findSkillMdContent(db, { provider: ref.provider, externalId: ref.externalId }),
      };
    }),
  );
  return { mode: 'selected', selected: filled };
}

/**
 * The user message with the images of the latest tool results: those of the tool messages after
 * the conversation's last assistant message (one message after them all: the chat API wants an
 * answer's tool messages together, right after it).
 */
async function latestToolImages(db: Db, jobId: string, earlier: { seq: number; message: unknown }[]) {
  const latest: { seq: number; callId: string }[] = [];
  for (let i = earlier.length - 1; i >= 0; i--) {
    const message = earlier[i].message as { role?: string; tool_call_id?: string };
    if (message.role !== 'tool') break;
    latest.unshift({ seq: earlier[i].seq, callId: message.tool_call_id ?? '' });
  }
  const images = await toolImagesOfReplies(
    db,
    jobId,
    latest.map((r) => r.seq),
  );
  return imagesMessage(
    'The images your latest tool calls returned (their tool messages describe them):',
    latest.map((reply) => {
      const own = images.filter((image) => image.replySeq === reply.seq && image.callId === reply.callId);
      return { label: `Tool call ${reply.callId} (${own[0]?.tool ?? ''}):`, images: own };
    }),
  );
}

export function conversationMemory(db: Db) {
  return {
    /**
     * The next decision's prompt: the conversation before `seq`, then what this decision adds (the
     * opening messages on the first one, the workflow's notes). With `toolsLeft` 0 only `done` is
     * offered. With `images` (the model accepts them), the images of the latest tool results follow
     * their tool messages in one user message; it is not kept, so older results keep only the
     * descriptions in their tool messages.
     */
    async prompt(
      jobId: string,
      request: CustomAgentRunRequest,
      input: { seq: number; notes: string[]; toolsLeft: number; images?: boolean },
    ) {
      // The toolbox and the conversation before `seq` are read together (two connections, one wait); what an
      // earlier attempt wrote from `seq` on is replaced when the answer is kept.
      const [toolbox, earlier] = await Promise.all([
        readToolbox(db, jobId),
        listConversationBefore(db, jobId, input.seq),
      ]);
      const stored = toolbox ?? { toolbox: [], notes: [] };
      const fresh: ChatCompletionMessageParam[] = [];
      if (input.seq === 0) {
        const system = customAgentSystemPrompt({
          system_prompt: request.system_prompt,
          expected_output: request.expected_output,
          skills: await skillsOf(db, request.skills),
          maxToolCalls: request.max_tool_calls,
          sourceNotes: stored.notes,
          structured: !!request.structured_output,
        });
        fresh.push({ role: 'system', content: system }, { role: 'user', content: `Task: ${request.task}` });
      }
      if (input.notes.length) fresh.push({ role: 'user', content: input.notes.join('\n') });
      const messages = earlier.map((m) => m.message as unknown as ChatCompletionMessageParam);
      const shown = input.images ? await latestToolImages(db, jobId, earlier) : null;
      if (shown) messages.push(shown);
      messages.push(...fresh);
      const tools: ChatCompletionTool[] = [
        ...(input.toolsLeft > 0 ? stored.toolbox.map(asTool) : []),
        doneTool(request.structured_output, 'the run'),
      ];
      return { messages, tools, fresh };
    },

    /** Keeps the model's answer after what the decision added; returns its calls and the position after it. */
    async keepAnswer(
      jobId: string,
      seq: number,
      fresh: ChatCompletionMessageParam[],
      answer: ChatCompletionMessage | undefined,
    ) {
      const calls: ConversationCall[] = (answer?.tool_calls ?? [])
        .filter((c) => c.type === 'function')
        .map((c) => ({
          id: c.id || randomUUID(),
          name: c.function.name,
          args: parseToolArguments(c.function.arguments),
        }));
      const text = answer?.content?.trim() || null;
      const assistant: ChatCompletionMessageParam = {
        role: 'assistant',
        content: text,
        ...(calls.length > 0 && {
          tool_calls: calls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: JSON.stringify(c.args) },
          })),
        }),
      };
      const toStore = [...fresh, assistant];
      await replaceConversationFrom(
        db,
        jobId,
        seq,
        toStore.map((m) => JSON.stringify(m)),
      );
      return { calls, text, nextSeq: seq + toStore.length };
    },

    /**
     * The tool message answering one call. A tool call's record rewrites it (a retried record writes
     * the same); an answer to `done` is kept as first written (the final answer is read from it).
     */
    async reply(jobId: string, at: ConversationReply, content: string, rewrite: boolean): Promise<void> {
      const message = JSON.stringify({ role: 'tool', tool_call_id: at.callId, content });
      await putConversationMessage(db, jobId, at.seq, message, rewrite);
    },

    /** The run's final answer: the accepted done call's, else the model's last words. */
    async finalAnswer(jobId: string): Promise<{ success: boolean; answer: string | null; data: unknown }> {
      const messages = (await listConversationNewestFirst(db, jobId)).map(
        (m) =>
          m.message as unknown as {
            role: string;
            content: string | null;
            tool_calls?: { id: string; function: { name: string } }[];
            tool_call_id?: string;
          },
      );
      const doneCall = messages.find(
        (m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.function.name === 'done'),
      );
      const doneId = doneCall?.tool_calls?.find((c) => c.function.name === 'done')?.id;
      const doneResult = messages.find((m) => m.role === 'tool' && m.tool_call_id === doneId);
      let final: { success: boolean; answer: string | null; data: unknown } | null = null;
      try {
        final = doneResult?.content ? JSON.parse(doneResult.content) : null;
        if (final && typeof final !== 'object') final = null;
      } catch {
        final = null;
      }
      const lastWords = messages.find((m) => m.role === 'assistant' && m.content)?.content ?? null;
      return { success: final?.success ?? false, answer: final?.answer ?? lastWords, data: final?.data ?? null };
    },
  };
}
