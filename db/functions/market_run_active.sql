-- market_run_active: The one definition of a run that still holds money and takes charges.
--
-- Open, before its expiry, and either used by a call or within the grace after its last call. A run that
-- stopped being active never becomes active again (calls only join active runs).
--
-- Called by: open_holds_micros, acquire_market_run, settle_market_call, charge_market_run_event; db/repos/market-runs.ts (endJobMarketRuns, marketRunIdleIn), db/repos/spending.ts listOpenHolds, db/repos/platform-state.ts
-- History: migration 0016.
create or replace function market_run_active(
  p_status text, p_expires timestamptz, p_calls integer, p_idle_until timestamptz, p_at timestamptz
)
returns boolean language sql immutable as $$
  select p_status = 'open' and p_expires > p_at and (p_calls > 0 or coalesce(p_idle_until > p_at, false))
$$;
