import { type Kysely, sql } from 'kysely';
import { createOpenHoldsMicros, createOpenMarketRun } from './0012_market_run_opening';
import { createSettleMarketCall } from './0015_market_call_path';

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

  await sql`
    create function market_run_active(p_status text, p_expires timestamptz, p_calls integer, p_idle_until timestamptz, p_at timestamptz)
    returns boolean language sql immutable as $$
      select p_status = 'open' and p_expires > p_at and (p_calls > 0 or coalesce(p_idle_until > p_at, false))
    $$`.execute(db);

  await sql`
    create or replace function open_holds_micros(p_user uuid) returns bigint language sql stable as $$
      select (select coalesce(sum(amount_micros), 0) from job_holds where user_id = p_user and released_at is null)
           + (select coalesce(sum(hold_micros - charged_micros), 0) from market_runs
               where consumer_id = p_user and status = 'open' and market_run_active(status, expires_at, calls_in_flight, idle_until, now()))
    $$`.execute(db);

  await sql`drop function open_market_run(uuid, uuid, uuid, text, bigint, bigint, timestamptz, timestamptz, uuid)`.execute(
    db,
  );
  await sql`
    create function acquire_market_run(p_id uuid, p_consumer uuid, p_entry uuid, p_selection text, p_job uuid, p_cap bigint, p_limit bigint,
                                       p_reserve bigint, p_shared boolean, p_min_life interval, p_created timestamptz, p_expires timestamptz)
    returns jsonb language plpgsql volatile as $$
    declare
      v_submission uuid;
      v_owner uuid;
      v_events jsonb;
      v_free boolean;
      v_subscription text;
      v_reserve bigint;
      v_run market_runs;
      v_join boolean := false;
      v_spent bigint := 0;
      v_ceiling bigint;
      v_available bigint;
      v_hold bigint;
    begin
      perform set_config('synchronous_commit', 'off', true);
      select s.id, s.owner_id, d.pricing_events, d.monetization_strategy = 'free'
        into v_submission, v_owner, v_events, v_free
        from market_submissions s join mcp_market_details d on d.submission_id = s.id
        where s.listing_id = p_entry and s.market = 'mcp' and s.live and s.status = 'approved';
      if not found then
        return jsonb_build_object('outcome', 'entry_not_found');
      end if;
      select status into v_subscription from subscriptions where user_id = p_consumer;
      if v_subscription is distinct from 'active' then
        return jsonb_build_object('outcome', 'subscription_inactive');
      end if;
      perform 1 from wallets where user_id = p_consumer for update;
      if not found then
        return jsonb_build_object('outcome', 'insufficient_funds');
      end if;
      v_reserve := case when v_free then 0 else p_reserve end;

      -- Every statement from here on runs after the lock: it sees what earlier holders of the lock committed.
      if p_shared then
        select * into v_run from market_runs
          where consumer_id = p_consumer and selection_id = p_selection and status = 'open' and accepts_calls
            and (case when p_job is null then job_id is null and entry_id = p_entry else job_id = p_job end)
          for update;
        if found then
          v_join := v_run.submission_id = v_submission and v_run.expires_at > clock_timestamp() + p_min_life
                    and market_run_active(v_run.status, v_run.expires_at, v_run.calls_in_flight, v_run.idle_until, clock_timestamp());
          if not v_join then
            -- Retired: no new call joins it; it is closed now unless a call still uses it or the grace of its last call runs.
            update market_runs
              set accepts_calls = false,
                  status = case when market_run_active(status, expires_at, calls_in_flight, idle_until, clock_timestamp()) then status else 'closed' end,
                  closed_at = case when market_run_active(status, expires_at, calls_in_flight, idle_until, clock_timestamp()) then closed_at else now() end
              where id = v_run.id;
          end if;
        end if;
      end if;

      if p_cap is not null and p_job is not null then
        select coalesce(sum(case when market_run_active(status, expires_at, calls_in_flight, idle_until, clock_timestamp()) then hold_micros else charged_micros end), 0)
          into v_spent
          from market_runs
          where job_id = p_job and selection_id = p_selection and (not v_join or id <> v_run.id);
      end if;
      v_ceiling := least(p_limit, coalesce(p_cap - v_spent, p_limit));

      if v_join then
        if coalesce(v_reserve, 0) > 0 then
          if v_run.hold_micros + v_reserve > v_ceiling then
            return jsonb_build_object('outcome', 'run_limit_reached', 'room', greatest(0, v_ceiling - v_run.hold_micros));
          end if;
          select w.balance_micros - open_holds_micros(p_consumer) into v_available from wallets w where w.user_id = p_consumer;
          if v_reserve > v_available then
            return jsonb_build_object('outcome', 'insufficient_funds');
          end if;
        end if;
        update market_runs set calls_in_flight = calls_in_flight + 1, hold_micros = hold_micros + coalesce(v_reserve, 0)
          where id = v_run.id
          returning * into v_run;
        return jsonb_build_object('outcome', 'joined', 'run', to_jsonb(v_run));
      end if;

      if v_free then
        v_hold := 0;
      else
        select w.balance_micros - open_holds_micros(p_consumer) into v_available from wallets w where w.user_id = p_consumer;
        if v_reserve is not null then
          if v_reserve > v_ceiling then
            return jsonb_build_object('outcome', 'run_limit_reached', 'room', greatest(0, v_ceiling));
          end if;
          if v_reserve > greatest(v_available, 0) then
            return jsonb_build_object('outcome', 'insufficient_funds');
          end if;
          v_hold := v_reserve;
        else
          if v_ceiling <= 0 then
            return jsonb_build_object('outcome', 'run_limit_reached', 'room', 0);
          end if;
          v_hold := least(v_available, v_ceiling);
          if v_hold <= 0 then
            return jsonb_build_object('outcome', 'insufficient_funds');
          end if;
        end if;
      end if;
      insert into market_runs (id, consumer_id, provider_id, entry_id, submission_id, selection_id, pricing_events, cap_micros, hold_micros,
                               created_at, expires_at, job_id, calls_in_flight, accepts_calls)
        values (p_id, p_consumer, v_owner, p_entry, v_submission, p_selection, v_events, p_cap, v_hold, p_created, p_expires, p_job, 1, p_shared)
        returning * into v_run;
      return jsonb_build_object('outcome', 'opened', 'run', to_jsonb(v_run));
    end
    $$`.execute(db);

  await sql`
    create function end_market_call(p_run uuid, p_release bigint, p_close boolean, p_grace interval) returns void language sql volatile as $$
      update market_runs
        set hold_micros = hold_micros - least(greatest(p_release, 0), hold_micros - charged_micros),
            idle_until = case when calls_in_flight > 0 then greatest(coalesce(idle_until, now()), now() + p_grace) else idle_until end,
            calls_in_flight = greatest(calls_in_flight - 1, 0),
            status = case when p_close then 'closed' else status end,
            closed_at = case when p_close and status = 'open' then now() else closed_at end
        where id = p_run
    $$`.execute(db);

  await sql`drop function settle_market_call(uuid, uuid, uuid, uuid, text, text, text, text, bigint, bigint, bigint, jsonb, boolean, text, text, jsonb, uuid, text, boolean)`.execute(
    db,
  );
  await createLeaseSettleMarketCall(db);
}

