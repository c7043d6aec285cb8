import type OpenAI from 'openai';
import { createLlmClient, OPENAI_DEFAULT_BASE_URL } from './client';
import type { PriceTable } from '../billing/pricing';

export type LlmProvider = 'service' | 'router';

export interface LlmSettings {
  /** The platform-managed model endpoint, billed from the wallet. */
  service: { baseURL: string | null; apiKey: string | null };
  /** A third-party model router used with the account's own key; its token cost is the account's, not the wallet's. */
  routerBaseURL: string | null;
  /** What the `service` provider accepts and how its tokens are billed. */
  prices: PriceTable;
  timeoutMs?: number;
}

export class LlmUnavailableError extends Error {}

export function createLlmProviders(settings: LlmSettings) {
  const clients = new Map<string, OpenAI>();
  const clientFor = (baseURL: string, apiKey: string) => {
    const key = `${baseURL}\u0000${apiKey}`;
    let client = clients.get(key);
    if (!client)
      clients.set(key, (client = createLlmClient({ baseURL, apiKey, timeoutMs: settings.timeoutMs ?? 120_000 })));
    return client;
  };
  return {
    prices: settings.prices,
    /** Resolves the client for a request; `walletBilled` says whether token cost is charged to the wallet. */
    resolve(
      provider: LlmProvider,
      routerApiKey: () => Promise<string | null>,
    ): Promise<{ client: OpenAI; walletBilled: boolean }> {
      return (async () => {
        if (provider === 'service') {
          const { baseURL, apiKey } = settings.service;
          if (!baseURL && !apiKey)
            throw new LlmUnavailableError(
              'The service LLM provider is not configured (operator: set OPENAI_BASE_URL and/or OPENAI_API_KEY)',
            );
          return { client: clientFor(baseURL ?? OPENAI_DEFAULT_BASE_URL, apiKey ?? ''), walletBilled: true };
        }
        if (!settings.routerBaseURL)
          throw new LlmUnavailableError('The router LLM provider is not configured (operator: set ROUTER_BASE_URL)');
        const key = await routerApiKey();
        if (!key)
          throw new LlmUnavailableError(
            'llm_provider "router" needs a router API key on the account (operator: admin set-router-key)',
          );
        return { client: clientFor(settings.routerBaseURL, key), walletBilled: false };
      })();
    },
  };
}

export type LlmProviders = ReturnType<typeof createLlmProviders>;
