import { type Kysely, sql } from 'kysely';

/**
 * The images agents' tools return (MCP image blocks, embedded resources with an image blob), kept
 * for the model of a run that accepts images (the price table's `vision`). A tool call's answer
 * reaches the workflow as text and references to these rows only: image bytes never enter a
 * workflow history. The decision activity reads them when it builds the model's request.
 *
 * - agent_tool_images: one row per image kept (at most AGENT_TOOL_IMAGES_PER_RESULT of a result,
 *   none over AGENT_TOOL_IMAGE_MAX_KB). The call's record activity says where the image shows:
 *   `call_index` (agent_tool_calls), and `reply_seq`/`call_id` (the tool message of a conversation's
 *   run) or `task_index`/`step` (the step of a step run). The rows of a run are deleted when it ends.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table agent_tool_images (
      id uuid primary key,
      job_id uuid not null references jobs (id) on delete cascade,
      tool text not null,
      position integer not null,
      mime_type text not null,
      data bytea not null,
      call_index integer,
      reply_seq integer,
      call_id text,
      task_index integer,
      step integer,
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index agent_tool_images_job_idx on agent_tool_images (job_id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists agent_tool_images`.execute(db);
}
