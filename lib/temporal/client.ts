import { Client, Connection } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/** Custom search attributes on every run, so operators can filter the Temporal UI by user and kind. */
export const UserIdSearchAttribute = defineSearchAttributeKey('UserId', SearchAttributeType.KEYWORD);
export const JobKindSearchAttribute = defineSearchAttributeKey('JobKind', SearchAttributeType.KEYWORD);

export async function connectClient(address: string, namespace: string): Promise<Client> {
  const connection = await Connection.connect({ address });
  await ensureSearchAttributes(connection, namespace);
  return new Client({ connection, namespace });
}

async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const wanted = [UserIdSearchAttribute.name, JobKindSearchAttribute.name];
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = wanted.filter((name) => !(name in (existing.customAttributes ?? {})));
  if (missing.length === 0) return;
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        missing.map((name) => [name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
  } catch (err) {
    // Another process registered them concurrently.
    if (!/already exists/i.test(String((err as Error).message))) throw err;
  }
}
