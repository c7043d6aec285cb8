import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/client';
import type { Job, JobKind } from '../../db/schema';
import { abandonJob, admitJob } from '../../db/repos/jobs';
import { JobKindSearchAttribute, UserIdSearchAttribute } from '../../lib/temporal';
import type { AuthenticatedUser } from '../../db/repos/users';
import { ApiError } from '../errors';
import type { ApiDeps } from '../deps';
import { jobLog } from '../../lib/log';

export interface StartJobInput {
  user: AuthenticatedUser;
  kind: JobKind;
  request: Record<string, unknown>;
  webhookUrl: string | null;
  idempotencyKey: string | null;
  sealSecrets?: (jobId: string) => string | null;
  workflowType: string;
  workflowArgs: (job: Job) => unknown[];
}

/**
 * Admits a metered job and starts its workflow. The workflow id is derived from the job id and
 * duplicates are rejected by Temporal, so retries (same Idempotency-Key) never start a second run.
 */
export async function startMeteredJob(deps: ApiDeps, input: StartJobInput): Promise<Job> {
  const admission = await admitJob(deps.db, {
    userId: input.user.userId,
    kind: input.kind,
    request: input.request,
    webhookUrl: input.webhookUrl,
    idempotencyKey: input.idempotencyKey,
    sealSecrets: input.sealSecrets,
  });
  switch (admission.outcome) {
    case 'subscription_inactive':
      throw new ApiError(403, 'subscription_inactive', 'The subscription of this account is not active');
    case 'insufficient_funds':
      throw new ApiError(402, 'insufficient_funds', 'The wallet balance is not positive; add credit to start new runs');
    case 'monthly_limit_reached':
      throw new ApiError(429, 'monthly_limit_reached', `The monthly operation limit of ${admission.limit} is reached`);
  }
  const { job } = admission;
  if (job.status !== 'pending') return job;
  try {
    await deps.temporal.workflow.start(input.workflowType, {
      taskQueue: deps.config.taskQueues.platform,
      workflowId: job.workflow_id,
      args: input.workflowArgs(job),
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      typedSearchAttributes: [
        { key: UserIdSearchAttribute, value: job.user_id },
        { key: JobKindSearchAttribute, value: job.kind },
      ],
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
      jobLog(job.id, { workflowId: job.workflow_id }).error({ err }, 'could not start the workflow; the job is abandoned');
      await abandonJob(deps.db, job, 'The run could not be started; it was not counted against your limit');
      throw new ApiError(503, 'service_unavailable', 'The workflow engine is unavailable; the job was not started', undefined, { 'Retry-After': '5' });
    }
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
