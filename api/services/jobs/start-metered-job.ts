import type { Job, JobKind } from '../../../db/schema';
import { abandonJob, admitJob, getJob } from '../../../db/repos/jobs';
import { startOnce } from '../../../lib/temporal/start';
import type { AuthenticatedUser } from '../../../db/repos/users';
import { ApiError } from '../../errors';
import type { ApiDeps } from '../../deps';
import { jobLog } from '../../../lib/log';

export interface StartJobInput {
  user: AuthenticatedUser;
  kind: JobKind;
  request: Record<string, unknown>;
  webhookUrl: string | null;
  idempotencyKey: string | null;
  sealSecrets?: (jobId: string) => string | null;
  workflowType: string;
  workflowArgs: (job: Pick<Job, 'id'>) => unknown[];
}

/**
 * Admits a metered job (with its hold) and starts its workflow. The workflow id is derived from the
 * job id and duplicates are rejected by Temporal, so retries (same Idempotency-Key) never start a
 * second run; a retry that finds its job still pending (its first request died before the start)
 * starts it. When the start fails the job is abandoned: failed, its operation given back, its hold
 * released and its Idempotency-Key freed, so the client's retry admits and starts a new job.
 */
export async function startMeteredJob(
  deps: Pick<ApiDeps, 'db' | 'config' | 'temporal'>,
  input: StartJobInput,
): Promise<Job> {
  const admission = await admitJob(deps.db, {
    userId: input.user.userId,
    kind: input.kind,
    request: input.request,
    webhookUrl: input.webhookUrl,
    idempotencyKey: input.idempotencyKey,
    sealSecrets: input.sealSecrets,
    holdMaxMicros: deps.config.holds[input.kind],
    workflow: { type: input.workflowType, taskQueue: deps.config.taskQueues.platform, args: input.workflowArgs },
  });
  switch (admission.outcome) {
    case 'subscription_inactive':
      throw new ApiError(403, 'subscription_inactive', 'The subscription of this account is not active');
    case 'insufficient_funds':
      throw new ApiError(
        402,
        'insufficient_funds',
        'The wallet has no available balance (balance minus the amounts held for running jobs); add credit or wait for running jobs to finish',
      );
    case 'monthly_limit_reached':
      throw new ApiError(429, 'monthly_limit_reached', `The monthly operation limit of ${admission.limit} is reached`);
  }
  const { job } = admission;
  if (job.status !== 'pending') return job;
  try {
    await startOnce(deps.temporal, {
      workflowId: job.workflow_id,
      // A job admitted before migration 0005 has no stored start; the request's is the same.
      workflowType: job.workflow_type ?? input.workflowType,
      taskQueue: job.workflow_task_queue ?? deps.config.taskQueues.platform,
      args: job.workflow_args ?? input.workflowArgs(job),
      userId: job.user_id,
      kind: job.kind,
    });
  } catch (err) {
    jobLog(job.id, { workflowId: job.workflow_id }).error(
      { err },
      'could not start the workflow; the job is abandoned',
    );
    const abandoned = await abandonJob(
      deps.db,
      job,
      'The run could not be started; it was not counted against your limit and nothing was charged',
    );
    if (!abandoned) {
      // No longer pending: the pending-job reconciler started it meanwhile, so it runs.
      const current = await getJob(deps.db, job.id);
      if (current.status !== 'failed') return current;
    }
    throw new ApiError(
      503,
      'service_unavailable',
      'The workflow engine is unavailable; the job was not started (retrying with the same Idempotency-Key starts a new one)',
      undefined,
      {
        'Retry-After': '5',
      },
    );
  }
  return job;
}

export function idempotencyKeyOf(header: string): string | null {
  if (!header) return null;
  if (header.length > 200 || !/^[\x21-\x7e]+$/.test(header)) {
    throw new ApiError(400, 'validation_failed', 'Idempotency-Key must be 1-200 visible ASCII characters', [
      { path: 'header.idempotency-key', message: 'invalid' },
    ]);
  }
  return header;
}
