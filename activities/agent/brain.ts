import { ApplicationFailure } from '@temporalio/activity';
import type OpenAI from 'openai';
import type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { Db } from '../../db/connect';
import type { AgentAction, AgentOutcome, AgentTaskResult } from '../../db/schema';
import { appendJobLog, transitionJob } from '../../db/repos/jobs';
import { listToolCallStatuses, recordAgentToolCall, type AgentToolCallRow } from '../../db/repos/agent-tool-calls';
import {
  findLatestStep,
  getStep,
  listStepSummaries,
  listTaskResults,
  setStepDecision,
  setStepOutcomes,
  storeTaskResult,
} from '../../db/repos/agent-steps';
import { deleteToolImages, placeToolImages } from '../../db/repos/agent-tool-images';
import {
  assertHoldCovers,
  holdExhaustedMessage,
  holdStatus,
  summarizeUsage,
  type HoldStatus,
} from '../../db/repos/job-usage';
import { getRouterApiKey } from '../../db/repos/users';
import { agentStepWorstCaseMicros, llmCallWorstCaseMicros, promptTokenBound } from '../../lib/billing/worst-case';
import { compileSchemaValidator, fieldListToJsonSchema } from '../../lib/llm/structured-output';
import { parseToolArguments } from './model-tools';
import { LlmUnavailableError, type LlmProviders } from '../../lib/llm/providers';
import { microsToUsd } from '../../lib/money';
import { maskSecrets, maskSecretsIn } from './sensitive-data';
import { privateTextGuard, type PrivateTextGuard } from './private-text';
import { BoundedCache } from '../../lib/bounded-cache';
import type { RequestSecrets } from '../../lib/request-secrets';
import { BROWSER_TOOLS } from './browser/tools';
import { FORUM_TOOLS, MICROBLOG_TOOLS } from './social-tools';
import type { ToolRuntimeDeps } from '../../lib/tools/source';
import { stepKey, withHeartbeat } from '../heartbeat';
import { recordLlmUsage } from '../llm/usage';
import type { SelectionLoader, ToolCallOutput, ToolSelectionRef } from '../tools';
import type { RunConnections } from '../tools/run-connections';
import { readJobSelections } from '../tools/job-selections';
import { conversationMemory, type ConversationReply } from './conversation';
import { loadAgentJob, loadLoopJob, OPTIMIZATION_PROFILES, visibleTasks, type LoopJob } from './job';
import { stepMemory } from './steps';
import { prepareToolbox } from './toolbox';

/**
 * The activities of the one agent loop (workflows/agent.ts), for every toolbox: browser and social
 * runs remember by steps, tool-only runs (custom agents) by conversation (see LoopJob). Each activity
 * reads which memory its job has; the workflow decides everything else (bounds, max_tool_calls, retries).
 */

/** An action the model chose; `id` is the model's id of the call (a conversation answers each call by it). */
export type ModelAction = AgentAction & { id?: string };

/** One LLM decision: the actions to take (`nextSeq`: a conversation's position after the answer), or why the run stops. */
export type Decision =
  { kind: 'actions'; actions: ModelAction[]; goal: string | null; nextSeq?: number } | { kind: 'stop'; reason: string };

export type FinalAnswerVerdict =
  | { accepted: true; message: string; result: AgentTaskResult & { valid?: boolean } }
  | { accepted: false; message: string };

export interface BrainDeps {
  db: Db;
  llm: LlmProviders;
  masterKey: Buffer;
  /** MCP/OpenAPI tools of jobs with tool selections (without it, such jobs get only their browser/social tools). */
  selections?: { tools: ToolRuntimeDeps; loadSelection: SelectionLoader };
  /** The upstream connections this worker keeps for runs (activities/tools/run-connections.ts): a run's close when it ends. */
  connections?: Pick<RunConnections, 'endRun'>;
}

/** Tool calls a run with tool selections may send when its request names no max_tool_calls. */
export const DEFAULT_AGENT_MAX_TOOL_CALLS = 20;

/** The loop's own tool names: a selection's tool with one of these names is offered under another name. */
const LOOP_TOOL_NAMES: ReadonlySet<string> = new Set([
  'extract',
  'done',
  ...BROWSER_TOOLS.map((t) => t.function.name),
  ...FORUM_TOOLS.map((t) => t.function.name),
  ...MICROBLOG_TOOLS.map((t) => t.function.name),
]);

