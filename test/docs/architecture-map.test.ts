import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../api/docs/load';

/**
 * The map in the clone (docs/architecture.md and each room's README.md) stays true: a path or a code
 * name it writes in backticks that is renamed away fails here, the rooms and arrows are the linter's,
 * the patch table is the workflows' and the money functions are the database's. Reads files only.
 */

const MAP = 'docs/architecture.md';
/** Left out of the code the names are looked up in: its own examples of wrong names must stay wrong. */
const THIS_FILE = 'test/docs/architecture-map.test.ts';
const SOURCE = /\.(ts|tsx)$/;
const FILE_NAME = /\.(ts|tsx|md|sql|json|mjs|ya?ml|sh)$/;
/** Names from libraries the maps may mention (not declared in this repository). */
const LIBRARY_NAMES = new Set(['patched', 'deprecatePatch', 'proxyActivities', 'continueAsNew', 'McpServer']);

const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), 'utf8');

/** The linter's rooms (`ROOMS`) and arrows (`MAY_IMPORT`), read from eslint.config.mjs as written. */
function linterRooms(config: string): { rooms: string[]; mayImport: Map<string, string[]> } {
  const strings = (list: string) => [...list.matchAll(/'([^']+)'/g)].map((m) => m[1]);
  const rooms = strings(/const ROOMS = \[([^\]]*)\]/.exec(config)?.[1] ?? '');
  const block = /const MAY_IMPORT = \{([\s\S]*?)\n\};/.exec(config)?.[1] ?? '';
  const mayImport = new Map(
    [...block.replace(/\/\/.*$/gm, '').matchAll(/^\s*([a-z]+): \[([^\]]*)\]/gm)].map((m) => [m[1], strings(m[2])]),
  );
  return { rooms, mayImport };
}

/** Every file under the rooms (and the root's own files), relative to the repository root. */
function repositoryFiles(rooms: string[]): string[] {
  const files: string[] = readdirSync(REPO_ROOT).filter((name) => statSync(path.join(REPO_ROOT, name)).isFile());
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else files.push(rel);
    }
  };
  for (const room of [...rooms, 'docs']) if (existsSync(path.join(REPO_ROOT, room))) walk(room);
  return files;
}

/** Names the code declares: exports, functions, classes, types, constants, methods and properties. */
function declaredNames(sources: string[]): Set<string> {
  const names = new Set<string>();
  const id = '[A-Za-z_$][\\w$]*';
  const patterns = [
    new RegExp(`\\b(?:function\\*?|const|let|var|class|interface|type|enum)\\s+(${id})`, 'g'),
    new RegExp(
      `^\\s*(?:(?:export|public|private|protected|static|readonly|async|get|set)\\s+)*(${id})\\s*(?:<[^>\\n]*>)?\\(`,
      'gm',
    ),
    new RegExp(`^\\s*(?:readonly\\s+)?(${id})\\??\\s*:`, 'gm'),
  ];
  for (const text of sources) {
    for (const pattern of patterns) for (const m of text.matchAll(pattern)) names.add(m[1]);
    for (const m of text.matchAll(/export\s*\{([^}]*)\}/g))
      for (const part of m[1].split(','))
        names.add(
          part
            .trim()
            .split(/\s+as\s+/)
            .pop()!
            .replace(/^type\s+/, ''),
        );
  }
  return names;
}

/** The SQL functions the database has after every migration (in order) and every db/functions/*.sql file. */
function sqlFunctions(files: string[]): Set<string> {
  const functions = new Set<string>();
  const migrations = files.filter((f) => /^db\/migrations\/\d+[^/]*\.ts$/.test(f)).sort();
  const functionFiles = files.filter((f) => /^db\/functions\/[^/]+\.sql$/.test(f)).sort();
  for (const file of [...migrations, ...functionFiles]) {
    // A migration's up() only: its down() undoes it.
    const text = read(file).split(/export\s+async\s+function\s+down\b/)[0];
    for (const m of text.matchAll(
      /\b(create(?:\s+or\s+replace)?|drop)\s+function\s+(?:if\s+exists\s+)?([a-z_][a-z0-9_]*)/gi,
    )) {
      if (m[1].toLowerCase() === 'drop') functions.delete(m[2].toLowerCase());
      else functions.add(m[2].toLowerCase());
    }
  }
  return functions;
}

