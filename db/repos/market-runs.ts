import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../connect';
import type { MarketRunsTable, MarketRunStatus } from '../schema';
import { signChargeToken } from '../../lib/market/charge-token';
import type { OwedMarketRun } from '../../lib/market/run-workflow';
import { splitCharge, ratePpm } from '../../lib/market/commission';
import type { StoredPricingEvent } from '../../lib/market/listing';
import { microsToUsd } from '../../lib/money';

/**
 * Market runs: a consumer's run against a market entry, the money it may spend on provider charges
 * (its hold), and the production charges against it. See migration 0008 and docs/selling-tools.md.
 */
export interface MarketRun {
  id: string;
  consumerId: string;
  providerId: string;
  /** The entry's public id. */
  entryId: string;
  submissionId: string;
  selectionId: string;
  /** The entry's pricing when the run opened. */
  pricingEvents: StoredPricingEvent[];
  capMicros: number | null;
  holdMicros: number;
  chargedMicros: number;
  status: MarketRunStatus;
  createdAt: Date;
  expiresAt: Date;
  closedAt: Date | null;
  /** The calls using the run right now. */
  callsInFlight: number;
  /** When the grace after the run's last call ends (null: no call ended yet). */
  idleUntil: Date | null;
  /** Whether later calls of the same selection join this run. */
  acceptsCalls: boolean;
  /**
   * The most the run may be charged whatever the wallet holds (the run charge limit, the consumer's cap and
   * budgets, when it opened: migration 0028), or null for a run opened before it was recorded.
   */
  limitMicros: number | null;
}

function toRun(row: Selectable<MarketRunsTable>): MarketRun {
  return {
    id: row.id,
    consumerId: row.consumer_id,
    providerId: row.provider_id,
    entryId: row.entry_id,
    submissionId: row.submission_id,
    selectionId: row.selection_id,
    pricingEvents: row.pricing_events as StoredPricingEvent[],
    capMicros: row.cap_micros,
    holdMicros: row.hold_micros,
    chargedMicros: row.charged_micros,
    status: row.status,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    closedAt: row.closed_at === null ? null : new Date(row.closed_at),
    callsInFlight: row.calls_in_flight,
    idleUntil: row.idle_until === null ? null : new Date(row.idle_until),
    acceptsCalls: row.accepts_calls,
    limitMicros: row.limit_micros == null ? null : Number(row.limit_micros),
  };
}

export async function findMarketRun(db: Db, runId: string): Promise<MarketRun | null> {
  const row = await db.selectFrom('market_runs').selectAll().where('id', '=', runId).executeTakeFirst();
  return row ? toRun(row) : null;
}

export interface OpenMarketRunInput {
  consumerId: string;
  /** The entry's public id. */
  entryId: string;
  /** The consumer's selection: the credential's id for a direct call, the stored selection's id for an agent. */
  selectionId: string;
  /**
   * The consumer's own cap (maxTotalUsdPerRun of a credential: per run; max_total_usd of an agent
   * selection: per execution, over all its runs), or null.
   */
  capMicros?: number | null;
  ttlMs: number;
  /** MARKET_RUN_CHARGE_LIMIT_USD in micro-USD. */
  limitMicros: number;
  /** Signs the run's charge token (MARKET_CHARGE_TOKEN_KEY). */
  chargeTokenKey: Buffer;
  now?: Date;
  /** The agent execution the run belongs to; null for a direct call. */
  jobId?: string | null;
}

export interface AcquireMarketRunInput extends OpenMarketRunInput {
  /**
   * What the call reserves: a fixed-price call its price (added to a shared run's hold); null (a
   * provider_event call) for the run's full hold, min(available, limit, cap).
   */
  reserveMicros: number | null;
  /** Join (or open) the consumer's shared run of this selection, instead of a run of the call's own. */
  shared: boolean;
  /** A shared run is joined only while it lives at least this much longer (the call, then the grace for the provider's charges). */
  minLifeMs: number;
  /**
   * How long a run this call opens stays active after its last call (a window of a credential's fixed-price
   * or free calls: MARKET_RUN_WINDOW_IDLE_SECONDS); omitted: MARKET_RUN_IDLE_GRACE_SECONDS (migration 0024).
   */
  idleGraceMs?: number | null;
  /**
   * The credential the call was made with, checked in the same statement before anything else (migration 0027):
   * its API key live and the credential not revoked ('key_rotated', 'credential_revoked'), recorded at its first
   * use, its last use written to the minute. Omitted: no check (the caller checked it, or there is no credential).
   */
  credential?: PresentedCredential | null;
}

