/**
 * What a tool-only agent run (custom agents, agent-market agents) keeps besides its job: its toolbox,
 * built once (custom_agent_runs), and its conversation with the model in order (custom_agent_messages by seq).
 */
import type { Db } from '../connect';

export function findCustomAgentRun(db: Db, jobId: string) {
  return db.selectFrom('custom_agent_runs').selectAll().where('job_id', '=', jobId).executeTakeFirst();
}

/** Keeps the run's toolbox and notes (JSON text); a toolbox already kept stays as it is. */
export async function insertCustomAgentRun(
  db: Db,
  jobId: string,
  run: { toolbox: string; notes: string },
): Promise<void> {
  await db
    .insertInto('custom_agent_runs')
    .values({ job_id: jobId, toolbox: run.toolbox, notes: run.notes })
    .onConflict((oc) => oc.column('job_id').doNothing())
    .execute();
}

/** The conversation before position `seq`, in order. */
export function listConversationBefore(db: Db, jobId: string, seq: number) {
  return db
    .selectFrom('custom_agent_messages')
    .select(['seq', 'message'])
    .where('job_id', '=', jobId)
    .where('seq', '<', seq)
    .orderBy('seq')
    .execute();
}

/** The conversation's messages, newest first. */
export function listConversationNewestFirst(db: Db, jobId: string) {
  return db
    .selectFrom('custom_agent_messages')
    .select('message')
    .where('job_id', '=', jobId)
    .orderBy('seq', 'desc')
    .execute();
}

/**
 * Writes messages (JSON text, at least one) at positions `seq`, `seq + 1`, … and drops any after them:
 * the conversation from `seq` on is these messages (a retried decision replaces what an earlier attempt
 * wrote). One statement: the rows it drops and the rows it writes are apart.
 */
export async function replaceConversationFrom(
  db: Db,
  jobId: string,
  seq: number,
  messages: readonly string[],
): Promise<void> {
  if (messages.length === 0) throw new Error('replaceConversationFrom needs at least one message');
  await db
    .with('dropped', (qb) =>
      qb
        .deleteFrom('custom_agent_messages')
        .where('job_id', '=', jobId)
        .where('seq', '>=', seq + messages.length),
    )
    .insertInto('custom_agent_messages')
    .values(messages.map((message, i) => ({ job_id: jobId, seq: seq + i, message })))
    .onConflict((oc) => oc.columns(['job_id', 'seq']).doUpdateSet((eb) => ({ message: eb.ref('excluded.message') })))
    .execute();
}

/** Writes the message at `seq`: replacing one already there when `rewrite`, else keeping it. */
export async function putConversationMessage(
  db: Db,
  jobId: string,
  seq: number,
  message: string,
  rewrite: boolean,
): Promise<void> {
  await db
    .insertInto('custom_agent_messages')
    .values({ job_id: jobId, seq, message })
    .onConflict((oc) =>
      rewrite ? oc.columns(['job_id', 'seq']).doUpdateSet({ message }) : oc.columns(['job_id', 'seq']).doNothing(),
    )
    .execute();
}
