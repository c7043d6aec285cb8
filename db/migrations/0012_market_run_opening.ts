import { type Kysely, sql } from 'kysely';

/**
 * Opening a market run in one round trip (the hosted endpoint opens one per tool call).
 *
 * - open_holds_micros(user): the money an account has reserved and not yet settled — open job holds
 *   plus the unused part of its open, unexpired market runs. The one definition of "open holds"
 *   (db/repos/ledger.ts openHoldsMicros, admit_job and open_market_run call it).
 * - open_market_run(...): the rules of db/repos/market-runs.ts openMarketRun as one PL/pgSQL call:
 *   the live entry and the subscription are checked, the consumer's wallet row is locked, and the
 *   hold — min(available, cap, limit), nothing for a free entry — is computed by a LATER statement
 *   than the lock. A volatile PL/pgSQL function takes a fresh snapshot for each statement under READ
 *   COMMITTED, so that statement sees the holds of every opening or admission that held the lock
 *   before (the rule the two-statement transaction kept), while the lock is held for the function's
 *   few statements instead of four client round trips. Its commit does not wait for the WAL flush: a
 *   run is only a reservation (a later durable commit flushes it anyway).
 *   Returns {"outcome": "opened", "run": <market_runs row>} or {"outcome": <refusal>}.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await createOpenHoldsMicros(db);
  await createOpenMarketRun(db);
}

/** open_holds_micros as this migration defines it (migration 0016 redefines it; its down restores this one). */
export async function createOpenHoldsMicros(db: Kysely<any>): Promise<void> {
  await sql`
    create function open_holds_micros(p_user uuid) returns bigint language sql stable as $$
      select (select coalesce(sum(amount_micros), 0) from job_holds where user_id = p_user and released_at is null)
           + (select coalesce(sum(hold_micros - charged_micros), 0) from market_runs
               where consumer_id = p_user and status = 'open' and expires_at > now())
    $$`.execute(db);
}

/** open_market_run as this migration defines it (migration 0016 replaces it with acquire_market_run; its down restores this one). */
export async function createOpenMarketRun(db: Kysely<any>): Promise<void> {
  await sql`
    create function open_market_run(p_id uuid, p_consumer uuid, p_entry uuid, p_selection text, p_cap bigint, p_limit bigint,
                                    p_created timestamptz, p_expires timestamptz, p_job uuid)
    returns jsonb language plpgsql volatile as $$
    declare
      v_submission uuid;
      v_owner uuid;
      v_events jsonb;
      v_free boolean;
      v_subscription text;
      v_hold bigint;
      v_run market_runs;
    begin
      perform set_config('synchronous_commit', 'off', true);
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
      select case when v_free then 0::bigint
                  else greatest(0, least(w.balance_micros - open_holds_micros(p_consumer), p_limit, coalesce(p_cap, p_limit))) end
        into v_hold
        from wallets w where w.user_id = p_consumer;
      if v_hold is null or (not v_free and v_hold <= 0) then
        return jsonb_build_object('outcome', 'insufficient_funds');
      end if;
      insert into market_runs (id, consumer_id, provider_id, entry_id, submission_id, selection_id, pricing_events, cap_micros, hold_micros, created_at, expires_at, job_id)
        values (p_id, p_consumer, v_owner, p_entry, v_submission, p_selection, v_events, p_cap, v_hold, p_created, p_expires, p_job)
        returning * into v_run;
      return jsonb_build_object('outcome', 'opened', 'run', to_jsonb(v_run));
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists open_market_run(uuid, uuid, uuid, text, bigint, bigint, timestamptz, timestamptz, uuid)`.execute(
    db,
  );
  await sql`drop function if exists open_holds_micros(uuid)`.execute(db);
}
