import type OpenAI from 'openai';
import { createLlmClient, OPENAI_DEFAULT_BASE_URL } from '../llm/client';
import type { Config } from '../config';

/**
 * Embeddings come from the service LLM endpoint (OPENAI_BASE_URL / OPENAI_API_KEY) with the model
 * EMBEDDINGS_MODEL. Vectors are normalised to unit length before they are stored or compared, so
 * cosine similarity is a dot product (the real[] fallback) or 1 - pgvector's `<=>`.
 */
export interface Embedder {
  /** What the catalogue records per vector: the model id, plus `:<dimensions>` when shortened vectors are requested. */
  model: string;
  embed(texts: string[]): Promise<{ vectors: number[][]; promptTokens: number }>;
}

const BATCH_SIZE = 64;

/** Integer micro-USD per 1M input tokens; unknown embedding models are priced at the dearest known one. */
const EMBEDDING_PRICES: Record<string, number> = {
  'text-embedding-3-small': 20_000,
  'text-embedding-3-large': 130_000,
  'text-embedding-ada-002': 100_000,
};
const FALLBACK_EMBEDDING_PRICE = 130_000;

export function embeddingCostMicros(model: string, promptTokens: number): number {
  const key = model
    .trim()
    .toLowerCase()
    .replace(/^openai\//, '')
    .replace(/:\d+$/, '');
  const perMillion = EMBEDDING_PRICES[key] ?? FALLBACK_EMBEDDING_PRICE;
  return Math.ceil((Math.max(0, Math.ceil(promptTokens)) * perMillion) / 1_000_000);
}

export function normalizeVector(vector: readonly number[]): number[] {
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
  if (!Number.isFinite(norm) || norm === 0) throw new Error('the embedding is a zero or non-finite vector');
  return vector.map((v) => v / norm);
}

/** The OpenAI client for the service endpoint, or null when the operator configured none. */
export function serviceLlmClient(config: Pick<Config, 'openai'>, timeoutMs = 60_000): OpenAI | null {
  const { baseURL, apiKey } = config.openai;
  if (!baseURL && !apiKey) return null;
  return createLlmClient({ baseURL: baseURL ?? OPENAI_DEFAULT_BASE_URL, apiKey: apiKey ?? '', timeoutMs });
}

export function createEmbedder(client: OpenAI, model: string, dimensions: number | null = null): Embedder {
  return {
    model: dimensions ? `${model}:${dimensions}` : model,
    async embed(texts) {
      const vectors: number[][] = [];
      let promptTokens = 0;
      for (let start = 0; start < texts.length; start += BATCH_SIZE) {
        const batch = texts.slice(start, start + BATCH_SIZE);
        const response = await client.embeddings.create({
          model,
          input: batch,
          encoding_format: 'float',
          ...(dimensions ? { dimensions } : {}),
        });
        promptTokens += response.usage?.prompt_tokens ?? 0;
        const ordered = [...response.data].sort((a, b) => a.index - b.index);
        if (ordered.length !== batch.length)
          throw new Error(`the embeddings endpoint returned ${ordered.length} vectors for ${batch.length} inputs`);
        for (const entry of ordered) vectors.push(normalizeVector(entry.embedding));
      }
      return { vectors, promptTokens };
    },
  };
}

/** The embedder of this configuration, or null with the reason embeddings are unavailable. */
export function embedderFromConfig(config: Pick<Config, 'openai' | 'skills'>): Embedder | null {
  const client = serviceLlmClient(config);
  if (!client || !config.skills.embeddingsModel) return null;
  return createEmbedder(client, config.skills.embeddingsModel, config.skills.embeddingsDimensions);
}
