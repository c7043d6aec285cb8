import type { WorkflowExecutionDescription } from '@temporalio/client';
import type { Harness } from './stack/harness';

/** Describes a workflow once it exists (market-run workflows are started by the workers' dispatcher, shortly after the run opens). */
export async function describeWhenStarted(
  h: Pick<Harness, 'client'>,
  workflowId: string,
  timeoutMs = 15_000,
): Promise<WorkflowExecutionDescription> {
  for (const deadline = Date.now() + timeoutMs; ;) {
    try {
      return await h.client.workflow.getHandle(workflowId).describe();
    } catch (err) {
      if ((err as Error).name !== 'WorkflowNotFoundError' || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
