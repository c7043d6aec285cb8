import { checkLlmModel, type PriceTable } from '../billing/pricing';
import { UntrustedSchemaError } from '../json-schema/untrusted';
import { compileSchemaValidator, validateStructuredOutputSpec, type FieldSpec } from '../llm/structured-output';
import { usdToMicros } from '../money';
import type { NetworkPolicy } from '../net/ssrf';
import type { AgentMarketSubmissionBody } from '../schemas/agent-market';
import { wholeMicrosCap } from './caps';
import { MarketRuleError, ruleBroken } from './errors';
import { slugFor } from './slug';
import { checkUserParams } from './user-params-schema';
import { requireSecureSourceUrl } from './source-url';

/** A market tool the agent uses: an approved tool-market listing (public id) and some of its tools (all when empty). */
export interface AgentMarketToolSelection {
  mcp_id: string;
  tool_names: string[];
  /** The agent provider's cap: the most one execution may spend through this selection (USD). */
  max_total_usd?: number;
}

/** A private tool source of the owner (CustomMcpSelectionRequest without its params, which are sealed apart). */
export type AgentCustomToolSelection = Record<string, unknown> & { type: 'remote_mcp' | 'openapi' };

/** The params of both selection lists, by index; sealed at rest. */
export interface AgentSelectionParams {
  market: Record<string, unknown>[];
  custom: Record<string, unknown>[];
}

/** Everything an agent submission stores, checked and normalised (prompts and params still plain: the repository seals them). */
export interface PreparedAgentSubmission {
  slug: string;
  name: string;
  description: string | null;
  iconUrl: string | null;
  iconObjectKey: string | null;
  priceMicros: number;
  suggestedLlmProvider: 'service' | 'router';
  suggestedLlmModel: string;
  runMode: 'template' | 'task';
  allowTaskOverride: boolean;
  systemPrompt: string;
  promptTemplate: string | null;
  inputSchema: Record<string, unknown> | null;
  structuredOutput: FieldSpec[] | null;
  skills: Record<string, unknown> | null;
  mcpSelections: AgentMarketToolSelection[];
  customMcpSelections: AgentCustomToolSelection[];
  selectionParams: AgentSelectionParams;
  searchText: string;
}

/** A live approved tool-market listing as a selection sees it: its enabled tools and the parameters it declares. */
export interface ApprovedListing {
  tools: Set<string>;
  requiredUserParamsSchema: Record<string, unknown>;
}

/** What the market offers a selection may name: each live approved tool-market listing, by public id. */
export type ApprovedToolLookup = (mcpIds: string[]) => Promise<Map<string, ApprovedListing>>;

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** The names of the `{{name}}` placeholders of a template, in order of first use. */
export function templatePlaceholders(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((m) => m[1]))];
}

const declaredInputs = (schema: Record<string, unknown> | null | undefined): string[] =>
  schema && typeof schema.properties === 'object' && schema.properties !== null ? Object.keys(schema.properties) : [];

/**
 * The template with each placeholder replaced by its input, as plain text in one pass: a value is
 * never read as a template again (no logic, no code), strings are inserted as they are and other
 * values as JSON; a declared input the run did not give becomes empty.
 */