/** A presented market credential, as its (verified) token names it. */
export interface PresentedCredential {
  id: string;
  apiKeyId: string;
  /** How it reached the platform (recorded with a credential issued before credentials were recorded). */
  source: 'direct' | 'oauth';
  issuedAt: Date;
}

export type OpenMarketRunOutcome =
  | { outcome: 'opened'; run: MarketRun; chargeToken: string }
  | { outcome: 'run_limit_reached'; roomMicros: number }
  | { outcome: 'entry_not_found' }
  | { outcome: 'subscription_inactive' }
  | { outcome: 'insufficient_funds' };

/** Which budget of a credential refused a call (migration 0028): its total, or its calendar month's (UTC). */
export type CredentialBudget = 'total' | 'monthly';

export type AcquireMarketRunOutcome =
  | OpenMarketRunOutcome
  | { outcome: 'joined'; run: MarketRun; chargeToken: string }
  /** The call would take the credential past a budget: it can spend `roomMicros` more within it. */
  | { outcome: 'budget_reached'; budget: CredentialBudget; budgetMicros: number; roomMicros: number }
  | { outcome: 'key_rotated' }
  | { outcome: 'credential_revoked' };

/** The charge token of a run (kind `run`, bound to the run, its entry and provider, expiring with the run). */
export const runChargeToken = (key: Buffer, run: MarketRun) =>
  signChargeToken(key, {
    kind: 'run',
    runId: run.id,
    providerId: run.providerId,
    entryId: run.entryId,
    exp: run.expiresAt.getTime(),
  });

/** A PostgreSQL interval of whole milliseconds. */
export const intervalMs = (ms: number) => sql`${`${Math.max(0, Math.round(ms))} milliseconds`}::interval`;

/**
 * Acquires the market run a call is billed to, and takes one use of it (calls_in_flight), in one
 * round trip: acquire_market_run (migrations 0016 and 0024) checks the live entry and the subscription, locks
 * the consumer's wallet (as job admission does) and, in later statements than the lock, either joins
 * the consumer's active shared run of this selection (a fixed-price call adding its price to the
 * hold, within the cap and the available balance) or opens a new run holding the call's price
 * (fixed-price) or min(available balance, the cap, MARKET_RUN_CHARGE_LIMIT_USD) (provider_event;
 * nothing for a free entry). A shared run that cannot be joined (too close to its expiry, its grace
 * over, another revision) is retired, never closed under a call that still uses it. A direct call made
 * with a credential that has budgets (migration 0028) is bounded in the same statement by what the
 * credential's runs hold or were charged, in all and in the calendar month (UTC) of `now`
 * ('budget_reached'); the run records its own limit (limitMicros). Every call that acquired a run gives
 * it back with endMarketCall (or the fixed-price settlement).
 */
