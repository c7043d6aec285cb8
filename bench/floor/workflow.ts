/**
 * The durable floor of a scrape (bench:scrape): a bare Temporal workflow whose one activity fetches,
 * converts and extracts the page — what any durable job doing the platform's work costs on the same
 * Temporal server, with no database, billing, job records or status API.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities';

const { fetchConvertExtract } = proxyActivities<FloorActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 3 },
});

export async function floorScrapeWorkflow(url: string): Promise<{ markdownChars: number }> {
  return { markdownChars: await fetchConvertExtract(url) };
}