export function fillTemplate(template: string, inputs: Record<string, unknown>): string {
  return template.replace(PLACEHOLDER, (_whole, name: string) => {
    const value = Object.hasOwn(inputs, name) ? inputs[name] : undefined;
    if (value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/** Checks a run's inputs against the agent's input schema: 400 unknown_input for undeclared keys, 400 invalid_inputs for the rest. */
export function checkRunInputs(inputSchema: Record<string, unknown> | null, inputs: Record<string, unknown>): void {
  const declared = new Set(declaredInputs(inputSchema));
  const unknown = Object.keys(inputs).filter((key) => !declared.has(key));
  if (unknown.length) {
    throw new MarketRuleError(
      400,
      'unknown_input',
      `inputs has keys the agent does not declare: ${unknown.join(', ')}${declared.size ? ` (declared: ${[...declared].join(', ')})` : ' (it declares none)'}`,
      unknown.map((key) => ({ path: `body/inputs/${key}`, message: "is not declared by the agent's inputSchema" })),
    );
  }
  let validate: (value: unknown) => string[];
  try {
    validate = compileSchemaValidator({ ...(inputSchema ?? { type: 'object' }), additionalProperties: false });
  } catch (err) {
    // A listing approved before today's schema rules: nothing can be checked until its owner revises it.
    throw new MarketRuleError(
      409,
      'invalid_input_schema',
      `The agent's inputSchema cannot be used (${(err as Error).message}); its owner must revise the agent`,
    );
  }
  const problems = validate(inputs);
  if (problems.length)
    throw new MarketRuleError(
      400,
      'invalid_inputs',
      `inputs do not match the agent's inputSchema: ${problems.join('; ')}`,
      problems.map((message) => ({ path: 'body/inputs', message })),
    );
}

function checkInputSchema(schema: Record<string, unknown> | undefined): void {
  if (schema === undefined) return;
  if (schema.type !== 'object')
    throw ruleBroken(
      'invalid_input_schema',
      'inputSchema must be a JSON Schema with "type": "object" at the root',
      'body/inputSchema',
    );
  try {
    compileSchemaValidator(schema);
  } catch (err) {
    const at = err instanceof UntrustedSchemaError ? err.at : '';
    throw ruleBroken(
      'invalid_input_schema',
      `inputSchema is not a valid JSON Schema: ${(err as Error).message}`,
      `body/inputSchema${at}`,
    );
  }
}

/**
 * Checks an agent submission against the market's rules (400 with the rule as code) and normalises it.
 * Market tool selections are looked up through `approvedTools` (the live approved tool-market entries).
 */
export async function prepareAgentSubmission(
  body: AgentMarketSubmissionBody,
  context: { iconOwned: boolean; prices: PriceTable; policy: NetworkPolicy; approvedTools: ApprovedToolLookup },
): Promise<PreparedAgentSubmission> {
  const slug = slugFor(body.slug, body.name);
  if (body.iconObjectKey && !context.iconOwned)
    throw ruleBroken(
      'icon_not_found',
      'iconObjectKey does not name an icon this account uploaded (POST /market/icons)',
      'body/iconObjectKey',
    );
  const model = checkLlmModel(context.prices, {
    llm_provider: body.suggestedLlmProvider,
    llm_model: body.suggestedLlmModel,
  });
  if (model) throw ruleBroken(model.code, model.message, 'body/suggestedLlmModel');
  checkInputSchema(body.inputSchema);
  const template = body.promptTemplate ?? null;
  if (body.runMode === 'template') {
    if (!template || !template.trim())
      throw ruleBroken('prompt_template_required', 'A template agent needs promptTemplate', 'body/promptTemplate');
    const declared = new Set(declaredInputs(body.inputSchema));
    const undeclared = templatePlaceholders(template).filter((name) => !declared.has(name));
    if (undeclared.length) {
      throw ruleBroken(
        'undeclared_placeholder',
        `promptTemplate uses placeholders that inputSchema.properties does not declare: ${undeclared.map((n) => `{{${n}}}`).join(', ')}`,
        'body/promptTemplate',
      );
    }
  }
  if (body.structuredOutput !== undefined) {
    const problems = validateStructuredOutputSpec(body.structuredOutput);
    if (problems.length)
      throw new MarketRuleError(
        400,
        'invalid_structured_output',
        `structuredOutput is invalid: ${problems.join('; ')}`,
        problems.map((message) => ({ path: 'body/structuredOutput', message })),
      );
  }
  await checkMarketSelections(body.mcpSelections, context.approvedTools, 'body/mcpSelections');
  body.customMcpSelections.forEach((selection, i) => {
    const at = `body/customMcpSelections/${i}`;
    const url = typeof selection.source_url === 'string' ? selection.source_url : null;
    if (selection.type === 'remote_mcp' && !url)
      throw ruleBroken('invalid_custom_selection', 'A remote_mcp selection needs source_url', `${at}/source_url`);
    if (
      selection.type === 'openapi' &&
      !url &&
      (selection.openapi_spec === undefined || selection.openapi_spec === null)
    ) {
      throw ruleBroken('invalid_custom_selection', 'An openapi selection needs openapi_spec or source_url', at);
    }
    if (url) requireSecureSourceUrl(url, `customMcpSelections[${i}].source_url`, context.policy);
  });
  const priceMicros = usdToMicros(body.priceUsd ?? 0);
  return {
    slug,
    name: body.name,
    description: body.description ?? null,
    iconUrl: body.iconUrl ?? null,
    iconObjectKey: body.iconObjectKey ?? null,
    priceMicros,
    suggestedLlmProvider: body.suggestedLlmProvider,
    suggestedLlmModel: body.suggestedLlmModel,
    runMode: body.runMode,
    allowTaskOverride: body.runMode === 'template' && body.allowTaskOverride === true,
    systemPrompt: body.systemPrompt,
    promptTemplate: template,
    inputSchema: body.inputSchema ?? null,
    structuredOutput: (body.structuredOutput as FieldSpec[] | undefined) ?? null,
    skills: (body.skills as Record<string, unknown> | undefined) ?? null,
    mcpSelections: body.mcpSelections.map((s) => ({
      mcp_id: s.mcp_id,
      tool_names: s.tool_names,
      ...(s.max_total_usd !== undefined && { max_total_usd: s.max_total_usd }),
    })),
    customMcpSelections: body.customMcpSelections.map(
      ({ params: _params, ...rest }) => rest as AgentCustomToolSelection,
    ),
    selectionParams: {
      market: body.mcpSelections.map((s) => s.params ?? {}),
      custom: body.customMcpSelections.map((s) => s.params ?? {}),
    },
    // Consumers find agents by what they are for: the name and description (the prompts stay private).
    searchText: '',
  };
}

/**
 * Every selection names a live approved tool-market listing and only tools it offers. `status` is 400
 * at submission (the provider's mistake) and 409 at run time (the listing changed since approval).
 * A selection given with its params (at submission) may only set the parameters the listing declares,
 * valid for its requiredUserParamsSchema (400 `invalid_params`, lib/market/user-params-schema.ts).
 */
export async function checkMarketSelections(
  selections: readonly (AgentMarketToolSelection & { params?: Record<string, unknown> })[],
  approvedTools: ApprovedToolLookup,
  path: string,
  status: 400 | 409 = 400,
): Promise<void> {
  if (selections.length === 0) return;
  // A cap is checked where the provider gives it (a stored one is read rounded down: activities/tools/market.ts).
  if (status === 400)
    selections.forEach((selection, i) => {
      if (selection.max_total_usd !== undefined)
        wholeMicrosCap(selection.max_total_usd, `mcpSelections[${i}].max_total_usd`, `${path}/${i}/max_total_usd`);
    });
  const offered = await approvedTools([...new Set(selections.map((s) => s.mcp_id))]);
  selections.forEach((selection, i) => {
    const listing = offered.get(selection.mcp_id);
    const code = status === 400 ? 'unknown_market_tool' : 'market_tool_unavailable';
    if (!listing)
      throw new MarketRuleError(
        status,
        code,
        `mcpSelections[${i}].mcp_id ${selection.mcp_id} is not an approved tool-market listing`,
        [{ path: `${path}/${i}/mcp_id`, message: 'not an approved listing' }],
      );
    const missing = selection.tool_names.filter((name) => !listing.tools.has(name));
    if (missing.length) {
      throw new MarketRuleError(
        status,
        code,
        `mcpSelections[${i}] names tools the listing does not offer: ${missing.join(', ')}`,
        [{ path: `${path}/${i}/tool_names`, message: `unknown: ${missing.join(', ')}` }],
      );
    }
    if (selection.params !== undefined)
      checkUserParams(listing.requiredUserParamsSchema, selection.params, `${path}/${i}/params`);
  });
}
