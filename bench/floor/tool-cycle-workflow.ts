/**
 * The durable floor of a tool-call cycle (bench:tools): a bare Temporal workflow that asks the model and
 * calls the tool it names, one activity each, until the model calls something else. What two durable
 * steps per cycle cost on the same Temporal server, without the platform's records.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ToolCycleFloorActivities } from './tool-cycle-activities';

const { floorDecide, floorCallTool } = proxyActivities<ToolCycleFloorActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 1 },
});

export async function toolCycleFloorWorkflow(): Promise<number> {
  for (let calls = 0; ; calls++) {
    const args = await floorDecide(calls + 1);
    if (!args) return calls;
    await floorCallTool(args);
  }
}
