import { type Kysely, sql } from 'kysely';
import { createLeaseSettleMarketCall } from './0016_market_run_leases';
import { createWindowAcquireMarketRun } from './0024_market_run_window';

/**
 * A hosted fixed-price call in two statements (issue 26): the acquire and the settlement, where it was three.
 *
 * - acquire_market_run(..., p_credential, p_api_key, p_credential_source, p_credential_issued): as migration
 *   0024's, and first, when p_credential is given, the check of the presented credential that the hosted
 *   endpoint made in a statement of its own on every request (db/repos/market-credentials.ts
 *   findCredentialUse): its API key live (not rotated: 'key_rotated'), the credential not revoked
 *   ('credential_revoked'), both read in this statement, never remembered, so a revocation still takes effect
 *   at the next call. A credential issued before credentials were recorded (migration 0023) is recorded at
 *   its first use, and last_used_at is written at most once a minute, as before. Without p_credential (agents,
 *   a plain API key, a request whose credential was checked on its own) nothing changes.
 * - settle_market_call(...) (same arguments as migration 0016's): the same checks, rows and answers, fewer
 *   writes — the run's total and the end of the call's use of it in one update of the run row (two before),
 *   and each ledger entry inserted once with its balance after (apply_ledger_entry inserts and then updates
 *   it; its replay of a known key never applies to a settlement, whose keys derive from a fresh charge id).
 *   post_market_charge's check of the amounts is kept, before anything is locked.
 * - open_holds_micros(user): the same query in PL/pgSQL, so that its plan is kept by the session (a SQL
 *   function that cannot be inlined is planned at every call; the acquire calls it for every fixed-price call).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await createOpenHoldsMicros(db, 'plpgsql');
  await sql`drop function acquire_market_run(uuid, uuid, uuid, text, uuid, bigint, bigint, bigint, boolean, interval, timestamptz, timestamptz, interval)`.execute(
    db,
  );
  await createCredentialAcquireMarketRun(db);

  await sql`
    create or replace function settle_market_call(p_run uuid, p_charge uuid, p_consumer uuid, p_provider uuid, p_call_key text, p_call_id text,
                                                  p_tool text, p_event text, p_price bigint, p_commission bigint, p_revenue bigint,
                                                  p_charge_result jsonb, p_close boolean, p_agent text, p_result text, p_payload jsonb,
                                                  p_job uuid, p_log text, p_fast boolean, p_grace interval)
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
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists settle_market_call(uuid, uuid, uuid, uuid, text, text, text, text, bigint, bigint, bigint, jsonb, boolean, text, text, jsonb, uuid, text, boolean, interval)`.execute(
    db,
  );
  await createLeaseSettleMarketCall(db);
  await sql`drop function if exists acquire_market_run(uuid, uuid, uuid, text, uuid, bigint, bigint, bigint, boolean, interval, timestamptz, timestamptz, interval, uuid, uuid, text, timestamptz)`.execute(
    db,
  );
  await createWindowAcquireMarketRun(db);
  await createOpenHoldsMicros(db, 'sql');
}

/**
 * open_holds_micros as migration 0016 defines it (`sql`), or the same query in PL/pgSQL, whose plan the session
 * keeps: as a SQL function it was planned anew at every call (0.4 ms of the acquire's 1.2 ms in a profile).
 */
async function createOpenHoldsMicros(db: Kysely<any>, language: 'sql' | 'plpgsql'): Promise<void> {
  const held = sql`
      select (select coalesce(sum(amount_micros), 0) from job_holds where user_id = p_user and released_at is null)
           + (select coalesce(sum(hold_micros - charged_micros), 0) from market_runs
               where consumer_id = p_user and status = 'open' and market_run_active(status, expires_at, calls_in_flight, idle_until, now()))`;
  if (language === 'sql')
    await sql`create or replace function open_holds_micros(p_user uuid) returns bigint language sql stable as $$${held}$$`.execute(
      db,
    );
  else
    await sql`create or replace function open_holds_micros(p_user uuid) returns bigint language plpgsql stable as $$
      begin
        return (${held});
      end
    $$`.execute(db);
}

