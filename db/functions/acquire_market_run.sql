-- acquire_market_run: A market call's run: joins the consumer's shared run or opens a new one, with its hold, under the wallet lock.
--
-- The presented credential first (p_credential: a hosted call's deferred check, never remembered): its API key
-- live ('key_rotated'), the credential not revoked ('credential_revoked'); a credential issued before credentials
-- were recorded is recorded at its first use, last_used_at written at most once a minute. Then the live entry and
-- the subscription, and the consumer's wallet row is locked: every later statement sees what earlier holders of
-- the lock committed. A shared run (a credential's provider_event calls, an agent execution's selection) is joined
-- while it is active (market_run_active), of the same live submission, and lives at least p_min_life longer;
-- otherwise it is retired and a new run opens. A direct call's window is bounded like a run (the cap and the run
-- charge limit), a monthly budget counts each run in the month it opened. The hold: a fixed-price call reserves
-- exactly its price (p_reserve); otherwise min(available balance, p_limit, cap room, budget room), nothing for a
-- free entry. An agent execution's cap (p_cap with p_job) counts all the execution's runs; a credential's budgets
-- (budget_total_micros, budget_monthly_micros) count all its direct runs, and so do an API key's (api_keys, the
-- same columns) for the calls made with the key itself. The run records its limit
-- (limit_micros). Returns {"outcome": "opened"|"joined", "run": <market_runs row>},
-- {"outcome": "run_limit_reached"|"budget_reached", ...} or {"outcome": <refusal>}.
--
-- Called by: db/repos/market-runs.ts acquireMarketRun (openMarketRun through it)
-- History: migrations 0016, 0024, 0027, 0028, 0030.
create or replace function acquire_market_run(
  p_id uuid, p_consumer uuid, p_entry uuid, p_selection text, p_job uuid, p_cap bigint, p_limit bigint,
  p_reserve bigint, p_shared boolean, p_min_life interval, p_created timestamptz, p_expires timestamptz,
  p_idle_grace interval, p_credential uuid, p_api_key uuid, p_credential_source text,
  p_credential_issued timestamptz
)
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
    v_key uuid;
    v_credential uuid;
    v_revoked timestamptz;
    v_last_used timestamptz;
    v_budget_total bigint;
    v_budget_monthly bigint;
    v_month timestamptz;
    v_spent_total bigint := 0;
    v_spent_month bigint := 0;
    v_room bigint := null;
    v_budget text;
    v_budget_amount bigint;
    v_needed bigint;
  begin
    perform set_config('synchronous_commit', 'off', true);
    if p_credential is not null then
      select k.id, c.id, c.revoked_at, c.last_used_at into v_key, v_credential, v_revoked, v_last_used
        from api_keys k left join market_credentials c on c.id = p_credential and c.user_id = k.user_id
        where k.id = p_api_key and k.user_id = p_consumer and k.revoked_at is null;
      if v_key is null then
        return jsonb_build_object('outcome', 'key_rotated');
      end if;
      if v_revoked is not null then
        return jsonb_build_object('outcome', 'credential_revoked');
      end if;
      if v_credential is null then
        insert into market_credentials (id, user_id, entry_id, api_key_id, source, label, cap_micros, created_at, last_used_at)
          values (p_credential, p_consumer, p_entry, p_api_key, p_credential_source, null, p_cap, p_credential_issued, now())
          on conflict (id) do nothing;
      elsif v_last_used is null or v_last_used < now() - interval '60 seconds' then
        update market_credentials set last_used_at = now() where id = p_credential;
      end if;
    end if;
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
    -- The budgets of the credential the call is made with (a direct call's selection is its credential's id), or of
    -- the API key (selection 'api-key:<id>': a bearer API key at /mcp/{entryId}, try a tool; the account's own key only).
    if p_job is null and p_selection ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      select budget_total_micros, budget_monthly_micros into v_budget_total, v_budget_monthly
        from market_credentials where id = p_selection::uuid and user_id = p_consumer;
    elsif p_job is null and p_selection ~ '^api-key:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      select budget_total_micros, budget_monthly_micros into v_budget_total, v_budget_monthly
        from api_keys where id = substr(p_selection, 9)::uuid and user_id = p_consumer;
    end if;
    v_month := date_trunc('month', p_created at time zone 'UTC') at time zone 'UTC';

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
        -- A monthly budget counts each run in the month it opened: a call of a later month opens the next run.
        if v_join and v_budget_monthly is not null and v_run.created_at < v_month then
          v_join := false;
        end if;
        if not v_join then
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

    -- The budgets' room: what the credential's other runs hold or were charged, in all and this month.
    if v_budget_total is not null or v_budget_monthly is not null then
      select coalesce(sum(r.spent), 0), coalesce(sum(r.spent) filter (where r.created_at >= v_month), 0)
        into v_spent_total, v_spent_month
        from (select created_at,
                     case when market_run_active(status, expires_at, calls_in_flight, idle_until, clock_timestamp())
                          then hold_micros else charged_micros end as spent
                from market_runs
                where selection_id = p_selection and job_id is null and consumer_id = p_consumer
                  and (not v_join or id <> v_run.id)) r;
      if v_budget_total is not null then
        v_room := v_budget_total - v_spent_total;
        v_budget := 'total';
        v_budget_amount := v_budget_total;
      end if;
      if v_budget_monthly is not null and (v_room is null or v_budget_monthly - v_spent_month < v_room) then
        v_room := v_budget_monthly - v_spent_month;
        v_budget := 'monthly';
        v_budget_amount := v_budget_monthly;
      end if;
      v_room := greatest(v_room, 0);
      v_ceiling := least(v_ceiling, v_room);
    end if;

    if v_join then
      if coalesce(v_reserve, 0) > 0 then
        v_needed := v_run.hold_micros + v_reserve;
        if v_room is not null and v_needed > v_room then
          return jsonb_build_object('outcome', 'budget_reached', 'budget', v_budget, 'amount', v_budget_amount,
                                    'room', greatest(0, v_room - v_run.hold_micros));
        end if;
        if v_needed > v_ceiling then
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
        if v_room is not null and v_reserve > v_room then
          return jsonb_build_object('outcome', 'budget_reached', 'budget', v_budget, 'amount', v_budget_amount, 'room', v_room);
        end if;
        if v_reserve > v_ceiling then
          return jsonb_build_object('outcome', 'run_limit_reached', 'room', greatest(0, v_ceiling));
        end if;
        if v_reserve > greatest(v_available, 0) then
          return jsonb_build_object('outcome', 'insufficient_funds');
        end if;
        v_hold := v_reserve;
      else
        if v_room is not null and v_room <= 0 then
          return jsonb_build_object('outcome', 'budget_reached', 'budget', v_budget, 'amount', v_budget_amount, 'room', 0);
        end if;
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
                             created_at, expires_at, job_id, calls_in_flight, accepts_calls, idle_grace, limit_micros)
      values (p_id, p_consumer, v_owner, p_entry, v_submission, p_selection, v_events, p_cap, v_hold, p_created, p_expires, p_job, 1, p_shared,
              p_idle_grace, greatest(v_ceiling, 0))
      returning * into v_run;
    return jsonb_build_object('outcome', 'opened', 'run', to_jsonb(v_run));
  end
$$;