export async function acquireMarketRun(db: Db, input: AcquireMarketRunInput): Promise<AcquireMarketRunOutcome> {
  if (input.capMicros != null && (!Number.isSafeInteger(input.capMicros) || input.capMicros < 0))
    throw new Error('A run cap is a non-negative whole number of micro-USD');
  if (input.reserveMicros != null && (!Number.isSafeInteger(input.reserveMicros) || input.reserveMicros < 0))
    throw new Error('A reservation is a non-negative whole number of micro-USD');
  if (!Number.isSafeInteger(input.limitMicros) || input.limitMicros <= 0)
    throw new Error('The run charge limit is a positive whole number of micro-USD');
  if (!(input.ttlMs > 0)) throw new Error('A run lives for a positive time');
  const now = input.now ?? new Date();
  const credential = input.credential;
  const result = await sql<{
    acquired:
      | { outcome: 'opened' | 'joined'; run: Selectable<MarketRunsTable> }
      | { outcome: 'run_limit_reached'; room: number }
      | { outcome: 'budget_reached'; budget: CredentialBudget; amount: number; room: number }
      | {
          outcome:
            'entry_not_found' | 'subscription_inactive' | 'insufficient_funds' | 'key_rotated' | 'credential_revoked';
        };
  }>`
    select acquire_market_run(${randomUUID()}::uuid, ${input.consumerId}::uuid, ${input.entryId}::uuid, ${input.selectionId}::text, ${input.jobId ?? null}::uuid,
                              ${input.capMicros ?? null}::bigint, ${input.limitMicros}::bigint, ${input.reserveMicros}::bigint, ${input.shared}::boolean,
                              ${intervalMs(input.minLifeMs)}, ${now}::timestamptz, ${new Date(now.getTime() + input.ttlMs)}::timestamptz,
                              ${input.idleGraceMs == null ? sql`null::interval` : intervalMs(input.idleGraceMs)},
                              ${credential?.id ?? null}::uuid, ${credential?.apiKeyId ?? null}::uuid, ${credential?.source ?? null}::text,
                              ${credential?.issuedAt ?? null}::timestamptz) as acquired`.execute(db);
  const acquired = result.rows[0]!.acquired;
  if (acquired.outcome === 'run_limit_reached')
    return { outcome: 'run_limit_reached', roomMicros: Number(acquired.room) };
  if (acquired.outcome === 'budget_reached')
    return {
      outcome: 'budget_reached',
      budget: acquired.budget,
      budgetMicros: Number(acquired.amount),
      roomMicros: Number(acquired.room),
    };
  if (acquired.outcome !== 'opened' && acquired.outcome !== 'joined') return { outcome: acquired.outcome };
  const run = toRun(acquired.run);
  // Signed when first read: only a provider_event call sends its run's token anywhere.
  let token: string | undefined;
  const key = input.chargeTokenKey;
  return {
    outcome: acquired.outcome,
    run,
    get chargeToken() {
      return (token ??= runChargeToken(key, run));
    },
  };
}

/**
 * Opens a market run of its own (no other call joins it) holding min(available balance, the
 * consumer's cap, MARKET_RUN_CHARGE_LIMIT_USD) — nothing for a free entry — with one use taken (it
 * holds until it is closed or expires). A paid entry with nothing to hold is refused
 * (insufficient_funds). See acquireMarketRun.
 */
export async function openMarketRun(db: Db, input: OpenMarketRunInput): Promise<OpenMarketRunOutcome> {
  const outcome = await acquireMarketRun(db, { ...input, reserveMicros: null, shared: false, minLifeMs: 0 });
  if (outcome.outcome === 'joined') throw new Error('a run of its own was joined');
  if (outcome.outcome === 'key_rotated' || outcome.outcome === 'credential_revoked')
    throw new Error('a run opened without a credential checked one');
  if (outcome.outcome === 'budget_reached') return { outcome: 'run_limit_reached', roomMicros: outcome.roomMicros };
  return outcome;
}

/**
 * A call gives its run back (migration 0016's end_market_call): one use less, `releaseMicros` of its
 * reservation released (a fixed-price call that was not charged), and the grace for the provider's
 * charges restarted from now; `close` closes a run of the call's own. One statement.
 */
export async function endMarketCall(
  db: Db,
  input: { runId: string; releaseMicros: number; close: boolean; graceMs: number },
): Promise<void> {
  await sql`select end_market_call(${input.runId}::uuid, ${input.releaseMicros}::bigint, ${input.close}::boolean, ${intervalMs(input.graceMs)})`.execute(
    db,
  );
}

/**
 * The end of an agent execution (its usage settlement): its market runs take no more calls. Those no
 * call uses and whose provider can no longer charge them (fixed-price and free runs, provider_event
 * runs past the grace of their last call) are closed at once, their unused hold released; a
 * provider_event run still within that grace (a call of the execution still running counts as
 * ending now) keeps accepting the provider's charges until the grace ends, then holds nothing. One
 * statement; repeating it changes nothing more.
 */