/** The patch ids the workflows pass to patched() or deprecatePatch(), literally or through a constant. */
function workflowPatchIds(files: string[]): Set<string> {
  const sources = files.filter((f) => f.startsWith('workflows/') && SOURCE.test(f)).map(read);
  const all = sources.join('\n');
  const ids = new Set<string>();
  for (const m of all.matchAll(/\b(?:patched|deprecatePatch)\(\s*(?:'([^']+)'|"([^"]+)"|([A-Za-z_$][\w$]*))\s*\)/g)) {
    const id = m[1] ?? m[2] ?? new RegExp(`\\b${m[3]}\\s*=\\s*['"]([^'"]+)['"]`).exec(all)?.[1];
    assert.ok(id, `the patch constant ${m[3]} is not a string in workflows/`);
    ids.add(id);
  }
  return ids;
}

interface Mention {
  doc: string;
  line: number;
  token: string;
}

/** Every `inline code` of a Markdown file, outside fenced blocks. */
function backticked(doc: string, text: string): Mention[] {
  const mentions: Mention[] = [];
  let fenced = false;
  text.split('\n').forEach((line, index) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced)
      for (const m of line.matchAll(/`([^`\n]+)`/g)) mentions.push({ doc, line: index + 1, token: m[1] });
  });
  return mentions;
}

/** What a mention must be, if anything: a repository path, a code name, a SQL function (else unchecked). */
function classify(token: string): 'path' | 'file-name' | 'name' | 'constant' | 'sql-function' | null {
  if (/[\s<>{}*…]/.test(token) || /^[/@.]|^https?:/.test(token)) return null;
  if (token.includes('/')) return 'path';
  if (FILE_NAME.test(token)) return 'file-name';
  if (/^[a-z][a-z0-9]*(_[a-z0-9]+)+\(.*\)$/.test(token)) return 'sql-function';
  const name = token.replace(/\(\)$/, '');
  if (/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/.test(name)) return 'constant';
  if (/^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$|^[A-Z][a-z0-9]+[A-Za-z0-9]*$/.test(name)) return 'name';
  return null;
}

describe('the map of the code (docs/architecture.md and the rooms’ READMEs)', function () {
  const { rooms, mayImport } = linterRooms(read('eslint.config.mjs'));
  const files = repositoryFiles(rooms);
  const fileSet = new Set(files);
  const dirs = new Set(
    files.flatMap((f) =>
      f
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  );
  // The code, and the linter's config (its constants are named too).
  const sources = [...files.filter((f) => SOURCE.test(f) && f !== THIS_FILE), 'eslint.config.mjs'].map(read);
  const names = declaredNames(sources);
  const words = new Set(sources.flatMap((text) => text.match(/\b[A-Z][A-Z0-9_]+\b/g) ?? []));
  const functions = sqlFunctions(files);
  const maps = [MAP, ...rooms.map((room) => `${room}/README.md`).filter((f) => fileSet.has(f))];

  const exists = (rel: string) => fileSet.has(rel.replace(/\/$/, '')) || dirs.has(rel.replace(/\/$/, ''));

  /** Why a mention does not hold, or null when it does. */
  function problem({ doc, token }: Mention): string | null {
    const folder = path.posix.dirname(doc);
    const room = doc === MAP ? null : folder;
    switch (classify(token)) {
      case 'path':
        // From the repository root, or from the README's own folder (`repos/jobs.ts` in db/README.md).
        return exists(token) || exists(`${folder}/${token}`) ? null : `no such path ${token}`;
      case 'file-name':
        if (exists(token) || exists(`${folder}/${token}`)) return null;
        if (room && files.some((f) => f.startsWith(`${room}/`) && path.posix.basename(f) === token)) return null;
        return `no file named ${token}`;
      case 'sql-function': {
        const name = token.slice(0, token.indexOf('('));
        return functions.has(name) ? null : `no SQL function ${name} after the migrations`;
      }
      case 'constant':
        return words.has(token) ? null : `${token} appears nowhere in the code`;
      case 'name': {
        const name = token.replace(/\(\)$/, '');
        return names.has(name) || LIBRARY_NAMES.has(name) ? null : `nothing in the code declares ${name}`;
      }
      default:
        return null;
    }
  }

  it('reads the linter’s rooms and arrows', function () {
    assert.ok(rooms.length >= 8, `rooms read from eslint.config.mjs: ${rooms.join(', ')}`);
    assert.ok(mayImport.size >= 5, `arrows read from eslint.config.mjs: ${[...mayImport.keys()].join(', ')}`);
    for (const [room, allowed] of mayImport) {
      assert.ok(rooms.includes(room), `MAY_IMPORT names ${room}, not a room`);
      for (const other of allowed)
        assert.ok(rooms.includes(other.split('/')[0]), `${room} may import ${other}: not a room`);
    }
  });

  it('has every room of the linter, with the arrows the linter enforces, in the rooms table', function () {
    const table = read(MAP)
      .split('\n')
      .filter((line) => /^\| `[a-z]+\/` \|/.test(line));
    const rows = new Map(
      table.map((line) => {
        const cells = line.split('|').map((c) => c.trim());
        return [cells[1].slice(1, -2), [...cells[2].matchAll(/`([^`]+)`/g)].map((m) => m[1].replace(/\/$/, ''))];
      }),
    );
    assert.deepEqual([...rows.keys()].sort(), [...rooms].sort(), 'the rooms table lists exactly the linter’s rooms');
    for (const room of rooms) {
      const allowed = mayImport.get(room);
      if (allowed) assert.deepEqual([...rows.get(room)!].sort(), [...allowed].sort(), `${room}/ may import`);
      else assert.deepEqual(rows.get(room), [], `${room}/ has no rule in the linter, so its row names no room`);
    }
    assert.match(read('eslint.config.mjs'), /docs\/architecture\.md/, 'the linter’s messages point at the map');
  });

  it('has a README in every room the linter names', function () {
    const missing = rooms.filter((room) => !fileSet.has(`${room}/README.md`));
    assert.deepEqual(missing, [], 'rooms without a README.md');
  });

  it('mentions only paths and names that exist', function () {
    const mentions = maps.flatMap((doc) => backticked(doc, read(doc)));
    assert.ok(mentions.filter((m) => classify(m.token) === 'path').length >= 50, 'the maps name the files');
    const wrong = mentions.flatMap((m) => {
      const why = problem(m);
      return why ? [`${m.doc}:${m.line} \`${m.token}\`: ${why}`] : [];
    });
    assert.deepEqual(wrong, []);
  });

  it('lists exactly the patches the workflows check', function () {
    const section = /## Workflow patches\n([\s\S]*?)(\n## |$)/.exec(read(MAP))?.[1] ?? '';
    const listed = [...section.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]);
    assert.deepEqual([...listed].sort(), [...workflowPatchIds(files)].sort());
  });

  it('lists exactly the SQL functions the database has', function () {
    const section = /## Money functions in the database\n([\s\S]*?)(\n## |$)/.exec(read(MAP))?.[1] ?? '';
    const listed = [...section.matchAll(/^\| `([a-z0-9_]+)\(\)` \|/gm)].map((m) => m[1]);
    assert.ok(functions.size >= 10, `functions found in db/: ${[...functions].join(', ')}`);
    assert.deepEqual([...listed].sort(), [...functions].sort());
  });

  it('checks what it says it checks', function () {
    const doc = 'docs/architecture.md';
    const wrong = (token: string) => problem({ doc, line: 1, token });
    assert.match(wrong('lib/temporal.ts')!, /no such path/);
    assert.match(wrong('workers/workers.ts')!, /no such path/);
    assert.match(wrong('startScrapeJob')!, /declares startScrapeJob/);
    assert.match(wrong('NO_SUCH_SETTING')!, /nowhere/);
    assert.match(wrong('charge_everything()')!, /no SQL function/);
    assert.equal(wrong('lib/temporal/client.ts'), null);
    assert.equal(wrong('api/openapi/'), null);
    assert.equal(wrong('startOnce'), null);
    assert.equal(wrong('admit_job()'), null);
    assert.equal(classify('npm run worker'), null);
    assert.equal(classify('@temporalio/workflow'), null);
    assert.equal(classify('/mcp/{entryId}'), null);
  });
});
