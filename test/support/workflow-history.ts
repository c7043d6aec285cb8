import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker, type WorkflowBundle } from '@temporalio/worker';

/**
 * Reads workflow histories the way a person with access to Temporal (UI, CLI, a history export) could: every
 * payload decoded through the data converter, every other field as stored. Searching the raw history as JSON
 * finds nothing, because payloads are base64 bytes there; searching these strings finds what was really stored.
 */
export interface DecodedHistory {
  workflowId: string;
  runId: string;
  /** Every string in the history: decoded payload values (strings and keys, at any depth) and plain fields. */
  strings: string[];
}

type PayloadLike = { metadata?: Record<string, Uint8Array> | null; data?: Uint8Array | null };

const utf8 = new TextDecoder();

function isPayload(value: object): value is PayloadLike {
  const { metadata, data } = value as PayloadLike;
  return (
    !!metadata &&
    typeof metadata === 'object' &&
    metadata.encoding instanceof Uint8Array &&
    (data === undefined || data === null || data instanceof Uint8Array)
  );
}

function decodePayload(payload: PayloadLike): unknown {
  try {
    return defaultPayloadConverter.fromPayload(payload);
  } catch {
    // An encoding the default converter does not know (e.g. protobuf): its bytes are still readable text.
    return payload.data ? utf8.decode(payload.data) : undefined;
  }
}

/** Collects every string reachable from `root`, decoding payloads on the way; iterative, so no depth is too deep. */
export function stringsIn(root: unknown): string[] {
  const strings: string[] = [];
  const pending: unknown[] = [root];
  const seen = new Set<object>();
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      strings.push(value);
      continue;
    }
    if (value === null || typeof value !== 'object' || seen.has(value)) continue;
    seen.add(value);
    if (value instanceof Uint8Array) {
      strings.push(utf8.decode(value));
      continue;
    }
    if (isPayload(value)) {
      pending.push(decodePayload(value));
      continue;
    }
    for (const [key, inner] of Object.entries(value)) {
      strings.push(key);
      pending.push(inner);
    }
  }
  return strings;
}

interface HistoryEventLike {
  workflowExecutionStartedEventAttributes?: { continuedExecutionRunId?: string | null } | null;
  startChildWorkflowExecutionInitiatedEventAttributes?: { workflowId?: string | null } | null;
}

/**
 * The decoded histories of a workflow: every run of it (following continue-as-new back to the first) and,
 * recursively, of every child workflow it started.
 */
export async function decodedHistories(client: Client, workflowId: string): Promise<DecodedHistory[]> {
  const found: DecodedHistory[] = [];
  const visited = new Set<string>();
  const pending: { workflowId: string; runId?: string }[] = [{ workflowId }];
  while (pending.length > 0) {
    const next = pending.pop()!;
    const key = `${next.workflowId}/${next.runId ?? 'latest'}`;
    if (visited.has(key)) continue;
    visited.add(key);
    const handle = client.workflow.getHandle(next.workflowId, next.runId);
    const history = await handle.fetchHistory();
    const runId = next.runId ?? (await handle.describe()).runId;
    visited.add(`${next.workflowId}/${runId}`);
    found.push({ workflowId: next.workflowId, runId, strings: stringsIn(history) });
    for (const event of (history.events ?? []) as HistoryEventLike[]) {
      const previousRun = event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
      if (previousRun) pending.push({ workflowId: next.workflowId, runId: previousRun });
      const child = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
      if (child) pending.push({ workflowId: child });
    }
  }
  return found;
}

/** Which of the workflows (with their runs and children) hold `secret` anywhere in their decoded histories. */
export async function workflowsHolding(
  client: Client,
  workflowIds: readonly string[],
  secret: string,
): Promise<string[]> {
  const holding: string[] = [];
  for (const workflowId of workflowIds) {
    for (const history of await decodedHistories(client, workflowId)) {
      if (history.strings.some((text) => text.includes(secret)))
        holding.push(`${history.workflowId} (run ${history.runId})`);
    }
  }
  return holding;
}

/**
 * A workflow history as a committed fixture (test/support/fixtures/workflow-histories/): the History message's
 * protobuf JSON (protobufjs toJSON: 64-bit ids as strings, bytes as base64), read back by
 * historyFromFixture. (The SDK's historyToJSON/historyFromJSON do not load with the protobufjs copies
 * installed here: "type must be a Type".)
 */
export function historyToFixture(history: temporal.api.history.v1.IHistory): string {
  return JSON.stringify(temporal.api.history.v1.History.fromObject(history).toJSON()) + '\n';
}

export function historyFromFixture(path: string): temporal.api.history.v1.History {
  return temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(path, 'utf8')));
}

/** Each fixture history (`names` under `dir`) fails to replay on `workflowBundle` with a determinism violation. */
export async function assertReplaysViolateDeterminism(
  workflowBundle: WorkflowBundle,
  dir: string,
  names: readonly string[],
): Promise<void> {
  for (const name of names) {
    const history = historyFromFixture(path.join(dir, name));
    await assert.rejects(
      Worker.runReplayHistory({ workflowBundle, replayName: name.replace(/\W/g, '-') }, history),
      (err: Error) => {
        assert.equal(err.name, 'DeterminismViolationError', `${name}: ${err.message}`);
        return true;
      },
    );
  }
}

/** The activity type names a history scheduled, in order, with `marker` for each marker (a local activity, a patch). */
export function commandsOf(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? []).flatMap((event) =>
    event.activityTaskScheduledEventAttributes
      ? [event.activityTaskScheduledEventAttributes.activityType?.name ?? '?']
      : event.markerRecordedEventAttributes
        ? [`marker:${event.markerRecordedEventAttributes.markerName}`]
        : [],
  );
}
