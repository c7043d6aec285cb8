import { type Kysely, sql } from 'kysely';

/**
 * The windowed market run: a consumer's hosted calls to one entry through one credential share one run (one
 * hold, one workflow) while they follow each other, instead of a run per call.
 *
 * - market_runs.idle_grace: how long the run stays active after its last call ended (null: the caller's
 *   grace, MARKET_RUN_IDLE_GRACE_SECONDS — a provider_event run, an agent execution's run). A window of
 *   fixed-price or free calls has MARKET_RUN_WINDOW_IDLE_SECONDS: it stops taking calls (and holding
 *   anything) that long after its last call, and its workflow (workflows/market-run.ts, patch
 *   `market-run-settles-when-idle`) then closes and settles it.
 * - acquire_market_run(..., p_idle_grace): as migration 0016's, with the run's idle grace, and a direct
 *   call's window bounded like a run: a fixed-price call that fits the cap (maxTotalUsdPerRun) and
 *   MARKET_RUN_CHARGE_LIMIT_USD on its own, but not on top of what the window already holds, retires the
 *   window and opens the next one (the cap stays per run: a window is a run). A call over the cap on its
 *   own is still refused (run_limit_reached). An agent execution's cap (p_job) is unchanged: per
 *   execution, over all its runs.
 * - end_market_call(...): the grace after a call is the run's idle_grace when it has one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table market_runs add column idle_grace interval`.execute(db);
  await sql`drop function acquire_market_run(uuid, uuid, uuid, text, uuid, bigint, bigint, bigint, boolean, interval, timestamptz, timestamptz)`.execute(
    db,
  );
  await createWindowAcquireMarketRun(db);

  await sql`
    create or replace function end_market_call(p_run uuid, p_release bigint, p_close boolean, p_grace interval) returns void language sql volatile as $$
      update market_runs
        set hold_micros = hold_micros - least(greatest(p_release, 0), hold_micros - charged_micros),
            idle_until = case when calls_in_flight > 0 then greatest(coalesce(idle_until, now()), now() + coalesce(idle_grace, p_grace)) else idle_until end,
            calls_in_flight = greatest(calls_in_flight - 1, 0),
            status = case when p_close then 'closed' else status end,
            closed_at = case when p_close and status = 'open' then now() else closed_at end
        where id = p_run
    $$`.execute(db);
}

/** acquire_market_run as this migration defines it (migration 0027 redefines it; its down restores this one). */
export async function createWindowAcquireMarketRun(db: Kysely<any>): Promise<void> {
  await sql`
    create function acquire_market_run(p_id uuid, p_consumer uuid, p_entry uuid, p_selection text, p_job uuid, p_cap bigint, p_limit bigint,
                                       p_reserve bigint, p_shared boolean, p_min_life interval, p_created timestamptz, p_expires timestamptz,
                                       p_idle_grace interval)
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
          -- A window (a direct call's shared run) is a run: its cap and the run charge limit bound it. A call that
          -- fits them on its own but not on top of the window's hold ends the window and opens the next one.
          if v_join and p_job is null and coalesce(v_reserve, 0) > 0
             and v_run.hold_micros + v_reserve > least(p_limit, coalesce(p_cap, p_limit))
             and v_reserve <= least(p_limit, coalesce(p_cap, p_limit)) then
            v_join := false;
          end if;
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
                               created_at, expires_at, job_id, calls_in_flight, accepts_calls, idle_grace)
        values (p_id, p_consumer, v_owner, p_entry, v_submission, p_selection, v_events, p_cap, v_hold, p_created, p_expires, p_job, 1, p_shared,
                p_idle_grace)
        returning * into v_run;
      return jsonb_build_object('outcome', 'opened', 'run', to_jsonb(v_run));
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists acquire_market_run(uuid, uuid, uuid, text, uuid, bigint, bigint, bigint, boolean, interval, timestamptz, timestamptz, interval)`.execute(
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
    create or replace function end_market_call(p_run uuid, p_release bigint, p_close boolean, p_grace interval) returns void language sql volatile as $$
      update market_runs
        set hold_micros = hold_micros - least(greatest(p_release, 0), hold_micros - charged_micros),
            idle_until = case when calls_in_flight > 0 then greatest(coalesce(idle_until, now()), now() + p_grace) else idle_until end,
            calls_in_flight = greatest(calls_in_flight - 1, 0),
            status = case when p_close then 'closed' else status end,
            closed_at = case when p_close and status = 'open' then now() else closed_at end
        where id = p_run
    $$`.execute(db);

  await sql`alter table market_runs drop column if exists idle_grace`.execute(db);
}
