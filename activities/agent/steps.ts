import type {
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { Db } from '../../db/connect';
import { listTaskResults, stepsThrough } from '../../db/repos/agent-steps';
import { toolImagesOfStep } from '../../db/repos/agent-tool-images';
import type { AgentOutcome } from '../../db/schema';
import { AGENT_LOOP_TOOLS, toolsFor, type BrowserToolName } from './browser/tools';
import { doneTool } from './model-tools';
import { FORUM_TOOLS, MICROBLOG_TOOLS } from './social-tools';
import { OPTIMIZATION_PROFILES, type LoopJob } from './job';
import {
  AGENT_SYSTEM_PROMPT,
  agentInstructions,
  modeInstruction,
  secretsInstruction,
  skillsInstruction,
  socialSystemPrompt,
  type SkillsSelection,
} from './prompts';
import { imagesMessage } from './tool-images';
import { asTool, readToolbox } from './toolbox';

/**
 * The step memory of browser and social runs: each step's observation, actions and outcomes are kept
 * (agent_steps, written by the observe activity, the decision and recordStep), and each decision's
 * prompt is rebuilt from the task, earlier tasks, the latest steps and the current observation.
 */

const EXTRACT_TOOL: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'extract',
    description:
      'Answer a question from the current page content (reads the whole page text, not just the visible part).',
    parameters: {
      type: 'object',
      properties: { question: { type: 'string' } },
      required: ['question'],
      additionalProperties: false,
    },
  },
};

export function stepMemory(db: Db) {
  return {
    /**
     * A step's prompt: the task, earlier tasks, the latest steps with their outcomes, notes, and the
     * current observation. With `images` (the model accepts them), the images the previous step's
     * tool calls returned come before the observation (older steps' outcomes only describe theirs).
     */
    async prompt(
      run: Extract<LoopJob, { memory: 'steps' }>,
      input: { taskIndex: number; step: number; notes: string[]; toolsLeft?: number; images?: boolean },
    ) {
      const { job, request, tasks } = run;
      const { taskIndex, step } = input;
      const jobId = job.id;
      const profile = OPTIMIZATION_PROFILES[request.optimization_mode];
      const steps = await stepsThrough(db, { jobId, taskIndex, step });
      const current = steps[steps.length - 1];
      const history = steps.slice(0, -1).slice(-profile.historySteps);
      const earlier = await listTaskResults(db, jobId);

      const platform = (request as { platform?: 'forum' | 'microblog' }).platform;
      const system = [
        platform ? socialSystemPrompt(platform) : AGENT_SYSTEM_PROMPT,
        modeInstruction(request),
        secretsInstruction(request.sensitive_data ?? []),
        skillsInstruction((request as { skills?: SkillsSelection }).skills),
        agentInstructions((request as { agent_instructions?: string }).agent_instructions),
      ]
        .filter(Boolean)
        .join('\n\n');
      const context: string[] = [`Task: ${tasks[taskIndex]}`];
      if (earlier.length) {
        context.push(
          'Earlier tasks in this same browser session:\n' +
            earlier.map((t) => `- ${t.result.task} → ${t.result.answer ?? JSON.stringify(t.result.data)}`).join('\n'),
        );
      }
      if (history.length) {
        context.push(
          'Your previous steps:\n' +
            history
              .map(
                (s) =>
                  `Step ${s.step} at ${s.url}${s.goal ? ` — goal: ${s.goal}` : ''}\n` +
                  s.outcomes
                    .map((o: AgentOutcome) => `  ${o.action}: ${o.ok ? 'ok' : 'FAILED'} — ${o.message}`)
                    .join('\n'),
              )
              .join('\n'),
        );
      }
      if (input.notes.length) context.push('Notes:\n' + input.notes.map((n) => `- ${n}`).join('\n'));
      const observationParts: ChatCompletionContentPart[] = [
        { type: 'text', text: `Current observation (step ${step}):\n${current.observation}` },
      ];
      if (current.screenshot) {
        const detail = request.vision_detail_level === 'auto' ? 'auto' : request.vision_detail_level;
        observationParts.push({ type: 'image_url', image_url: { url: current.screenshot, detail } });
      }
      const previous = step - 1;
      const toolImages = input.images && previous >= 1 ? await toolImagesOfStep(db, jobId, taskIndex, previous) : [];
      const callIndexes = [...new Set(toolImages.map((image) => image.callIndex))];
      const shown = imagesMessage(
        `The images your tool calls of step ${previous} returned (their outcomes describe them):`,
        callIndexes.map((index) => {
          const own = toolImages.filter((image) => image.callIndex === index);
          return { label: `Tool call ${index} (${own[0].tool}):`, images: own };
        }),
      );
      const messages: ChatCompletionMessageParam[] = [
        { role: 'system', content: system },
        { role: 'user', content: context.join('\n\n') },
        ...(shown ? [shown] : []),
        { role: 'user', content: observationParts },
      ];
      const actingTools = platform
        ? platform === 'forum'
          ? FORUM_TOOLS
          : MICROBLOG_TOOLS
        : [
            ...toolsFor({ vision: request.vision_mode }).filter(
              (t) => !AGENT_LOOP_TOOLS.has(t.function.name as BrowserToolName),
            ),
            EXTRACT_TOOL,
          ];
      const selected = input.toolsLeft !== undefined ? await readToolbox(db, jobId) : null;
      if (selected?.notes.length)
        messages[0] = {
          role: 'system',
          content: `${system}\n\nSome tool sources of this run are unavailable: ${selected.notes.join('; ')}`,
        };
      const tools = [
        ...(actingTools as ChatCompletionTool[]),
        ...(selected && input.toolsLeft! > 0 ? selected.toolbox.map(asTool) : []),
        doneTool(request.structured_output, 'the current task'),
      ];
      return { messages, tools, current, temperature: profile.temperature };
    },
  };
}
