import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import type { Db } from '../../db/connect';
import { findCustomAgentRun, insertCustomAgentRun } from '../../db/repos/custom-agent-runs';
import { appendJobLog } from '../../db/repos/jobs';
import { findPublicMcpEntry } from '../../db/repos/market-mcp';
import { describedAs } from '../../lib/market/listing';
import { openToolSource, type ToolRuntimeDeps } from '../../lib/tools/source';
import { withHeartbeat } from '../heartbeat';
import type { SelectionLoader, ToolSelectionRef } from '../tools';

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

/** A toolbox entry as a function the model may call. */
export function asTool(entry: ToolboxEntry): ChatCompletionTool {
  const schema =
    entry.inputSchema && entry.inputSchema.type === 'object' ? entry.inputSchema : { type: 'object', properties: {} };
  return {
    type: 'function',
    function: {
      name: entry.name,
      description: `${entry.description ?? entry.tool} (source: ${entry.source})`.slice(0, 1024),
      parameters: schema,
    },
  };
}

function sanitize(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'tool';
}

/**
 * Model-facing names: a tool keeps its own name when that is unique in the run; otherwise it is
 * prefixed with its source (`s2_search`), cut to 64 characters, and numbered if still taken.
 */
export function nameToolbox(
  tools: Omit<ToolboxEntry, 'name'>[],
  reserved: ReadonlySet<string> = RESERVED,
): ToolboxEntry[] {
  const RESERVED = reserved;
  const counts = new Map<string, number>();
  for (const t of tools) counts.set(sanitize(t.tool), (counts.get(sanitize(t.tool)) ?? 0) + 1);
  const taken = new Set<string>();
  return tools.map((t) => {
    const own = sanitize(t.tool);
    let name =
      counts.get(own) === 1 && !RESERVED.has(own)
        ? own
        : sanitize(`s${t.ref.index + 1}${t.ref.kind === 'market_mcps' ? 'm' : ''}_${t.tool}`);
    for (let n = 2; taken.has(name) || RESERVED.has(name); n++) name = `${name.slice(0, 60)}_${n}`;
    taken.add(name);
    return { ...t, name };
  });
}

export interface StoredToolbox {
  toolbox: ToolboxEntry[];
  /** Sources that could not be opened, and why (told to the model). */
  notes: string[];
}

export interface ToolboxDeps {
  db: Db;
  tools: ToolRuntimeDeps;
  loadSelection: SelectionLoader;
}

/** What the toolbox needs of a run's selections (by index; their params are read by loadSelection). */
export interface ToolboxSelections {
  custom: { name?: string | null; tool_names?: string[] }[];
  market: { mcp_id: string; tool_names?: string[] }[];
}

function sourceLabel(kind: 'custom_mcps' | 'market_mcps', index: number, name: string | null | undefined): string {
  return name?.trim() ? name.trim() : `${kind}[${index}]`;
}

export async function readToolbox(db: Db, jobId: string): Promise<StoredToolbox | null> {
  const row = await findCustomAgentRun(db, jobId);
  return row ? { toolbox: row.toolbox as unknown as ToolboxEntry[], notes: row.notes } : null;
}

/**
 * A run's toolbox, built once and kept (custom_agent_runs): each selection's tools (a custom
 * selection's tool_discovery_cache, when usable, spares listing it; a market selection's approved
 * tools), filtered by tool_names and named uniquely for the model (never one of `reserved`, the
 * loop's own tools). A source that cannot be opened is left out, and noted.
 */
export async function prepareToolbox(
  deps: ToolboxDeps,
  jobId: string,
  selections: ToolboxSelections,
  reserved?: ReadonlySet<string>,
): Promise<StoredToolbox> {
  const { db } = deps;
  const existing = await readToolbox(db, jobId);
  if (existing) return existing;
  const found: Omit<ToolboxEntry, 'name'>[] = [];
  const notes: string[] = [];
  for (const [index, custom] of selections.custom.entries()) {
    const ref = { kind: 'custom_mcps' as const, index };
    const source = sourceLabel('custom_mcps', index, custom.name);
    try {
      const selection = await deps.loadSelection(jobId, ref);
      const tools =
        selection.knownTools && selection.toolNames?.length
          ? selection.knownTools.filter((t) => selection.toolNames!.includes(t.name))
          : (selection.knownTools ??
            (await withHeartbeat(async () => {
              const opened = await openToolSource(selection, deps.tools);
              try {
                return opened.tools;
              } finally {
                await opened.close();
              }
            })));
      for (const tool of tools)
        found.push({ source, ref, tool: tool.name, description: tool.description, inputSchema: tool.inputSchema });
      const missing = (custom.tool_names ?? []).filter((name) => !tools.some((t) => t.name === name));
      if (missing.length) notes.push(`${source}: no tool named ${missing.join(', ')}`);
    } catch (error) {
      notes.push(`${source}: ${(error as Error).message}`);
    }
  }
  for (const [index, market] of selections.market.entries()) {
    const ref = { kind: 'market_mcps' as const, index };
    const entry = await findPublicMcpEntry(db, market.mcp_id);
    const source = sourceLabel('market_mcps', index, entry?.name);
    if (!entry) {
      notes.push(`${source}: the market entry is no longer available`);
      continue;
    }
    const approved = (entry.approvedTools ?? entry.tools).filter((t) => t.isEnabled !== false);
    const wanted = market.tool_names?.length
      ? approved.filter((t) => market.tool_names!.includes(t.toolName))
      : approved;
    for (const tool of wanted)
      found.push({ source, ref, tool: tool.toolName, description: describedAs(tool), inputSchema: tool.inputSchema });
  }
  const toolbox = nameToolbox(found, reserved ? new Set([...RESERVED, ...reserved]) : RESERVED);
  await insertCustomAgentRun(db, jobId, { toolbox: JSON.stringify(toolbox), notes: JSON.stringify(notes) });
  const stored = (await readToolbox(db, jobId))!;
  await appendJobLog(
    db,
    jobId,
    `toolbox: ${stored.toolbox.length} tool(s)${stored.notes.length ? `; unavailable: ${stored.notes.join('; ')}` : ''}`,
  );
  return stored;
}