export async function endJobMarketRuns(db: Db, jobId: string, graceMs: number): Promise<{ closed: number }> {
  const keep = sql`jsonb_array_length(pricing_events) > 0 and market_run_active(status, expires_at, calls_in_flight, idle_until, now())`;
  const result = await sql`
    update market_runs
      set accepts_calls = false,
          idle_until = case when calls_in_flight > 0 then now() + ${intervalMs(graceMs)} else idle_until end,
          calls_in_flight = 0,
          status = case when ${keep} then status else 'closed' end,
          closed_at = case when ${keep} then closed_at else now() end
      where job_id = ${jobId}::uuid and status = 'open'
      returning status`.execute(db);
  return { closed: result.rows.filter((r) => (r as { status: string }).status === 'closed').length };
}

/**
 * Opened runs whose workflow no worker has started yet, oldest first (the dispatcher's outbox,
 * migration 0015). A run whose token has long expired still gets its workflow: it closes the run and
 * records the settlement at once.
 */
export async function runsOwedAWorkflow(db: Db, limit: number): Promise<OwedMarketRun[]> {
  const rows = await db
    .selectFrom('market_runs')
    .select(['id', 'consumer_id', 'expires_at'])
    .where('workflow_started_at', 'is', null)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: r.id, consumerId: r.consumer_id, expiresAt: new Date(r.expires_at) }));
}

/** Records that these runs' workflows were started. */
export async function markRunWorkflowsStarted(db: Db, runIds: readonly string[]): Promise<void> {
  if (runIds.length === 0) return;
  await db
    .updateTable('market_runs')
    .set({ workflow_started_at: new Date() })
    .where('id', 'in', runIds)
    .where('workflow_started_at', 'is', null)
    .execute();
}

/**
 * Closes a run: no charge is accepted afterwards and its unused hold (hold − charged) is released.
 * Idempotent: closing a closed run changes nothing (`closed` false).
 */
export async function closeMarketRun(
  db: Db,
  runId: string,
): Promise<{ closed: boolean; releasedMicros: number; chargedMicros: number } | null> {
  const closed = await db
    .updateTable('market_runs')
    .set({ status: 'closed', closed_at: new Date() })
    .where('id', '=', runId)
    .where('status', '=', 'open')
    .returning(['hold_micros', 'charged_micros'])
    .executeTakeFirst();
  if (closed)
    return {
      closed: true,
      releasedMicros: closed.hold_micros - closed.charged_micros,
      chargedMicros: closed.charged_micros,
    };
  const run = await findMarketRun(db, runId);
  return run ? { closed: false, releasedMicros: 0, chargedMicros: run.chargedMicros } : null;
}

/** ProviderEventChargeResult of a production charge. */
export interface ProductionChargeResult {
  chargeId: string;
  eventName: string;
  requestedCount: number;
  chargedCount: number;
  chargeableWithinLimit: number;
  eventChargeLimitReached: boolean;
  unitPriceUsd: number;
  totalChargedUsd: number;
  commissionRate: number;
  commissionUsd: number;
  providerRevenueUsd: number;
  meterEventId: string;
  replayed: boolean;
  verification: false;
}

export interface RunChargeRequest {
  runId: string;
  /** The caller (the API key's account): must be the run's provider. */
  providerId: string;
  /** The entry the charge token is bound to. */
  entryId: string;
  idempotencyKey: string;
  /** SHA-256 of the canonical request (defaults applied): a repeated key with another body is a conflict. */
  requestHash: string;
  eventName: string;
  count: number;
  toolName: string | null;
  /** MARKET_COMMISSION_RATE. */
  commissionRate: number;
}

export type RunChargeOutcome =
  | { kind: 'recorded'; result: ProductionChargeResult }
  | { kind: 'replayed'; result: ProductionChargeResult }
  | { kind: 'conflict' }
  | { kind: 'not_found' }
  | { kind: 'forbidden' }
  | { kind: 'wrong_entry' }
  | { kind: 'closed' }
  | { kind: 'expired' }
  /** The grace after the run's last call is over (MARKET_RUN_IDLE_GRACE_SECONDS). */
  | { kind: 'ended' }
  | { kind: 'unknown_event' }
  | { kind: 'entry_not_active' };

