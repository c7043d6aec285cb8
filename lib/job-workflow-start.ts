import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import { JobKindSearchAttribute, UserIdSearchAttribute } from './temporal';

export interface JobWorkflowSpec {
  workflowId: string;
  workflowType: string;
  taskQueue: string;
  args: unknown[];
  userId: string;
  kind: string;
}

/**
 * Starts a job's workflow; the one way the API and the pending-job reconciler do it. The workflow id
 * is derived from the job and duplicates are rejected, so however often this is called for a job,
 * at most one run exists: 'already_started' when one did.
 */
export async function startJobWorkflow(client: Client, spec: JobWorkflowSpec): Promise<'started' | 'already_started'> {
  try {
    await client.workflow.start(spec.workflowType, {
      taskQueue: spec.taskQueue,
      workflowId: spec.workflowId,
      args: spec.args,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
      typedSearchAttributes: [
        { key: UserIdSearchAttribute, value: spec.userId },
        { key: JobKindSearchAttribute, value: spec.kind },
      ],
    });
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw err;
  }
}
