import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { descendantsOf } from './proc-cpu';

/**
 * Memory of processes from /proc (Linux), for the benchmarks: resident set size now (VmRSS), its
 * high-water mark (VmHWM) and open file descriptors, per process or summed over a group of processes.
 *
 * A group's peak is the largest sum of its processes' VmRSS seen at any sample; for a group of one
 * process it is at least that process's VmHWM (the kernel's own peak, which no sample can miss). A
 * sum over several processes (Chromium's, Postgres backends') counts their shared pages once per
 * process, so it is an upper bound.
 */

export interface ProcMemory {
  rssKb: number;
  hwmKb: number;
  /** The part of RSS that is shared memory (RssShmem: Postgres's shared buffers). */
  shmemKb: number;
}

export function readMemory(pid: number): ProcMemory | null {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return { rssKb: field('VmRSS'), hwmKb: field('VmHWM'), shmemKb: field('RssShmem') };
  } catch {
    return null; // gone
  }
}

/** Open file descriptors of a process (sockets, pipes, files), or null when unreadable. */
export function openDescriptors(pid: number): number | null {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

/** A short name for a process: the script a Node process runs, else its program and first argument. */
export function processLabel(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    // The program's script: not a module preloaded with --require/--import (bench/heap-report.ts).
    const script = argv.find(
      (a, i) =>
        /\.(ts|js|mjs|cjs)$/.test(a) &&
        !a.includes('node_modules') &&
        !['--require', '-r', '--import'].includes(argv[i - 1]),
    );
    if (script) return path.relative(process.cwd(), path.resolve(script)) || script;
    const program = path.basename(argv[0] ?? '?');
    // Chromium's zygote and sandbox processes run /proc/self/exe.
    if (/chrom/i.test(program) || program === 'exe') return 'chromium';
    if (program === 'temporal') return `temporal ${argv.slice(1, 3).join(' ')}`;
    return program;
  } catch {
    return `pid ${pid}`;
  }
}

/** A group of processes measured together. */
export interface MemoryGroup {
  name: string;
  pids: () => number[] | Promise<number[]>;
  /** Count every descendant of each process too. */
  tree?: boolean;
  /**
   * Leave shared memory (RssShmem) out: Postgres backends all map the server's shared buffers, and
   * each one's RSS grows as it touches more of them, which is neither theirs nor a leak.
   */
  privateOnly?: boolean;
}

export interface GroupSample {
  rssKb: number;
  processes: number;
  /** Open descriptors summed over the group's processes that could be read (null: none could). */
  fds: number | null;
}

export interface PeakRss {
  name: string;
  peakKb: number;
  /** Processes in the group at the sample of its peak. */
  processes: number;
}

/**
 * The benchmark's own process tree, grouped: this process; each child process (API, worker, fake
 * servers, the Temporal dev server) by what it runs; each child's descendants (a worker's Chromium)
 * summed apart by program; and this process's own Chromium (a bare loop's Chromium) summed by
 * program. Groups appear as processes appear; called at every sample.
 */
export function benchTreeGroups(): () => MemoryGroup[] {
  return () => {
    const children = childrenByParent();
    const below = (root: number): number[] => {
      const found: number[] = [];
      const queue = [...(children.get(root) ?? [])];
      while (queue.length) {
        const pid = queue.shift()!;
        found.push(pid);
        queue.push(...(children.get(pid) ?? []));
      }
      return found;
    };
    const groups = new Map<string, number[]>();
    const add = (name: string, pids: number[]) => groups.set(name, [...(groups.get(name) ?? []), ...pids]);
    add('bench process', [process.pid]);
    const seen = new Set<string>();
    for (const child of children.get(process.pid) ?? []) {
      const base = processLabel(child);
      if (base === 'chromium') {
        add('chromium started by the bench process (in-process workers, bare loops)', [child, ...below(child)]);
        continue;
      }
      const label = seen.has(base) ? `${base} (pid ${child})` : base;
      seen.add(base);
      add(label, [child]);
      // Its own children by what they run: the embedded stack's Temporal dev server, a worker's Chromium.
      for (const descendant of below(child)) add(`${label} › ${processLabel(descendant)}`, [descendant]);
    }
    return [...groups].map(([name, pids]) => ({ name, pids: () => pids }));
  };
}

