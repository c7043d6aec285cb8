import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { MarketCallContinuationsTable } from '../schema';
import type { Db } from '../connect';
import { hashApiKey } from '../../lib/crypto';
import { ratePpm, splitCharge } from '../../lib/market/commission';
import type {
  MarketCallEntry,
  MarketCallRecord,
  MarketCallStore,
  MarketRunHandle,
  SettleOutcome,
  WaitingCall,
} from '../../lib/market/tool-call';
import type { DriftReport, ToolDrift } from '../../lib/market/tool-drift';
import { microsToUsd } from '../../lib/money';
import type { SourceParamValues } from '../../lib/tools/types';
import { findPublicMcpEntry, unsealStaticConfig } from './market-mcp';
import {
  closeMarketRun,
  endMarketCall,
  findMarketRun,
  intervalMs,
  runChargeToken,
  type MarketRun,
} from './market-runs';
import { offsetOf, type PageRequest } from '../../lib/pagination';
import { writeSystemLog } from './system-logs';

/**
 * Storage of market tool calls (lib/market/tool-call.ts), SQL only: the live entry as a call needs it,
 * fixed-price settlement, call records, waiting calls, the rug-pull flag, a run's settlement and the
 * provider's revenue view. The call path over this store (its runs, caches and credential checks) is
 * assembled in api/services/market/call-path.ts.
 */

/** The live approved entry with its staticConfig unsealed (for the upstream request only). */
export async function loadCallEntry(db: Db, masterKey: Buffer, entryId: string): Promise<MarketCallEntry | null> {
  const sub = await findPublicMcpEntry(db, entryId);
  if (!sub) return null;
  return {
    entryId: sub.listingId,
    submissionId: sub.id,
    slug: sub.slug,
    name: sub.name,
    providerId: sub.ownerId,
    type: sub.type,
    remoteMcpUrl: sub.remoteMcpUrl,
    openapiBaseUrl: sub.openapiBaseUrl,
    openapiSpec: sub.openapiSpec,
    staticConfig: unsealStaticConfig(masterKey, sub) as SourceParamValues,
    requiredUserParamsSchema: sub.requiredUserParamsSchema,
    monetizationStrategy: sub.monetizationStrategy,
    pricingEvents: sub.pricingEvents,
    approvedTools: sub.approvedTools ?? sub.tools,
  };
}

export interface ApiKeyOwner {
  apiKeyId: string;
  userId: string;
  subscriptionActive: boolean;
}

/** The account of a live (unrevoked) API key, with the key's id. */
export async function findApiKeyOwner(db: Db, apiKey: string): Promise<ApiKeyOwner | null> {
  if (apiKey.length > 256) return null;
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('subscriptions as s', 's.user_id', 'k.user_id')
    .select(['k.id', 'k.user_id', 's.status'])
    .where('k.key_hash', '=', hashApiKey(apiKey))
    .where('k.revoked_at', 'is', null)
    .executeTakeFirst();
  return row ? { apiKeyId: row.id, userId: row.user_id, subscriptionActive: row.status === 'active' } : null;
}

/** A run's handle (for the call logic); its charge token is signed when first read (a fixed-price or free call never sends it). */
export const marketRunHandle = (run: MarketRun, chargeToken: () => string): MarketRunHandle => {
  let token: string | undefined;
  return {
    id: run.id,
    get chargeToken() {
      return (token ??= chargeToken());
    },
    holdMicros: run.holdMicros,
    chargedMicros: run.chargedMicros,
    limitMicros: run.limitMicros,
    expiresAt: run.expiresAt,
  };
};

function callPayload(record: MarketCallRecord) {
  return {
    callId: record.callId,
    entryId: record.entry.entryId,
    entrySlug: record.entry.slug,
    toolName: record.toolName,
    runId: record.runId,
    selectionId: record.selectionId,
    outcome: record.outcome,
    isError: record.isError,
    ...(record.code && { code: record.code }),
    durationMs: record.durationMs,
    costUsd: microsToUsd(record.costMicros),
  };
}

function logLine(record: MarketCallRecord): string {
  const how =
    record.outcome === 'answered'
      ? record.isError
        ? 'answered with a tool error'
        : 'answered'
      : `${record.outcome} (${record.code})`;
  return `market tool ${record.entry.slug}/${record.toolName}: ${how} in ${record.durationMs} ms, cost ${microsToUsd(record.costMicros)} USD${record.runId ? ` (run ${record.runId})` : ''}`;
}

/** The event name of fixed-price call charges in market_run_charges (pricing events are not used by tool_call_fixed entries). */
export const TOOL_CALL_EVENT = 'tool_call';

