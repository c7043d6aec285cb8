import type { Db } from '../../../db/connect';
import { findOwnJob, listOwnJobs, listRecentJobs } from '../../../db/repos/jobs';
import type { PageRequest } from '../../../lib/pagination';
import type { Job, JobKind, JobStatus } from '../../../db/schema';
import { microsToUsd } from '../../../lib/money';

/** One of the account's own jobs (any kind), or undefined: another account's job is as absent as a missing one. */
export function ownJob(db: Db, userId: string, jobId: string): Promise<Job | undefined> {
  return findOwnJob(db, userId, jobId);
}

/** The account's latest jobs, newest first (the console's home page). */
export function recentJobs(db: Db, userId: string, limit: number): Promise<Job[]> {
  return listRecentJobs(db, userId, { limit });
}

/** A page of the account's jobs, filtered by kind and status, each with what its charges debited so far (USD). */
export async function ownJobsPage(
  db: Db,
  userId: string,
  filter: { kind?: JobKind; status?: JobStatus },
  page: PageRequest,
) {
  const { rows, total } = await listOwnJobs(db, userId, filter, page);
  return { rows: rows.map((job) => ({ ...job, costUsd: microsToUsd(job.cost_micros) })), total };
}
