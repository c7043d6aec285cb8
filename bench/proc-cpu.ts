import { readdirSync, readFileSync } from 'node:fs';
/** CPU time of processes from /proc (Linux): user + system, in seconds. */

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux architecture Node supports

interface ProcStat {
  ppid: number;
  /** utime + stime of the process itself (all its threads). */
  ticks: number;
  /** cutime + cstime: children it has waited for. */
  childTicks: number;
}

function readStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: split after its last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
    return {
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      childTicks: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return null; // gone
  }
}

/** Every live process below `root` (children, grandchildren, …), skipping the subtrees of `excluded`. */
export function descendantsOf(root: number, excluded: ReadonlySet<number> = new Set()): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (!stat) continue;
    const siblings = parents.get(stat.ppid) ?? [];
    siblings.push(Number(entry));
    parents.set(stat.ppid, siblings);
  }
  const found: number[] = [];
  const queue = [...(parents.get(root) ?? [])];
  while (queue.length) {
    const pid = queue.shift()!;
    if (excluded.has(pid)) continue;
    found.push(pid);
    queue.push(...(parents.get(pid) ?? []));
  }
  return found;
}

/** A group of processes whose CPU is counted together, e.g. "Postgres backends". */
export interface CpuGroup {
  name: string;
  /** The processes at this moment (called at each sample). */
  pids: () => number[] | Promise<number[]>;
  /** Count live descendants and reaped children too (a worker's Chromium). */
  tree?: boolean;
}

type Sample = Map<string, Map<number, number>>;

async function sample(groups: CpuGroup[]): Promise<Sample> {
  const result: Sample = new Map();
  for (const group of groups) {
    const perPid = new Map<number, number>();
    for (const pid of await group.pids()) {
      const stat = readStat(pid);
      if (!stat) continue;
      perPid.set(pid, stat.ticks + (group.tree ? stat.childTicks : 0));
      if (group.tree) for (const child of descendantsOf(pid)) perPid.set(child, readStat(child)?.ticks ?? 0);
    }
    result.set(group.name, perPid);
  }
  return result;
}

/**
 * CPU seconds each group used between `start()` and `stop()`. A process that appears meanwhile
 * counts from zero; one that disappears meanwhile is lost (its parent's reaped-children time
 * counts it for tree groups).
 */
export function cpuMeter(groups: CpuGroup[]) {
  return {
    async start() {
      const before = await sample(groups);
      return {
        async stop(): Promise<Record<string, number>> {
          const after = await sample(groups);
          const seconds: Record<string, number> = {};
          for (const group of groups) {
            let ticks = 0;
            const was = before.get(group.name)!;
            for (const [pid, now] of after.get(group.name)!) ticks += Math.max(0, now - (was.get(pid) ?? 0));
            seconds[group.name] = ticks / CLOCK_TICKS_PER_SECOND;
          }
          return seconds;
        },
      };
    },
  };
}
