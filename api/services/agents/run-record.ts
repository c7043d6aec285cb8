import type { Db } from '../../../db/connect';
import { listToolCalls } from '../../../db/repos/agent-tool-calls';
import { summarizeUsage } from '../../../db/repos/job-usage';
import { chargedMicrosOfJob } from '../../../db/repos/market-runs';
import type { Job } from '../../../db/schema';
import { microsToUsd } from '../../../lib/money';

/**
 * What an agent run's record adds to the job record (custom-agent and agent-market runs alike):
 * its tool calls — never their arguments or results, which can hold secrets — and its usage so far,
 * market tool charges included.
 */
export async function agentRunExtras(db: Db, job: Pick<Job, 'id'>) {
  // Market tools are charged on the run's market runs (fixed prices per call, provider events whenever the provider reports them).
  const [calls, usage, marketMicros] = await Promise.all([
    listToolCalls(db, job.id),
    summarizeUsage(db, job.id),
    chargedMicrosOfJob(db, job.id),
  ]);
  const promptTokens = usage.llm.reduce((n, e) => n + e.promptTokens, 0);
  const completionTokens = usage.llm.reduce((n, e) => n + e.completionTokens, 0);
  return {
    toolCalls: calls.map((c) => ({
      index: c.call_index,
      source: c.source,
      tool: c.tool,
      status: c.status,
      startedAt: new Date(c.started_at).toISOString(),
      durationMs: c.duration_ms,
      costUsd: microsToUsd(Number(c.cost_micros)),
      error: c.error,
    })),
    usage: {
      llmTokens: promptTokens + completionTokens,
      toolCalls: calls.filter((c) => c.status !== 'not_sent').length,
      costUsd: microsToUsd(usage.costMicros + marketMicros),
      llmCalls: usage.llm.reduce((n, e) => n + e.calls, 0),
      promptTokens,
      completionTokens,
      browserSeconds: usage.browserSeconds,
    },
  };
}
