-- charge_usage: Charges a job's (or an account's) usage in one call: the debit capped at the job's hold or the available balance.
--
-- The wallet row is locked; a transaction line with the same idempotency key answers as a replay; the debit is
-- the true cost capped at the job's open hold (nothing when it was already released) or, outside a job, at the
-- available balance (computed after the lock); the agent transaction is inserted, the hold released, and the
-- debit applied with apply_ledger_entry. The commit is durable.
-- Returns {"replayed": bool, "balance": micros, "debited": micros, "unbilled": micros}.
--
-- Called by: db/repos/ledger.ts chargeUsage
-- History: migration 0014.
create or replace function charge_usage(
  p_user uuid, p_job uuid, p_agent text, p_result text, p_payload jsonb, p_cost bigint, p_key text,
  p_description text
)
returns jsonb language plpgsql volatile as $$
  declare
    v_balance bigint;
    v_replay bigint;
    v_hold job_holds;
    v_cap bigint;
    v_debited bigint;
    v_unbilled bigint;
    v_payload jsonb := p_payload;
    v_ledger jsonb;
  begin
    select balance_micros into v_balance from wallets where user_id = p_user for update;
    if not found then
      raise exception 'No wallet for user %', p_user;
    end if;
    select cost_micros into v_replay from agent_transactions where idempotency_key = p_key;
    if found then
      return jsonb_build_object('replayed', true, 'balance', v_balance, 'debited', v_replay, 'unbilled', 0);
    end if;
    if p_job is not null then
      select * into v_hold from job_holds where job_id = p_job for update;
    end if;
    if v_hold.job_id is not null then
      v_cap := case when v_hold.released_at is null then v_hold.amount_micros else 0 end;
    else
      select greatest(0, v_balance - open_holds_micros(p_user)) into v_cap;
    end if;
    v_debited := least(p_cost, v_cap);
    v_unbilled := p_cost - v_debited;
    if v_unbilled > 0 then
      v_payload := coalesce(v_payload, '{}'::jsonb) || jsonb_build_object('unbilledUsd', round(v_unbilled::numeric / 1000000, 6));
    end if;
    insert into agent_transactions (job_id, user_id, agent_name, result, payload, cost_micros, idempotency_key)
      values (p_job, p_user, p_agent, p_result, v_payload, v_debited, p_key);
    if v_hold.job_id is not null and v_hold.released_at is null then
      update job_holds set released_at = now(), settled_micros = v_debited where job_id = p_job;
    end if;
    if v_debited = 0 then
      return jsonb_build_object('replayed', false, 'balance', v_balance, 'debited', 0, 'unbilled', v_unbilled);
    end if;
    v_ledger := apply_ledger_entry(p_user, 'usage', -v_debited, p_key, p_job, p_description);
    return jsonb_build_object('replayed', (v_ledger->>'replayed')::boolean, 'balance', (v_ledger->>'balance')::bigint,
                              'debited', v_debited, 'unbilled', v_unbilled);
  end
$$;
