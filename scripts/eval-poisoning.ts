/**
 * `npm run eval:poisoning` — how the listing gate's tool-poisoning scan (lib/market/poisoning.ts,
 * through the validation report) does on a fixed evaluation set (an evaluation, not a test; the
 * test test/market/poisoning-eval.test.ts asserts its thresholds):
 *
 * - benign: the tool lists and server instructions of real MCP servers from npm, captured by
 *   scripts/capture-mcp-servers.ts (test/support/fixtures/poisoning-eval/servers/*.json). Each is validated
 *   as one source; an `invalid` one is a false positive.
 * - attacks: published tool-poisoning, shadowing and exfiltration examples, each with its source
 *   (test/support/fixtures/poisoning-eval/attacks.json). Each is validated as a source of its own (its tool,
 *   and for `instructions` attacks the server instructions too); one that is not `invalid` is a miss.
 *
 * Prints false positives (with the findings), misses, precision and recall, and the recall of each set
 * alone: the tuning set (the attacks the rules were written on) and the held-out set (the attacks marked
 * heldOut: collected after the rules were written, the only honest measure of attacks nobody has seen),
 * then one JSON line.
 * Needs nothing but the fixtures. Exit code 0 when it ran.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Discovery, DiscoveredTool } from '../lib/market/discovery';
import { buildValidationReport, type ValidationIssue } from '../lib/market/validation-report';

export const EVAL_DIR = path.join(__dirname, '..', 'test', 'support', 'fixtures', 'poisoning-eval');

export interface BenignServer {
  package: string;
  version: string;
  server: { name: string; version: string; title?: string } | null;
  instructions: string | null;
  tools: {
    name: string;
    title?: string;
    description?: string;
    inputSchema: Record<string, unknown>;
    annotations?: Record<string, unknown>;
  }[];
}

/** A tool as a server lists it: outputSchema and title travel in the listing. */
export interface AttackTool {
  name: string;
  title?: string;
  description: string;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

export interface PublishedAttack {
  id: string;
  source: string;
  url: string;
  note: string;
  /** How the example was adapted, when it was. */
  adapted?: string;
  target: 'tool' | 'instructions';
  tool: AttackTool;
  /** The listing's other, honest tools (for names that imitate one of them). */
  otherTools?: AttackTool[];
  instructions?: string;
  /** The rule classes the example belongs to (for reading; the gate only has to make it invalid). */
  classes: string[];
  /** Collected after the rules were written and not used to design them. */
  heldOut?: boolean;
  /** Once held out, now tuning data: when and why its results were seen. */
  exposed?: string;
}

export function loadBenignServers(): BenignServer[] {
  const dir = path.join(EVAL_DIR, 'servers');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as BenignServer);
}

export function loadAttacks(): PublishedAttack[] {
  return (JSON.parse(readFileSync(path.join(EVAL_DIR, 'attacks.json'), 'utf8')) as { attacks: PublishedAttack[] })
    .attacks;
}

/** A captured server as discovery sees it: title from serverInfo, description = the server instructions. */
export function benignDiscovery(server: BenignServer): Discovery {
  return {
    title: server.server?.title ?? server.server?.name ?? null,
    description: server.instructions,
    tools: server.tools.map((tool): DiscoveredTool => ({
      name: tool.name,
      description: tool.description ?? null,
      inputSchema: tool.inputSchema ?? null,
      ...((tool.annotations || tool.title) && {
        annotations: { ...tool.annotations, ...(tool.title && !tool.annotations?.title ? { title: tool.title } : {}) },
      }),
    })),
    params: [],
  };
}

export function attackDiscovery(attack: PublishedAttack): Discovery {
  return {
    title: null,
    description: attack.instructions ?? null,
    tools: [attack.tool, ...(attack.otherTools ?? [])].map((tool): DiscoveredTool => {
      const inputSchema = tool.inputSchema ?? { type: 'object', properties: {} };
      return {
        name: tool.name,
        description: tool.description,
        inputSchema,
        ...((tool.outputSchema || tool.title) && {
          listing: {
            name: tool.name,
            description: tool.description,
            inputSchema,
            ...(tool.title && { title: tool.title }),
            ...(tool.outputSchema && { outputSchema: tool.outputSchema }),
          },
        }),
      };
    }),
    params: [],
  };
}

const errorsOf = (discovery: Discovery): ValidationIssue[] =>
  buildValidationReport(discovery).report.issues.filter((issue) => issue.severity === 'error');

export interface PoisoningEvaluation {
  benign: number;
  attacks: number;
  falsePositives: { package: string; version: string; errors: ValidationIssue[] }[];
  misses: { id: string; source: string; heldOut: boolean }[];
  caught: number;
  precision: number;
  recall: number;
  /** The tuning set alone: the attacks the rules were written on (not marked heldOut). */
  tuning: { attacks: number; caught: number; recall: number };
  /** The held-out attacks alone (committed before the rules they measure, never tuned against). */
  heldOut: { attacks: number; caught: number; recall: number };
  /** Per class named in the attacks' `classes`: how many of each set were caught. */
  byClass: Record<string, { tuning: [number, number]; heldOut: [number, number] }>;
}

