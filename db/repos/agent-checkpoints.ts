import type { Db } from '../connect';

/** A browser agent run's session checkpoint (URL and storage state), sealed by the caller with the master key. */
export async function findSealedCheckpoint(db: Db, jobId: string): Promise<string | undefined> {
  const stored = await db
    .selectFrom('agent_checkpoints')
    .select('sealed_state')
    .where('job_id', '=', jobId)
    .executeTakeFirst();
  return stored?.sealed_state;
}

/** Keeps the run's latest checkpoint (one per run). */
export async function saveSealedCheckpoint(db: Db, jobId: string, sealed: string): Promise<void> {
  await db
    .insertInto('agent_checkpoints')
    .values({ job_id: jobId, sealed_state: sealed })
    .onConflict((oc) => oc.column('job_id').doUpdateSet({ sealed_state: sealed, updated_at: new Date() }))
    .execute();
}