/** The answer for a key already used on this run: the stored result (replayed), or a conflict when the request differs. */
function priorOutcome(
  request: RunChargeRequest,
  prior: { request_hash: string | null; result: unknown },
): RunChargeOutcome | null {
  if (prior.request_hash === null) return null;
  if (prior.request_hash !== request.requestHash) return { kind: 'conflict' };
  return { kind: 'replayed', result: { ...(prior.result as ProductionChargeResult), replayed: true } };
}

/**
 * One production charge, exactly once per (run, idempotency key). A repeated key returns the stored
 * result (replayed) — also after the run closed — or a conflict when the request differs. Otherwise
 * one statement (migration 0025's charge_market_run_event) locks the consumer's and the provider's
 * wallets and the run, re-checks the run (open, unexpired, active by market_run_active on the
 * database clock: used by a call or within the grace after its last call), the event (one of the
 * run's pricing events) and the entry (still live), and writes the charge row, the run's charged
 * total, the consumer's debit and the provider's revenue together. chargedCount is what the run's
 * remaining hold pays for (lib/market/commission.ts), split here from the remaining hold as read;
 * when another charge moved it first, nothing is written and the split is made again from the
 * remaining hold the statement found. Concurrent requests with one key queue on the locks, and all but
 * the first find its charge and replay it.
 */
export async function chargeMarketRun(db: Db, request: RunChargeRequest): Promise<RunChargeOutcome> {
  const seen = await readRunForCharge(db, request);
  if (!seen) return { kind: 'not_found' };
  if (seen.provider_id !== request.providerId) return { kind: 'forbidden' };
  if (seen.entry_id !== request.entryId) return { kind: 'wrong_entry' };
  const prior = priorOutcome(request, seen);
  if (prior) return prior;

  const event = (seen.pricing_events as StoredPricingEvent[]).find((e) => e.eventName === request.eventName);
  const commissionPpm = ratePpm(request.commissionRate);
  let remainingMicros = Number(seen.hold_micros) - Number(seen.charged_micros);
  for (;;) {
    const chargeId = randomUUID();
    const split = event
      ? splitCharge({
          count: request.count,
          unitPriceMicros: event.unitPriceMicros,
          remainingMicros,
          commissionPpm,
        })
      : null;
    const result: ProductionChargeResult | null =
      event && split
        ? {
            chargeId,
            eventName: event.eventName,
            requestedCount: request.count,
            chargedCount: split.chargedCount,
            chargeableWithinLimit: split.chargeableWithinLimit,
            eventChargeLimitReached: split.eventChargeLimitReached,
            unitPriceUsd: microsToUsd(event.unitPriceMicros),
            totalChargedUsd: microsToUsd(split.totalMicros),
            commissionRate: commissionPpm / 1_000_000,
            commissionUsd: microsToUsd(split.commissionMicros),
            providerRevenueUsd: microsToUsd(split.providerRevenueMicros),
            meterEventId: `mev_${chargeId}`,
            replayed: false,
            verification: false,
          }
        : null;
    const payload = result && {
      runId: request.runId,
      entryId: seen.entry_id,
      selectionId: seen.selection_id,
      chargeId,
      eventName: result.eventName,
      toolName: request.toolName,
      requestedCount: request.count,
      chargedCount: result.chargedCount,
      unitPriceUsd: result.unitPriceUsd,
    };
    const answer = (
      await sql<{ answer: { outcome: ChargeStatementOutcome; remaining?: string | number } }>`
        select charge_market_run_event(
          ${request.runId}::uuid, ${chargeId}::uuid, ${seen.consumer_id}::uuid, ${seen.provider_id}::uuid,
          ${request.idempotencyKey}::text, ${request.requestHash}::text, ${request.eventName}::text, ${request.toolName}::text,
          ${request.count}::integer, ${split?.chargedCount ?? 0}::integer, ${event?.unitPriceMicros ?? null}::bigint,
          ${split?.totalMicros ?? 0}::bigint, ${split?.commissionMicros ?? 0}::bigint, ${split?.providerRevenueMicros ?? 0}::bigint,
          ${remainingMicros}::bigint, ${result && JSON.stringify(result)}::jsonb,
          ${result && `${result.eventName} × ${result.chargedCount}`}::text, ${payload && JSON.stringify(payload)}::jsonb
        ) as answer`.execute(db)
    ).rows[0]!.answer;
    switch (answer.outcome) {
      case 'recorded':
        return { kind: 'recorded', result: result! };
      case 'stale':
        remainingMicros = Number(answer.remaining);
        continue;
      case 'raced': {
        const raced = await readRunForCharge(db, request);
        return (raced && priorOutcome(request, raced)) ?? { kind: 'not_found' };
      }
      default:
        return { kind: answer.outcome };
    }
  }
}

