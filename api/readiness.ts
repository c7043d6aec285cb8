import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { pingDatabase, type Db } from '../db/connect';
import type { Readiness } from './deps';

async function databaseReady(db: Db): Promise<boolean> {
  try {
    await pingDatabase(db);
    return true;
  } catch {
    return false;
  }
}

async function temporalReady(client: Client): Promise<boolean> {
  try {
    await client.workflowService.getSystemInfo({});
    return true;
  } catch {
    return false;
  }
}

/** Workers in another process are ready when each task queue has a poller seen in the last minute. */
export function remoteWorkersReady(client: Client, namespace: string, queues: string[]): () => Promise<boolean> {
  return async () => {
    try {
      const found = await Promise.all(
        queues.map(async (name, i) => {
          const kind =
            i === 0
              ? temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
              : temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY;
          const { pollers } = await client.workflowService.describeTaskQueue({
            namespace,
            taskQueue: { name },
            taskQueueType: kind,
          });
          const cutoff = Date.now() - 60_000;
          return (pollers ?? []).some(
            (p) => p.lastAccessTime?.seconds && Number(p.lastAccessTime.seconds) * 1000 > cutoff,
          );
        }),
      );
      return found.every(Boolean);
    } catch {
      return false;
    }
  };
}

export function readinessProbe(
  db: Db,
  client: Client,
  workersReady: () => Promise<boolean> | boolean,
): () => Promise<Readiness> {
  return async () => {
    const [database, temporalOk] = await Promise.all([databaseReady(db), temporalReady(client)]);
    return { database, temporal: temporalOk, workers: temporalOk && (await workersReady()) };
  };
}
