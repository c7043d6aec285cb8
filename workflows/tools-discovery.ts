import { proxyActivities } from '@temporalio/workflow';
import type { DiscoverToolsInput, DiscoveryOutcome, ToolActivities } from '../activities/tools';

export type { DiscoverToolsInput, DiscoveryOutcome };

const tools = proxyActivities<ToolActivities>({
  startToCloseTimeout: '2m',
  // Refusals and upstream failures are values, not failures; only an unexpected error is tried once more.
  retry: { initialInterval: '1s', maximumAttempts: 2 },
});

/** Lists the tools and needed params of a remote MCP server or an OpenAPI document (POST /agents/discover-mcp waits for it, bounded). */
export async function discoverToolsWorkflow(input: DiscoverToolsInput): Promise<DiscoveryOutcome> {
  return tools.discoverTools(input);
}