/** The selection tools of an agent run, as the workflow dispatches them. */
export interface AgentToolbox {
  tools: { name: string; source: string; ref: ToolSelectionRef; tool: string }[];
  maxToolCalls: number;
}

/** The record's error of a call to a tool the run does not have (a tool-only run records it; other toolboxes' tools answer it). */
export const UNKNOWN_TOOL_ERROR = 'no such tool';

/**
 * One selection-tool call as the workflow saw it end: its agent_tool_calls row, and what the model
 * is to read of it. The tool's answer is passed as callTool returned it.
 */
export interface AgentToolCallRecord extends AgentToolCallRow {
  /** What the tool answered (status completed or error). */
  output?: ToolCallOutput;
  /** A failed call that may have reached the tool: it was not sent again. */
  mayHaveRun?: boolean;
  /** A conversation's run: where the call's answer goes. */
  reply?: ConversationReply;
}

/** What the model is told of an action (a step's outcome; a conversation's tool message holds the same words). */
export interface ActionOutcome {
  ok: boolean;
  navigated: boolean;
  message: string;
}

/** What a step's history shows of one tool result at most (the runtime already bounds it; the step history is kept small). */
const STEP_TOOL_RESULT_CHARS = 8_000;

/**
 * What the model reads of one selection-tool call: the one place a tool's answer becomes model input.
 * A conversation reads a result whole (the runtime bounds it) as the call's tool message; a step's
 * history shows it cut, as the call's outcome.
 */
function toolCallAnswer(call: AgentToolCallRecord, memory: LoopJob['memory'], maxToolCalls: number): string {
  const conversation = memory === 'conversation';
  const text = call.output?.text ?? '';
  const shown =
    conversation || text.length <= STEP_TOOL_RESULT_CHARS ? text : `${text.slice(0, STEP_TOOL_RESULT_CHARS)}… (cut)`;
  switch (call.status) {
    case 'completed':
      return conversation ? shown : `result: ${shown}`;
    case 'error':
      return `${conversation ? 'Error' : 'error'} from the tool: ${shown}`;
    case 'not_sent':
      return conversation
        ? `Not sent: this run may make at most ${maxToolCalls} tool call(s) (max_tool_calls) and has made them all. Call done now with what you have.`
        : `not sent: this run may make at most ${maxToolCalls} tool call(s) (max_tool_calls) and has made them all`;
    case 'failed':
      if (call.error === UNKNOWN_TOOL_ERROR)
        return `Error: there is no tool named "${call.tool}". Use one of the tools offered, or done.`;
      return `${conversation ? 'The' : 'the'} tool call failed${call.mayHaveRun ? ' and was not sent again (it may have run)' : ''}: ${call.error}`;
  }
}

function maxToolCallsOf(run: LoopJob): number {
  return run.memory === 'conversation'
    ? run.request.max_tool_calls
    : ((run.request as { max_tool_calls?: number }).max_tool_calls ?? DEFAULT_AGENT_MAX_TOOL_CALLS);
}

function stopped(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, 'AgentStopped');
}

