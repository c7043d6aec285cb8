import { type Kysely, sql } from 'kysely';

/**
 * A provider's production charge in one statement.
 *
 * - charge_market_run_event(...): the locked part of POST /provider/runs/{runId}/charge
 *   (db/repos/market-runs.ts chargeMarketRun) as one function call, where it was a transaction of
 *   seven round trips: both wallets locked in id order, the run locked and re-checked (a charge with
 *   the same key that won a race is returned as 'raced'; then open, unexpired, live by
 *   market_run_active, the entry still approved), then the charge row, the run's total and
 *   post_market_charge. The split (lib/market/commission.ts) stays in TypeScript: the caller computes
 *   it from the run's remaining hold (hold − charged) as it read it, and passes that amount; when the
 *   locked run has another remaining hold (another charge came first), nothing is written and the
 *   function answers 'stale' with the amount it found, so the caller splits again. An event the run does not price comes with a null
 *   unit price and is answered 'unknown_event' after the run's own checks, as before. Returns jsonb {outcome, charged?, slug?}.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function charge_market_run_event(p_run uuid, p_charge uuid, p_consumer uuid, p_provider uuid, p_key text, p_hash text,
                                            p_event text, p_tool text, p_requested integer, p_charged_count integer,
                                            p_unit bigint, p_total bigint, p_commission bigint, p_revenue bigint,
                                            p_expected_remaining bigint, p_result jsonb, p_outcome_text text, p_payload jsonb)
    returns jsonb language plpgsql volatile as $$
    declare
      v_run market_runs%rowtype;
      v_slug text;
    begin
      perform 1 from wallets where user_id in (p_consumer, p_provider) order by user_id for update;
      select * into v_run from market_runs where id = p_run for update;
      if not found then
        return jsonb_build_object('outcome', 'not_found');
      end if;
      if exists (select 1 from market_run_charges where run_id = p_run and idempotency_key = p_key) then
        return jsonb_build_object('outcome', 'raced');
      end if;
      if v_run.status <> 'open' then
        return jsonb_build_object('outcome', 'closed');
      end if;
      if v_run.expires_at <= clock_timestamp() then
        return jsonb_build_object('outcome', 'expired');
      end if;
      if not market_run_active(v_run.status, v_run.expires_at, v_run.calls_in_flight, v_run.idle_until, clock_timestamp()) then
        return jsonb_build_object('outcome', 'ended');
      end if;
      if p_unit is null then
        return jsonb_build_object('outcome', 'unknown_event');
      end if;
      select s.slug into v_slug from market_submissions s
        where s.listing_id = v_run.entry_id and s.market = 'mcp' and s.live and s.status = 'approved';
      if v_slug is null then
        return jsonb_build_object('outcome', 'entry_not_active');
      end if;
      if v_run.hold_micros - v_run.charged_micros <> p_expected_remaining then
        return jsonb_build_object('outcome', 'stale', 'remaining', v_run.hold_micros - v_run.charged_micros);
      end if;
      insert into market_run_charges (id, run_id, idempotency_key, request_hash, event_name, tool_name, requested_count, charged_count,
                                      unit_price_micros, total_micros, commission_micros, provider_revenue_micros, result)
        values (p_charge, p_run, p_key, p_hash, p_event, p_tool, p_requested, p_charged_count,
                p_unit, p_total, p_commission, p_revenue, p_result);
      if p_total > 0 then
        update market_runs set charged_micros = charged_micros + p_total where id = p_run;
        perform post_market_charge(p_run, p_charge, p_consumer, p_provider, p_total, p_revenue, 'market:' || v_slug,
                                   p_outcome_text, p_payload);
      end if;
      return jsonb_build_object('outcome', 'recorded');
    end
    $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists charge_market_run_event(uuid, uuid, uuid, uuid, text, text, text, text, integer, integer, bigint, bigint, bigint, bigint, bigint, jsonb, text, jsonb)`.execute(
    db,
  );
}
