-- charge_market_run_event: A provider's production charge on a run (POST /provider/runs/{runId}/charge) in one statement.
--
-- Both wallets locked in id order, the run locked and re-checked: a charge with the same key that won a race is
-- 'raced'; then open, unexpired, active by market_run_active ('ended' when its grace is over or its workflow
-- closed it once idle), the event priced, the entry still approved. The split stays in TypeScript
-- (lib/market/commission.ts): when the locked run's remaining hold is not the one the caller split
-- (p_expected_remaining), nothing is written and the answer is 'stale' with the amount found. Then the charge
-- row, the run's total and post_market_charge. Returns jsonb {outcome, remaining?}.
--
-- Called by: db/repos/market-runs.ts chargeMarketRun
-- History: migration 0025.
create or replace function charge_market_run_event(
  p_run uuid, p_charge uuid, p_consumer uuid, p_provider uuid, p_key text, p_hash text, p_event text,
  p_tool text, p_requested integer, p_charged_count integer, p_unit bigint, p_total bigint,
  p_commission bigint, p_revenue bigint, p_expected_remaining bigint, p_result jsonb, p_outcome_text text,
  p_payload jsonb
)
returns jsonb language plpgsql volatile as $$
  declare
    v_run market_runs%rowtype;
    v_slug text;
  begin
    perform 1 from wallets where user_id in (p_consumer, p_provider) order by user_id for update;
    select * into v_run from market_runs where id = p_run for update;
    if not found then
      return jsonb_build_object('outcome', 'not_found');
    end if;
    if exists (select 1 from market_run_charges where run_id = p_run and idempotency_key = p_key) then
      return jsonb_build_object('outcome', 'raced');
    end if;
    if v_run.status <> 'open' then
      -- Closed by its workflow once idle (after the grace of its last call, before its expiry,
      -- migration 0024): the grace is what ended it.
      if v_run.closed_at >= v_run.idle_until and v_run.closed_at < v_run.expires_at and v_run.calls_in_flight = 0 then
        return jsonb_build_object('outcome', 'ended');
      end if;
      return jsonb_build_object('outcome', 'closed');
    end if;
    if v_run.expires_at <= clock_timestamp() then
      return jsonb_build_object('outcome', 'expired');
    end if;
    if not market_run_active(v_run.status, v_run.expires_at, v_run.calls_in_flight, v_run.idle_until, clock_timestamp()) then
      return jsonb_build_object('outcome', 'ended');
    end if;
    if p_unit is null then
      return jsonb_build_object('outcome', 'unknown_event');
    end if;
    select s.slug into v_slug from market_submissions s
      where s.listing_id = v_run.entry_id and s.market = 'mcp' and s.live and s.status = 'approved';
    if v_slug is null then
      return jsonb_build_object('outcome', 'entry_not_active');
    end if;
    if v_run.hold_micros - v_run.charged_micros <> p_expected_remaining then
      return jsonb_build_object('outcome', 'stale', 'remaining', v_run.hold_micros - v_run.charged_micros);
    end if;
    insert into market_run_charges (id, run_id, idempotency_key, request_hash, event_name, tool_name, requested_count, charged_count,
                                    unit_price_micros, total_micros, commission_micros, provider_revenue_micros, result)
      values (p_charge, p_run, p_key, p_hash, p_event, p_tool, p_requested, p_charged_count,
              p_unit, p_total, p_commission, p_revenue, p_result);
    if p_total > 0 then
      update market_runs set charged_micros = charged_micros + p_total where id = p_run;
      perform post_market_charge(p_run, p_charge, p_consumer, p_provider, p_total, p_revenue, 'market:' || v_slug,
                                 p_outcome_text, p_payload);
    end if;
    return jsonb_build_object('outcome', 'recorded');
  end
$$;
