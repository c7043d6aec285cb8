import { randomUUID } from 'node:crypto';
import { BoundedCache } from '../../../lib/bounded-cache';
import type OpenAI from 'openai';
import type { Db } from '../../../db/connect';
import { chargeUsage, getWalletSummary } from '../../../db/repos/ledger';
import { writeSystemLog } from '../../../db/repos/system-logs';
import type { PriceTable } from '../../../lib/billing/pricing';
import { microsToUsd } from '../../../lib/money';
import { embeddingCostMicros, type Embedder } from '../../../lib/skills/embeddings';
import type { SkillsDirectoryItem } from '../../../lib/skills/item';
import {
  candidateKey,
  embeddingCandidates,
  ftsCandidates,
  itemsByKeys,
  plainSearch,
  searchTerms,
  type CandidateKey,
} from '../../../db/skills/search';

/**
 * AI search: the need goes through the LLM once for a plan (keywords, likely tags, intent; JSON
 * Schema structured output). Candidates come from full-text search on the plan's words (top 50)
 * and from embeddings (top 50 by cosine similarity to the query's embedding), fused by reciprocal
 * rank (k = 60). The fused top 30 may be reranked by the LLM (SKILLS_AI_RERANK); the rest keep the
 * fused order. LLM and embedding usage is charged to the caller's wallet as one agent transaction
 * per request. Plans and rankings are cached per user (10 minutes), so paging through one search
 * costs nothing more, and no one gets a search paid for by another account. Without a configured LLM or embedding model, or with a wallet that is not positive,
 * or when the planning call fails, it answers with plain search and says why in `meta`.
 */

export const AI_AGENT_NAME = 'skills-ai-search';
export const RRF_K = 60;
export const RETRIEVER_DEPTH = 50;
export const RERANK_DEPTH = 30;
const CACHE_TTL_MS = 10 * 60_000;
const CACHE_ENTRIES = 500;

export interface SearchPlan {
  keywords: string[];
  tags: string[];
  intent: string;
}

export interface AiSearchDeps {
  db: Db;
  /** The service LLM endpoint; null when not configured. */
  llm: OpenAI | null;
  embedder: Embedder | null;
  model: string;
  /** Prices `model` (lib/config.ts makes sure SKILLS_AI_MODEL is in the table). */
  prices: PriceTable;
  rerank: boolean;
}

export interface AiSearchRequest {
  userId: string;
  q: string;
  page: number;
  pageSize: number;
  requestId: string;
}

export interface AiSearchMeta {
  page: number;
  pageSize: number;
  total: number;
  mode: 'ai' | 'plain';
  fallbackReason?: string;
  plan?: SearchPlan;
  reranked?: boolean;
  /** True when the plan and ranking came from this user's short-lived cache in this process (nothing was charged). */
  cached?: boolean;
}

const PLAN_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['keywords', 'tags', 'intent'],
  properties: {
    keywords: { type: 'array', items: { type: 'string' }, description: 'Search keywords or short phrases' },
    tags: { type: 'array', items: { type: 'string' }, description: 'Likely lowercase topic tags' },
    intent: { type: 'string', description: 'What the user wants to do, in one sentence' },
  },
} as const;

const RERANK_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['ranking'],
  properties: { ranking: { type: 'array', items: { type: 'integer' }, description: 'Candidate numbers, best first' } },
} as const;

const PLAN_INSTRUCTION = [
  'You turn a request for an agent skill into a search plan over a catalogue of agent skills.',
  'Each skill is a folder with a SKILL.md; the catalogue indexes its name, tags, description and content.',
  'keywords: 3 to 8 short keywords or phrases likely to appear in the name or description of a fitting skill',
  '(include synonyms, tool, product and file-format names). tags: up to 5 likely lowercase topic tags',
  '(for example testing, security, frontend, devops, documents, data-analysis). intent: one sentence.',
  'Answer with one JSON object matching the schema and nothing else.',
].join(' ');

const RERANK_INSTRUCTION = [
  'You rank agent skills by how well each fits the user need.',
  'Answer with one JSON object {"ranking": [...]} listing candidate numbers, best fit first.',
  'Leave out candidates that do not fit at all.',
].join(' ');

/**
 * Plans (with the query vector) and reranks, so paging through one search neither re-asks nor
 * reorders. Keyed by user: a cached answer is only ever one the same account already paid for.
 */
const planCache = new BoundedCache<{ plan: SearchPlan; vector: number[] | null }>({
  maxEntries: CACHE_ENTRIES,
  ttlMs: CACHE_TTL_MS,
});
const rerankCache = new BoundedCache<number[]>({ maxEntries: CACHE_ENTRIES, ttlMs: CACHE_TTL_MS });

interface Usage {
  chat: { calls: number; promptTokens: number; completionTokens: number };
  embeddingTokens: number;
}

function parseJson(content: string | null | undefined): unknown {
  const trimmed = (content ?? '').trim();
  const unfenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/.exec(trimmed)?.[1] ?? trimmed;
  return JSON.parse(unfenced);
}