export function createAgentBrainActivities(deps: BrainDeps) {
  const { db } = deps;
  const conversation = conversationMemory(db);
  const steps = stepMemory(db);

  async function clientFor({ job, request }: Pick<LoopJob, 'job' | 'request'>) {
    try {
      return {
        ...(await deps.llm.resolve(request.llm_provider, () => getRouterApiKey(db, deps.masterKey, job.user_id))),
        model: request.llm_model,
      };
    } catch (err) {
      if (err instanceof LlmUnavailableError) throw stopped(err.message);
      throw err;
    }
  }

  /** One LLM call's usage, recorded through the shared helper (activities/llm/usage.ts). */
  const bill = (
    jobId: string,
    what: string,
    model: string,
    usage: OpenAI.CompletionUsage | undefined,
    walletBilled: boolean,
  ) =>
    recordLlmUsage(db, deps.llm.prices, {
      jobId,
      usageKey: stepKey(jobId, what),
      model,
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: usage?.completion_tokens ?? 0,
      walletBilled,
    });

  /**
   * The private-text guards of agent-market runs, by job: built once per job on this worker (a few ms
   * for prompts of a few KB; up to ~10 MB and ~250 ms for the largest allowed), dropped when idle.
   */
  const guards = new BoundedCache<PrivateTextGuard>({ maxEntries: 50, idleMs: 10 * 60_000 });

  /**
   * How anything the model wrote is kept (stored, logged, sent to a page or a tool, handed to the
   * workflow): sensitive_data values become their placeholders, and an agent-market run's private
   * texts (its provider's system prompt and template, sealed in the job) are masked
   * (activities/agent/private-text). `request` must be loaded with the master key. A conversation's run
   * (a custom agent) has neither.
   */
  function modelOutputMask(jobId: string, request: object) {
    const { sensitive_data: secrets = [], agent_instructions, agent_template } = request as RequestSecrets;
    let guard = guards.get(jobId);
    if (!guard) {
      guard = privateTextGuard([agent_instructions, agent_template]);
      guards.set(jobId, guard);
    }
    const privateTexts = guard;
    return {
      text: (text: string) => privateTexts.mask(maskSecrets(text, secrets)),
      value: <T>(value: T): T => privateTexts.maskIn(maskSecretsIn(value, secrets)),
    };
  }

  /**
   * A custom agent's run (conversation memory) as its job row holds it: a job's request never changes,
   * so each worker keeps it per run instead of reading it in every activity of every cycle. Only what
   * never changes is read from it; the job's status is read afresh (finishAgentJob).
   */
  const conversationRuns = new BoundedCache<LoopJob>({ maxEntries: 200, idleMs: 10 * 60_000 });

  /** The run's job; `secrets: false` reads a step run's sensitive data redacted (no master key). */
  async function loadRun(jobId: string, { secrets = true } = {}): Promise<LoopJob> {
    const kept = conversationRuns.get(jobId);
    if (kept) return kept;
    const run = await loadLoopJob(db, jobId, secrets ? deps.masterKey : undefined);
    if (run.memory === 'conversation') conversationRuns.set(jobId, run);
    return run;
  }

  async function currentStep(jobId: string, taskIndex: number, step: number) {
    return getStep(db, { jobId, taskIndex, step });
  }

  /**
   * Asks the model for its next tool calls, when the job's hold covers the worst case of the call
   * (see lib/billing/worst-case); otherwise the reason the run stops. The call's usage is recorded.
   */
  async function ask<Kept = void>(
    run: LoopJob,
    prompt: { messages: ChatCompletionMessageParam[]; tools: ChatCompletionTool[]; temperature?: number },
    usage: string,
    options: {
      /** The job's hold, read beside the prompt (else read here). */
      hold?: Promise<HoldStatus | null>;
      /** Writes what the answer leaves, beside its usage record (one wait for both). */
      keep?: (message: ChatCompletionMessage | undefined) => Promise<Kept>;
    } = {},
  ): Promise<{ stop: string } | { message: ChatCompletionMessage | undefined; kept?: Kept }> {
    const jobId = run.job.id;
    const { messages, tools, temperature } = prompt;
    const { client, walletBilled, model } = await clientFor(run);
    const worstCase = agentStepWorstCaseMicros({ prices: deps.llm.prices, model, walletBilled, messages, tools });
    const hold = await (options.hold ?? holdStatus(db, jobId));
    if (hold && hold.remainingMicros < worstCase) return { stop: holdExhaustedMessage(hold, worstCase) };
    const completion = await withHeartbeat(() =>
      client.chat.completions.create({
        model,
        messages,
        tools,
        tool_choice: 'required',
        ...(temperature !== undefined && { temperature }),
      }),
    );
    const message = completion.choices[0]?.message;
    // Both writes land, or the activity fails and its retry asks again (and rewrites what it keeps).
    const [billed, kept] = await Promise.allSettled([
      bill(jobId, usage, model, completion.usage, walletBilled),
      options.keep?.(message),
    ]);
    if (billed.status === 'rejected') throw billed.reason;
    if (kept.status === 'rejected') throw kept.reason;
    return { message, kept: kept.value };
  }

  return {
    /**
     * One LLM decision over what the model remembers (LoopJob): it answers with tool calls. A step's
     * answer is stored on the step (masked, at most max_actions_per_step actions); a conversation's is
     * appended from `seq` on (a retry replaces what an earlier attempt wrote).
     */
    async decideNextActions(input: {
      jobId: string;
      taskIndex: number;
      step: number;
      notes: string[];
      toolsLeft?: number;
      seq?: number;
    }): Promise<Decision> {
      const { jobId, taskIndex, step } = input;
      const usage = `decide-${taskIndex}-${step}`;
      // With the master key: masking needs the real sensitive values (without it they read "[redacted]").
      const run = await loadRun(jobId);
      // The model is shown the images of its latest tool results when it accepts images (tool-images.ts).
      const images = deps.llm.prices.acceptsImages(run.request.llm_model);
      if (run.memory === 'conversation') {
        const seq = input.seq ?? 0;
        // The hold is read beside the prompt's reads (one wait); a failed read is thrown where it is awaited.
        const hold = holdStatus(db, jobId);
        hold.catch(() => undefined);
        const prompt = await conversation.prompt(jobId, run.request, {
          seq,
          notes: input.notes,
          toolsLeft: input.toolsLeft ?? 0,
          images,
        });
        const answer = await ask(run, prompt, usage, {
          hold,
          keep: (message) => conversation.keepAnswer(jobId, seq, prompt.fresh, message),
        });
        if ('stop' in answer) return { kind: 'stop', reason: answer.stop };
        const { calls, text, nextSeq } = answer.kept!;
        return { kind: 'actions', actions: calls, goal: text, nextSeq };
      }
      const prompt = await steps.prompt(run, { ...input, images });
      const answer = await ask(run, prompt, usage);
      if ('stop' in answer) return { kind: 'stop', reason: answer.stop };
      const calls = (answer.message?.tool_calls ?? []).filter((c) => c.type === 'function');
      // A secret value or a stretch of the provider's private prompts the model echoes is masked before
      // anything is stored, logged, executed or returned to the workflow.
      const mask = modelOutputMask(jobId, run.request);
      const actions: AgentAction[] = calls.map((c) => ({
        name: c.function.name,
        args: mask.value(parseToolArguments(c.function.arguments)),
      }));
      const kept = actions.slice(0, run.request.max_actions_per_step);
      const content = answer.message?.content?.trim();
      const goal = content ? mask.text(content).slice(0, 500) : null;
      await setStepDecision(db, prompt.current.id, { goal, actions: JSON.stringify(kept) });
      if (actions.length > kept.length) {
        await appendJobLog(
          db,
          jobId,
          `step ${step}: the model proposed ${actions.length} actions; only the first ${kept.length} (max_actions_per_step) are used`,
        );
      }
      return { kind: 'actions', actions: kept, goal };
    },

    /**
     * The run's MCP/OpenAPI tools: built once per job from its selections (the request's
     * custom_mcps/market_mcps, or an agent-market run's sealed agent_selections) and kept. Next to
     * browser/social tools, a tool named like one of the loop's own is offered under another name.
     */
    async prepareAgentToolbox(input: { jobId: string }): Promise<AgentToolbox> {
      const run = await loadRun(input.jobId, { secrets: false });
      const maxToolCalls = maxToolCallsOf(run);
      const selections = readJobSelections(deps.masterKey, run.job);
      // A tool-only run keeps its (possibly empty) toolbox on record; other runs without selections have none.
      if (!deps.selections || (run.memory === 'steps' && selections.custom.length + selections.market.length === 0))
        return { tools: [], maxToolCalls };
      const stored = await prepareToolbox(
        { db, ...deps.selections },
        input.jobId,
        { custom: selections.custom.map((s) => s.stored), market: selections.market.map((s) => s.stored) },
        run.memory === 'steps' ? LOOP_TOOL_NAMES : undefined,
      );
      return {
        tools: stored.toolbox.map(({ name, source, ref, tool }) => ({ name, source, ref, tool })),
        maxToolCalls,
      };
    },

    /**
     * One selection-tool call of a run: its agent_tool_calls row (no arguments or results: they can
     * hold secrets) and a log line; then what the model reads of it (toolCallAnswer), as the
     * conversation's tool message or as the step's outcome the workflow stores with the step. The
     * images the answer's text describes and callTool kept are tied to that message or step: the
     * next decision shows them to the model (tool-images.ts).
     */
    async recordAgentToolCall(input: AgentToolCallRecord): Promise<ActionOutcome> {
      const { output, mayHaveRun: _mayHaveRun, reply, ...row } = input;
      const run = await loadRun(input.jobId);
      const error =
        row.error === null || run.memory === 'conversation'
          ? row.error
          : modelOutputMask(input.jobId, run.request).text(row.error);
      const images = (output?.images ?? []).map((image) => image.id);
      const message = toolCallAnswer(input, run.memory, maxToolCallsOf(run));
      // The row, its log line, its images' place and the conversation's tool message: one transaction
      // (one commit for the whole record; each write lands once however often the record is retried).
      await db.transaction().execute(async (trx) => {
        await recordAgentToolCall(trx, { ...row, error });
        if (images.length > 0) {
          // A step run's calls belong to its latest step (observed before the decision that made them).
          const step = reply ? null : await findLatestStep(trx, input.jobId);
          if (reply)
            await placeToolImages(trx, input.jobId, images, {
              callIndex: row.index,
              replySeq: reply.seq,
              callId: reply.callId,
            });
          else if (step)
            await placeToolImages(trx, input.jobId, images, {
              callIndex: row.index,
              taskIndex: step.task_index,
              step: step.step,
            });
        }
        if (reply) await conversationMemory(trx).reply(input.jobId, reply, message, true);
      });
      return { ok: input.status === 'completed', navigated: false, message };
    },

    /** The extract tool: one LLM call over the latest observation's full text. */
    async runExtractTool(input: { jobId: string; taskIndex: number; step: number; question: string }) {
      const { jobId } = input;
      const run = await loadRun(jobId);
      const current = await currentStep(jobId, input.taskIndex, input.step);
      const { client, walletBilled, model } = await clientFor(run);
      const messages: ChatCompletionMessageParam[] = [
        {
          role: 'system',
          content:
            'Answer the question using only the page content given. Be concise. Say "not found" when the page does not contain the answer.',
        },
        { role: 'user', content: `Question: ${input.question}\n\nPage:\n${current.observation}` },
      ];
      if (walletBilled)
        await assertHoldCovers(db, jobId, llmCallWorstCaseMicros(deps.llm.prices, model, promptTokenBound(messages)));
      const completion = await withHeartbeat(() => client.chat.completions.create({ model, messages }));
      await bill(jobId, `extract-${input.taskIndex}-${input.step}`, model, completion.usage, walletBilled);
      const answer = modelOutputMask(jobId, run.request).text(completion.choices[0]?.message?.content ?? '');
      return { ok: true, navigated: false, message: `extracted: ${answer.slice(0, 2000)}` };
    },

    /**
     * Checks the done action: shaped by structured_output and validated. A step's answer is re-asked
     * within its mode's bound (speed mode takes it as it is); a conversation's once.
     */
    async acceptFinalAnswer(input: {
      jobId: string;
      taskIndex: number;
      args: Record<string, unknown>;
      attempt: number;
      reply?: ConversationReply;
    }): Promise<FinalAnswerVerdict> {
      const run = await loadRun(input.jobId);
      const { job, request } = run;
      const masker =
        run.memory === 'steps'
          ? modelOutputMask(job.id, run.request)
          : { text: (text: string) => text, value: <T>(value: T) => value };
      const mask = (value: unknown) => (value === undefined ? null : masker.value(value));
      const success = input.args.success !== false;
      const answer = typeof input.args.answer === 'string' ? masker.text(input.args.answer) : null;
      // The task as stored, never a sealed one (an agent-market template is its provider's private text).
      const base = {
        task: run.memory === 'conversation' ? run.request.task : visibleTasks(job)[input.taskIndex],
        success,
        answer,
        steps: 0,
      };
      const verdict = ((): FinalAnswerVerdict => {
        if (!request.structured_output)
          return { accepted: true, message: 'task finished', result: { ...base, data: null } };
        const problems = compileSchemaValidator(fieldListToJsonSchema(request.structured_output))(input.args.data);
        if (problems.length === 0)
          return {
            accepted: true,
            message: 'task finished with valid structured output',
            result: { ...base, data: mask(input.args.data), valid: true },
          };
        if (run.memory === 'steps' && run.request.optimization_mode === 'speed') {
          return {
            accepted: true,
            message: 'task finished (structured output not validated in speed mode)',
            result: { ...base, data: mask(input.args.data), valid: false },
          };
        }
        const allowed =
          run.memory === 'steps' ? OPTIMIZATION_PROFILES[run.request.optimization_mode].finalAnswerRetries : 1;
        if (input.attempt < allowed)
          return {
            accepted: false,
            message: `Your done data does not match structured_output: ${problems.join('; ')}. Call done again with corrected data.`,
          };
        throw stopped(
          masker.text(
            `the final structured output stayed invalid after ${allowed + 1} attempts: ${problems.join('; ')}`,
          ),
        );
      })();
      if (run.memory === 'conversation') {
        // The done call's tool message: why it is asked again, or the accepted answer the run's result is read from.
        if (!input.reply) throw new Error("a conversation's final answer needs the position of its reply");
        await appendJobLog(
          db,
          job.id,
          verdict.accepted
            ? `final answer (${success ? 'success' : 'reported failure'})`
            : 'the final answer did not match structured_output; asked again',
        );
        await conversation.reply(
          job.id,
          input.reply,
          verdict.accepted ? JSON.stringify({ success, answer, data: verdict.result.data }) : verdict.message,
          false,
        );
      }
      return verdict;
    },
    /** Stores the step's outcomes and writes the progress line polling clients see. */
    async recordStep(input: {
      jobId: string;
      taskIndex: number;
      step: number;
      outcomes: AgentOutcome[];
      goal: string | null;
    }) {
      const { request } = await loadAgentJob(db, input.jobId, deps.masterKey);
      const mask = modelOutputMask(input.jobId, request);
      const outcomes = mask.value(input.outcomes);
      const goal = input.goal === null ? null : mask.text(input.goal);
      await setStepOutcomes(db, input, JSON.stringify(outcomes));
      const actions =
        outcomes.map((o) => `${o.action} → ${o.ok ? '' : 'FAILED: '}${o.message}`).join('; ') || 'no action';
      await appendJobLog(
        db,
        input.jobId,
        `task ${input.taskIndex + 1} step ${input.step}: goal: ${goal ?? '(none stated)'} | ${actions}`,
      );
    },

    async saveTaskResult(input: { jobId: string; taskIndex: number; result: AgentTaskResult }) {
      await storeTaskResult(db, input.jobId, input.taskIndex, input.result);
      await appendJobLog(
        db,
        input.jobId,
        `task ${input.taskIndex + 1} finished (${input.result.success ? 'success' : 'reported failure'}) after ${input.result.steps} step(s)`,
      );
    },

    /**
     * Builds the result and ends the job. A step run's: the final answer or structured output,
     * per-task outcomes, the steps with a summary and totals. A conversation's: the accepted done call's
     * answer (else the model's last words), `stoppedBy` when the run ended on max_tool_calls, and a summary.
     */
    async finishAgentJob(input: { jobId: string; error: string | null; stoppedBy?: string | null }) {
      await deps.connections?.endRun(input.jobId);
      // Read afresh, never from the per-run cache: a retried finish must see the job it already ended.
      conversationRuns.delete(input.jobId);
      const run = await loadLoopJob(db, input.jobId, deps.masterKey);
      const { job } = run;
      if (job.status === 'completed' || job.status === 'failed')
        return { jobId: job.id, status: job.status, error: job.error };
      const error =
        input.error === null || run.memory === 'conversation'
          ? input.error
          : modelOutputMask(job.id, run.request).text(input.error);
      const usage = await summarizeUsage(db, job.id);
      const totals = {
        llmCalls: usage.llm.reduce((n, e) => n + e.calls, 0),
        promptTokens: usage.llm.reduce((n, e) => n + e.promptTokens, 0),
        completionTokens: usage.llm.reduce((n, e) => n + e.completionTokens, 0),
      };
      let result: Record<string, unknown>;
      if (run.memory === 'conversation') {
        const calls = await listToolCallStatuses(db, job.id);
        result = {
          ...(await conversation.finalAnswer(job.id)),
          ...(input.stoppedBy && { stoppedBy: input.stoppedBy }),
          summary: {
            toolCalls: calls.filter((c) => c.status !== 'not_sent').length,
            ...totals,
            costUsd: microsToUsd(usage.costMicros),
          },
        };
      } else {
        const tasks = visibleTasks(job);
        const taskResults = (await listTaskResults(db, job.id)).map((r) => r.result);
        const steps = await listStepSummaries(db, job.id);
        const last = taskResults[taskResults.length - 1];
        result = {
          answer: last?.answer ?? null,
          data: last?.data ?? null,
          tasks: tasks.map(
            (task, i) =>
              taskResults[i] ?? {
                task,
                success: false,
                answer: null,
                data: null,
                steps: steps.filter((s) => s.task_index === i).length,
              },
          ),
          steps: steps.map((s) => ({
            task: s.task_index + 1,
            step: s.step,
            url: s.url,
            goal: s.goal,
            actions: s.actions,
            outcomes: s.outcomes,
          })),
          summary: {
            steps: steps.length,
            ...totals,
            browserSeconds: usage.browserSeconds,
            costUsd: microsToUsd(usage.costMicros),
          },
        };
      }
      const status = error === null ? 'completed' : 'failed';
      const event = error ? `failed: ${error}` : 'completed';
      await transitionJob(db, job.id, status, { result, error, log: event, systemLogEvent: event });
      // The images its tools returned were for its model only.
      await deleteToolImages(db, job.id);
      return { jobId: job.id, status, error } as const;
    },
  };
}

export type AgentBrainActivities = ReturnType<typeof createAgentBrainActivities>;
