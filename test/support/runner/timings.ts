import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Each test file's wall time (hooks included), slowest first, as the end of a run prints it. */
export function timingsTable(perFile: ReadonlyMap<string, number>, extra: [label: string, ms: number][] = []): string {
  const seconds = (ms: number) => (ms / 1000).toFixed(1).padStart(7);
  const rows = [...perFile].sort((a, b) => b[1] - a[1]);
  return [
    '',
    '  Wall time per test file (hooks included), slowest first:',
    ...rows.map(([file, ms]) => `  ${seconds(ms)} s  ${file}`),
    ...extra.map(([label, ms]) => `  ${seconds(ms)} s  ${label}`),
    '',
  ].join('\n');
}

/**
 * The last run's file times, kept outside the clone (the user's cache) so the next run starts the slowest
 * files first. Only the order depends on it: a clean clone without it runs the same files.
 */
const TIMINGS_FILE = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'),
  'scrape-platform',
  'test-file-ms.json',
);

export function lastTimings(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(TIMINGS_FILE, 'utf8'));
  } catch {
    return {};
  }
}

export function keepTimings(perFile: ReadonlyMap<string, number>): void {
  try {
    mkdirSync(path.dirname(TIMINGS_FILE), { recursive: true });
    writeFileSync(TIMINGS_FILE, JSON.stringify({ ...lastTimings(), ...Object.fromEntries(perFile) }, null, 1));
  } catch {
    /* only the next run's order depends on it */
  }
}
