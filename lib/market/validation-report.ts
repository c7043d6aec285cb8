import type { Discovery, DiscoveryParam, DiscoveredTool } from './discovery';
import type { LlmReview } from './llm-review';
import { scanInstructions, scanText, scanTool, type PoisoningCode } from './poisoning';

/**
 * The validation report of a discovered source: issues, tool count, quality score and the status.
 *
 * Status
 * - `invalid` when any issue is an `error`: a poisoning finding (see poisoning.ts), duplicate tool
 *   names, or no tools at all;
 * - else `needs_parameters` when the source needs parameters the request did not give (required
 *   `params` of the discovery missing from the request, or the source refused discovery without
 *   credentials); `parametersRequired` is then true and `requiredParameters` lists them;
 * - else `valid`.
 *
 * Quality score (0–100, rounded): the mean of the tools' scores, minus 10 when there are more than
 * MAX_SANE_TOOLS tools and minus 20 per duplicated name, clamped to 0–100; 0 without tools. A tool
 * scores out of 100:
 * - 20  its name follows the MCP guidance: 1–64 characters of [A-Za-z0-9_-];
 * - 20  it has a description;
 * - 20  the description is informative: at least 40 characters and 6 words, and not just the name;
 * - 20  it has an input schema of type object;
 * - 20  its top-level properties have descriptions (in proportion; a tool without arguments gets all 20).
 * Each point missed is also a `warning` issue naming the tool.
 */
export type IssueSeverity = 'error' | 'warning' | 'info';

export interface ValidationIssue {
  severity: IssueSeverity;
  code: string;
  message: string;
  tool?: string;
  field?: string;
}

export interface ValidationReport {
  issues: ValidationIssue[];
  toolCount: number;
  qualityScore: number;
  /** Score of each tool (the first of duplicated names). */
  toolScores: { tool: string; score: number }[];
  /** The platform LLM's second opinion (lib/market/llm-review.ts), when it is configured. */
  llmReview?: LlmReview;
}

export type ValidationStatus = 'valid' | 'invalid' | 'needs_parameters';

export interface ValidationOutcome {
  status: ValidationStatus;
  parametersRequired: boolean;
  requiredParameters: DiscoveryParam[];
  report: ValidationReport;
}

export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_SANE_TOOLS = 50;
const INFORMATIVE_MIN_CHARS = 40;
const INFORMATIVE_MIN_WORDS = 6;

export const POISONING_CODES: readonly PoisoningCode[] = [
  'hidden_unicode',
  'model_directive',
  'secret_access',
  'exfiltration',
  'tool_shadowing',
  'confusable_name',
];

function isInformative(description: string, name: string): boolean {
  const text = description.trim();
  const words = text.split(/\s+/).filter(Boolean);
  const restatesName = text.toLowerCase().replace(/[^a-z0-9]+/g, '') === name.toLowerCase().replace(/[^a-z0-9]+/g, '');
  return text.length >= INFORMATIVE_MIN_CHARS && words.length >= INFORMATIVE_MIN_WORDS && !restatesName;
}

function scoreTool(tool: DiscoveredTool, issues: ValidationIssue[]): number {
  const warn = (code: string, message: string) => issues.push({ severity: 'warning', code, message, tool: tool.name });
  let score = 0;
  if (TOOL_NAME_PATTERN.test(tool.name)) score += 20;
  else
    warn(
      'tool_name_format',
      `The name "${tool.name}" does not follow the 1–64 character [A-Za-z0-9_-] guidance; some clients refuse it`,
    );

  const description = tool.description?.trim() ?? '';
  if (!description) warn('missing_description', 'The tool has no description, so a model cannot tell when to use it');
  else {
    score += 20;
    if (isInformative(description, tool.name)) score += 20;
    else
      warn(
        'short_description',
        `The description is too short to be informative (at least ${INFORMATIVE_MIN_CHARS} characters and ${INFORMATIVE_MIN_WORDS} words)`,
      );
  }

  const schema = tool.inputSchema;
  if (!schema || typeof schema !== 'object' || schema.type !== 'object') {
    warn('missing_input_schema', 'The tool has no input schema of type "object"');
  } else {
    score += 20;
    const properties =
      schema.properties && typeof schema.properties === 'object'
        ? Object.entries(schema.properties as Record<string, unknown>)
        : [];
    if (properties.length === 0) score += 20;
    else {
      const undescribed = properties.filter(
        ([, p]) =>
          !(
            p &&
            typeof p === 'object' &&
            typeof (p as { description?: unknown }).description === 'string' &&
            (p as { description: string }).description.trim()
          ),
      );
      score += Math.round((20 * (properties.length - undescribed.length)) / properties.length);
      if (undescribed.length)
        warn(
          'undescribed_parameters',
          `Parameters without a description: ${undescribed.map(([name]) => name).join(', ')}`,
        );
    }
  }
  return score;
}