const cleanStrings = (value: unknown, max: number, maxLength: number): string[] =>
  Array.isArray(value)
    ? [
        ...new Set(
          value
            .filter((v): v is string => typeof v === 'string')
            .map((v) => v.trim().slice(0, maxLength))
            .filter(Boolean),
        ),
      ].slice(0, max)
    : [];

export function readPlan(value: unknown): SearchPlan {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('the plan is not a JSON object');
  const record = value as Record<string, unknown>;
  if (!Array.isArray(record.keywords)) throw new Error('the plan has no keywords array');
  return {
    keywords: cleanStrings(record.keywords, 12, 80),
    tags: cleanStrings(record.tags, 8, 40).map((t) => t.toLowerCase()),
    intent: typeof record.intent === 'string' ? record.intent.trim().slice(0, 500) : '',
  };
}

async function askJson(
  llm: OpenAI,
  model: string,
  usage: Usage,
  system: string,
  user: string,
  name: string,
  schema: object,
): Promise<unknown> {
  const completion = await llm.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: user },
    ],
    temperature: 0,
    response_format: {
      type: 'json_schema',
      json_schema: { name, schema: schema as Record<string, unknown>, strict: true },
    },
  });
  usage.chat.calls += 1;
  usage.chat.promptTokens += completion.usage?.prompt_tokens ?? 0;
  usage.chat.completionTokens += completion.usage?.completion_tokens ?? 0;
  const choice = completion.choices[0];
  if (!choice || choice.message.refusal)
    throw new Error(
      choice?.message.refusal ? `the model refused: ${choice.message.refusal}` : 'the model returned no answer',
    );
  if (choice.finish_reason === 'length') throw new Error('the answer was cut off');
  return parseJson(choice.message.content);
}

/** Reciprocal rank fusion: score(d) = sum over lists of 1 / (k + rank), rank from 1; ties keep first-seen order. */
export function reciprocalRankFusion(lists: readonly (readonly CandidateKey[])[], k = RRF_K): CandidateKey[] {
  const scores = new Map<string, { key: CandidateKey; score: number; first: number }>();
  let seen = 0;
  for (const list of lists) {
    list.forEach((key, index) => {
      const id = candidateKey(key);
      const entry = scores.get(id) ?? { key, score: 0, first: seen++ };
      entry.score += 1 / (k + index + 1);
      scores.set(id, entry);
    });
  }
  return [...scores.values()].sort((a, b) => b.score - a.score || a.first - b.first).map((e) => e.key);
}

/** Applies an LLM ranking (1-based candidate numbers) to the head; unmentioned candidates follow in their order. */
export function applyRanking(head: readonly CandidateKey[], ranking: readonly number[]): CandidateKey[] {
  const picked: CandidateKey[] = [];
  const used = new Set<number>();
  for (const n of ranking) {
    if (Number.isInteger(n) && n >= 1 && n <= head.length && !used.has(n)) {
      used.add(n);
      picked.push(head[n - 1]);
    }
  }
  return [...picked, ...head.filter((_, i) => !used.has(i + 1))];
}

function rerankPrompt(q: string, plan: SearchPlan, items: readonly SkillsDirectoryItem[]): string {
  const lines = items.map((item, i) => {
    const description = (item.description ?? '').replace(/\s+/g, ' ').slice(0, 300);
    return `[${i + 1}] ${item.name}${item.tags.length ? ` (tags: ${item.tags.join(', ')})` : ''}: ${description}`;
  });
  return [`User need: ${q}`, ...(plan.intent ? [`Intent: ${plan.intent}`] : []), '', 'Candidates:', ...lines].join(
    '\n',
  );
}

async function plainFallback(db: Db, request: AiSearchRequest, reason: string) {
  const { items, total } = await plainSearch(db, request.q, request);
  const meta: AiSearchMeta = {
    page: request.page,
    pageSize: request.pageSize,
    total,
    mode: 'plain',
    fallbackReason: reason,
  };
  return { items, meta };
}

async function chargeSearch(
  deps: AiSearchDeps,
  request: AiSearchRequest,
  usage: Usage,
  outcome: string,
): Promise<void> {
  const chatMicros = usage.chat.calls
    ? deps.prices.costMicros(deps.model, usage.chat.promptTokens, usage.chat.completionTokens)
    : 0;
  const embeddingMicros =
    usage.embeddingTokens && deps.embedder ? embeddingCostMicros(deps.embedder.model, usage.embeddingTokens) : 0;
  const costMicros = chatMicros + embeddingMicros;
  if (usage.chat.calls === 0 && usage.embeddingTokens === 0) return;
  await chargeUsage(deps.db, {
    userId: request.userId,
    jobId: null,
    agentName: AI_AGENT_NAME,
    result: outcome,
    payload: {
      requestId: request.requestId,
      q: request.q.slice(0, 500),
      llm: usage.chat.calls
        ? [
            {
              model: deps.model,
              calls: usage.chat.calls,
              promptTokens: usage.chat.promptTokens,
              completionTokens: usage.chat.completionTokens,
              costUsd: microsToUsd(chatMicros),
            },
          ]
        : [],
      embeddings:
        usage.embeddingTokens && deps.embedder
          ? { model: deps.embedder.model, promptTokens: usage.embeddingTokens, costUsd: microsToUsd(embeddingMicros) }
          : null,
    },
    costMicros,
    idempotencyKey: `${AI_AGENT_NAME}:${request.requestId}:${randomUUID()}`,
  });
  await writeSystemLog(deps.db, {
    userId: request.userId,
    message: `skills ai-search charged $${microsToUsd(costMicros).toFixed(6)} for usage (request ${request.requestId})`,
  });
}

