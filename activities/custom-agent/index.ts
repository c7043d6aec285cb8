import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { Db } from '../../db/connect';
import { admitJob, appendJobLog, getJob, transitionJob } from '../../db/repos/jobs';
import { recordAgentToolCall, type AgentToolCallRow } from '../../db/repos/agent-tool-calls';
import { holdExhaustedMessage, holdStatus, summarizeUsage } from '../../db/repos/job-usage';
import { getRouterApiKey } from '../../db/repos/users';
import { writeSystemLog } from '../../db/repos/system-logs';
import { agentStepWorstCaseMicros } from '../../lib/billing/worst-case';
import type { PriceTable } from '../../lib/billing/pricing';
import { unseal } from '../../lib/crypto';
import { compileSchemaValidator, fieldListToJsonSchema, type FieldSpec } from '../../lib/llm/structured-output';
import { doneTool, parseToolArguments } from '../../lib/agent/model-tools';
import { LlmUnavailableError, type LlmProviders } from '../../lib/llm/providers';
import { microsToUsd } from '../../lib/money';
import { sealRequestSecrets } from '../../lib/request-secrets';
import type { ToolRuntimeDeps } from '../../lib/tools/source';
import type { CustomMcpSelection } from '../../lib/tools/selection';
import type { CustomAgentBody, SkillsBody } from '../../lib/schemas/custom-agents';
import type { SkillsSelection } from '../agent/prompts';
import { accountCannotRun } from '../automations';
import { attemptKey, withHeartbeat } from '../heartbeat';
import { recordLlmUsage } from '../llm/usage';
import type { SelectionLoader } from '../tools';
import { customAgentSystemPrompt } from './prompts';
import { asTool, prepareToolbox, readToolbox, type ToolboxEntry } from './toolbox';

export type { ToolboxEntry };

export interface CustomAgentDeps {
  db: Db;
  llm: LlmProviders;
  masterKey: Buffer;
  tools: ToolRuntimeDeps;
  loadSelection: SelectionLoader;
  holdMaxMicros: number;
  prices: PriceTable;
}

/** The request a custom-agent run keeps on its job row (params redacted; they are in the job's sealed secrets). */
export type CustomAgentRunRequest = Omit<CustomAgentBody, 'cron' | 'timezone'> & { automationId?: string };

export interface ToolCallPlan {
  /** The model's id of the call (answers are matched to it). */
  id: string;
  name: string;
  args: Record<string, unknown>;
}

export type CustomAgentDecision = { kind: 'calls'; calls: ToolCallPlan[]; nextSeq: number; text: string | null } | { kind: 'stop'; reason: string };

export type CustomAgentRunStart =
  | { kind: 'ready'; jobId: string; hasWebhook: boolean; maxToolCalls: number }
  | { kind: 'unusable'; jobId: string; hasWebhook: boolean; error: string }
  | { kind: 'skipped'; reason: string };

export interface ToolboxSummary {
  /** Model-facing name → where it goes; what the workflow needs to dispatch calls. */
  tools: Pick<ToolboxEntry, 'name' | 'source' | 'ref' | 'tool'>[];
  maxToolCalls: number;
}

/** A tool call to record: its row, plus the tool message for the conversation. */
export interface ToolCallRecordInput extends AgentToolCallRow {
  /** Where the tool message goes in the conversation. */
  seq: number;
  callId: string;
  /** What the model is told. */
  text: string;
}

function stopped(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, 'AgentStopped');
}

/** The contract's skills (an array of AgentSkillSelection) or a SkillsConfig, as the prompt helper reads it. */
async function skillsOf(db: Db, skills: SkillsBody | undefined): Promise<SkillsSelection | undefined> {
  const selected = Array.isArray(skills) ? skills : skills?.mode === 'selected' ? (skills.selected ?? []) : [];
  if (selected.length === 0) return undefined;
  const filled = await Promise.all(
    selected.map(async (skill) => {
      const ref = skill as { provider?: string; externalId?: string };
      if (skill.skillMdContent || !ref.provider || !ref.externalId) return skill;
      const copy = await db
        .selectFrom('skills_directory')
        .select('skill_md_content')
        .where('provider', '=', ref.provider)
        .where('external_id', '=', ref.externalId)
        .executeTakeFirst();
      return { ...skill, skillMdContent: copy?.skill_md_content ?? null };
    }),
  );
  return { mode: 'selected', selected: filled };
}

