export interface ModelPrice {
  /** Integer micro-USD per 1M prompt tokens. */
  readonly inputMicrosPerMillion: number;
  /** Integer micro-USD per 1M completion tokens. */
  readonly outputMicrosPerMillion: number;
  /**
   * The model accepts images as input: agents give it the images their tools return (see
   * activities/agent/tool-images.ts); a model without it reads them described as text.
   */
  readonly vision: boolean;
}

const TOKENS_PER_PRICE_UNIT = 1_000_000n;

/** The `vision` flag of a table entry: the model accepts images as input. */
const VISION = true;

function price(inputMicrosPerMillion: number, outputMicrosPerMillion: number, vision = false): ModelPrice {
  return Object.freeze({ inputMicrosPerMillion, outputMicrosPerMillion, vision });
}

/**
 * The built-in price table. Keys are lower-case model ids without provider prefix or snapshot
 * date; `VISION` marks the models that accept images as input (OpenAI's GPT-4o, 4.1, 5, o3 and
 * o4-mini; Claude from 3.5 Sonnet on, except 3.5 Haiku). It is also the allowlist of the `service` provider: a model that is not in the table (as
 * extended or overridden by LLM_MODEL_PRICES, see lib/config.ts) is refused, never guessed at.
 */
export const DEFAULT_MODEL_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  'gpt-4o-mini': price(150_000, 600_000, VISION),
  'gpt-4o': price(2_500_000, 10_000_000, VISION),
  'gpt-4.1': price(2_000_000, 8_000_000, VISION),
  'gpt-4.1-mini': price(400_000, 1_600_000, VISION),
  'gpt-4.1-nano': price(100_000, 400_000, VISION),
  'gpt-5': price(1_250_000, 10_000_000, VISION),
  'gpt-5-mini': price(250_000, 2_000_000, VISION),
  'gpt-5-nano': price(50_000, 400_000, VISION),
  o3: price(2_000_000, 8_000_000, VISION),
  'o3-mini': price(1_100_000, 4_400_000),
  'o4-mini': price(1_100_000, 4_400_000, VISION),
  'claude-3-5-haiku': price(800_000, 4_000_000),
  'claude-haiku-4-5': price(1_000_000, 5_000_000, VISION),
  'claude-3-5-sonnet': price(3_000_000, 15_000_000, VISION),
  'claude-3-7-sonnet': price(3_000_000, 15_000_000, VISION),
  'claude-sonnet-4': price(3_000_000, 15_000_000, VISION),
  'claude-sonnet-4-5': price(3_000_000, 15_000_000, VISION),
  'claude-opus-4': price(15_000_000, 75_000_000, VISION),
  'claude-opus-4-1': price(15_000_000, 75_000_000, VISION),
  /** Flat rate for the platform router, whatever model it picks. */
  'router/auto': price(1_000_000, 4_000_000),
});

export const BROWSER_MICROS_PER_SECOND = 30;
export const CAPTCHA_MICROS_PER_SOLVE = 2_000;
export const PROXY_MICROS_PER_REQUEST = 100;

const PROVIDER_PREFIX = /^(?:openai|anthropic)\//;
const SNAPSHOT_SUFFIX = /-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$/;

/** The table keys a model id may be listed under: as given, without provider prefix, without snapshot date. */
function priceTableKeys(model: string): string[] {
  const exact = model.trim().toLowerCase();
  const unprefixed = exact.replace(PROVIDER_PREFIX, '');
  return [exact, unprefixed, unprefixed.replace(SNAPSHOT_SUFFIX, '')];
}

/** A model the price table does not list: it cannot be billed, so it cannot be used with the `service` provider. */
export class ModelNotPricedError extends Error {
  override readonly name = 'ModelNotPricedError';
  constructor(readonly model: string) {
    super(`the model "${model}" is not in the price table`);
  }
}

export interface PriceTable {
  /** The accepted model ids, sorted. */
  readonly models: readonly string[];
  priceOf(model: string): ModelPrice | null;
  accepts(model: string): boolean;
  /** The model is in the table with `vision`: it is given images as input (a model the table does not list is not). */
  acceptsImages(model: string): boolean;
  /** Integer micro-USD for one or more calls, rounded up to the next micro; throws ModelNotPricedError for an unlisted model. */
  costMicros(model: string, promptTokens: number, completionTokens: number): number;
}

