import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SnippetRun {
  /** What the snippet printed (a real command's output; the stubs print nothing here). */
  stdout: string;
  /** Each call of a stubbed command, as the argv bash built for it: [command, ...arguments]. */
  calls: string[][];
  /** What the snippet's (empty, own) working directory holds afterwards: a marker command that ran leaves a file. */
  files: string[];
}

const CALL_END = '\x1e';

/**
 * Runs a shell snippet a page shows as a person pasting it would: bash checks that it parses (`bash -n`) and
 * then runs it, in an empty directory of its own with HOME there too. The `stubs` commands (say `claude`,
 * `npx`) are shell functions that report the arguments bash built for them instead of running anything, so a
 * test sees exactly what a program would receive; any other command (curl) really runs. A test puts marker
 * commands (`touch pwned`) into the values it makes hostile: `files` shows whether any ran.
 */
export async function runShellSnippet(snippet: string, stubs: string[] = []): Promise<SnippetRun> {
  const base = await mkdtemp(path.join(tmpdir(), 'snippet-'));
  const dir = path.join(base, 'work');
  const callsFile = path.join(base, 'calls');
  try {
    await mkdir(dir);
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LC_ALL: 'C.UTF-8' };
    await run('bash', ['-n', '-c', snippet], { cwd: dir, env });
    const defined = stubs.map(
      (name) => `${name}() { printf '%s\\0' ${JSON.stringify(name)} "$@" >>"$CALLS"; printf '\\036' >>"$CALLS"; }`,
    );
    const { stdout } = await run('bash', ['-c', [...defined, snippet].join('\n')], {
      cwd: dir,
      env: { ...env, CALLS: callsFile },
      maxBuffer: 16 * 1024 * 1024,
    });
    const recorded = stubs.length ? await readFile(callsFile, 'utf8').catch(() => '') : '';
    const calls = recorded
      .split(CALL_END)
      .filter(Boolean)
      .map((call) => call.split('\0').slice(0, -1));
    return { stdout, calls, files: await readdir(dir) };
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}