/**
 * The settlement of an answered fixed-price call in one round trip: settle_market_call (migration
 * 0016) locks both wallets in user-id order (as lockWallets and chargeMarketRun do: no deadlock),
 * locks and re-checks the run (open, still active — unexpired — like a provider's charge, remaining
 * hold ≥ price: the call's reservation), then writes the charge row, the run's total, the end of the
 * call's use of the run (and the close of a run of its own), the consumer's transaction line, the
 * debit and the provider's revenue (post_market_charge, through apply_ledger_entry) and the log line
 * — all or nothing. A refused settlement releases the call's reservation instead. A provider
 * calling its own entry is settled the same way (both entries move the one wallet, in turn). Keys
 * derive from a fresh charge id and the transaction line carries no job, as post_market_charge's do
 * (the ledger reconciliation ties a debit outside a job to its line).
 */
async function settleFixedCall(
  db: Db,
  input: Parameters<MarketCallStore['settleFixedCall']>[0],
  options: CallStoreOptions,
): Promise<SettleOutcome> {
  const { record, runId, priceMicros, commissionRate, closeRun } = input;
  // splitCharge refuses a price that is not a positive whole number of micro-USD.
  const split = splitCharge({
    count: 1,
    unitPriceMicros: priceMicros,
    remainingMicros: priceMicros,
    commissionPpm: ratePpm(commissionRate),
  });
  const chargeId = randomUUID();
  const payload = callPayload(record);
  const chargeResult = {
    chargeId,
    ...payload,
    commissionUsd: microsToUsd(split.commissionMicros),
    providerRevenueUsd: microsToUsd(split.providerRevenueMicros),
  };
  const outcome = await sql<{ outcome: 'charged' | 'run_closed' | 'run_expired' | 'run_limit_reached' }>`
    select settle_market_call(${runId}::uuid, ${chargeId}::uuid, ${record.consumerId}::uuid, ${record.entry.providerId}::uuid,
                              ${`tool-call:${record.callId}`}::text, ${record.callId}::text, ${record.toolName}::text, ${TOOL_CALL_EVENT}::text,
                              ${split.totalMicros}::bigint, ${split.commissionMicros}::bigint, ${split.providerRevenueMicros}::bigint, ${JSON.stringify(chargeResult)}::jsonb,
                              ${closeRun}::boolean, ${`market:${record.entry.slug}`}::text, ${`${record.toolName} call${record.isError ? ' (tool error)' : ''}`}::text,
                              ${JSON.stringify(payload)}::jsonb, ${record.jobId}::uuid, ${logLine(record)}::text, ${options.commit === 'fast'}::boolean,
                              ${intervalMs(options.idleGraceMs)}) as outcome`.execute(db);
  const settled = outcome.rows[0]!.outcome;
  return settled === 'charged' ? { charged: true, costMicros: split.totalMicros } : { charged: false, reason: settled };
}

/**
 * When a fixed-price call's settlement statement commits (MARKET_CALL_COMMIT): `durable` waits for
 * the WAL flush; `fast` does not (synchronous_commit off for that statement only), so a crash of the
 * Postgres server may forget the last fraction of a second of settled calls, atomically (free calls,
 * never a debit without its revenue or a charge without its call).
 */
export type CallCommit = 'fast' | 'durable';

export interface CallStoreOptions {
  commit: CallCommit;
  /** MARKET_RUN_IDLE_GRACE_SECONDS: how long a run takes the provider's charges after a call ends. */
  idleGraceMs: number;
  /** MARKET_CHARGE_TOKEN_KEY: a continued call's run gets its charge token back (provider_event headers). */
  chargeTokenKey?: Buffer;
}

function waitingCall(row: Selectable<MarketCallContinuationsTable>): WaitingCall {
  return {
    id: row.id,
    callId: row.call_id,
    runId: row.run_id,
    consumerId: row.consumer_id,
    entryId: row.entry_id,
    selectionId: row.selection_id,
    toolName: row.tool_name,
    upstreamState: row.upstream_state,
    releaseMicros: Number(row.release_micros),
    closeRun: row.close_run,
    startedAt: new Date(row.started_at),
    expiresAt: new Date(row.expires_at),
  };
}

