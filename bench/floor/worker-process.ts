/**
 * The durable floor's worker (bench:scrape) as its own process, like the platform's worker: polls
 * FLOOR_TASK_QUEUE on TEMPORAL_ADDRESS with bench/floor/workflow.ts and its one activity. The network
 * policy and LLM come from the same environment as the platform's (NETWORK_ALLOWLIST, OPENAI_BASE_URL,
 * OPENAI_API_KEY). Prints `floor worker polling`.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadConfig } from '../../lib/config';
import { networkPolicyFromConfig } from '../../lib/net/policy';
import { createLlmClient } from '../../lib/llm/client';
import { createFloorActivities } from './activities';

async function main() {
  const config = loadConfig();
  const connection = await NativeConnection.connect({ address: config.temporalAddress! });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: process.env.FLOOR_TASK_QUEUE!,
    workflowsPath: require.resolve('./workflow'),
    activities: createFloorActivities({
      policy: networkPolicyFromConfig(config),
      llm: createLlmClient({
        baseURL: process.env.OPENAI_BASE_URL!,
        apiKey: config.openai.apiKey ?? '',
        timeoutMs: 30_000,
      }),
      model: 'gpt-4o-mini',
    }),
    maxConcurrentActivityTaskExecutions: 50,
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => worker.shutdown());
  process.stdout.write('floor worker polling\n');
  await worker.run();
  await connection.close();
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