/** Every text of the server's prompts and resources a model reads (names, titles, descriptions, argument texts). */
function promptAndResourceTexts(discovery: Discovery): { field: string; text: string; parameter: boolean }[] {
  const texts: { field: string; text: string; parameter: boolean }[] = [];
  const add = (field: string, text: unknown, parameter = false) => {
    if (typeof text === 'string' && text) texts.push({ field, text, parameter });
  };
  (discovery.prompts ?? []).forEach((prompt, i) => {
    add(`prompts/${i}/name`, prompt.name);
    add(`prompts/${i}/title`, prompt.title);
    add(`prompts/${i}/description`, prompt.description);
    (prompt.arguments ?? []).forEach((argument, j) => {
      add(`prompts/${i}/arguments/${j}/name`, argument.name);
      // An argument's text is a parameter's: the argument is where what it asks for would go.
      add(`prompts/${i}/arguments/${j}/title`, argument.title, true);
      add(`prompts/${i}/arguments/${j}/description`, argument.description, true);
    });
  });
  (discovery.resources ?? []).forEach((resource, i) => {
    add(`resources/${i}/name`, resource.name);
    add(`resources/${i}/title`, resource.title);
    add(`resources/${i}/description`, resource.description);
  });
  return texts;
}

function missingParameters(discovery: Discovery, givenParamNames: readonly string[]): DiscoveryParam[] {
  const given = new Set(givenParamNames);
  return discovery.params.filter((param) => param.required && !given.has(param.name));
}

export function buildValidationReport(
  discovery: Discovery,
  options: { givenParamNames?: readonly string[]; llmReview?: LlmReview | null } = {},
): ValidationOutcome {
  const issues: ValidationIssue[] = [];
  const names = discovery.tools.map((tool) => tool.name);
  const llmReview = options.llmReview ?? null;

  for (const [field, text] of [
    ['title', discovery.title],
    ['description', discovery.description],
  ] as const) {
    if (!text) continue;
    for (const finding of scanInstructions(text, `source/${field}`, names)) {
      issues.push({
        severity: 'error',
        code: finding.code,
        message: `The source ${field} ${finding.message}: "${finding.excerpt}"`,
        field: `source/${field}`,
      });
    }
  }

  for (const { field, text, parameter } of promptAndResourceTexts(discovery)) {
    for (const finding of scanText(text, field, { siblingNames: names, parameter })) {
      issues.push({
        severity: 'error',
        code: finding.code,
        message: `${field} ${finding.message}: "${finding.excerpt}"`,
        field,
      });
    }
  }

  const toolScores: { tool: string; score: number }[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  for (const tool of discovery.tools) {
    if (seen.has(tool.name)) {
      duplicates++;
      issues.push({
        severity: 'error',
        code: 'duplicate_tool_name',
        message: `Two tools are named "${tool.name}"; clients cannot tell them apart`,
        tool: tool.name,
      });
      continue;
    }
    seen.add(tool.name);
    const siblings = names.filter((name) => name !== tool.name);
    for (const finding of scanTool(tool, siblings)) {
      issues.push({
        severity: 'error',
        code: finding.code,
        message: `${finding.field} ${finding.message}: "${finding.excerpt}"`,
        tool: tool.name,
        field: finding.field,
      });
    }
    toolScores.push({ tool: tool.name, score: scoreTool(tool, issues) });
  }

  const toolCount = discovery.tools.length;
  if (toolCount > MAX_SANE_TOOLS) {
    issues.push({
      severity: 'warning',
      code: 'too_many_tools',
      message: `${toolCount} tools; clients and models work best with at most ${MAX_SANE_TOOLS}`,
    });
  }
  const scores = toolScores.map((t) => t.score);
  const mean = scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : 0;
  const qualityScore =
    toolCount === 0
      ? 0
      : Math.max(0, Math.min(100, Math.round(mean - (toolCount > MAX_SANE_TOOLS ? 10 : 0) - 20 * duplicates)));

  if (llmReview?.verdict === 'malicious' || llmReview?.verdict === 'suspicious') {
    issues.push({
      severity: llmReview.verdict === 'malicious' ? 'error' : 'warning',
      code: 'llm_review',
      message: `The platform's LLM review judged the source ${llmReview.verdict}: ${llmReview.reason}${
        llmReview.evidence ? ` ("${llmReview.evidence}")` : ''
      }`,
    });
  }

  const required = missingParameters(discovery, options.givenParamNames ?? []);
  const needsParameters = required.length > 0 || (discovery.authRequired === true && toolCount === 0);
  if (toolCount === 0 && !needsParameters)
    issues.push({ severity: 'error', code: 'no_tools', message: 'The source offers no tools' });
  if (needsParameters) {
    issues.push({
      severity: 'info',
      code: 'parameters_required',
      message: required.length
        ? `The source needs parameters the request did not give: ${required.map((p) => p.name).join(', ')}`
        : 'The source refused discovery without credentials; give them in params',
    });
  }

  const hasError = issues.some((issue) => issue.severity === 'error');
  const status: ValidationStatus = hasError ? 'invalid' : needsParameters ? 'needs_parameters' : 'valid';
  return {
    status,
    parametersRequired: status === 'needs_parameters',
    requiredParameters: status === 'needs_parameters' ? (required.length ? required : discovery.params) : [],
    report: { issues, toolCount, qualityScore, toolScores, ...(llmReview ? { llmReview } : {}) },
  };
}
