import { sql } from 'kysely';
import type { Db } from '../../db/connect';

export interface LedgerProblem {
  check: string;
  rows: unknown[];
}

/**
 * The accountant's view of the whole database: for every account the balance equals the sum of its
 * ledger entries (credits − debits), no balance was ever negative, no finished job still holds
 * money, no job was debited more than its hold, and every debit points at what it paid for: a job,
 * a market run (provider event charges), or, for usage outside both such as AI skills search, its
 * agent transaction. Market money balances per run: the consumer's debits equal the run's charges,
 * the provider's revenue credits equal the charges' revenue, and every charge's total is exactly
 * revenue + commission. Agent purchases balance too: price = consumer debit = provider sale credit + commission.
 * Returns the offending rows per check; empty when the books balance.
 */
export async function findLedgerProblems(db: Db): Promise<LedgerProblem[]> {
  const checks: [string, Promise<{ rows: unknown[] }>][] = [
    [
      'wallet balance differs from the sum of its ledger entries',
      sql`select w.user_id, w.balance_micros, coalesce(sum(l.amount_micros), 0)::bigint as ledger_sum_micros
          from wallets w left join ledger_entries l on l.user_id = w.user_id
          group by w.user_id, w.balance_micros
          having w.balance_micros <> coalesce(sum(l.amount_micros), 0)`.execute(db),
    ],
    ['negative wallet balance', sql`select user_id, balance_micros from wallets where balance_micros < 0`.execute(db)],
    [
      'ledger entry left a negative balance',
      sql`select id, user_id, kind, amount_micros, balance_after_micros, job_id from ledger_entries where balance_after_micros < 0`.execute(
        db,
      ),
    ],
    [
      'open hold on a finished job',
      sql`select h.job_id, h.user_id, h.amount_micros, j.kind, j.status, j.error
          from job_holds h join jobs j on j.id = h.job_id
          where h.released_at is null and j.status in ('completed', 'failed')`.execute(db),
    ],
    [
      'job debited more than its hold',
      sql`select h.job_id, h.amount_micros, -sum(l.amount_micros)::bigint as debited_micros
          from job_holds h join ledger_entries l on l.job_id = h.job_id and l.kind = 'usage'
          group by h.job_id, h.amount_micros
          having -sum(l.amount_micros) > h.amount_micros`.execute(db),
    ],
    [
      'debit that points at no job (nor, outside jobs, at its agent transaction)',
      sql`select l.id, l.user_id, l.kind, l.amount_micros, l.job_id, l.idempotency_key, l.description
          from ledger_entries l
          left join jobs j on j.id = l.job_id
          left join agent_transactions t on t.idempotency_key = l.idempotency_key
          where l.amount_micros < 0
            and (l.job_id is null or j.id is null)
            and (l.job_id is not null or t.id is null or t.job_id is not null)`.execute(db),
    ],
    [
      'market ledger entry that points at no market run, or at the wrong account of its run',
      sql`select l.id, l.user_id, l.kind, l.amount_micros, l.market_run_id, r.consumer_id, r.provider_id
          from ledger_entries l left join market_runs r on r.id = l.market_run_id
          where (l.market_run_id is not null or l.kind = 'revenue')
            and (r.id is null
              or not ((l.kind = 'usage' and l.amount_micros < 0 and l.user_id = r.consumer_id)
                   or (l.kind = 'revenue' and l.amount_micros > 0 and l.user_id = r.provider_id)))`.execute(db),
    ],
    [
      'market run whose debits, revenue credits and commission do not balance with its charges',
      sql`with charges as (
            select run_id, sum(total_micros) as total, sum(provider_revenue_micros) as revenue, sum(commission_micros) as commission
            from market_run_charges group by run_id),
          debits as (
            select l.market_run_id as run_id, -sum(l.amount_micros) as debited
            from ledger_entries l where l.market_run_id is not null and l.kind = 'usage' group by l.market_run_id),
          credits as (
            select l.market_run_id as run_id, sum(l.amount_micros) as credited
            from ledger_entries l where l.market_run_id is not null and l.kind = 'revenue' group by l.market_run_id)
          select r.id as run_id, r.hold_micros, r.charged_micros,
                 coalesce(c.total, 0)::bigint as charges_total_micros, coalesce(d.debited, 0)::bigint as consumer_debited_micros,
                 coalesce(c.revenue, 0)::bigint as charges_revenue_micros, coalesce(k.credited, 0)::bigint as provider_credited_micros,
                 coalesce(c.commission, 0)::bigint as commission_micros
          from market_runs r
          left join charges c on c.run_id = r.id
          left join debits d on d.run_id = r.id
          left join credits k on k.run_id = r.id
          where r.charged_micros <> coalesce(c.total, 0)
             or r.charged_micros > r.hold_micros
             or coalesce(d.debited, 0) <> coalesce(c.total, 0)
             or coalesce(k.credited, 0) <> coalesce(c.revenue, 0)
             or coalesce(c.total, 0) <> coalesce(c.revenue, 0) + coalesce(c.commission, 0)`.execute(db),
    ],
    [
      'agent purchase whose consumer debit, provider sale credit and commission do not balance with its price',
      sql`select p.id, p.price_micros, p.commission_micros, p.provider_revenue_micros,
                 coalesce((select -sum(l.amount_micros) from ledger_entries l
                           where l.idempotency_key = 'agent-purchase:' || p.id and l.user_id = p.consumer_id and l.kind = 'usage'), 0)::bigint as debited_micros,
                 coalesce((select sum(l.amount_micros) from ledger_entries l
                           where l.idempotency_key = 'agent-sale:' || p.id and l.user_id = p.provider_id and l.kind = 'sale'), 0)::bigint as credited_micros
          from agent_market_purchases p
          where p.price_micros <> p.commission_micros + p.provider_revenue_micros
             or coalesce((select -sum(l.amount_micros) from ledger_entries l
                          where l.idempotency_key = 'agent-purchase:' || p.id and l.user_id = p.consumer_id and l.kind = 'usage'), 0) <> p.price_micros
             or coalesce((select sum(l.amount_micros) from ledger_entries l
                          where l.idempotency_key = 'agent-sale:' || p.id and l.user_id = p.provider_id and l.kind = 'sale'), 0) <> p.provider_revenue_micros`.execute(
        db,
      ),
    ],
    [
      'sale credit that points at no agent purchase of its provider',
      sql`select l.id, l.user_id, l.amount_micros, l.idempotency_key
          from ledger_entries l
          where l.kind = 'sale'
            and not exists (select 1 from agent_market_purchases p where 'agent-sale:' || p.id = l.idempotency_key and p.provider_id = l.user_id)`.execute(
        db,
      ),
    ],
    [
      'debit that differs from its agent transaction',
      sql`select l.id, l.amount_micros, t.cost_micros, l.idempotency_key
          from ledger_entries l join agent_transactions t on t.idempotency_key = l.idempotency_key
          where l.amount_micros <> -t.cost_micros`.execute(db),
    ],
  ];
  const problems: LedgerProblem[] = [];
  for (const [check, query] of checks) {
    const { rows } = await query;
    if (rows.length) problems.push({ check, rows });
  }
  return problems;
}

export async function assertLedgerReconciles(db: Db): Promise<void> {
  const problems = await findLedgerProblems(db);
  if (problems.length === 0) return;
  const report = problems
    .map(
      (p) =>
        `- ${p.check} (${p.rows.length}):\n${p.rows
          .slice(0, 20)
          .map((r) => `    ${JSON.stringify(r)}`)
          .join('\n')}`,
    )
    .join('\n');
  throw new Error(`Ledger reconciliation failed:\n${report}`);
}
