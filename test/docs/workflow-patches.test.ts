import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as patches from '../../workflows/patches';

const ROOT = path.join(__dirname, '..', '..');
const WORKFLOWS = path.join(ROOT, 'workflows');

/** The patch ids the table of docs/operations.md "Workflow versions" lists (its rows' first cells). */
function documentedPatchIds(): string[] {
  const text = readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
  const section = text.slice(text.indexOf('### Workflow versions'));
  const table = section.slice(section.indexOf('| Patch |'), section.indexOf('\n\n', section.indexOf('| Patch |')));
  return table
    .split('\n')
    .slice(2)
    .map((row) => /^\| `([^`]+)`/.exec(row)?.[1])
    .filter((id): id is string => id !== undefined);
}

/** Every `patched(…)` / `deprecatePatch(…)` call in the code of workflows/ (comments left out), with its argument as written. */
function patchCalls(): { file: string; argument: string; source: string }[] {
  const files = readdirSync(WORKFLOWS, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  return files.flatMap((file) => {
    const source = readFileSync(path.join(WORKFLOWS, file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    return [...source.matchAll(/\b(?:patched|deprecatePatch)\(([^)]*)\)/g)].map((m) => ({
      file,
      argument: m[1].trim(),
      source,
    }));
  });
}

describe('workflow patch ids', () => {
  const ids = Object.entries(patches);

  it('are all in workflows/patches.ts, each once, and each asked for by name from there', () => {
    assert.ok(ids.length > 0);
    assert.equal(new Set(ids.map(([, id]) => id)).size, ids.length, 'no two constants share an id');
    const calls = patchCalls();
    assert.ok(calls.length >= ids.length, 'every patch is asked for somewhere');
    for (const { file, argument, source } of calls) {
      assert.ok(
        argument in patches,
        `workflows/${file} asks patched(${argument}): name a constant of workflows/patches.ts instead`,
      );
      assert.match(source, /from '\.\/patches'/, `workflows/${file} takes ${argument} from workflows/patches.ts`);
    }
    for (const [name] of ids) {
      assert.ok(
        calls.some((call) => call.argument === name),
        `${name} is asked for by a workflow (else remove it, and its row in docs/operations.md)`,
      );
    }
  });

  it('are each listed in docs/operations.md ("Workflow versions"), and the table lists no other', () => {
    const documented = documentedPatchIds();
    assert.deepEqual([...documented].sort(), ids.map(([, id]) => id).sort());
  });
});
