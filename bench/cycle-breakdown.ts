/**
 * Where an agent run's tool-call cycle goes, read from its workflow history (`BENCH_TOOL_BREAKDOWN=1`
 * in bench/tools.ts): a cycle is the events from one decision activity's schedule to the next's, and
 * each segment is the time from one event to the next, named by both (`A:` an activity's events with
 * its type, `WT` a workflow task's). The medians over the cycles of the most common shape are printed,
 * so activity execution (`Started → Completed`) and Temporal's dispatch (`Scheduled → Started`, a
 * workflow task's completion to the next event) read apart.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { percentile, round } from './load';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

interface Point {
  label: string;
  at: number;
}

function ms(ts: HistoryEvent['eventTime']): number {
  return Number(ts?.seconds ?? 0) * 1000 + (ts?.nanos ?? 0) / 1e6;
}

const SHORT: Partial<Record<number, string>> = {
  [EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED]: 'WT scheduled',
  [EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED]: 'WT started',
  [EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]: 'WT completed',
  [EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]: 'scheduled',
  [EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED]: 'started',
  [EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED]: 'completed',
  [EventType.EVENT_TYPE_TIMER_STARTED]: 'timer started',
  [EventType.EVENT_TYPE_TIMER_FIRED]: 'timer fired',
  [EventType.EVENT_TYPE_MARKER_RECORDED]: 'marker',
};

/** Each event of the history as a point in time with a label (activity events carry their type's name). */
export function historyPoints(events: HistoryEvent[]): Point[] {
  const activityNames = new Map<string, string>();
  const points: Point[] = [];
  for (const e of events) {
    const id = String(e.eventId);
    let label = SHORT[e.eventType ?? 0] ?? EventType[e.eventType ?? 0].replace(/^EVENT_TYPE_/, '').toLowerCase();
    if (e.activityTaskScheduledEventAttributes) {
      activityNames.set(id, e.activityTaskScheduledEventAttributes.activityType?.name ?? '?');
      label = `A:${activityNames.get(id)} ${label}`;
    } else {
      const scheduled =
        e.activityTaskStartedEventAttributes?.scheduledEventId ??
        e.activityTaskCompletedEventAttributes?.scheduledEventId ??
        e.activityTaskFailedEventAttributes?.scheduledEventId;
      if (scheduled != null) label = `A:${activityNames.get(String(scheduled)) ?? '?'} ${label}`;
      if (e.markerRecordedEventAttributes) label = `marker ${e.markerRecordedEventAttributes.markerName}`;
    }
    points.push({ label, at: ms(e.eventTime) });
  }
  return points;
}

export interface CycleSegment {
  from: string;
  to: string;
  p50: number;
  p99: number;
}

/**
 * The medians of a cycle's segments: cycles start at each `A:<decision> scheduled` event (the last,
 * which has no next, is left out); only cycles of the most common shape count.
 */
export function cycleBreakdown(
  points: Point[],
  decision = 'decideNextActions',
): { cycles: number; shapes: number; segments: CycleSegment[]; total: { p50: number; p99: number } } {
  const starts = points.flatMap((p, i) => (p.label === `A:${decision} scheduled` ? [i] : []));
  const cycles: Point[][] = [];
  for (let k = 0; k + 1 < starts.length; k++) cycles.push(points.slice(starts[k], starts[k + 1] + 1));
  const byShape = new Map<string, Point[][]>();
  for (const c of cycles) {
    const shape = c.map((p) => p.label).join('|');
    byShape.set(shape, [...(byShape.get(shape) ?? []), c]);
  }
  const common = [...byShape.values()].sort((a, b) => b.length - a.length)[0] ?? [];
  const segments: CycleSegment[] = [];
  for (let i = 1; i < (common[0]?.length ?? 0); i++) {
    const d = common.map((c) => c[i].at - c[i - 1].at);
    segments.push({
      from: common[0][i - 1].label,
      to: common[0][i].label,
      p50: round(percentile(d, 50)),
      p99: round(percentile(d, 99)),
    });
  }
  const totals = common.map((c) => c[c.length - 1].at - c[0].at);
  return {
    cycles: common.length,
    shapes: byShape.size,
    segments,
    total: { p50: round(percentile(totals, 50)), p99: round(percentile(totals, 99)) },
  };
}

export async function fetchCycleBreakdown(client: Client, workflowId: string, decision?: string) {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return cycleBreakdown(historyPoints(history.events ?? []), decision);
}

export function printCycleBreakdown(label: string, b: Awaited<ReturnType<typeof fetchCycleBreakdown>>): void {
  console.log(
    `\n${label}: cycle breakdown from the workflow history (${b.cycles} cycles of the most common shape, ${b.shapes} shape(s)); ms`,
  );
  console.log('  p50      p99   segment');
  for (const s of b.segments)
    console.log(`${String(s.p50).padStart(5)}${String(s.p99).padStart(9)}   ${s.from} → ${s.to}`);
  console.log(`${String(b.total.p50).padStart(5)}${String(b.total.p99).padStart(9)}   whole cycle (history clock)`);
}
