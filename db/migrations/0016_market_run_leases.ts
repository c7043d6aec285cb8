import { type Kysely, sql } from 'kysely';
import { dropFunctionsNamed } from './drop-functions';

/**
 * Market runs hold what their calls can cost, for as long as calls use them.
 *
 * - market_runs.calls_in_flight: the calls using the run right now (each call takes one when it
 *   acquires the run and gives it back when it ends). A run with a call in flight is never closed by
 *   another call: it is only retired (accepts_calls false) and ends when its own calls are done.
 * - market_runs.idle_until: when the last call that used the run ended, plus MARKET_RUN_IDLE_GRACE_SECONDS.
 * - market_runs.accepts_calls: whether later calls of the same consumer selection join this run (a
 *   shared run: a credential's provider_event calls, an agent execution's selection); false for a run
 *   of its own (a direct fixed-price or free call) and for a retired run.
 * - market_run_active(...): the one definition of a run that still holds money and takes charges:
 *   open, before its expiry, and either used by a call or within the grace after its last call. Its
 *   unused part (hold − charged) counts against the available balance only while it is active, and
 *   every charge — the provider's (db/repos/market-runs.ts chargeMarketRun) and a fixed-price call's
 *   settlement — is accepted only while it is active, under the consumer's wallet lock: an admission
 *   can never reserve money that a late charge then spends. A run that stopped being active never
 *   becomes active again (calls only join active runs).
 * - open_holds_micros(user): redefined with market_run_active.
 * - acquire_market_run(...): replaces open_market_run. Under the consumer's wallet lock it joins the
 *   consumer's shared run of (selection, execution or entry) while that run is active, of the same
 *   live submission, and lives at least p_min_life longer; otherwise it retires that run (closing it
 *   when nothing uses it any more) and opens a new one. The hold: a fixed-price call reserves exactly
 *   its price (p_reserve), on a new run or added to the shared one; otherwise min(available balance,
 *   MARKET_RUN_CHARGE_LIMIT_USD, the cap) — nothing for a free entry. The cap of an agent execution's
 *   selection (p_cap) is for the whole execution: what its other runs hold or charged is taken off.
 *   Returns {"outcome": "opened"|"joined", "run": <row>}, {"outcome": "run_limit_reached", "room": micros}
 *   or {"outcome": <refusal>}.
 * - end_market_call(run, release, close, grace): a call gives the run back: calls_in_flight − 1, the
 *   unused reservation of a fixed-price call that was not charged released, idle_until moved to now +
 *   grace; `close` closes a run of its own.
 * - settle_market_call(..., p_grace): also refuses a run that is no longer active (`run_expired`) and
 *   ends the call's use of the run (its reservation consumed by the charge, or released on a refusal).
 *
 * The functions' current text lives in db/functions/<name>.sql, applied after the versioned migrations
 * (db/functions/README.md), which also replaces a version with other arguments (settle_market_call's of 0015);
 * the versions created here are in the git history of this file.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table market_runs
      add column calls_in_flight integer not null default 0 check (calls_in_flight >= 0),
      add column idle_until timestamptz,
      add column accepts_calls boolean not null default false`.execute(db);
  // Runs opened before this migration keep what they had: active until their expiry, an agent's run shared.
  await sql`update market_runs set idle_until = expires_at, accepts_calls = job_id is not null where status = 'open'`.execute(
    db,
  );
  await sql`drop index market_runs_agent_open_idx`.execute(db);
  await sql`create unique index market_runs_agent_shared_idx on market_runs (job_id, selection_id) where job_id is not null and status = 'open' and accepts_calls`.execute(
    db,
  );
  await sql`create unique index market_runs_direct_shared_idx on market_runs (consumer_id, entry_id, selection_id) where job_id is null and status = 'open' and accepts_calls`.execute(
    db,
  );
  await sql`create index market_runs_job_idx on market_runs (job_id, selection_id) where job_id is not null`.execute(
    db,
  );

  // Replaced by acquire_market_run (db/functions/acquire_market_run.sql), where a database still has it.
  await sql`drop function if exists open_market_run(uuid, uuid, uuid, text, bigint, bigint, timestamptz, timestamptz, uuid)`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await dropFunctionsNamed(db, 'end_market_call', 'acquire_market_run', 'market_run_active');
  await sql`drop index if exists market_runs_job_idx`.execute(db);
  await sql`drop index if exists market_runs_direct_shared_idx`.execute(db);
  await sql`drop index if exists market_runs_agent_shared_idx`.execute(db);
  await sql`create unique index market_runs_agent_open_idx on market_runs (job_id, selection_id) where job_id is not null and status = 'open'`.execute(
    db,
  );
  await sql`alter table market_runs drop column if exists accepts_calls, drop column if exists idle_until, drop column if exists calls_in_flight`.execute(
    db,
  );
}