export function createPriceTable(prices: Readonly<Record<string, ModelPrice>>): PriceTable {
  const table = new Map<string, ModelPrice>();
  for (const [model, entry] of Object.entries(prices))
    table.set(
      model.trim().toLowerCase(),
      price(entry.inputMicrosPerMillion, entry.outputMicrosPerMillion, entry.vision === true),
    );
  const priceOf = (model: string): ModelPrice | null => {
    for (const key of priceTableKeys(model)) {
      const found = table.get(key);
      if (found) return found;
    }
    return null;
  };
  return Object.freeze({
    models: Object.freeze([...table.keys()].sort()),
    priceOf,
    accepts: (model: string) => priceOf(model) !== null,
    acceptsImages: (model: string) => priceOf(model)?.vision === true,
    costMicros(model: string, promptTokens: number, completionTokens: number): number {
      const found = priceOf(model);
      if (!found) throw new ModelNotPricedError(model);
      return tokenCostMicros(found, promptTokens, completionTokens);
    },
  });
}

export const DEFAULT_PRICE_TABLE: PriceTable = createPriceTable(DEFAULT_MODEL_PRICES);

function billableTokens(tokens: number, label: string): bigint {
  if (!Number.isFinite(tokens)) throw new Error(`llm cost: ${label} must be a finite number, got ${tokens}`);
  return BigInt(Math.max(0, Math.ceil(tokens)));
}

/** Integer micro-USD for the given tokens at a price, rounded up to the next micro. */
export function tokenCostMicros(modelPrice: ModelPrice, promptTokens: number, completionTokens: number): number {
  const scaledCost =
    billableTokens(promptTokens, 'promptTokens') * BigInt(modelPrice.inputMicrosPerMillion) +
    billableTokens(completionTokens, 'completionTokens') * BigInt(modelPrice.outputMicrosPerMillion);
  return Number((scaledCost + TOKENS_PER_PRICE_UNIT - 1n) / TOKENS_PER_PRICE_UNIT);
}

/** USD with at most 6 decimals (so a whole number of micro-USD), as text: exact, no float rounding. */
const USD_AMOUNT = /^(\d{1,6})(?:\.(\d{1,6}))?$/;

function usdToMicros(text: string): number | null {
  const match = USD_AMOUNT.exec(text.trim());
  if (!match) return null;
  return Number(match[1]) * 1_000_000 + Number((match[2] ?? '').padEnd(6, '0'));
}

const MODEL_ID = /^[A-Za-z0-9][\w.:/@-]{0,199}$/;

/** An LLM_MODEL_PRICES entry: its prices, and its `vision` flag when the entry sets it (else the default table's, or off). */
export type ModelPriceOverride = Omit<ModelPrice, 'vision'> & { readonly vision?: boolean };

/**
 * Reads the LLM_MODEL_PRICES setting: entries that add to or replace entries of the default table,
 * in USD per 1M tokens (input, output), or `off` to withdraw a default model. An entry may say
 * whether the model accepts images (`vision`); without it, a model of the default table keeps its
 * flag and any other model has none. Two spellings:
 *   model=in:out,model2=in:out:vision,gpt-4o=2.5:10:text,gpt-4o-mini=off
 *   {"model": {"input": 0.15, "output": 0.6, "vision": true}, "model2": [1, 4], "gpt-4o": "off"}
 * Throws an Error whose message says what is wrong (lib/config.ts turns it into a ConfigError).
 */
