import { proxyActivities } from '@temporalio/workflow';
import type { Discovery } from '../lib/market/discovery';
import type { MarketActivities } from '../activities/market';
import type { MarketSourceInput, ValidateSourceInput, ValidationView } from '../lib/market/source-input';

const market = proxyActivities<MarketActivities>({
  startToCloseTimeout: '2m',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['DiscoveryError'],
  },
});

/** POST /mcp-market/discover: one discovery of a provider's source; nothing is stored. */
export async function marketDiscoveryWorkflow(input: MarketSourceInput): Promise<Discovery> {
  return market.discoverMarketSource(input);
}

/** POST /mcp-market/validate: discovery, fingerprint, report and the stored validation. */
export async function marketValidationWorkflow(input: ValidateSourceInput): Promise<ValidationView> {
  return market.validateMarketSource(input);
}
