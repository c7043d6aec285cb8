-- end_market_call: A call gives its run back: one use less, its unused reservation released, the idle grace restarted.
--
-- calls_in_flight - 1; p_release micro-USD of a fixed-price call's reservation that was not charged released;
-- idle_until moved to now + the run's idle_grace (p_grace when the run has none); p_close closes a run of the
-- call's own.
--
-- Called by: settle_market_call (on a refusal); db/repos/market-runs.ts endMarketCall
-- History: migrations 0016, 0024.
create or replace function end_market_call(p_run uuid, p_release bigint, p_close boolean, p_grace interval)
returns void language sql volatile as $$
  update market_runs
    set hold_micros = hold_micros - least(greatest(p_release, 0), hold_micros - charged_micros),
        idle_until = case when calls_in_flight > 0 then greatest(coalesce(idle_until, now()), now() + coalesce(idle_grace, p_grace)) else idle_until end,
        calls_in_flight = greatest(calls_in_flight - 1, 0),
        status = case when p_close then 'closed' else status end,
        closed_at = case when p_close and status = 'open' then now() else closed_at end
    where id = p_run
$$;
