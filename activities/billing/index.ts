import type { Db } from '../../db/connect';
import { getJob, logJobEvent } from '../../db/repos/jobs';
import { summarizeUsage } from '../../db/repos/job-usage';
import { chargeUsage } from '../../db/repos/ledger';
import { endJobMarketRuns } from '../../db/repos/market-runs';
import { microsToUsd } from '../../lib/money';

export function createBillingActivities({ db, marketRunGraceMs }: { db: Db; marketRunGraceMs: number }) {
  return {
    /**
     * One agent transaction and one debit per job, whatever the outcome and however often retried:
     * the true cost of the recorded usage, never more than the job's hold, which is released in the
     * same transaction. The job's market runs end with it (endJobMarketRuns: closed, or — a
     * provider_event run within the grace after its last call — closed to new calls and released when
     * that grace ends), so no market hold outlives the job.
     */
    async settleJobUsage(input: {
      jobId: string;
      agentName: string;
      outcome: 'completed' | 'failed';
    }): Promise<{ costMicros: number; debitedMicros: number }> {
      const job = await getJob(db, input.jobId);
      const usage = await summarizeUsage(db, input.jobId);
      const payload = {
        llm: usage.llm.map((e) => ({ ...e, costUsd: microsToUsd(e.costMicros) })),
        browserSeconds: usage.browserSeconds,
        captchaSolves: usage.captchaSolves,
        proxyRequests: usage.proxyRequests,
        costUsdByKind: Object.fromEntries(Object.entries(usage.byKind).map(([k, v]) => [k, microsToUsd(v)])),
      };
      const charged = await chargeUsage(db, {
        userId: job.user_id,
        jobId: input.jobId,
        agentName: input.agentName,
        result: input.outcome,
        payload,
        costMicros: usage.costMicros,
        idempotencyKey: `usage:${input.jobId}`,
      });
      await endJobMarketRuns(db, input.jobId, marketRunGraceMs);
      if (!charged.replayed) {
        const unbilled =
          charged.unbilledMicros > 0
            ? ` (usage of $${microsToUsd(usage.costMicros).toFixed(6)} exceeded the amount held for this run; the rest is not charged)`
            : '';
        const line = `charged $${microsToUsd(charged.debitedMicros).toFixed(6)} for usage${unbilled}`;
        await logJobEvent(db, {
          jobId: input.jobId,
          jobLog: line,
          systemLog: `${input.agentName} job ${input.jobId} ${line}`,
        });
      }
      return { costMicros: usage.costMicros, debitedMicros: charged.debitedMicros };
    },
  };
}

export type BillingActivities = ReturnType<typeof createBillingActivities>;
