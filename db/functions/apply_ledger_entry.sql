-- apply_ledger_entry: The one wallet movement: a ledger entry under its unique idempotency key, and the balance it leaves.
--
-- A repeated key changes nothing and answers the balance it left (replayed). p_market_run: the run a market
-- debit or revenue entry belongs to. Returns {"replayed": bool, "balance": micros}.
--
-- Called by: charge_usage, post_market_charge; db/repos/ledger.ts applyLedgerEntry (creditWallet, postAgentPurchase)
-- History: migrations 0014, 0015.
create or replace function apply_ledger_entry(
  p_user uuid, p_kind text, p_amount bigint, p_key text, p_job uuid, p_description text,
  p_market_run uuid default null
)
returns jsonb language plpgsql volatile as $$
  declare
    v_entry bigint;
    v_balance bigint;
  begin
    insert into ledger_entries (user_id, kind, amount_micros, balance_after_micros, idempotency_key, job_id, market_run_id, description)
      values (p_user, p_kind, p_amount, 0, p_key, p_job, p_market_run, p_description)
      on conflict (idempotency_key) do nothing
      returning id into v_entry;
    if v_entry is null then
      select balance_after_micros into v_balance from ledger_entries where idempotency_key = p_key;
      return jsonb_build_object('replayed', true, 'balance', v_balance);
    end if;
    update wallets set balance_micros = balance_micros + p_amount, updated_at = now() where user_id = p_user
      returning balance_micros into v_balance;
    if not found then
      raise exception 'No wallet for user %', p_user;
    end if;
    update ledger_entries set balance_after_micros = v_balance where id = v_entry;
    return jsonb_build_object('replayed', false, 'balance', v_balance);
  end
$$;
