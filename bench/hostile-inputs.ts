/**
 * Hostile-input benchmark (`npm run bench:hostile-inputs`): the CPU time of the pure functions an attacker feeds,
 * which must stay linear in their input. No harness, no network: a few seconds.
 *
 *   1. Page conversion (htmlToPage, needsBrowser) of the pages in test/support/fakes/pathological-pages.ts, each built to
 *      make a careless converter slow; converted in a process of its own, so only the conversion's CPU counts.
 *   2. The agent's sensitive-data placeholders (resolvePlaceholders) over unclosed placeholders with long runs of
 *      spaces, as a model might write them (the case that once took seconds).
 *   3. The market's tool-poisoning scan (scanTool, scanInstructions) over 120k characters of repeated trigger words,
 *      dotted, hyphenated and zero-width-split runs, in a description and in schema strings, which a provider or an
 *      upstream controls.
 *
 * The tests check what these functions return for the same inputs; the time they take is measured here. Each row
 * is marked when it is above BOUND_SECONDS (1 s of CPU), the margin these inputs were built against.
 * Prints a table and, last, one JSON line with every figure.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { resolvePlaceholders } from '../activities/agent/sensitive-data';
import { scanInstructions, scanTool } from '../lib/market/poisoning';
import type { PathologicalResult } from '../test/support/fakes/pathological-pages';
import { log, round } from './load';

const BOUND_SECONDS = 1;

interface Row {
  input: string;
  what: string;
  cpuSeconds: number;
}

function cpuSeconds(run: () => void): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

async function pageConversion(): Promise<Row[]> {
  const script = path.join(__dirname, '..', 'test', 'support', 'pathological-pages.ts');
  const { stdout } = await promisify(execFile)(process.execPath, ['-r', 'tsx/cjs', script], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const results = JSON.parse(stdout) as Record<string, PathologicalResult>;
  return Object.entries(results).flatMap(([name, result]) => {
    if (result.error) throw new Error(`${name}: ${result.error}`);
    return [
      { input: name, what: 'htmlToPage', cpuSeconds: result.convertSeconds },
      { input: name, what: 'needsBrowser', cpuSeconds: result.needsBrowserSeconds },
    ];
  });
}

function placeholders(): Row[] {
  const items = [{ id: 'pw', value: 'hunter2', domain_pattern: '127.0.0.1' }];
  return [5_000, 50_000].map((spaces) => {
    const text = `<secret>${' '.repeat(spaces)}x`.repeat(3);
    return {
      input: `3 unclosed placeholders, ${spaces} spaces each`,
      what: 'resolvePlaceholders',
      cpuSeconds: cpuSeconds(() => resolvePlaceholders(text, items, 'http://127.0.0.1/')),
    };
  });
}

function poisoningScan(): Row[] {
  // The last ones were quadratic (minutes) before issue 34: an identifier or domain pattern tried from every dot,
  // and a run of zero-width characters before the identifier patterns were anchored.
  const units = ['full whole complete ', 'the ', 'do not instead of using ', 'read the ', 'a.', 'a\u200B', 'a-', 'a@'];
  return units.map((unit) => {
    const text = unit.repeat(Math.ceil(120_000 / unit.length));
    const seconds = cpuSeconds(() => {
      // Every schema string is scanned too (default, examples, enum, nested descriptions).
      scanTool({
        name: 'x',
        description: text,
        inputSchema: { type: 'object', properties: { p: { type: 'string', description: text, default: text } } },
      });
      scanInstructions(text, 'source/description');
    });
    return {
      input: `${JSON.stringify(unit)} × ${text.length} chars`,
      what: 'scanTool + scanInstructions',
      cpuSeconds: seconds,
    };
  });
}

async function main(): Promise<void> {
  log('page conversion of the pathological pages (a process of its own)');
  const rows = await pageConversion();
  log('sensitive-data placeholders and the tool-poisoning scan');
  rows.push(...placeholders(), ...poisoningScan());

  const table = [
    ['input', 'function', 'CPU ms', ''],
    ...rows.map((r) => [
      r.input,
      r.what,
      round(r.cpuSeconds * 1000, 1).toFixed(1),
      r.cpuSeconds > BOUND_SECONDS ? `over ${BOUND_SECONDS} s` : '',
    ]),
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  const line = (row: string[]) =>
    row.map((cell, i) => (i === 2 ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join(' | ');
  console.log('');
  console.log(line(table[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of table.slice(1)) console.log(line(row));
  console.log('');
  const over = rows.filter((r) => r.cpuSeconds > BOUND_SECONDS);
  console.log(
    over.length
      ? `${over.length} input(s) above ${BOUND_SECONDS} s of CPU`
      : `every input below ${BOUND_SECONDS} s of CPU`,
  );
  console.log(
    JSON.stringify({
      bound_seconds: BOUND_SECONDS,
      rows: rows.map((r) => ({ input: r.input, function: r.what, cpu_ms: round(r.cpuSeconds * 1000, 1) })),
    }),
  );
}

main().catch((err) => {
  console.error('benchmark failed:', err);
  process.exit(1);
});