export function createMarketCallStore(db: Db, options: CallStoreOptions): MarketCallStore {
  return {
    settleFixedCall(input): Promise<SettleOutcome> {
      return settleFixedCall(db, input, options);
    },

    async endCall(input) {
      await endMarketCall(db, { ...input, graceMs: options.idleGraceMs });
    },

    async recordCall(record) {
      if (record.outcome === 'refused') {
        await writeSystemLog(db, { userId: record.consumerId, jobId: record.jobId, message: logLine(record) });
        return;
      }
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('agent_transactions')
          .values({
            job_id: record.jobId,
            user_id: record.consumerId,
            agent_name: `market:${record.entry.slug}`,
            result:
              `${record.toolName} call ${record.outcome === 'answered' ? (record.isError ? '(tool error)' : '') : `failed (${record.code})`}`.trim(),
            payload: JSON.stringify(callPayload(record)),
            cost_micros: 0,
            idempotency_key: `market-call:${record.callId}`,
          })
          .onConflict((oc) => oc.column('idempotency_key').doNothing())
          .execute();
        await writeSystemLog(trx, { userId: record.consumerId, jobId: record.jobId, message: logLine(record) });
      });
    },

    async awaitInput(waiting) {
      await db
        .insertInto('market_call_continuations')
        .values({
          id: waiting.id,
          call_id: waiting.callId,
          run_id: waiting.runId,
          consumer_id: waiting.consumerId,
          entry_id: waiting.entryId,
          selection_id: waiting.selectionId,
          tool_name: waiting.toolName,
          upstream_state: waiting.upstreamState,
          release_micros: waiting.releaseMicros,
          close_run: waiting.closeRun,
          started_at: waiting.startedAt,
          expires_at: waiting.expiresAt,
        })
        .execute();
    },

    async continueCall(key) {
      const row = await db
        .updateTable('market_call_continuations')
        .set({ ended_at: sql`now()` })
        .where('id', '=', key.id)
        .where('consumer_id', '=', key.consumerId)
        .where('entry_id', '=', key.entryId)
        .where('selection_id', '=', key.selectionId)
        .where('tool_name', '=', key.toolName)
        .where('ended_at', 'is', null)
        .where('expires_at', '>', sql<Date>`now()`)
        .returningAll()
        .executeTakeFirst();
      if (!row) return null;
      const run = await findMarketRun(db, row.run_id);
      const live = run && run.status === 'open' && run.expiresAt.getTime() > Date.now();
      return {
        waiting: waitingCall(row),
        run:
          live && options.chargeTokenKey
            ? marketRunHandle(run, () => runChargeToken(options.chargeTokenKey!, run))
            : null,
      };
    },

    async abandonCall(id) {
      const row = await db
        .updateTable('market_call_continuations')
        .set({ ended_at: sql`now()` })
        .where('id', '=', id)
        .where('ended_at', 'is', null)
        .returning(['run_id', 'release_micros', 'close_run'])
        .executeTakeFirst();
      if (!row) return false;
      await endMarketCall(db, {
        runId: row.run_id,
        releaseMicros: Number(row.release_micros),
        close: row.close_run,
        graceMs: options.idleGraceMs,
      });
      return true;
    },

    async flagDrift(entry, report: DriftReport) {
      const values = {
        entry_id: entry.entryId,
        approved_hash: report.approvedHash,
        upstream_hash: report.upstreamHash,
        tools: JSON.stringify(report.drifted),
      };
      await db
        .insertInto('mcp_market_drift')
        .values({ submission_id: entry.submissionId, ...values })
        .onConflict((oc) => oc.column('submission_id').doUpdateSet({ ...values, detected_at: sql`now()` }))
        .execute();
    },
  };
}

export interface DriftFlag {
  flaggedForReview: true;
  approvedHash: string;
  upstreamHash: string;
  firstDetectedAt: string;
  detectedAt: string;
  tools: ToolDrift[];
}

