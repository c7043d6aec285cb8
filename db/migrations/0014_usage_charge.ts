import { type Kysely, sql } from 'kysely';

/**
 * Ledger entries and usage charges in one round trip each.
 *
 * apply_ledger_entry(...) is the one definition of a wallet movement (db/repos/ledger.ts
 * applyLedgerEntry, used by credits): the entry is appended under its unique idempotency key (a
 * repeated key changes nothing and answers the balance it left, `replayed`), the wallet's balance
 * moves, and the entry records the balance after it.
 *
 * charge_usage(...) applies the rules of db/repos/ledger.ts chargeUsage as one PL/pgSQL call, where
 * they were nine client round trips (begin, wallet lock, replay check, hold lock, transaction line,
 * hold release, ledger entry, balance, commit): the wallet row is locked; a transaction line with the
 * same idempotency key answers as a replay; the debit is the true cost capped at the job's open hold
 * (nothing when the hold was already released) or, outside a job, at the available balance (computed
 * by a later statement than the lock, so it sees every hold committed before the lock was granted);
 * the agent transaction is inserted, the hold released, and the debit applied with
 * apply_ledger_entry. The commit is durable.
 *
 * apply_ledger_entry returns {"replayed": bool, "balance": micros}; charge_usage
 * {"replayed": bool, "balance": micros, "debited": micros, "unbilled": micros}.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await createApplyLedgerEntry(db);
  await sql`
    create function charge_usage(p_user uuid, p_job uuid, p_agent text, p_result text, p_payload jsonb,
                                 p_cost bigint, p_key text, p_description text)
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
    $$`.execute(db);
}

/** apply_ledger_entry as this migration defines it (migration 0015's down restores it). */
export async function createApplyLedgerEntry(db: Kysely<any>): Promise<void> {
  await sql`
    create function apply_ledger_entry(p_user uuid, p_kind text, p_amount bigint, p_key text, p_job uuid, p_description text)
    returns jsonb language plpgsql volatile as $$
    declare
      v_entry bigint;
      v_balance bigint;
    begin
      insert into ledger_entries (user_id, kind, amount_micros, balance_after_micros, idempotency_key, job_id, description)
        values (p_user, p_kind, p_amount, 0, p_key, p_job, p_description)
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
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists charge_usage(uuid, uuid, text, text, jsonb, bigint, text, text)`.execute(db);
  await sql`drop function if exists apply_ledger_entry(uuid, text, bigint, text, uuid, text)`.execute(db);
}
