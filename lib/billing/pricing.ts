export interface ModelPrice {
  /** Integer micro-USD per 1M prompt tokens. */
  readonly inputMicrosPerMillion: number;
  /** Integer micro-USD per 1M completion tokens. */
  readonly outputMicrosPerMillion: number;
}

const TOKENS_PER_PRICE_UNIT = 1_000_000n;

function price(inputMicrosPerMillion: number, outputMicrosPerMillion: number): ModelPrice {
  return Object.freeze({ inputMicrosPerMillion, outputMicrosPerMillion });
}

/** Keys are lower-case model ids without provider prefix or snapshot date. */
export const MODEL_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  'gpt-4o-mini': price(150_000, 600_000),
  'gpt-4o': price(2_500_000, 10_000_000),
  'gpt-4.1': price(2_000_000, 8_000_000),
  'gpt-4.1-mini': price(400_000, 1_600_000),
  'gpt-4.1-nano': price(100_000, 400_000),
  'gpt-5': price(1_250_000, 10_000_000),
  'gpt-5-mini': price(250_000, 2_000_000),
  'gpt-5-nano': price(50_000, 400_000),
  'o3': price(2_000_000, 8_000_000),
  'o3-mini': price(1_100_000, 4_400_000),
  'o4-mini': price(1_100_000, 4_400_000),
  'claude-3-5-haiku': price(800_000, 4_000_000),
  'claude-haiku-4-5': price(1_000_000, 5_000_000),
  'claude-3-5-sonnet': price(3_000_000, 15_000_000),
  'claude-3-7-sonnet': price(3_000_000, 15_000_000),
  'claude-sonnet-4': price(3_000_000, 15_000_000),
  'claude-sonnet-4-5': price(3_000_000, 15_000_000),
  'claude-opus-4': price(15_000_000, 75_000_000),
  'claude-opus-4-1': price(15_000_000, 75_000_000),
  /** Flat rate for the platform router, whatever model it picks. */
  'router/auto': price(1_000_000, 4_000_000),
});

/**
 * Price for model ids missing from MODEL_PRICES: the Sonnet tier (3 / 15 USD per 1M tokens),
 * chosen high so that an unknown model is never billed below what it likely costs upstream.
 */
export const FALLBACK_MODEL_PRICE: ModelPrice = price(3_000_000, 15_000_000);

export const BROWSER_MICROS_PER_SECOND = 30;
export const CAPTCHA_MICROS_PER_SOLVE = 2_000;
export const PROXY_MICROS_PER_REQUEST = 100;

const PROVIDER_PREFIX = /^(?:openai|anthropic)\//;
const SNAPSHOT_SUFFIX = /-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$/;

function priceTableKeys(model: string): string[] {
  const exact = model.trim().toLowerCase();
  const unprefixed = exact.replace(PROVIDER_PREFIX, '');
  return [exact, unprefixed, unprefixed.replace(SNAPSHOT_SUFFIX, '')];
}

export function modelPrice(model: string): ModelPrice {
  for (const key of priceTableKeys(model)) {
    if (Object.hasOwn(MODEL_PRICES, key)) return MODEL_PRICES[key];
  }
  return FALLBACK_MODEL_PRICE;
}

export function isKnownModel(model: string): boolean {
  return modelPrice(model) !== FALLBACK_MODEL_PRICE;
}

function billableTokens(tokens: number, label: string): bigint {
  if (!Number.isFinite(tokens)) throw new Error(`llmCostMicros: ${label} must be a finite number, got ${tokens}`);
  return BigInt(Math.max(0, Math.ceil(tokens)));
}

/** Integer micro-USD for one or more LLM calls, rounded up to the next micro. */
export function llmCostMicros(model: string, promptTokens: number, completionTokens: number): number {
  const { inputMicrosPerMillion, outputMicrosPerMillion } = modelPrice(model);
  const scaledCost =
    billableTokens(promptTokens, 'promptTokens') * BigInt(inputMicrosPerMillion) +
    billableTokens(completionTokens, 'completionTokens') * BigInt(outputMicrosPerMillion);
  const micros = (scaledCost + TOKENS_PER_PRICE_UNIT - 1n) / TOKENS_PER_PRICE_UNIT;
  return Number(micros);
}