export function parseModelPriceOverrides(raw: string): Map<string, ModelPriceOverride | 'off'> {
  const overrides = new Map<string, ModelPriceOverride | 'off'>();
  const add = (model: string, value: ModelPriceOverride | 'off') => {
    const key = model.trim().toLowerCase();
    if (!MODEL_ID.test(key)) throw new Error(`"${model}" is not a model id`);
    if (overrides.has(key)) throw new Error(`"${key}" is given twice`);
    overrides.set(key, value);
  };
  const amounts = (model: string, input: unknown, output: unknown, vision?: boolean): ModelPriceOverride => {
    const inMicros = usdToMicros(String(input));
    const outMicros = usdToMicros(String(output));
    if (inMicros === null || outMicros === null) {
      throw new Error(
        `"${model}" needs two USD amounts per 1M tokens (input and output, at most 6 decimals), got ${JSON.stringify(input)} and ${JSON.stringify(output)}`,
      );
    }
    return Object.freeze({
      inputMicrosPerMillion: inMicros,
      outputMicrosPerMillion: outMicros,
      ...(vision !== undefined && { vision }),
    });
  };
  const trimmed = raw.trim();
  if (trimmed.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (err) {
      throw new Error(`is not valid JSON (${(err as Error).message})`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error('must be a JSON object of model → price');
    for (const [model, value] of Object.entries(parsed as Record<string, unknown>)) {
      if (value === 'off') add(model, 'off');
      else if (Array.isArray(value) && value.length === 2) add(model, amounts(model, value[0], value[1]));
      else if (isPriceObject(value)) add(model, amounts(model, value.input, value.output, value.vision));
      else
        throw new Error(
          `"${model}" must be {"input": USD, "output": USD} (with "vision": true or false if you like), [input, output] or "off"`,
        );
    }
    return overrides;
  }
  for (const entry of trimmed
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const equals = entry.lastIndexOf('=');
    const form = `"${entry}" must be model=input:output (USD per 1M tokens, then :vision or :text if you like) or model=off`;
    if (equals <= 0) throw new Error(form);
    const model = entry.slice(0, equals);
    const value = entry.slice(equals + 1).trim();
    if (value.toLowerCase() === 'off') {
      add(model, 'off');
      continue;
    }
    const parts = value.split(':');
    const flag = parts[2]?.trim().toLowerCase();
    if (parts.length < 2 || parts.length > 3 || (flag !== undefined && flag !== 'vision' && flag !== 'text'))
      throw new Error(form);
    add(model, amounts(model, parts[0], parts[1], flag === undefined ? undefined : flag === 'vision'));
  }
  return overrides;
}

function isPriceObject(value: unknown): value is { input: unknown; output: unknown; vision?: boolean } {
  if (!value || typeof value !== 'object' || Array.isArray(value) || !('input' in value) || !('output' in value))
    return false;
  const keys = Object.keys(value);
  if (!keys.every((key) => key === 'input' || key === 'output' || key === 'vision')) return false;
  return !('vision' in value) || typeof value.vision === 'boolean';
}

/** The default table with LLM_MODEL_PRICES applied (unset or blank: the default table). */
export function priceTableFromSetting(raw: string | null): PriceTable {
  if (raw === null || !raw.trim()) return DEFAULT_PRICE_TABLE;
  const prices: Record<string, ModelPrice> = { ...DEFAULT_MODEL_PRICES };
  for (const [model, value] of parseModelPriceOverrides(raw)) {
    if (value !== 'off')
      prices[model] = { ...value, vision: value.vision ?? (Object.hasOwn(prices, model) && prices[model].vision) };
    else if (Object.hasOwn(prices, model)) delete prices[model];
    else throw new Error(`"${model}=off" withdraws a model the default table does not have`);
  }
  if (Object.keys(prices).length === 0) throw new Error('leaves no model in the price table');
  return createPriceTable(prices);
}

/** Why a request's model cannot be used; null when it can. */
export interface LlmModelProblem {
  code: 'model_not_supported';
  message: string;
  accepted: readonly string[];
}

/**
 * The one check of `llm_provider` + `llm_model` for every endpoint that takes them: with the
 * `service` provider (billed from the wallet) only models in the price table are accepted; the
 * `router` provider runs on the account's own key, so its model id is free text.
 */
export function checkLlmModel(
  prices: PriceTable,
  request: { llm_provider: string; llm_model: string },
): LlmModelProblem | null {
  if (request.llm_provider !== 'service' || prices.accepts(request.llm_model)) return null;
  return {
    code: 'model_not_supported',
    message: `llm_model "${request.llm_model}" is not offered with llm_provider "service"; accepted models: ${prices.models.join(', ')} (or use llm_provider "router" with your own key)`,
    accepted: prices.models,
  };
}
