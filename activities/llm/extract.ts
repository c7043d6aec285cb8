import type OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { compileSchemaValidator } from '../../lib/llm/structured-output';

export interface PageForExtraction {
  url: string;
  markdown: string;
  metadata: { title: string | null; description: string | null };
}

export interface ExtractionOutput {
  name: string;
  schema: object;
  strict: boolean;
}

export interface ExtractInput {
  model: string;
  systemPrompt?: string;
  page: PageForExtraction;
  output: ExtractionOutput;
  temperature?: number;
  maxInputChars?: number;
}

export interface LlmUsage {
  /** The requested model id, which is what billing prices. */
  model: string;
  promptTokens: number;
  completionTokens: number;
  calls: number;
}

export interface ExtractResult {
  data: unknown;
  usage: LlmUsage;
}

/** The usage of one LLM call. */
export interface LlmCallUsage {
  model: string;
  promptTokens: number;
  completionTokens: number;
}

export interface ExtractDeps {
  client: OpenAI;
  /**
   * Called after each LLM call answered, before anything else happens (a re-ask included), with
   * that call's usage and its 0-based index: usage is recorded as it is consumed, so a later call
   * that fails cannot lose it.
   */
  recordCall?: (usage: LlmCallUsage, callIndex: number) => Promise<void>;
}

/** The model could not produce output matching the schema; `usage` sums the calls made (each already passed to `recordCall`). */
export class ExtractionError extends Error {
  override readonly name = 'ExtractionError';
  constructor(
    message: string,
    readonly usage: LlmUsage,
  ) {
    super(message);
  }
}

export const DEFAULT_MAX_INPUT_CHARS = 60_000;

export const DEFAULT_EXTRACTION_INSTRUCTION = [
  'You extract structured data from a single web page.',
  'Use only information that appears in the page content; never invent facts.',
  'When the page does not contain a value, use an empty string, an empty list, 0 or false as the schema allows.',
  'Answer with one JSON object that matches the given JSON Schema exactly and nothing else.',
].join(' ');

function systemMessage(systemPrompt: string | undefined): string {
  const extra = systemPrompt?.trim();
  return extra
    ? `${DEFAULT_EXTRACTION_INSTRUCTION}\n\nAdditional instructions:\n${extra}`
    : DEFAULT_EXTRACTION_INSTRUCTION;
}

export function truncateForModel(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = Math.max(0, maxChars);
  const lastKept = text.charCodeAt(end - 1);
  if (lastKept >= 0xd800 && lastKept <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}\n\n[content truncated: showing the first ${end} of ${text.length} characters]`;
}

function pageMessage(page: PageForExtraction, maxInputChars: number): string {
  return [
    `URL: ${page.url}`,
    `Title: ${page.metadata.title ?? '(none)'}`,
    `Description: ${page.metadata.description ?? '(none)'}`,
    '',
    'Page content (Markdown):',
    '<<<PAGE',
    truncateForModel(page.markdown, maxInputChars),
    'PAGE>>>',
  ].join('\n');
}

type AnswerCheck = { ok: true; data: unknown } | { ok: false; problems: string[] };

/** Linear on any model output: the opening line allows no line break before its own, so it can be split one way only. */
const CODE_FENCE = /^```(?:json)?[^\S\n]*\n([\s\S]*?)\n?```$/;

function parseJsonAnswer(content: string): { ok: true; data: unknown } | { ok: false; problem: string } {
  const trimmed = content.trim();
  const unfenced = CODE_FENCE.exec(trimmed)?.[1] ?? trimmed;
  try {
    return { ok: true, data: JSON.parse(unfenced) };
  } catch (error) {
    return { ok: false, problem: `the answer is not valid JSON (${(error as Error).message})` };
  }
}

function checkAnswer(
  content: string | null,
  finishReason: string,
  validate: (value: unknown) => string[],
): AnswerCheck {
  if (finishReason === 'length') return { ok: false, problems: ['the answer was cut off before it was complete'] };
  if (!content?.trim()) return { ok: false, problems: ['the answer was empty'] };
  const parsed = parseJsonAnswer(content);
  if (!parsed.ok) return { ok: false, problems: [parsed.problem] };
  const problems = validate(parsed.data);
  return problems.length === 0 ? { ok: true, data: parsed.data } : { ok: false, problems };
}

function correctionRequest(problems: readonly string[]): string {
  return [
    'Your previous answer does not match the required JSON Schema:',
    ...problems.map((problem) => `- ${problem}`),
    'Reply again with only the corrected JSON object.',
  ].join('\n');
}

export async function extractStructured(deps: ExtractDeps, input: ExtractInput): Promise<ExtractResult> {
  const validate = compileSchemaValidator(input.output.schema);
  const usage: LlmUsage = { model: input.model, promptTokens: 0, completionTokens: 0, calls: 0 };
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: systemMessage(input.systemPrompt) },
    { role: 'user', content: pageMessage(input.page, input.maxInputChars ?? DEFAULT_MAX_INPUT_CHARS) },
  ];

  const ask = async (): Promise<ChatCompletion.Choice> => {
    const completion = await deps.client.chat.completions.create({
      model: input.model,
      messages,
      ...(input.temperature === undefined ? {} : { temperature: input.temperature }),
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: input.output.name,
          schema: input.output.schema as Record<string, unknown>,
          strict: input.output.strict,
        },
      },
    });
    const call: LlmCallUsage = {
      model: input.model,
      promptTokens: completion.usage?.prompt_tokens ?? 0,
      completionTokens: completion.usage?.completion_tokens ?? 0,
    };
    await deps.recordCall?.(call, usage.calls);
    usage.calls += 1;
    usage.promptTokens += call.promptTokens;
    usage.completionTokens += call.completionTokens;
    const choice = completion.choices[0];
    if (!choice) throw new ExtractionError('the model returned no answer', usage);
    if (choice.message.refusal) throw new ExtractionError(`the model refused: ${choice.message.refusal}`, usage);
    if (choice.finish_reason === 'content_filter') {
      throw new ExtractionError('the answer was blocked by the content filter', usage);
    }
    return choice;
  };

  const first = await ask();
  const firstCheck = checkAnswer(first.message.content, first.finish_reason, validate);
  if (firstCheck.ok) return { data: firstCheck.data, usage };

  messages.push({ role: 'assistant', content: first.message.content ?? '' });
  messages.push({ role: 'user', content: correctionRequest(firstCheck.problems) });
  const second = await ask();
  const secondCheck = checkAnswer(second.message.content, second.finish_reason, validate);
  if (secondCheck.ok) return { data: secondCheck.data, usage };

  throw new ExtractionError(
    `the model output did not match the schema after one retry: ${secondCheck.problems.join('; ')}`,
    usage,
  );
}
