-- post_market_charge: The ledger side of a market charge: the consumer's transaction line and debit, the provider's revenue.
--
-- Both entries through apply_ledger_entry, carrying the run; the commission (the rest) stays with the platform.
-- Refuses amounts that do not add up.
--
-- Called by: charge_market_run_event
-- History: migration 0015.
create or replace function post_market_charge(
  p_run uuid, p_charge uuid, p_consumer uuid, p_provider uuid, p_total bigint, p_revenue bigint,
  p_agent text, p_result text, p_payload jsonb
)
returns void language plpgsql volatile as $$
  begin
    if p_total <= 0 or p_revenue < 0 or p_revenue > p_total then
      raise exception 'A market charge of % micro-USD cannot pay % of revenue', p_total, p_revenue;
    end if;
    insert into agent_transactions (job_id, user_id, agent_name, result, payload, cost_micros, idempotency_key)
      values (null, p_consumer, p_agent, p_result, p_payload, p_total, 'market-charge:' || p_charge);
    perform apply_ledger_entry(p_consumer, 'usage', -p_total, 'market-charge:' || p_charge, null, p_agent || ': ' || p_result, p_run);
    if p_revenue > 0 then
      perform apply_ledger_entry(p_provider, 'revenue', p_revenue, 'market-revenue:' || p_charge, null,
                                 p_agent || ': revenue for ' || p_result, p_run);
    end if;
  end
$$;
