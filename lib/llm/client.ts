import OpenAI from 'openai';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
const NO_API_KEY_PLACEHOLDER = 'no-api-key';

/** An OpenAI-compatible client; retries are Temporal's job (activities) or the caller's, never the SDK's. */
export function createLlmClient(options: { baseURL: string; apiKey: string; timeoutMs: number }): OpenAI {
  return new OpenAI({
    baseURL: options.baseURL,
    apiKey: options.apiKey || NO_API_KEY_PLACEHOLDER,
    timeout: options.timeoutMs,
    maxRetries: 0,
  });
}
