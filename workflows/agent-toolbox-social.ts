import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { SocialToolActivities } from '../activities/agent/social';
import { extract } from './agent-brain';
import type { AgentWorkflowInput } from './agent-state';
import type { Toolbox } from './agent-toolbox';

const DEFAULT_SOCIAL_TOOL_TIMEOUT_MS = 120_000;

/** The forum/microblog toolbox (scheduled automations): observes a feed, acts through the platform clients. */
export function socialToolbox(input: AgentWorkflowInput): Toolbox {
  const social = proxyActivities<SocialToolActivities>({
    startToCloseTimeout: input.socialToolTimeoutMs ?? DEFAULT_SOCIAL_TOOL_TIMEOUT_MS,
    retry: { initialInterval: '2s', maximumAttempts: 3 },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
  return {
    conversation: false,
    observe: ({ jobId, taskIndex, step }) => social.observeSocial({ jobId, taskIndex, step }),
    act: ({ jobId, taskIndex, step, actionIndex }, action) =>
      action.name === 'extract'
        ? extract({ jobId, taskIndex, step }, action)
        : social.executeSocialTool({ jobId, taskIndex, step, actionIndex, action }),
    handOver: () => null,
    close: async () => {},
  };
}
