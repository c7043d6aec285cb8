import { type Kysely, sql } from 'kysely';

/**
 * Market tool calls that wait for the consumer's input (multi-round calls: an input-required result
 * of the tool, 2026-07-28; relayed as real requests to a 2025-revision client).
 *
 * - market_call_continuations: one row per round that ended waiting for input. The call keeps its use
 *   of its run (calls_in_flight) and its reservation meanwhile; the next round continues the call by
 *   ending the row (ended_at), at most once: a requestState can be answered once, by the consumer and
 *   selection it was given to, for the tool it was given for, before expires_at. `upstream_state` is
 *   the upstream's own requestState of that round (it never leaves the platform). A round that is
 *   not continued in time is ended by the API process that wrote it (the call given back without a
 *   charge: `release_micros` released, the run closed when `close_run`), or, at the latest, with its
 *   run when the run expires.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table market_call_continuations (
      id uuid primary key,
      call_id uuid not null,
      run_id uuid not null references market_runs (id) on delete cascade,
      consumer_id uuid not null,
      entry_id uuid not null,
      selection_id text not null,
      tool_name text not null,
      upstream_state text,
      release_micros bigint not null,
      close_run boolean not null,
      started_at timestamptz not null,
      expires_at timestamptz not null,
      ended_at timestamptz
    )`.execute(db);
  await sql`create index market_call_continuations_run_idx on market_call_continuations (run_id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists market_call_continuations`.execute(db);
}
