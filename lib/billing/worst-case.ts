import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { BROWSER_MICROS_PER_SECOND, type PriceTable } from './pricing';

/**
 * Bounds for "can the job's hold pay for the next call", checked before each billable call so a
 * run stops before it spends more than was reserved for it. Text is bounded by its UTF-8 bytes (a
 * token is at least one byte); an image and the answer by allowances. A call that goes beyond them
 * is the rare overrun: settlement never debits more than the hold.
 */
export const IMAGE_TOKEN_ALLOWANCE = 2_000;
export const COMPLETION_TOKEN_ALLOWANCE = 4_096;
const MESSAGE_OVERHEAD_TOKENS = 8;
/** Browser time one agent step may use between two decisions (its actions and the next observation). */
export const STEP_BROWSER_ALLOWANCE_SECONDS = 60;

function textTokens(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** An upper bound of the prompt tokens of a chat request. */
export function promptTokenBound(
  messages: readonly ChatCompletionMessageParam[],
  tools: readonly ChatCompletionTool[] = [],
): number {
  let tokens = textTokens(JSON.stringify(tools));
  for (const message of messages) {
    tokens += MESSAGE_OVERHEAD_TOKENS;
    const content = message.content;
    if (typeof content === 'string') tokens += textTokens(content);
    else if (Array.isArray(content)) {
      for (const part of content)
        tokens +=
          part.type === 'text'
            ? textTokens(part.text)
            : part.type === 'image_url'
              ? IMAGE_TOKEN_ALLOWANCE
              : textTokens(JSON.stringify(part));
    }
  }
  return tokens;
}

/** The most one LLM call with this prompt may cost, in micro-USD. */
export function llmCallWorstCaseMicros(
  prices: PriceTable,
  model: string,
  promptTokens: number,
  completionTokens = COMPLETION_TOKEN_ALLOWANCE,
): number {
  return prices.costMicros(model, promptTokens, completionTokens);
}

/** The most one agent step may cost: its decision (when the wallet pays the LLM) and its browser time. */
export function agentStepWorstCaseMicros(input: {
  prices: PriceTable;
  model: string;
  walletBilled: boolean;
  messages: readonly ChatCompletionMessageParam[];
  tools: readonly ChatCompletionTool[];
}): number {
  const llm = input.walletBilled
    ? llmCallWorstCaseMicros(input.prices, input.model, promptTokenBound(input.messages, input.tools))
    : 0;
  return llm + STEP_BROWSER_ALLOWANCE_SECONDS * BROWSER_MICROS_PER_SECOND;
}

/** Fixed instructions and page metadata around the page text of an extraction prompt. */
const EXTRACTION_PROMPT_OVERHEAD_TOKENS = 2_000;

/** The most a structured extraction may cost: its call and the one re-ask, each with the answer allowance. */
export function extractionWorstCaseMicros(prices: PriceTable, model: string, promptText: string): number {
  const prompt = textTokens(promptText) + EXTRACTION_PROMPT_OVERHEAD_TOKENS;
  return 2 * llmCallWorstCaseMicros(prices, model, prompt + COMPLETION_TOKEN_ALLOWANCE);
}
