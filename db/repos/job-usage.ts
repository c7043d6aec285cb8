import { sql } from 'kysely';
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

/**
 * The job's hold is used up: what it recorded reached what was reserved for it. The error's name is
 * (its class name) is its Temporal failure type, which workflows treat as final (retrying would only spend more).
 */
export class HoldExhaustedError extends Error {
  override readonly name = 'HoldExhaustedError';
}

const usd = (micros: number) => `$${(micros / 1_000_000).toFixed(6)}`;

export interface HoldStatus {
  holdMicros: number;
  usedMicros: number;
  /** hold − used; negative after an overrun. */
  remainingMicros: number;
}

/** The job's open hold and the usage recorded against it; null when the job has no open hold (released, or older than holds). */
export async function holdStatus(db: Db, jobId: string): Promise<HoldStatus | null> {
  const row = await db
    .selectFrom('job_holds')
    .select((eb) => [
      'amount_micros',
      eb
        .selectFrom('job_usage')
        .select(sql<number>`coalesce(sum(cost_micros), 0)::bigint`.as('used'))
        .where('job_usage.job_id', '=', jobId)
        .as('used'),
    ])
    .where('job_id', '=', jobId)
    .where('released_at', 'is', null)
    .executeTakeFirst();
  return row ? holdStatusOf(row) : null;
}

function holdStatusOf(row: { amount_micros: number; used: number | string | null }): HoldStatus {
  const usedMicros = Number(row.used ?? 0);
  return { holdMicros: row.amount_micros, usedMicros, remainingMicros: row.amount_micros - usedMicros };
}

/** Why a run stops on its hold, in words a client reads in the job's error. */
export function holdExhaustedMessage(status: HoldStatus, nextMicros?: number): string {
  const next = nextMicros === undefined ? '' : `, and the next step may cost up to ${usd(nextMicros)}`;
  return `stopped: the wallet cannot pay for more usage (this run used ${usd(status.usedMicros)} of the ${usd(status.holdMicros)} reserved for it at start${next})`;
}

/** Before a billable call: fails with HoldExhaustedError unless the job's hold still covers the call's worst case. */
export async function assertHoldCovers(db: Db, jobId: string, worstCaseMicros: number): Promise<void> {
  const status = await holdStatus(db, jobId);
  if (status && status.remainingMicros < worstCaseMicros)
    throw new HoldExhaustedError(holdExhaustedMessage(status, worstCaseMicros));
}

/**
 * Records one consumption (the usage happened, so it is always recorded) and checks it against the
 * job's hold: when the job has now used more than its hold, it fails with HoldExhaustedError so the
 * run stops. Settlement never debits more than the hold.
 */
export async function recordUsage(db: Db, usage: UsageRecord): Promise<HoldStatus | null> {
  if (!Number.isSafeInteger(usage.costMicros) || usage.costMicros < 0)
    throw new Error('Usage cost must be a non-negative integer of micro-USD');
  // One statement: the insert runs as a CTE, whose row the hold's sum (same snapshot) adds by hand.
  const row = await db
    .with('recorded', (qb) =>
      qb
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
        .returning('cost_micros'),
    )
    .selectFrom('job_holds')
    .select((eb) => [
      'amount_micros',
      sql<number>`(${eb
        .selectFrom('job_usage')
        .select(sql`coalesce(sum(cost_micros), 0)`.as('s'))
        .where('job_usage.job_id', '=', usage.jobId)})
        + (${eb.selectFrom('recorded').select(sql`coalesce(sum(cost_micros), 0)`.as('s'))})`.as('used'),
    ])
    .where('job_id', '=', usage.jobId)
    .where('released_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  const status = holdStatusOf(row);
  if (status.remainingMicros < 0) throw new HoldExhaustedError(holdExhaustedMessage(status));
  return status;
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
