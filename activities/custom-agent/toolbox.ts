import type { ToolSelectionRef } from '../tools';

/** One tool offered to the model: its model-facing name, and where calls to it go. */
export interface ToolboxEntry {
  /** The name the model calls ([A-Za-z0-9_-], at most 64 characters, unique in the run, never `done`). */
  name: string;
  /** The selection's label, for the run record: its name, else `custom_mcps[i]` / `market_mcps[i]`. */
  source: string;
  ref: ToolSelectionRef;
  /** The tool's own name at its source. */
  tool: string;
  description: string | null;
  inputSchema: Record<string, unknown> | null;
}

const RESERVED = new Set(['done']);

function sanitize(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'tool';
}

/**
 * Model-facing names: a tool keeps its own name when that is unique in the run; otherwise it is
 * prefixed with its source (`s2_search`), cut to 64 characters, and numbered if still taken.
 */
export function nameToolbox(tools: Omit<ToolboxEntry, 'name'>[]): ToolboxEntry[] {
  const counts = new Map<string, number>();
  for (const t of tools) counts.set(sanitize(t.tool), (counts.get(sanitize(t.tool)) ?? 0) + 1);
  const taken = new Set<string>();
  return tools.map((t) => {
    const own = sanitize(t.tool);
    let name = counts.get(own) === 1 && !RESERVED.has(own) ? own : sanitize(`s${t.ref.index + 1}${t.ref.kind === 'market_mcps' ? 'm' : ''}_${t.tool}`);
    for (let n = 2; taken.has(name) || RESERVED.has(name); n++) name = `${name.slice(0, 60)}_${n}`;
    taken.add(name);
    return { ...t, name };
  });
}
