import { randomUUID } from 'node:crypto';
import type { Db } from '../connect';

/** An image kept for a run's model (agent_tool_images), with its bytes. */
export interface StoredToolImage {
  id: string;
  tool: string;
  mimeType: string;
  data: Buffer;
  callIndex: number | null;
  replySeq: number | null;
  callId: string | null;
}

/** Keeps the images of one tool answer of a run; returns their ids, in order. */
export async function insertToolImages(
  db: Db,
  jobId: string,
  tool: string,
  images: { position: number; mimeType: string; data: Buffer }[],
): Promise<string[]> {
  if (images.length === 0) return [];
  const rows = images.map((image) => ({
    id: randomUUID(),
    job_id: jobId,
    tool,
    position: image.position,
    mime_type: image.mimeType,
    data: image.data,
  }));
  await db.insertInto('agent_tool_images').values(rows).execute();
  return rows.map((row) => row.id);
}

/** Where the images of a recorded tool call show: the call, and its conversation's tool message or its step. */
export type ToolImagePlace = { callIndex: number } & (
  { replySeq: number; callId: string } | { taskIndex: number; step: number }
);

/** Ties images to their recorded call (a retried record writes the same). */
export async function placeToolImages(db: Db, jobId: string, ids: string[], place: ToolImagePlace): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('agent_tool_images')
    .set({
      call_index: place.callIndex,
      ...('replySeq' in place
        ? { reply_seq: place.replySeq, call_id: place.callId }
        : { task_index: place.taskIndex, step: place.step }),
    })
    .where('job_id', '=', jobId)
    .where('id', 'in', ids)
    .execute();
}

const columns = ['id', 'tool', 'mime_type', 'data', 'call_index', 'reply_seq', 'call_id'] as const;

function stored(row: {
  id: string;
  tool: string;
  mime_type: string;
  data: Buffer;
  call_index: number | null;
  reply_seq: number | null;
  call_id: string | null;
}): StoredToolImage {
  return {
    id: row.id,
    tool: row.tool,
    mimeType: row.mime_type,
    data: row.data,
    callIndex: row.call_index,
    replySeq: row.reply_seq,
    callId: row.call_id,
  };
}

/** The images of a conversation's tool messages at these positions, by position and in the answers' order. */
export async function toolImagesOfReplies(db: Db, jobId: string, seqs: number[]): Promise<StoredToolImage[]> {
  if (seqs.length === 0) return [];
  const rows = await db
    .selectFrom('agent_tool_images')
    .select(columns)
    .where('job_id', '=', jobId)
    .where('reply_seq', 'in', seqs)
    .orderBy('reply_seq')
    .orderBy('position')
    .execute();
  return rows.map(stored);
}

/** The images of the tool calls of one step, by call and in the answers' order. */
export async function toolImagesOfStep(
  db: Db,
  jobId: string,
  taskIndex: number,
  step: number,
): Promise<StoredToolImage[]> {
  const rows = await db
    .selectFrom('agent_tool_images')
    .select(columns)
    .where('job_id', '=', jobId)
    .where('task_index', '=', taskIndex)
    .where('step', '=', step)
    .orderBy('call_index')
    .orderBy('position')
    .execute();
  return rows.map(stored);
}

/** Drops the images of a run (it has ended: no model reads them again). */
export async function deleteToolImages(db: Db, jobId: string): Promise<void> {
  await db.deleteFrom('agent_tool_images').where('job_id', '=', jobId).execute();
}
