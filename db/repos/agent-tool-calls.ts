import type { Db } from '../connect';
import { appendJobLog } from './jobs';

/** One tool invocation of an agent run as its record shows it (never its arguments or results: they can hold secrets). */
export interface AgentToolCallRow {
  jobId: string;
  /** From 1, in the order of the run. */
  index: number;
  source: string;
  tool: string;
  status: 'completed' | 'error' | 'failed' | 'not_sent';
  startedAt: number;
  durationMs: number;
  /** What the call charged (a fixed-price market tool). */
  costMicros?: number;
  error: string | null;
}

/** Records a tool call once (a retried activity writes nothing twice) and logs it on the job. */
export async function recordAgentToolCall(db: Db, call: AgentToolCallRow): Promise<void> {
  await db
    .insertInto('agent_tool_calls')
    .values({
      job_id: call.jobId,
      call_index: call.index,
      source: call.source,
      tool: call.tool,
      status: call.status,
      started_at: new Date(call.startedAt),
      duration_ms: Math.max(0, Math.round(call.durationMs)),
      cost_micros: call.costMicros ?? 0,
      error: call.error,
    })
    .onConflict((oc) => oc.columns(['job_id', 'call_index']).doNothing())
    .execute();
  const outcome =
    call.status === 'completed'
      ? 'ok'
      : call.status === 'error'
        ? 'the tool reported an error'
        : call.status === 'not_sent'
          ? 'not sent (max_tool_calls reached)'
          : `failed: ${call.error}`;
  await appendJobLog(
    db,
    call.jobId,
    `tool call ${call.index}: ${call.source} / ${call.tool} → ${outcome} (${Math.round(call.durationMs)} ms)`,
  );
}

/** The run's tool calls in call order (the run record shows them). */
export function listToolCalls(db: Db, jobId: string) {
  return db.selectFrom('agent_tool_calls').selectAll().where('job_id', '=', jobId).orderBy('call_index').execute();
}

/** The status of each of the run's tool calls (for its summary). */
export function listToolCallStatuses(db: Db, jobId: string) {
  return db.selectFrom('agent_tool_calls').select(['status']).where('job_id', '=', jobId).execute();
}
