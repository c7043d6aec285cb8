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

/** The conversation in order. */
export function listConversation(db: Db, jobId: string) {
  return db
    .selectFrom('custom_agent_messages')
    .select(['seq', 'message'])
    .where('job_id', '=', jobId)
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

/** Drops the conversation from position `seq` on (a retried decision rewrites what an earlier attempt wrote). */
export async function truncateConversation(db: Db, jobId: string, seq: number): Promise<void> {
  await db.deleteFrom('custom_agent_messages').where('job_id', '=', jobId).where('seq', '>=', seq).execute();
}

/** Appends messages (JSON text) at positions `seq`, `seq + 1`, …. */
export async function appendConversation(
  db: Db,
  jobId: string,
  seq: number,
  messages: readonly string[],
): Promise<void> {
  await db
    .insertInto('custom_agent_messages')
    .values(messages.map((message, i) => ({ job_id: jobId, seq: seq + i, message })))
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
