import type { Db } from '../connect';
import type { UsageKind } from '../schema';

export interface UsageRecord {
  jobId: string;
  /** Unique per real-world consumption (e.g. activity attempt + call index); a replay records nothing. */
  usageKey: string;
  kind: UsageKind;
  model?: string | null;
  promptTokens?: number;
  completionTokens?: number;
  quantity?: number;
  costMicros: number;
}

export async function recordUsage(db: Db, usage: UsageRecord): Promise<void> {
  await db
    .insertInto('job_usage')
    .values({
      job_id: usage.jobId,
      usage_key: usage.usageKey,
      kind: usage.kind,
      model: usage.model ?? null,
      prompt_tokens: usage.promptTokens ?? 0,
      completion_tokens: usage.completionTokens ?? 0,
      quantity: usage.quantity ?? 0,
      cost_micros: usage.costMicros,
    })
    .onConflict((oc) => oc.column('usage_key').doNothing())
    .execute();
}

export interface UsageSummary {
  costMicros: number;
  llm: { model: string; calls: number; promptTokens: number; completionTokens: number; costMicros: number }[];
  browserSeconds: number;
  captchaSolves: number;
  proxyRequests: number;
  byKind: Record<UsageKind, number>;
}

export async function summarizeUsage(db: Db, jobId: string): Promise<UsageSummary> {
  const rows = await db.selectFrom('job_usage').selectAll().where('job_id', '=', jobId).orderBy('id').execute();
  const summary: UsageSummary = {
    costMicros: 0,
    llm: [],
    browserSeconds: 0,
    captchaSolves: 0,
    proxyRequests: 0,
    byKind: { llm: 0, browser: 0, captcha: 0, proxy: 0 },
  };
  for (const row of rows) {
    summary.costMicros += row.cost_micros;
    summary.byKind[row.kind] += row.cost_micros;
    if (row.kind === 'llm') {
      const model = row.model ?? 'unknown';
      let entry = summary.llm.find((e) => e.model === model);
      if (!entry) summary.llm.push((entry = { model, calls: 0, promptTokens: 0, completionTokens: 0, costMicros: 0 }));
      entry.calls += row.quantity || 1;
      entry.promptTokens += row.prompt_tokens;
      entry.completionTokens += row.completion_tokens;
      entry.costMicros += row.cost_micros;
    } else if (row.kind === 'browser') summary.browserSeconds += row.quantity;
    else if (row.kind === 'captcha') summary.captchaSolves += row.quantity;
    else summary.proxyRequests += row.quantity;
  }
  summary.browserSeconds = Math.round(summary.browserSeconds * 1000) / 1000;
  return summary;
}
