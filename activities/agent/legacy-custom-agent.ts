import type { Db } from '../../db/connect';
import { recordAgentToolCall, type AgentToolCallRow } from '../../db/repos/agent-tool-calls';
import type { AgentBrainActivities, AgentToolbox } from './brain';
import { conversationMemory, type ConversationCall } from './conversation';

/**
 * The activities of custom-agent runs started before the one agent loop (patch `one-agent-loop`):
 * such a run replays workflows/custom-agent-v1.ts to its end, which calls these names. Each is the
 * one loop's activity under the old name and shape. They go with that file, once no run started
 * before the patch is open (docs/operations.md, "Workflow versions").
 */
export function createLegacyCustomAgentActivities(db: Db, brain: AgentBrainActivities) {
  const conversation = conversationMemory(db);
  return {
    async prepareCustomAgentToolbox(input: { jobId: string }): Promise<AgentToolbox> {
      return brain.prepareAgentToolbox(input);
    },

    async decideCustomAgentStep(input: {
      jobId: string;
      turn: number;
      seq: number;
      notes: string[];
      toolsLeft: number;
    }): Promise<
      | { kind: 'calls'; calls: ConversationCall[]; nextSeq: number; text: string | null }
      | { kind: 'stop'; reason: string }
    > {
      const decision = await brain.decideNextActions({
        jobId: input.jobId,
        taskIndex: 0,
        step: input.turn,
        notes: input.notes,
        toolsLeft: input.toolsLeft,
        seq: input.seq,
      });
      if (decision.kind === 'stop') return decision;
      return {
        kind: 'calls',
        calls: decision.actions.map(({ id, name, args }) => ({ id: id ?? '', name, args })),
        nextSeq: decision.nextSeq ?? input.seq,
        text: decision.goal,
      };
    },

    /** The old workflow wrote the model's words itself (`text`): kept as given. */
    async recordCustomAgentToolCall(
      input: AgentToolCallRow & { seq: number; callId: string; text: string },
    ): Promise<void> {
      const { seq, callId, text, ...row } = input;
      await conversation.reply(input.jobId, { seq, callId }, text, true);
      await recordAgentToolCall(db, row);
    },

    async acceptCustomAgentAnswer(input: {
      jobId: string;
      seq: number;
      callId: string;
      args: Record<string, unknown>;
      attempt: number;
    }): Promise<{ accepted: boolean; message: string }> {
      const verdict = await brain.acceptFinalAnswer({
        jobId: input.jobId,
        taskIndex: 0,
        args: input.args,
        attempt: input.attempt,
        reply: { seq: input.seq, callId: input.callId },
      });
      return { accepted: verdict.accepted, message: verdict.message };
    },

    async finishCustomAgentJob(input: { jobId: string; error: string | null; stoppedBy?: string | null }) {
      return brain.finishAgentJob(input);
    },
  };
}

export type LegacyCustomAgentActivities = ReturnType<typeof createLegacyCustomAgentActivities>;
