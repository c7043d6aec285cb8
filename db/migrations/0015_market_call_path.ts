import { type Kysely, sql } from 'kysely';
import { createApplyLedgerEntry } from './0014_usage_charge';

/**
 * A hosted market call without the workflow engine on its path, and market charges on the one
 * definition of a wallet movement.
 *
 * - market_runs.workflow_started_at: a run's workflow is started by the platform workers' dispatcher
 *   (workers/market-run-dispatcher.ts), which finds opened runs without one (an outbox: the run row
 *   written by open_market_run is the record that a workflow is owed, so a crash of the process that
 *   opened it can no longer lose the start). Runs opened before this migration had theirs started by
 *   the process that opened them.
 * - apply_ledger_entry(...) gains p_market_run (default null, so charge_usage's calls are unchanged):
 *   the run a market debit or revenue entry belongs to.
 * - post_market_charge(...): the ledger side of a market charge (db/repos/ledger.ts postMarketCharge)
 *   — the consumer's transaction line, the debit and the provider's revenue (commission, the rest,
 *   stays with the platform), both entries through apply_ledger_entry and carrying the run.
 * - settle_market_call(...): the settlement of an answered fixed-price call (db/repos/market-tool-calls.ts):
 *   both wallets locked in id order, the run locked and re-checked (open, remaining hold ≥ price), then
 *   the charge row, the run's total (and its close for a direct call), post_market_charge and the
 *   call's log line. One call whose statements' plans the function keeps, where the one-statement
 *   form was planned anew for every call. Returns 'charged', 'run_closed' or 'run_limit_reached'.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table market_runs add column workflow_started_at timestamptz`.execute(db);
  await sql`update market_runs set workflow_started_at = created_at`.execute(db);
  await sql`create index market_runs_workflow_owed_idx on market_runs (created_at) where workflow_started_at is null`.execute(
    db,
  );

  await sql`drop function apply_ledger_entry(uuid, text, bigint, text, uuid, text)`.execute(db);
  await sql`
    create function apply_ledger_entry(p_user uuid, p_kind text, p_amount bigint, p_key text, p_job uuid, p_description text,
                                       p_market_run uuid default null)
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
    $$`.execute(db);

  await sql`
    create function post_market_charge(p_run uuid, p_charge uuid, p_consumer uuid, p_provider uuid, p_total bigint, p_revenue bigint,
                                       p_agent text, p_result text, p_payload jsonb)
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
    $$`.execute(db);

  await createSettleMarketCall(db);
}

/** settle_market_call as this migration defines it (migration 0016 redefines it; its down restores this one). */
export async function createSettleMarketCall(db: Kysely<any>): Promise<void> {
  await sql`
    create function settle_market_call(p_run uuid, p_charge uuid, p_consumer uuid, p_provider uuid, p_call_key text, p_call_id text,
                                       p_tool text, p_event text, p_price bigint, p_commission bigint, p_revenue bigint, p_charge_result jsonb,
                                       p_close boolean, p_agent text, p_result text, p_payload jsonb, p_job uuid, p_log text, p_fast boolean)
    returns text language plpgsql volatile as $$
    declare
      v_status text;
      v_remaining bigint;
    begin
      if p_fast then
        perform set_config('synchronous_commit', 'off', true);
      end if;
      perform 1 from wallets where user_id in (p_consumer, p_provider) order by user_id for update;
      select status, hold_micros - charged_micros into v_status, v_remaining from market_runs where id = p_run for update;
      if v_status is distinct from 'open' then
        return 'run_closed';
      end if;
      if v_remaining < p_price then
        return 'run_limit_reached';
      end if;
      insert into market_run_charges (id, run_id, idempotency_key, request_hash, event_name, tool_name, requested_count, charged_count,
                                      unit_price_micros, total_micros, commission_micros, provider_revenue_micros, result)
        values (p_charge, p_run, p_call_key, p_call_id, p_event, p_tool, 1, 1, p_price, p_price, p_commission, p_revenue, p_charge_result);
      update market_runs
        set charged_micros = charged_micros + p_price,
            status = case when p_close then 'closed' else status end,
            closed_at = case when p_close then now() else closed_at end
        where id = p_run;
      perform post_market_charge(p_run, p_charge, p_consumer, p_provider, p_price, p_revenue, p_agent, p_result, p_payload);
      insert into system_logs (user_id, job_id, log_message) values (p_consumer, p_job, p_log);
      return 'charged';
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists settle_market_call(uuid, uuid, uuid, uuid, text, text, text, text, bigint, bigint, bigint, jsonb, boolean, text, text, jsonb, uuid, text, boolean)`.execute(
    db,
  );
  await sql`drop function if exists post_market_charge(uuid, uuid, uuid, uuid, bigint, bigint, text, text, jsonb)`.execute(
    db,
  );
  await sql`drop function if exists apply_ledger_entry(uuid, text, bigint, text, uuid, text, uuid)`.execute(db);
  await createApplyLedgerEntry(db);
  await sql`drop index if exists market_runs_workflow_owed_idx`.execute(db);
  await sql`alter table market_runs drop column if exists workflow_started_at`.execute(db);
}
