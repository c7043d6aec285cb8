import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loadDocSources, REPO_ROOT } from '../../api/docs/load';
import { codeBlocks, type Block } from '../../api/docs/markdown-to-html';
import { parseGuide, type Guide } from '../../api/docs/guides';

const run = promisify(execFile);

export type CodeBlock = Extract<Block, { type: 'code' }>;

/**
 * Guides whose shell samples a test of their own follows end to end, because their walkthroughs need
 * the operator's admin CLI and two accounts; test/docs/samples.test.ts runs only their TypeScript
 * samples.
 */
export const WALKTHROUGH_TESTS: Record<string, string> = {
  'docs/selling-tools.md': 'test/market/selling-guide.test.ts',
  'docs/agent-market.md': 'test/market/agent-market-guide.test.ts',
};

/** A guide of docs/ by its path (`docs/x.md`), parsed. */
export function loadGuide(path: string): Guide {
  const source = loadDocSources().guides.find((g) => g.path === path);
  assert.ok(source, `no guide ${path}`);
  return parseGuide(source);
}

/** The fenced samples of a guide that are marked to run (`sh exec`, `ts exec`). */
export const runnableSamples = (guide: Guide): CodeBlock[] =>
  codeBlocks(guide.parsed.blocks).filter((b) => b.attrs.exec);

/** Where a sample is, for failure messages: the guide and the sample's line in the file. */
export const sampleLocation = (guide: Guide, block: CodeBlock) =>
  `${guide.path}, sample at line ${block.line + guide.bodyLineOffset + 1}`;

/** A sample's `expect="…"` text must be in its output. */
export function checkExpectation(block: CodeBlock, output: string, where: string): void {
  const expected = block.attrs.expect;
  if (typeof expected === 'string' && !output.includes(expected)) {
    assert.fail(`${where}: the output does not contain ${expected}\n--- output ---\n${output.slice(0, 3000)}`);
  }
}

export interface ShellSamplesOptions {
  env: Record<string, string | undefined>;
  /** The shell's working directory (files the samples write land there, not in the clone). */
  cwd: string;
  /** Turns a sample into what runs (readers' placeholders into loopback addresses). */
  rewrite?: (code: string) => string;
  /** Shell run after the samples, in the same shell (their variables are set); its output is `epilogue`. */
  epilogue?: string;
  timeoutMs?: number;
}

/**
 * Runs shell samples of a guide in order in one bash, the way a reader does: variables set by one are
 * there for the next, and `npm run …` (the operator's admin CLI) runs in the clone whatever the
 * working directory. Fails naming the sample that failed, or the one whose `expect` text is missing
 * from its output; returns each sample's output.
 */
export async function runShellSamples(
  guide: Guide,
  blocks: CodeBlock[],
  options: ShellSamplesOptions,
): Promise<{ outputs: string[]; epilogue: string }> {
  const rewrite = options.rewrite ?? ((code: string) => code);
  const script = [
    'set -euo pipefail',
    `npm() { (cd ${JSON.stringify(REPO_ROOT)} && command npm "$@"); }`,
    ...blocks.flatMap((block, i) => [`printf '\\n@@docs-sample %s\\n' ${i}`, rewrite(block.code)]),
    "printf '\\n@@docs-sample end\\n'",
    options.epilogue ?? '',
  ].join('\n');
  let stdout = '';
  let failure: Error | null = null;
  try {
    ({ stdout } = await run('bash', ['-c', script], {
      env: options.env,
      cwd: options.cwd,
      timeout: options.timeoutMs ?? 240_000,
      maxBuffer: 32 * 1024 * 1024,
    }));
  } catch (err) {
    failure = err as Error;
    stdout = (err as { stdout?: string }).stdout ?? '';
  }
  const parts = stdout.split(/\n@@docs-sample (\S+)\n/);
  const outputs = new Map<string, string>();
  for (let k = 1; k < parts.length; k += 2) outputs.set(parts[k], parts[k + 1] ?? '');
  if (failure) {
    const started = [...outputs.keys()].filter((k) => k !== 'end').pop() ?? '0';
    const failedIn = outputs.has('end') ? 'the epilogue' : sampleLocation(guide, blocks[Number(started)]);
    const code = outputs.has('end') ? (options.epilogue ?? '') : blocks[Number(started)].code;
    assert.fail(
      `${failedIn} failed: ${failure.message.split('\n')[0]}\n${code}\n--- output ---\n${outputs.get(outputs.has('end') ? 'end' : started)}\n--- stderr ---\n${(failure as { stderr?: string }).stderr ?? ''}`,
    );
  }
  assert.ok(outputs.has('end'), `${guide.path}: the samples did not run to the end`);
  blocks.forEach((block, i) => checkExpectation(block, outputs.get(String(i)) ?? '', sampleLocation(guide, block)));
  return { outputs: blocks.map((_, i) => outputs.get(String(i)) ?? ''), epilogue: outputs.get('end') ?? '' };
}
