-- open_holds_micros: The money an account has reserved and not yet settled: open job holds plus the unused part of its active runs.
--
-- The "held" of available = balance - held. PL/pgSQL rather than SQL so that the session keeps its plan (a SQL
-- function that cannot be inlined is planned at every call).
--
-- Called by: admit_job, charge_usage, acquire_market_run; db/repos/ledger.ts openHoldsMicros (getWalletSummary, postAgentPurchase)
-- History: migrations 0012, 0016, 0027.
create or replace function open_holds_micros(p_user uuid)
returns bigint language plpgsql stable as $$
  begin
    return (
  select (select coalesce(sum(amount_micros), 0) from job_holds where user_id = p_user and released_at is null)
       + (select coalesce(sum(hold_micros - charged_micros), 0) from market_runs
           where consumer_id = p_user and status = 'open' and market_run_active(status, expires_at, calls_in_flight, idle_until, now())));
  end
$$;