export function createCustomAgentActivities(deps: CustomAgentDeps) {
  const { db } = deps;

  async function loadRun(jobId: string) {
    const job = await getJob(db, jobId);
    if (job.kind !== 'custom-agent') throw new Error(`Job ${jobId} is a ${job.kind} job, not a custom-agent run`);
    return { job, request: job.request as unknown as CustomAgentRunRequest };
  }

  const toolboxOf = (jobId: string) => readToolbox(db, jobId);

  return {
    /**
     * A scheduled execution of a stored custom agent: records it as a job (with its hold, and the
     * agent's params sealed to the job), or skips it when the account cannot pay for it now.
     */
    async startCustomAgentRun(input: { automationId: string; runId: string }): Promise<CustomAgentRunStart> {
      const automation = await db.selectFrom('automations').selectAll().where('id', '=', input.automationId).executeTakeFirst();
      if (!automation) throw ApplicationFailure.nonRetryable(`custom agent ${input.automationId} no longer exists`, 'AutomationGone');
      const payload = automation.payload as unknown as CustomAgentBody;
      const hasWebhook = !!payload.webhook_url;
      const existing = await db.selectFrom('jobs').selectAll().where('user_id', '=', automation.user_id).where('kind', '=', 'custom-agent').where('idempotency_key', '=', input.runId).executeTakeFirst();
      if (existing) {
        if (existing.status === 'completed' || existing.status === 'failed') return { kind: 'unusable', jobId: existing.id, hasWebhook, error: existing.error ?? existing.status };
        return { kind: 'ready', jobId: existing.id, hasWebhook, maxToolCalls: payload.max_tool_calls };
      }
      const refusal =
        (await accountCannotRun(db, automation.user_id)) ??
        (payload.llm_provider === 'service' && !deps.prices.accepts(payload.llm_model) ? `llm_model "${payload.llm_model}" is no longer offered with llm_provider "service"` : null);
      if (refusal) {
        const reason = `scheduled run of custom agent "${automation.name}" skipped: ${refusal}`;
        await writeSystemLog(db, { userId: automation.user_id, message: `${reason} (run ${input.runId})` });
        return { kind: 'skipped', reason };
      }
      const secrets = automation.secrets_sealed
        ? (JSON.parse(unseal(deps.masterKey, automation.secrets_sealed, `automation:${automation.id}`)) as { customMcpParams?: Record<string, string>[]; marketMcpParams?: Record<string, string>[] })
        : {};
      const { cron: _cron, timezone: _timezone, ...rest } = payload;
      const request: CustomAgentRunRequest = { ...rest, automationId: automation.id };
      const admission = await admitJob(db, {
        userId: automation.user_id,
        kind: 'custom-agent',
        request: request as unknown as Record<string, unknown>,
        webhookUrl: payload.webhook_url ?? null,
        idempotencyKey: input.runId,
        workflowId: input.runId,
        countsOperation: false,
        holdMaxMicros: deps.holdMaxMicros,
        sealSecrets: (id) => sealRequestSecrets(deps.masterKey, id, { custom_mcps_params: secrets.customMcpParams ?? [], market_mcps_params: secrets.marketMcpParams ?? [] }),
        acceptedLog: `run of custom agent "${automation.name}" started by its schedule`,
      });
      if (admission.outcome === 'created' || admission.outcome === 'existing') {
        return { kind: 'ready', jobId: admission.job.id, hasWebhook, maxToolCalls: payload.max_tool_calls };
      }
      const reason = `scheduled run of custom agent "${automation.name}" skipped: ${admission.outcome.replace(/_/g, ' ')}`;
      await writeSystemLog(db, { userId: automation.user_id, message: `${reason} (run ${input.runId})` });
      return { kind: 'skipped', reason };
    },

    /**
     * Builds the run's toolbox once: each selection's tools (a custom selection's
     * tool_discovery_cache, when usable, spares listing it; a market selection's approved tools),
     * filtered by tool_names and named uniquely for the model. A source that cannot be opened is
     * left out, and the model is told why.
     */
    async prepareCustomAgentToolbox(input: { jobId: string }): Promise<ToolboxSummary> {
      const { request } = await loadRun(input.jobId);
      const stored = await prepareToolbox({ db, tools: deps.tools, loadSelection: deps.loadSelection }, input.jobId, { custom: request.custom_mcps ?? [], market: request.market_mcps ?? [] });
      return { tools: stored.toolbox.map(({ name, source, ref, tool }) => ({ name, source, ref, tool })), maxToolCalls: request.max_tool_calls };
    },

    /**
     * One LLM decision over the conversation so far. Messages from `seq` on are (re)written by this
     * activity (a retry replaces what an earlier attempt wrote): the opening messages on the first
     * turn, the workflow's notes, then the model's answer. With `toolsLeft` 0 only `done` is offered.
     */
    async decideCustomAgentStep(input: { jobId: string; turn: number; seq: number; notes: string[]; toolsLeft: number }): Promise<CustomAgentDecision> {
      const { job, request } = await loadRun(input.jobId);
      const stored = (await toolboxOf(input.jobId)) ?? { toolbox: [], notes: [] };
      await db.deleteFrom('custom_agent_messages').where('job_id', '=', input.jobId).where('seq', '>=', input.seq).execute();
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
      const earlier = await db.selectFrom('custom_agent_messages').select('message').where('job_id', '=', input.jobId).orderBy('seq').execute();
      const messages = [...earlier.map((m) => m.message as unknown as ChatCompletionMessageParam), ...fresh];
      const tools = [...(input.toolsLeft > 0 ? stored.toolbox.map(asTool) : []), doneTool(request.structured_output, 'the run')];

      let resolved;
      try {
        resolved = await deps.llm.resolve(request.llm_provider, () => getRouterApiKey(db, deps.masterKey, job.user_id));
      } catch (err) {
        if (err instanceof LlmUnavailableError) throw stopped(err.message);
        throw err;
      }
      const model = request.llm_model;
      const worstCase = agentStepWorstCaseMicros({ prices: deps.llm.prices, model, walletBilled: resolved.walletBilled, messages, tools });
      const hold = await holdStatus(db, input.jobId);
      if (hold && hold.remainingMicros < worstCase) return { kind: 'stop', reason: holdExhaustedMessage(hold, worstCase) };
      const completion = await withHeartbeat(() => resolved.client.chat.completions.create({ model, messages, tools, tool_choice: 'required' }));
      await recordLlmUsage(db, deps.llm.prices, {
        jobId: input.jobId,
        usageKey: attemptKey(input.jobId, `decide-${input.turn}`),
        model,
        promptTokens: completion.usage?.prompt_tokens ?? 0,
        completionTokens: completion.usage?.completion_tokens ?? 0,
        walletBilled: resolved.walletBilled,
      });
      const message = completion.choices[0]?.message;
      const calls = (message?.tool_calls ?? [])
        .filter((c) => c.type === 'function')
        .map((c) => ({ id: c.id || randomUUID(), name: c.function.name, args: parseToolArguments(c.function.arguments) }));
      const text = message?.content?.trim() || null;
      const assistant: ChatCompletionMessageParam = {
        role: 'assistant',
        content: text,
        ...(calls.length > 0 && { tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.args) } })) }),
      };
      const toStore = [...fresh, assistant];
      await db
        .insertInto('custom_agent_messages')
        .values(toStore.map((m, i) => ({ job_id: input.jobId, seq: input.seq + i, message: JSON.stringify(m) })))
        .execute();
      return { kind: 'calls', calls, nextSeq: input.seq + toStore.length, text };
    },

    /** Records one tool call of the run (its row, and the tool message the model reads next). */
    async recordCustomAgentToolCall(input: ToolCallRecordInput): Promise<void> {
      await db
        .insertInto('custom_agent_messages')
        .values({ job_id: input.jobId, seq: input.seq, message: JSON.stringify({ role: 'tool', tool_call_id: input.callId, content: input.text }) })
        .onConflict((oc) => oc.columns(['job_id', 'seq']).doUpdateSet({ message: JSON.stringify({ role: 'tool', tool_call_id: input.callId, content: input.text }) }))
        .execute();
      await recordAgentToolCall(db, input);
    },

    /**
     * Checks the done call: with structured_output, `data` must match it (ajv); the first invalid
     * answer is re-asked once (a tool message at `seq` tells the model what is wrong), the second fails the run.
     */
    async acceptCustomAgentAnswer(input: { jobId: string; seq: number; callId: string; args: Record<string, unknown>; attempt: number }): Promise<{ accepted: boolean; message: string }> {
      const { request } = await loadRun(input.jobId);
      const answer = typeof input.args.answer === 'string' ? input.args.answer : null;
      const success = input.args.success !== false;
      let data: unknown = null;
      if (request.structured_output) {
        const problems = compileSchemaValidator(fieldListToJsonSchema(request.structured_output))(input.args.data);
        if (problems.length > 0) {
          if (input.attempt >= 1) throw stopped(`the final structured output stayed invalid after 2 attempts: ${problems.join('; ')}`);
          const message = `Your done data does not match structured_output: ${problems.join('; ')}. Call done again with corrected data.`;
          await db
            .insertInto('custom_agent_messages')
            .values({ job_id: input.jobId, seq: input.seq, message: JSON.stringify({ role: 'tool', tool_call_id: input.callId, content: message }) })
            .onConflict((oc) => oc.columns(['job_id', 'seq']).doNothing())
            .execute();
          await appendJobLog(db, input.jobId, 'the final answer did not match structured_output; asked again');
          return { accepted: false, message };
        }
        data = input.args.data;
      }
      await appendJobLog(db, input.jobId, `final answer (${success ? 'success' : 'reported failure'})`);
      await db
        .insertInto('custom_agent_messages')
        .values({ job_id: input.jobId, seq: input.seq, message: JSON.stringify({ role: 'tool', tool_call_id: input.callId, content: JSON.stringify({ success, answer, data }) }) })
        .onConflict((oc) => oc.columns(['job_id', 'seq']).doNothing())
        .execute();
      return { accepted: true, message: 'finished' };
    },

    /** Ends the job: the final answer (the accepted done call, else the model's last words), tool calls and usage. */
    async finishCustomAgentJob(input: { jobId: string; error: string | null; stoppedBy?: string | null }) {
      const { job } = await loadRun(input.jobId);
      if (job.status === 'completed' || job.status === 'failed') return { jobId: job.id, status: job.status, error: job.error };
      const messages = (await db.selectFrom('custom_agent_messages').select('message').where('job_id', '=', job.id).orderBy('seq', 'desc').execute()).map(
        (m) => m.message as unknown as { role: string; content: string | null; tool_calls?: { id: string; function: { name: string } }[]; tool_call_id?: string },
      );
      const doneCall = messages.find((m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.function.name === 'done'));
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
      const calls = await db.selectFrom('agent_tool_calls').select(['status']).where('job_id', '=', job.id).execute();
      const usage = await summarizeUsage(db, job.id);
      const result = {
        success: final?.success ?? false,
        answer: final?.answer ?? lastWords,
        data: final?.data ?? null,
        ...(input.stoppedBy && { stoppedBy: input.stoppedBy }),
        summary: {
          toolCalls: calls.filter((c) => c.status !== 'not_sent').length,
          llmCalls: usage.llm.reduce((n, e) => n + e.calls, 0),
          promptTokens: usage.llm.reduce((n, e) => n + e.promptTokens, 0),
          completionTokens: usage.llm.reduce((n, e) => n + e.completionTokens, 0),
          costUsd: microsToUsd(usage.costMicros),
        },
      };
      const status = input.error === null ? 'completed' : 'failed';
      const event = input.error ? `failed: ${input.error}` : 'completed';
      await transitionJob(db, job.id, status, { result, error: input.error, log: event, systemLogEvent: event });
      return { jobId: job.id, status, error: input.error } as const;
    },
  };
}

export type CustomAgentActivities = ReturnType<typeof createCustomAgentActivities>;