/** Every live process's children, from one pass over /proc. */
function childrenByParent(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]);
      const siblings = children.get(ppid) ?? [];
      siblings.push(Number(entry));
      children.set(ppid, siblings);
    } catch {
      // gone
    }
  }
  return children;
}

async function sampleGroup(group: MemoryGroup): Promise<GroupSample & { hwmKb: number }> {
  const pids = new Set<number>();
  for (const pid of await group.pids()) {
    pids.add(pid);
    if (group.tree) for (const child of descendantsOf(pid)) pids.add(child);
  }
  let rssKb = 0;
  let hwmKb = 0;
  let processes = 0;
  let fds: number | null = null;
  for (const pid of pids) {
    const memory = readMemory(pid);
    if (!memory || memory.rssKb === 0) continue; // gone, or a zombie
    processes++;
    rssKb += group.privateOnly ? memory.rssKb - memory.shmemKb : memory.rssKb;
    hwmKb = group.privateOnly ? 0 : memory.hwmKb;
    const open = openDescriptors(pid);
    if (open !== null) fds = (fds ?? 0) + open;
  }
  return { rssKb, processes, fds, hwmKb: processes === 1 ? hwmKb : 0 };
}

/**
 * Samples the groups every `intervalMs` (plus once at start and at `stop()`) and keeps each group's
 * peak. `groups` may be a function: it is called at every sample (process trees change).
 */
export function memoryMonitor(
  groups: MemoryGroup[] | (() => MemoryGroup[]),
  intervalMs = 1000,
  onSample?: (now: Record<string, GroupSample>) => void,
) {
  const listGroups = typeof groups === 'function' ? groups : () => groups;
  const peaks = new Map<string, PeakRss>();
  let sampling: Promise<Record<string, GroupSample>> | null = null;
  const sample = () =>
    (sampling ??= (async () => {
      const now: Record<string, GroupSample> = {};
      try {
        for (const group of listGroups()) {
          const measured = await sampleGroup(group).catch(() => null);
          if (!measured || measured.processes === 0) continue;
          now[group.name] = { rssKb: measured.rssKb, processes: measured.processes, fds: measured.fds };
          const peakKb = Math.max(measured.rssKb, measured.hwmKb);
          const before = peaks.get(group.name);
          if (!before || peakKb > before.peakKb)
            peaks.set(group.name, { name: group.name, peakKb, processes: measured.processes });
        }
      } finally {
        sampling = null;
      }
      onSample?.(now);
      return now;
    })());
  void sample();
  const timer = setInterval(() => void sample(), intervalMs);
  timer.unref();
  return {
    /** Samples now: every group's current RSS, process count and open descriptors. */
    sample,
    /** Peaks so far, in the order groups first appeared. */
    peaks: () => [...peaks.values()],
    async stop(): Promise<PeakRss[]> {
      clearInterval(timer);
      await sample();
      return [...peaks.values()];
    },
  };
}

export const mib = (kb: number) => Math.round((kb / 1024) * 10) / 10;

/** Prints the peaks as a table and returns them as { group: MiB } for a benchmark's JSON line. */
export function printPeakRss(peaks: PeakRss[], title = 'Peak RSS per process (MiB; groups of processes summed)') {
  console.log('');
  console.log(title);
  const rows = peaks.map((p) => [p.name, String(mib(p.peakKb)), String(p.processes)]);
  const header = ['process', 'peak RSS MiB', 'processes'];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (row: string[]) => row.map((cell, c) => cell.padEnd(widths[c])).join(' | ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows) console.log(line(row));
  return Object.fromEntries(peaks.map((p) => [p.name, mib(p.peakKb)]));
}
