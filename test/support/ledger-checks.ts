import assert from 'node:assert/strict';
import type { Harness } from './stack/harness';

/** The job was settled exactly once: one transaction and one usage debit, both equal to the usage recorded for it. */
export async function assertSettledOnce(h: Harness, jobId: string): Promise<number> {
  const usage = await h.db.selectFrom('job_usage').select(['cost_micros']).where('job_id', '=', jobId).execute();
  const used = usage.reduce((sum, row) => sum + Number(row.cost_micros), 0);
  const transactions = await h.db
    .selectFrom('agent_transactions')
    .select(['cost_micros', 'result'])
    .where('job_id', '=', jobId)
    .execute();
  assert.equal(transactions.length, 1, `one transaction for job ${jobId}`);
  assert.equal(Number(transactions[0].cost_micros), used, 'the transaction charges the usage recorded');
  const debits = (
    await h.db.selectFrom('ledger_entries').select(['kind', 'amount_micros']).where('job_id', '=', jobId).execute()
  ).filter((e) => e.kind === 'usage');
  assert.equal(debits.length, used > 0 ? 1 : 0, `one usage debit for job ${jobId}`);
  if (used > 0) assert.equal(Number(debits[0].amount_micros), -used);
  return used;
}

export async function workflowIdOf(h: Harness, jobId: string): Promise<string> {
  const row = await h.db.selectFrom('jobs').select('workflow_id').where('id', '=', jobId).executeTakeFirstOrThrow();
  return row.workflow_id;
}
