import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { DocSource } from './guides';

/** The repository root (where README.md and docs/ live). */
export const REPO_ROOT = path.resolve(__dirname, '../..');

/** Reads every `docs/*.md` guide and the README; adding a guide is adding a file. */
export function loadDocSources(rootDir = REPO_ROOT): { guides: DocSource[]; readme: DocSource | null } {
  const docsDir = path.join(rootDir, 'docs');
  const guides = existsSync(docsDir)
    ? readdirSync(docsDir)
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => ({ path: `docs/${name}`, text: readFileSync(path.join(docsDir, name), 'utf8') }))
    : [];
  const readmePath = path.join(rootDir, 'README.md');
  const readme = existsSync(readmePath) ? { path: 'README.md', text: readFileSync(readmePath, 'utf8') } : null;
  return { guides, readme };
}
