/**
 * Summarizes V8 .cpuprofile files (from `node --cpu-prof`, e.g. BENCH_CPU_PROF=<dir> npm run bench:scrape):
 * busy time by package or source folder, and the functions with the most self time.
 *
 *   tsx bench/cpu-profile-summary.ts <file.cpuprofile>… [--top=N]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const ROOT = path.resolve(__dirname, '..');

/** "pg", "@temporalio/worker", "api/routes", "(garbage collector)", "node:internal/…" … */
function ownerOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const file = url.replace(/^file:\/\//, '');
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (inModules) return inModules[1];
  if (file.startsWith('node:')) return 'node:' + file.slice(5).split('/').slice(0, 2).join('/');
  const relative = path.relative(ROOT, file);
  if (!relative.startsWith('..')) return relative.split(path.sep).slice(0, 2).join('/');
  return file;
}

export function summarize(profile: CpuProfile, top = 15) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  let totalUs = 0;
  let idleUs = 0;
  const byOwner = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const { callFrame } = byId.get(id)!;
    totalUs += us;
    if (callFrame.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const owner = ownerOf(callFrame.url, callFrame.functionName);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + us);
    const where = callFrame.url ? `${owner} ${path.basename(callFrame.url)}:${callFrame.lineNumber + 1}` : owner;
    const name = `${callFrame.functionName || '(anonymous)'} (${where})`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const rank = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: Math.round((us / busyUs) * 1000) / 10 }));
  return {
    busyMs: Math.round(busyUs / 1000),
    idleMs: Math.round(idleUs / 1000),
    byOwner: rank(byOwner),
    byFunction: rank(byFunction),
  };
}

if (require.main === module) {
  const top = Number(process.argv.find((a) => a.startsWith('--top='))?.slice(6) ?? 15);
  for (const file of process.argv.slice(2).filter((a) => !a.startsWith('--'))) {
    const summary = summarize(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, top);
    console.log(`\n${file}: busy ${summary.busyMs} ms (idle ${summary.idleMs} ms)`);
    console.log('  by package / folder (self time):');
    for (const row of summary.byOwner)
      console.log(`    ${String(row.share).padStart(5)}%  ${String(row.ms).padStart(6)} ms  ${row.name}`);
    console.log('  functions (self time):');
    for (const row of summary.byFunction)
      console.log(`    ${String(row.share).padStart(5)}%  ${String(row.ms).padStart(6)} ms  ${row.name}`);
  }
}
