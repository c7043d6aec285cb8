-- admit_job: Admits a metered job in one call: idempotency, subscription, available balance, monthly operations, job and hold.
--
-- An existing job of the same Idempotency-Key is returned as is; otherwise the subscription must be active (read
-- with the wallet row, which is locked), the available balance (balance - open_holds_micros, computed after the
-- lock) positive, and the month's operation counter below the plan limit (one conditional upsert). Then the job,
-- its hold (up to p_hold_max) and its system log line are inserted. The commit is durable.
-- Returns {"outcome": "created", "job": <jobs row>, "hold": micros}, {"outcome": "existing", "job": ...},
-- {"outcome": "monthly_limit_reached", "limit": n} or {"outcome": <refusal>}.
--
-- Called by: db/repos/jobs.ts admitJob
-- History: migration 0013.
create or replace function admit_job(
  p_id uuid, p_user uuid, p_kind text, p_request jsonb, p_webhook text, p_sealed text, p_workflow_id text,
  p_workflow_type text, p_task_queue text, p_workflow_args jsonb, p_idempotency_key text, p_logs text[],
  p_system_log text, p_hold_max bigint, p_counts boolean, p_period text
)
returns jsonb language plpgsql volatile as $$
  declare
    v_job jobs;
    v_balance bigint;
    v_status text;
    v_limit int;
    v_available bigint;
    v_hold bigint;
  begin
    if p_idempotency_key is not null then
      select * into v_job from jobs where user_id = p_user and kind = p_kind and idempotency_key = p_idempotency_key;
      if found then
        return jsonb_build_object('outcome', 'existing', 'job', to_jsonb(v_job));
      end if;
    end if;
    select w.balance_micros, s.status, s.monthly_operation_limit into v_balance, v_status, v_limit
      from subscriptions s join wallets w on w.user_id = s.user_id
      where s.user_id = p_user
      for update of w;
    if not found then
      raise exception 'No subscription or wallet for user %', p_user;
    end if;
    if v_status <> 'active' then
      return jsonb_build_object('outcome', 'subscription_inactive');
    end if;
    select v_balance - open_holds_micros(p_user) into v_available from wallets where user_id = p_user;
    if v_available <= 0 then
      return jsonb_build_object('outcome', 'insufficient_funds');
    end if;
    if p_counts then
      if v_limit <= 0 then
        return jsonb_build_object('outcome', 'monthly_limit_reached', 'limit', v_limit);
      end if;
      insert into monthly_usage (user_id, period, operations) values (p_user, p_period, 1)
        on conflict (user_id, period) do update set operations = monthly_usage.operations + 1
        where monthly_usage.operations < v_limit;
      if not found then
        return jsonb_build_object('outcome', 'monthly_limit_reached', 'limit', v_limit);
      end if;
    end if;
    insert into jobs (id, user_id, kind, status, request, webhook_url, sealed_secrets, workflow_id, workflow_type, workflow_task_queue, workflow_args, idempotency_key, logs)
      values (p_id, p_user, p_kind, 'pending', p_request, p_webhook, p_sealed, p_workflow_id, p_workflow_type, p_task_queue, p_workflow_args, p_idempotency_key, p_logs)
      returning * into v_job;
    v_hold := least(p_hold_max, v_available);
    insert into job_holds (job_id, user_id, amount_micros) values (p_id, p_user, v_hold);
    insert into system_logs (user_id, job_id, log_message) values (p_user, p_id, p_system_log);
    return jsonb_build_object('outcome', 'created', 'job', to_jsonb(v_job), 'hold', v_hold);
  end
$$;