export async function aiSearch(
  deps: AiSearchDeps,
  request: AiSearchRequest,
): Promise<{ items: SkillsDirectoryItem[]; meta: AiSearchMeta }> {
  const { db, llm, embedder } = deps;
  if (!llm)
    return plainFallback(
      db,
      request,
      'llm_not_configured: the service LLM endpoint is not configured (OPENAI_BASE_URL / OPENAI_API_KEY)',
    );
  if (!embedder)
    return plainFallback(db, request, 'embeddings_not_configured: no embedding model is configured (EMBEDDINGS_MODEL)');
  if ((await getWalletSummary(db, request.userId)).availableMicros <= 0) {
    return plainFallback(
      db,
      request,
      'insufficient_funds: the available balance (balance minus holds of running jobs) is not positive, so no LLM is used',
    );
  }

  const usage: Usage = { chat: { calls: 0, promptTokens: 0, completionTokens: 0 }, embeddingTokens: 0 };
  const normalizedQ = request.q.trim().replace(/\s+/g, ' ').toLowerCase();
  const planKey = `${request.userId}\u0000${deps.model}\u0000${embedder.model}\u0000${normalizedQ}`;
  let planned = planCache.get(planKey);
  if (!planned) {
    const [planResult, vectorResult] = await Promise.allSettled([
      askJson(llm, deps.model, usage, PLAN_INSTRUCTION, request.q, 'skill_search_plan', PLAN_SCHEMA).then(readPlan),
      embedder.embed([request.q]).then(({ vectors, promptTokens }) => {
        usage.embeddingTokens += promptTokens;
        return vectors[0];
      }),
    ]);
    if (planResult.status === 'rejected') {
      await chargeSearch(deps, request, usage, 'failed');
      return plainFallback(
        db,
        request,
        `llm_error: planning failed (${(planResult.reason as Error)?.message ?? planResult.reason})`,
      );
    }
    planned = { plan: planResult.value, vector: vectorResult.status === 'fulfilled' ? vectorResult.value : null };
    planCache.set(planKey, planned);
  }
  const { plan, vector } = planned;

  const planText = [...plan.keywords, ...plan.tags].join(' ');
  const terms = searchTerms(planText, 24);
  const [fts, semantic] = await Promise.all([
    ftsCandidates(db, terms.length ? terms : searchTerms(request.q), RETRIEVER_DEPTH),
    vector ? embeddingCandidates(db, vector, embedder.model, RETRIEVER_DEPTH) : Promise.resolve([]),
  ]);
  let ordered = reciprocalRankFusion([fts, semantic]);

  let reranked = false;
  if (deps.rerank && ordered.length > 1) {
    const head = ordered.slice(0, RERANK_DEPTH);
    const rerankKey = `${planKey}\u0000${head.map(candidateKey).join('\u0001')}`;
    let ranking = rerankCache.get(rerankKey);
    if (!ranking) {
      try {
        const items = await itemsByKeys(db, head, { withContent: false });
        const answer = (await askJson(
          llm,
          deps.model,
          usage,
          RERANK_INSTRUCTION,
          rerankPrompt(request.q, plan, items),
          'skill_rerank',
          RERANK_SCHEMA,
        )) as {
          ranking?: unknown;
        };
        if (!Array.isArray(answer?.ranking)) throw new Error('no ranking array');
        // Numbers refer to `items`, which may be shorter than `head` if rows vanished meanwhile.
        // Only whole candidate numbers count; anything else the model wrote is dropped before use.
        const numbers = answer.ranking.filter((n): n is number => Number.isInteger(n) && n >= 1 && n <= items.length);
        const byItem = items.map(
          (item) => head.findIndex((k) => k.provider === item.provider && k.externalId === item.externalId) + 1,
        );
        ranking = numbers.map((n) => byItem[n - 1]).filter((n): n is number => typeof n === 'number' && n > 0);
        rerankCache.set(rerankKey, ranking);
      } catch {
        ranking = undefined; // A failed rerank keeps the fused order.
      }
    }
    if (ranking) {
      ordered = [...applyRanking(head, ranking), ...ordered.slice(RERANK_DEPTH)];
      reranked = true;
    }
  }

  await chargeSearch(deps, request, usage, 'completed');
  const cached = usage.chat.calls === 0 && usage.embeddingTokens === 0;
  const start = (request.page - 1) * request.pageSize;
  const items = await itemsByKeys(db, ordered.slice(start, start + request.pageSize));
  const meta: AiSearchMeta = {
    page: request.page,
    pageSize: request.pageSize,
    total: ordered.length,
    mode: 'ai',
    plan,
    reranked,
    ...(cached ? { cached } : {}),
  };
  return { items, meta };
}