type ChargeStatementOutcome =
  'recorded' | 'stale' | 'raced' | 'not_found' | 'closed' | 'expired' | 'ended' | 'unknown_event' | 'entry_not_active';

/** The run as a charge needs it (unlocked), with the charge already made with the request's key if any. */
async function readRunForCharge(db: Db, request: RunChargeRequest) {
  const seen = await sql<{
    consumer_id: string;
    provider_id: string;
    entry_id: string;
    selection_id: string | null;
    pricing_events: unknown;
    hold_micros: string | number;
    charged_micros: string | number;
    request_hash: string | null;
    result: unknown;
  }>`
    select r.consumer_id, r.provider_id, r.entry_id, r.selection_id, r.pricing_events, r.hold_micros, r.charged_micros,
      c.request_hash, c.result
    from market_runs r
    left join market_run_charges c on c.run_id = r.id and c.idempotency_key = ${request.idempotencyKey}
    where r.id = ${request.runId}::uuid`.execute(db);
  return seen.rows[0];
}

/** What the job's market runs have charged so far, in micro-USD. */
export async function chargedMicrosOfJob(db: Db, jobId: string): Promise<number> {
  const market = await db
    .selectFrom('market_runs')
    .select(sql<string>`coalesce(sum(charged_micros), 0)::text`.as('charged'))
    .where('job_id', '=', jobId)
    .executeTakeFirstOrThrow();
  return Number(market.charged);
}

/**
 * While a call still uses a run, its workflow first looks again this often (and never later than the grace
 * after the call); the workflow doubles the wait on each look that finds the run still busy, up to 30 s
 * (workflows/market-run.ts).
 */
const BUSY_RUN_CHECK_MS = 1_000;

/** When a market-run workflow should look at its run again, and whether a call was using the run. */
export interface MarketRunIdleIn {
  inMs: number;
  busy: boolean;
}

/**
 * Null when the run is no longer active (market_run_active, database clock: closed, expired, or no call
 * uses it and the grace after its last call is over) or does not exist; else the milliseconds until it
 * may stop being active: the end of the grace after its last call, or `busyCheckMs` (BUSY_RUN_CHECK_MS
 * unless the workflow backed off) while a call uses it — never past its expiry. The market-run workflow
 * settles a run once this is null.
 */
export async function marketRunIdleIn(
  db: Db,
  runId: string,
  busyCheckMs = BUSY_RUN_CHECK_MS,
): Promise<MarketRunIdleIn | null> {
  const row = (
    await sql<{ active: boolean; busy: boolean; idle_in_ms: number | null; expires_in_ms: number }>`
      select market_run_active(status, expires_at, calls_in_flight, idle_until, clock_timestamp()) as active,
             calls_in_flight > 0 as busy,
             (extract(epoch from (idle_until - clock_timestamp())) * 1000)::float8 as idle_in_ms,
             (extract(epoch from (expires_at - clock_timestamp())) * 1000)::float8 as expires_in_ms
      from market_runs where id = ${runId}::uuid`.execute(db)
  ).rows[0];
  if (!row?.active) return null;
  const idleIn = Math.max(row.idle_in_ms ?? 0, 0);
  const wait = row.busy ? Math.max(idleIn, busyCheckMs) : idleIn;
  // A little past the moment, so the database's clock has passed it when the workflow looks again.
  return { inMs: Math.ceil(Math.min(wait, Math.max(Number(row.expires_in_ms), 0)) + 50), busy: row.busy };
}
