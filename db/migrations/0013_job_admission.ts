import { type Kysely } from 'kysely';
import { dropFunctionsNamed } from './drop-functions';

/**
 * Admitting a metered job in one round trip (every POST /scrape, agent run and custom-agent run).
 *
 * admit_job(...) applies the rules of db/repos/jobs.ts admitJob as one PL/pgSQL call: an existing
 * job of the same Idempotency-Key is returned as is; otherwise the subscription must be active (read
 * with the wallet row, which is locked), the available balance — balance minus open_holds_micros,
 * computed by a LATER statement than the lock, so it sees the holds of every admission or market
 * run opening that held the lock before (a volatile PL/pgSQL function takes a fresh snapshot per
 * statement under READ COMMITTED) — positive, and the month's operation counter below the plan
 * limit (one conditional upsert). Then the job, its hold (up to the kind's maximum) and its system
 * log line are inserted. The wallet lock is held for those few statements, not for client round
 * trips. The commit is durable (the job and its hold must survive a crash).
 *
 * Returns {"outcome": "created", "job": <jobs row>, "hold": micros}, {"outcome": "existing", "job": …},
 * {"outcome": "monthly_limit_reached", "limit": n} or {"outcome": <refusal>}. A concurrent admission
 * with the same Idempotency-Key raises a unique violation (the caller reads the winner's job).
 *
 * admit_job was created here; its text now lives in db/functions/admit_job.sql, applied after the versioned
 * migrations (db/functions/README.md).
 */
export async function up(): Promise<void> {}

export async function down(db: Kysely<any>): Promise<void> {
  await dropFunctionsNamed(db, 'admit_job');
}