/** The rug-pull flags of these submissions (admin review view). */
export async function findDriftFlags(db: Db, submissionIds: readonly string[]): Promise<Map<string, DriftFlag>> {
  if (submissionIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('mcp_market_drift')
    .selectAll()
    .where('submission_id', 'in', submissionIds)
    .execute();
  return new Map(
    rows.map((r) => [
      r.submission_id,
      {
        flaggedForReview: true as const,
        approvedHash: r.approved_hash,
        upstreamHash: r.upstream_hash,
        firstDetectedAt: new Date(r.first_detected_at).toISOString(),
        detectedAt: new Date(r.detected_at).toISOString(),
        tools: r.tools as ToolDrift[],
      },
    ]),
  );
}

export interface RunSettlement {
  runId: string;
  closedNow: boolean;
  releasedMicros: number;
  chargedMicros: number;
  providerRevenueMicros: number;
  settledNow: boolean;
}

/**
 * The end of a market run (its workflow's activity, retried until it succeeds): closes the run if
 * still open (no charge is accepted afterwards; its unused hold is released), then marks it settled
 * once and tells both accounts in their logs what it cost and earned. Idempotent.
 */
export async function settleMarketRun(db: Db, runId: string): Promise<RunSettlement | null> {
  const closed = await closeMarketRun(db, runId);
  if (!closed) return null;
  return db.transaction().execute(async (trx) => {
    const run = await trx
      .selectFrom('market_runs')
      .selectAll()
      .where('id', '=', runId)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const totals = await trx
      .selectFrom('market_run_charges')
      .select((eb) => [eb.fn.coalesce(eb.fn.sum<string>('provider_revenue_micros'), sql<string>`0`).as('revenue')])
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    const revenue = Number(totals.revenue);
    const settlement = {
      runId,
      closedNow: closed.closed,
      releasedMicros: run.hold_micros - run.charged_micros,
      chargedMicros: run.charged_micros,
      providerRevenueMicros: revenue,
    };
    if (run.settled_at !== null) return { ...settlement, settledNow: false };
    await trx.updateTable('market_runs').set({ settled_at: new Date() }).where('id', '=', runId).execute();
    // Runs that ended with their call (fixed-price and free direct calls) were already reported per call.
    if (!closed.closed) return { ...settlement, settledNow: true };
    if (run.charged_micros > 0 || run.hold_micros > 0) {
      await writeSystemLog(trx, {
        userId: run.consumer_id,
        jobId: run.job_id,
        message: `market run ${runId} settled: charged ${microsToUsd(run.charged_micros)} USD of a ${microsToUsd(run.hold_micros)} USD hold; the rest is released`,
      });
    }
    if (revenue > 0) {
      await writeSystemLog(trx, {
        userId: run.provider_id,
        message: `market run ${runId} settled: ${microsToUsd(revenue)} USD revenue credited`,
      });
    }
    return { ...settlement, settledNow: true };
  });
}

/** GET /provider/revenue: the provider's runs (newest first) with their charges per event and the amounts. */
export async function listProviderRevenue(db: Db, providerId: string, page: PageRequest) {
  const [runs, totals] = await Promise.all([
    db
      .selectFrom('market_runs')
      .selectAll()
      .where('provider_id', '=', providerId)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    sql<{ runs: string; total: string; commission: string; revenue: string }>`
      select count(distinct r.id) as runs, coalesce(sum(c.total_micros), 0) as total, coalesce(sum(c.commission_micros), 0) as commission,
             coalesce(sum(c.provider_revenue_micros), 0) as revenue
      from market_runs r left join market_run_charges c on c.run_id = r.id
      where r.provider_id = ${providerId}::uuid`.execute(db),
  ]);
  const ids = runs.map((r) => r.id);
  const charges = ids.length
    ? await db
        .selectFrom('market_run_charges')
        .select((eb) => [
          'run_id',
          'event_name',
          'tool_name',
          eb.fn.count<string>('id').as('charges'),
          eb.fn.sum<string>('charged_count').as('charged_count'),
          eb.fn.sum<string>('total_micros').as('total'),
          eb.fn.sum<string>('commission_micros').as('commission'),
          eb.fn.sum<string>('provider_revenue_micros').as('revenue'),
        ])
        .where('run_id', 'in', ids)
        .groupBy(['run_id', 'event_name', 'tool_name'])
        .orderBy('event_name')
        .execute()
    : [];
  const t = totals.rows[0]!;
  return {
    totals: {
      runs: Number(t.runs),
      totalChargedUsd: microsToUsd(Number(t.total)),
      commissionUsd: microsToUsd(Number(t.commission)),
      providerRevenueUsd: microsToUsd(Number(t.revenue)),
    },
    total: Number(t.runs),
    runs: runs.map((r) => {
      const own = charges.filter((c) => c.run_id === r.id);
      const sum = (k: 'total' | 'commission' | 'revenue') => own.reduce((acc, c) => acc + Number(c[k]), 0);
      return {
        runId: r.id,
        entryId: r.entry_id,
        selectionId: r.selection_id,
        status: r.status,
        createdAt: new Date(r.created_at).toISOString(),
        expiresAt: new Date(r.expires_at).toISOString(),
        closedAt: r.closed_at ? new Date(r.closed_at).toISOString() : null,
        settledAt: r.settled_at ? new Date(r.settled_at).toISOString() : null,
        maxTotalUsd: microsToUsd(r.hold_micros),
        totalChargedUsd: microsToUsd(sum('total')),
        commissionUsd: microsToUsd(sum('commission')),
        providerRevenueUsd: microsToUsd(sum('revenue')),
        events: own.map((c) => ({
          eventName: c.event_name,
          toolName: c.tool_name,
          charges: Number(c.charges),
          chargedCount: Number(c.charged_count),
          totalChargedUsd: microsToUsd(Number(c.total)),
          providerRevenueUsd: microsToUsd(Number(c.revenue)),
        })),
      };
    }),
  };
}