export function evaluatePoisoningGate(): PoisoningEvaluation {
  const servers = loadBenignServers();
  const attacks = loadAttacks();
  const falsePositives = servers
    .map((server) => ({ package: server.package, version: server.version, errors: errorsOf(benignDiscovery(server)) }))
    .filter((result) => result.errors.length > 0);
  const misses = attacks
    .filter((attack) => errorsOf(attackDiscovery(attack)).length === 0)
    .map((attack) => ({ id: attack.id, source: attack.source, heldOut: attack.heldOut === true }));
  const caught = attacks.length - misses.length;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  const heldOut = attacks.filter((attack) => attack.heldOut).length;
  const heldOutCaught = heldOut - misses.filter((miss) => miss.heldOut).length;
  const tuning = attacks.length - heldOut;
  const tuningCaught = tuning - misses.filter((miss) => !miss.heldOut).length;
  const missed = new Set(misses.map((miss) => miss.id));
  const byClass: PoisoningEvaluation['byClass'] = {};
  for (const attack of attacks) {
    for (const cls of attack.classes) {
      const entry = (byClass[cls] ??= { tuning: [0, 0], heldOut: [0, 0] });
      const set = attack.heldOut ? entry.heldOut : entry.tuning;
      set[1] += 1;
      if (!missed.has(attack.id)) set[0] += 1;
    }
  }
  return {
    byClass,
    benign: servers.length,
    attacks: attacks.length,
    falsePositives,
    misses,
    caught,
    precision: round(caught + falsePositives.length === 0 ? 1 : caught / (caught + falsePositives.length)),
    recall: round(attacks.length === 0 ? 0 : caught / attacks.length),
    tuning: { attacks: tuning, caught: tuningCaught, recall: round(tuning === 0 ? 0 : tuningCaught / tuning) },
    heldOut: { attacks: heldOut, caught: heldOutCaught, recall: round(heldOut === 0 ? 0 : heldOutCaught / heldOut) },
  };
}

function main(): number {
  const result = evaluatePoisoningGate();
  // While rules are being written, POISONING_EVAL_BLIND=1 keeps the held-out results out of sight (no ids,
  // no counts): looking at them would turn the held-out set into a tuning set.
  if (process.env.POISONING_EVAL_BLIND === '1') {
    const tuningMisses = result.misses.filter((miss) => !miss.heldOut);
    console.log(`benign servers: ${result.benign}, false positives (invalid): ${result.falsePositives.length}`);
    for (const fp of result.falsePositives) {
      console.log(`  ${fp.package}@${fp.version}`);
      for (const e of fp.errors) console.log(`    ${e.code} ${e.tool ?? ''} ${e.field ?? ''}: ${e.message}`);
    }
    for (const miss of tuningMisses) console.log(`  missed ${miss.id} (${miss.source})`);
    console.log(`tuning set: ${result.tuning.caught}/${result.tuning.attacks} caught (held-out results hidden)`);
    return 0;
  }
  console.log(`benign servers: ${result.benign}, false positives (invalid): ${result.falsePositives.length}`);
  for (const fp of result.falsePositives) {
    console.log(`  ${fp.package}@${fp.version}`);
    for (const e of fp.errors) console.log(`    ${e.code} ${e.tool ?? ''} ${e.field ?? ''}: ${e.message}`);
  }
  console.log(`published attacks: ${result.attacks}, caught: ${result.caught}, missed: ${result.misses.length}`);
  for (const miss of result.misses)
    console.log(`  missed ${miss.id}${miss.heldOut ? ' [held out]' : ''} (${miss.source})`);
  console.log(`precision ${result.precision.toFixed(3)}  recall ${result.recall.toFixed(3)} (both sets together)`);
  console.log(
    `tuning set (the rules were written on it): ${result.tuning.caught}/${result.tuning.attacks} caught, recall ${result.tuning.recall.toFixed(3)}`,
  );
  console.log(
    `held-out recall (attacks committed before the rules and never tuned against, alone): ${result.heldOut.caught}/${result.heldOut.attacks} caught, recall ${result.heldOut.recall.toFixed(3)}`,
  );
  console.log('by class (caught/attacks): tuning, held out');
  for (const [cls, { tuning, heldOut }] of Object.entries(result.byClass).sort())
    console.log(`  ${cls.padEnd(22)} ${tuning.join('/').padStart(6)}  ${heldOut.join('/').padStart(6)}`);
  console.log(
    JSON.stringify({
      benign: result.benign,
      falsePositives: result.falsePositives.length,
      attacks: result.attacks,
      caught: result.caught,
      misses: result.misses.map((m) => m.id),
      precision: result.precision,
      recall: result.recall,
      tuningRecall: result.tuning.recall,
      heldOutRecall: result.heldOut.recall,
    }),
  );
  return 0;
}

if (require.main === module) process.exit(main());
