-- settle_market_call: Settles an answered fixed-price call: the charge row, the run's total and the end of the call's use, the ledger.
--
-- Both wallets locked in id order, the run locked and re-checked ('run_closed', 'run_expired' when no longer
-- active, 'run_limit_reached'; a refusal releases the call's reservation through end_market_call). Then the
-- charge row, the run's total and the end of the call's use in one update, the consumer's transaction line, and
-- each ledger entry (debit, revenue) inserted once with its balance after. Returns 'charged' or the refusal.
--
-- Called by: db/repos/market-tool-calls.ts settleFixedCall
-- History: migrations 0015, 0016, 0027.
create or replace function settle_market_call(
  p_run uuid, p_charge uuid, p_consumer uuid, p_provider uuid, p_call_key text, p_call_id text, p_tool text,
  p_event text, p_price bigint, p_commission bigint, p_revenue bigint, p_charge_result jsonb,
  p_close boolean, p_agent text, p_result text, p_payload jsonb, p_job uuid, p_log text, p_fast boolean,
  p_grace interval
)
returns text language plpgsql volatile as $$
  declare
    v_run market_runs;
    v_refusal text;
    v_balance bigint;
  begin
    if p_fast then
      perform set_config('synchronous_commit', 'off', true);
    end if;
    if p_price <= 0 or p_revenue < 0 or p_revenue > p_price then
      raise exception 'A market charge of % micro-USD cannot pay % of revenue', p_price, p_revenue;
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
    -- The call's reservation becomes its charge and the call gives the run back (end_market_call releasing nothing), in one update.
    update market_runs
      set charged_micros = charged_micros + p_price,
          idle_until = case when calls_in_flight > 0 then greatest(coalesce(idle_until, now()), now() + coalesce(idle_grace, p_grace)) else idle_until end,
          calls_in_flight = greatest(calls_in_flight - 1, 0),
          status = case when p_close then 'closed' else status end,
          closed_at = case when p_close and status = 'open' then now() else closed_at end
      where id = p_run;
    -- post_market_charge's rows, each ledger entry written once with its balance (both wallets are locked above, and the
    -- keys derive from a fresh charge id: apply_ledger_entry's replay never applies; a duplicate key fails the statement).
    insert into agent_transactions (job_id, user_id, agent_name, result, payload, cost_micros, idempotency_key)
      values (null, p_consumer, p_agent, p_result, p_payload, p_price, 'market-charge:' || p_charge);
    update wallets set balance_micros = balance_micros - p_price, updated_at = now() where user_id = p_consumer
      returning balance_micros into v_balance;
    if not found then
      raise exception 'No wallet for user %', p_consumer;
    end if;
    insert into ledger_entries (user_id, kind, amount_micros, balance_after_micros, idempotency_key, job_id, market_run_id, description)
      values (p_consumer, 'usage', -p_price, v_balance, 'market-charge:' || p_charge, null, p_run, p_agent || ': ' || p_result);
    if p_revenue > 0 then
      update wallets set balance_micros = balance_micros + p_revenue, updated_at = now() where user_id = p_provider
        returning balance_micros into v_balance;
      if not found then
        raise exception 'No wallet for user %', p_provider;
      end if;
      insert into ledger_entries (user_id, kind, amount_micros, balance_after_micros, idempotency_key, job_id, market_run_id, description)
        values (p_provider, 'revenue', p_revenue, v_balance, 'market-revenue:' || p_charge, null, p_run,
                p_agent || ': revenue for ' || p_result);
    end if;
    insert into system_logs (user_id, job_id, log_message) values (p_consumer, p_job, p_log);
    return 'charged';
  end
$$;