/** settle_market_call as this migration defines it (migration 0027 redefines it; its down restores this one). */
export async function createLeaseSettleMarketCall(db: Kysely<any>): Promise<void> {
  await sql`
    create function settle_market_call(p_run uuid, p_charge uuid, p_consumer uuid, p_provider uuid, p_call_key text, p_call_id text,
                                       p_tool text, p_event text, p_price bigint, p_commission bigint, p_revenue bigint, p_charge_result jsonb,
                                       p_close boolean, p_agent text, p_result text, p_payload jsonb, p_job uuid, p_log text, p_fast boolean,
                                       p_grace interval)
    returns text language plpgsql volatile as $$
    declare
      v_run market_runs;
      v_refusal text;
    begin
      if p_fast then
        perform set_config('synchronous_commit', 'off', true);
      end if;
      perform 1 from wallets where user_id in (p_consumer, p_provider) order by user_id for update;
      select * into v_run from market_runs where id = p_run for update;
      if v_run.id is null or v_run.status <> 'open' then
        v_refusal := 'run_closed';
      elsif not market_run_active(v_run.status, v_run.expires_at, v_run.calls_in_flight, v_run.idle_until, clock_timestamp()) then
        v_refusal := 'run_expired';
      elsif v_run.hold_micros - v_run.charged_micros < p_price then
        v_refusal := 'run_limit_reached';
      end if;
      if v_refusal is not null then
        perform end_market_call(p_run, p_price, p_close, p_grace);
        return v_refusal;
      end if;
      insert into market_run_charges (id, run_id, idempotency_key, request_hash, event_name, tool_name, requested_count, charged_count,
                                      unit_price_micros, total_micros, commission_micros, provider_revenue_micros, result)
        values (p_charge, p_run, p_call_key, p_call_id, p_event, p_tool, 1, 1, p_price, p_price, p_commission, p_revenue, p_charge_result);
      -- The call's reservation becomes its charge.
      update market_runs set charged_micros = charged_micros + p_price where id = p_run;
      perform end_market_call(p_run, 0, p_close, p_grace);
      perform post_market_charge(p_run, p_charge, p_consumer, p_provider, p_price, p_revenue, p_agent, p_result, p_payload);
      insert into system_logs (user_id, job_id, log_message) values (p_consumer, p_job, p_log);
      return 'charged';
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists settle_market_call(uuid, uuid, uuid, uuid, text, text, text, text, bigint, bigint, bigint, jsonb, boolean, text, text, jsonb, uuid, text, boolean, interval)`.execute(
    db,
  );
  await createSettleMarketCall(db);
  await sql`drop function if exists end_market_call(uuid, bigint, boolean, interval)`.execute(db);
  await sql`drop function if exists acquire_market_run(uuid, uuid, uuid, text, uuid, bigint, bigint, bigint, boolean, interval, timestamptz, timestamptz)`.execute(
    db,
  );
  await createOpenMarketRun(db);
  await sql`drop function if exists open_holds_micros(uuid)`.execute(db);
  await createOpenHoldsMicros(db);
  await sql`drop function if exists market_run_active(text, timestamptz, integer, timestamptz, timestamptz)`.execute(
    db,
  );
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