/** acquire_market_run as this migration defines it (migration 0028's down restores it). */
export async function createCredentialAcquireMarketRun(db: Kysely<any>): Promise<void> {
  await sql`
    create function acquire_market_run(p_id uuid, p_consumer uuid, p_entry uuid, p_selection text, p_job uuid, p_cap bigint, p_limit bigint,
                                       p_reserve bigint, p_shared boolean, p_min_life interval, p_created timestamptz, p_expires timestamptz,
                                       p_idle_grace interval, p_credential uuid, p_api_key uuid, p_credential_source text,
                                       p_credential_issued timestamptz)
    returns jsonb language plpgsql volatile as $$
    declare
      v_submission uuid;
      v_owner uuid;
      v_events jsonb;
      v_free boolean;
      v_subscription text;
      v_reserve bigint;
      v_run market_runs;
      v_join boolean := false;
      v_spent bigint := 0;
      v_ceiling bigint;
      v_available bigint;
      v_hold bigint;
      v_key uuid;
      v_credential uuid;
      v_revoked timestamptz;
      v_last_used timestamptz;
    begin
      perform set_config('synchronous_commit', 'off', true);
      -- The presented credential first (p_credential: a hosted call's deferred check, never remembered): its API key
      -- live, the credential not revoked; one it is the first use of is recorded, last_used_at kept to the minute.
      if p_credential is not null then
        select k.id, c.id, c.revoked_at, c.last_used_at into v_key, v_credential, v_revoked, v_last_used
          from api_keys k left join market_credentials c on c.id = p_credential and c.user_id = k.user_id
          where k.id = p_api_key and k.user_id = p_consumer and k.revoked_at is null;
        if v_key is null then
          return jsonb_build_object('outcome', 'key_rotated');
        end if;
        if v_revoked is not null then
          return jsonb_build_object('outcome', 'credential_revoked');
        end if;
        if v_credential is null then
          insert into market_credentials (id, user_id, entry_id, api_key_id, source, label, cap_micros, created_at, last_used_at)
            values (p_credential, p_consumer, p_entry, p_api_key, p_credential_source, null, p_cap, p_credential_issued, now())
            on conflict (id) do nothing;
        elsif v_last_used is null or v_last_used < now() - interval '60 seconds' then
          update market_credentials set last_used_at = now() where id = p_credential;
        end if;
      end if;
      select s.id, s.owner_id, d.pricing_events, d.monetization_strategy = 'free'
        into v_submission, v_owner, v_events, v_free
        from market_submissions s join mcp_market_details d on d.submission_id = s.id
        where s.listing_id = p_entry and s.market = 'mcp' and s.live and s.status = 'approved';
      if not found then
        return jsonb_build_object('outcome', 'entry_not_found');
      end if;
      select status into v_subscription from subscriptions where user_id = p_consumer;
      if v_subscription is distinct from 'active' then
        return jsonb_build_object('outcome', 'subscription_inactive');
      end if;
      perform 1 from wallets where user_id = p_consumer for update;
      if not found then
        return jsonb_build_object('outcome', 'insufficient_funds');
      end if;
      v_reserve := case when v_free then 0 else p_reserve end;

      -- Every statement from here on runs after the lock: it sees what earlier holders of the lock committed.
      if p_shared then
        select * into v_run from market_runs
          where consumer_id = p_consumer and selection_id = p_selection and status = 'open' and accepts_calls
            and (case when p_job is null then job_id is null and entry_id = p_entry else job_id = p_job end)
          for update;
        if found then
          v_join := v_run.submission_id = v_submission and v_run.expires_at > clock_timestamp() + p_min_life
                    and market_run_active(v_run.status, v_run.expires_at, v_run.calls_in_flight, v_run.idle_until, clock_timestamp());
          -- A window (a direct call's shared run) is a run: its cap and the run charge limit bound it. A call that
          -- fits them on its own but not on top of the window's hold ends the window and opens the next one.
          if v_join and p_job is null and coalesce(v_reserve, 0) > 0
             and v_run.hold_micros + v_reserve > least(p_limit, coalesce(p_cap, p_limit))
             and v_reserve <= least(p_limit, coalesce(p_cap, p_limit)) then
            v_join := false;
          end if;
          if not v_join then
            -- Retired: no new call joins it; it is closed now unless a call still uses it or the grace of its last call runs.
            update market_runs
              set accepts_calls = false,
                  status = case when market_run_active(status, expires_at, calls_in_flight, idle_until, clock_timestamp()) then status else 'closed' end,
                  closed_at = case when market_run_active(status, expires_at, calls_in_flight, idle_until, clock_timestamp()) then closed_at else now() end
              where id = v_run.id;
          end if;
        end if;
      end if;

      if p_cap is not null and p_job is not null then
        select coalesce(sum(case when market_run_active(status, expires_at, calls_in_flight, idle_until, clock_timestamp()) then hold_micros else charged_micros end), 0)
          into v_spent
          from market_runs
          where job_id = p_job and selection_id = p_selection and (not v_join or id <> v_run.id);
      end if;
      v_ceiling := least(p_limit, coalesce(p_cap - v_spent, p_limit));

      if v_join then
        if coalesce(v_reserve, 0) > 0 then
          if v_run.hold_micros + v_reserve > v_ceiling then
            return jsonb_build_object('outcome', 'run_limit_reached', 'room', greatest(0, v_ceiling - v_run.hold_micros));
          end if;
          select w.balance_micros - open_holds_micros(p_consumer) into v_available from wallets w where w.user_id = p_consumer;
          if v_reserve > v_available then
            return jsonb_build_object('outcome', 'insufficient_funds');
          end if;
        end if;
        update market_runs set calls_in_flight = calls_in_flight + 1, hold_micros = hold_micros + coalesce(v_reserve, 0)
          where id = v_run.id
          returning * into v_run;
        return jsonb_build_object('outcome', 'joined', 'run', to_jsonb(v_run));
      end if;

      if v_free then
        v_hold := 0;
      else
        select w.balance_micros - open_holds_micros(p_consumer) into v_available from wallets w where w.user_id = p_consumer;
        if v_reserve is not null then
          if v_reserve > v_ceiling then
            return jsonb_build_object('outcome', 'run_limit_reached', 'room', greatest(0, v_ceiling));
          end if;
          if v_reserve > greatest(v_available, 0) then
            return jsonb_build_object('outcome', 'insufficient_funds');
          end if;
          v_hold := v_reserve;
        else
          if v_ceiling <= 0 then
            return jsonb_build_object('outcome', 'run_limit_reached', 'room', 0);
          end if;
          v_hold := least(v_available, v_ceiling);
          if v_hold <= 0 then
            return jsonb_build_object('outcome', 'insufficient_funds');
          end if;
        end if;
      end if;
      insert into market_runs (id, consumer_id, provider_id, entry_id, submission_id, selection_id, pricing_events, cap_micros, hold_micros,
                               created_at, expires_at, job_id, calls_in_flight, accepts_calls, idle_grace)
        values (p_id, p_consumer, v_owner, p_entry, v_submission, p_selection, v_events, p_cap, v_hold, p_created, p_expires, p_job, 1, p_shared,
                p_idle_grace)
        returning * into v_run;
      return jsonb_build_object('outcome', 'opened', 'run', to_jsonb(v_run));
    end
    $$`.execute(db);
}
