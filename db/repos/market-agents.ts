import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../connect';
import type { AgentMarketDetailsTable, AgentMarketPurchasesTable, MarketSubmissionsTable } from '../schema';
import { seal, unseal } from '../../lib/crypto';
import type { FieldSpec } from '../../lib/llm/structured-output';
import type {
  AgentCustomToolSelection,
  AgentMarketToolSelection,
  AgentSelectionParams,
  ApprovedListing,
  ApprovedToolLookup,
  PreparedAgentSubmission,
} from '../../lib/market/agent-submission';
import { lockWallets, postAgentPurchase } from './ledger';
import { findPublicMcpEntry } from './market-mcp';
import { catalogueOrder, submissionReads, type CatalogueFilter } from './market-listings';
import { toCore, type MarketDetailsHooks, type SubmissionCore } from './market-submissions';
import type { PageRequest } from '../../lib/pagination';

/** An agent-market submission: the common columns and its details (prompts and params sealed; unsealed only on request). */
export interface AgentSubmission extends SubmissionCore {
  priceMicros: number;
  suggestedLlmProvider: 'service' | 'router';
  suggestedLlmModel: string;
  runMode: 'template' | 'task';
  allowTaskOverride: boolean;
  systemPromptSealed: string;
  promptTemplateSealed: string | null;
  inputSchema: Record<string, unknown> | null;
  structuredOutput: FieldSpec[] | null;
  skills: Record<string, unknown> | null;
  mcpSelections: AgentMarketToolSelection[];
  customMcpSelections: AgentCustomToolSelection[];
  selectionParamsSealed: string;
}

/** The private parts of a submission, in plain text. */
export interface AgentSecrets {
  systemPrompt: string;
  promptTemplate: string | null;
  selectionParams: AgentSelectionParams;
}

// Each sealed value is bound to its submission and its role: a value moved to another row or column does not open.
const aad = (role: 'system-prompt' | 'prompt-template' | 'selection-params', submissionId: string) =>
  `agent-market-${role}:${submissionId}`;

function sealSecrets(masterKey: Buffer, submissionId: string, secrets: AgentSecrets) {
  return {
    system_prompt_sealed: seal(masterKey, secrets.systemPrompt, aad('system-prompt', submissionId)),
    prompt_template_sealed:
      secrets.promptTemplate === null
        ? null
        : seal(masterKey, secrets.promptTemplate, aad('prompt-template', submissionId)),
    selection_params_sealed: seal(
      masterKey,
      JSON.stringify(secrets.selectionParams),
      aad('selection-params', submissionId),
    ),
  };
}

/** The prompts and selection params in plain text: for the owner's view and for admitting a run (sealed again into the run), never for consumers. */
export function unsealAgentSecrets(
  masterKey: Buffer,
  sub: Pick<AgentSubmission, 'id' | 'systemPromptSealed' | 'promptTemplateSealed' | 'selectionParamsSealed'>,
): AgentSecrets {
  return {
    systemPrompt: unseal(masterKey, sub.systemPromptSealed, aad('system-prompt', sub.id)),
    promptTemplate:
      sub.promptTemplateSealed === null
        ? null
        : unseal(masterKey, sub.promptTemplateSealed, aad('prompt-template', sub.id)),
    selectionParams: JSON.parse(
      unseal(masterKey, sub.selectionParamsSealed, aad('selection-params', sub.id)),
    ) as AgentSelectionParams,
  };
}

type JoinedRow = Selectable<MarketSubmissionsTable> & Omit<Selectable<AgentMarketDetailsTable>, 'submission_id'>;

function toAgentSubmission(row: JoinedRow): AgentSubmission {
  return {
    ...toCore(row),
    priceMicros: Number(row.price_micros),
    suggestedLlmProvider: row.suggested_llm_provider as 'service' | 'router',
    suggestedLlmModel: row.suggested_llm_model,
    runMode: row.run_mode,
    allowTaskOverride: row.allow_task_override,
    systemPromptSealed: row.system_prompt_sealed,
    promptTemplateSealed: row.prompt_template_sealed,
    inputSchema: row.input_schema,
    structuredOutput: row.structured_output as FieldSpec[] | null,
    skills: row.skills,
    mcpSelections: row.mcp_selections as AgentMarketToolSelection[],
    customMcpSelections: row.custom_mcp_selections as AgentCustomToolSelection[],
    selectionParamsSealed: row.selection_params_sealed,
  };
}

const DETAIL_COLUMNS = [
  'd.price_micros',
  'd.suggested_llm_provider',
  'd.suggested_llm_model',
  'd.run_mode',
  'd.allow_task_override',
  'd.system_prompt_sealed',
  'd.prompt_template_sealed',
  'd.input_schema',
  'd.structured_output',
  'd.skills',
  'd.mcp_selections',
  'd.custom_mcp_selections',
  'd.selection_params_sealed',
] as const;

function joined(db: Db) {
  return db
    .selectFrom('market_submissions as s')
    .innerJoin('agent_market_details as d', 'd.submission_id', 's.id')
    .selectAll('s')
    .select(DETAIL_COLUMNS)
    .where('s.market', '=', 'agent');
}

const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

/** Writes (or replaces) the details of submission `id`, sealing prompts and params under its id. */
export function agentDetailsWriter(masterKey: Buffer, prepared: PreparedAgentSubmission) {
  return async (trx: Db, id: string) => {
    const values = {
      price_micros: prepared.priceMicros,
      suggested_llm_provider: prepared.suggestedLlmProvider,
      suggested_llm_model: prepared.suggestedLlmModel,
      run_mode: prepared.runMode,
      allow_task_override: prepared.allowTaskOverride,
      input_schema: jsonOrNull(prepared.inputSchema),
      structured_output: jsonOrNull(prepared.structuredOutput),
      skills: jsonOrNull(prepared.skills),
      mcp_selections: JSON.stringify(prepared.mcpSelections),
      custom_mcp_selections: JSON.stringify(prepared.customMcpSelections),
      ...sealSecrets(masterKey, id, prepared),
    };
    await trx
      .insertInto('agent_market_details')
      .values({ submission_id: id, ...values })
      .onConflict((oc) => oc.column('submission_id').doUpdateSet(values))
      .execute();
  };
}

/** Hooks of the agent market for the shared review machinery: a revision copies the details, resealed under its own id. */
export function agentMarketHooks(masterKey: Buffer): MarketDetailsHooks {
  return {
    async copyDetails(trx, fromId, toId) {
      const from = await trx
        .selectFrom('agent_market_details')
        .selectAll()
        .where('submission_id', '=', fromId)
        .executeTakeFirstOrThrow();
      const secrets = unsealAgentSecrets(masterKey, {
        id: fromId,
        systemPromptSealed: from.system_prompt_sealed,
        promptTemplateSealed: from.prompt_template_sealed,
        selectionParamsSealed: from.selection_params_sealed,
      });
      await trx
        .insertInto('agent_market_details')
        .values({
          ...from,
          submission_id: toId,
          input_schema: jsonOrNull(from.input_schema),
          structured_output: jsonOrNull(from.structured_output),
          skills: jsonOrNull(from.skills),
          mcp_selections: JSON.stringify(from.mcp_selections),
          custom_mcp_selections: JSON.stringify(from.custom_mcp_selections),
          ...sealSecrets(masterKey, toId, secrets),
        })
        .execute();
    },
  };
}

const reads = submissionReads(joined, (row) => toAgentSubmission(row as JoinedRow));

/** An agent submission by id (only the owner's with `ownerId`), or null. */
export const findAgentSubmission: (db: Db, id: string, ownerId?: string) => Promise<AgentSubmission | null> =
  reads.find;

export const findAgentSubmissions: (db: Db, ids: readonly string[]) => Promise<Map<string, AgentSubmission>> =
  reads.findMany;

/** The live, approved agent of a listing (its public id, the agentId), or null. */
export const findPublicAgent: (db: Db, listingId: string) => Promise<AgentSubmission | null> = reads.findPublic;

const priceMicros = sql<number>`d.price_micros`;

/**
 * The public catalogue: live approved agents; with `q`, full text over name and description, ranked.
 * The catalogue pages also bound the price (`paid`: only agents with a price, false: only free ones)
 * and sort (price, name or approval; agents have no quality score).
 */
export async function searchPublicAgents(
  db: Db,
  filter: CatalogueFilter & { paid?: boolean },
  page: PageRequest,
): Promise<{ rows: AgentSubmission[]; total: number }> {
  const { minPriceMicros: min, maxPriceMicros: max, paid } = filter;
  return reads.searchPublic(
    db,
    filter.q,
    page,
    (query) => {
      let narrowed = query;
      if (paid !== undefined) narrowed = narrowed.where(sql<boolean>`${priceMicros} ${sql.raw(paid ? '>' : '=')} 0`);
      if (min !== undefined) narrowed = narrowed.where(sql<boolean>`${priceMicros} >= ${min}`);
      if (max !== undefined) narrowed = narrowed.where(sql<boolean>`${priceMicros} <= ${max}`);
      return narrowed;
    },
    catalogueOrder(filter.sort, priceMicros, null),
  );
}

/** The enabled tools and declared parameters of each live approved tool-market listing among `mcpIds` (absent: not approved). */
export function approvedToolLookup(db: Db): ApprovedToolLookup {
  return async (mcpIds) => {
    const found = new Map<string, ApprovedListing>();
    for (const id of mcpIds) {
      const entry = await findPublicMcpEntry(db, id);
      if (entry) {
        found.set(id, {
          tools: new Set((entry.approvedTools ?? entry.tools).filter((t) => t.isEnabled).map((t) => t.toolName)),
          requiredUserParamsSchema: entry.requiredUserParamsSchema ?? {},
        });
      }
    }
    return found;
  };
}

export type AgentPurchase = Selectable<AgentMarketPurchasesTable>;

export async function findPurchase(db: Db, listingId: string, consumerId: string): Promise<AgentPurchase | undefined> {
  return db
    .selectFrom('agent_market_purchases')
    .selectAll()
    .where('listing_id', '=', listingId)
    .where('consumer_id', '=', consumerId)
    .executeTakeFirst();
}

export type PurchaseOutcome =
  { outcome: 'created' | 'existing'; purchase: AgentPurchase } | { outcome: 'insufficient_funds' };

/**
 * Buys a listing once: with both wallets locked (in user-id order), an existing purchase of this
 * consumer is returned as it is; otherwise the purchase is inserted and the money posted (the
 * consumer's debit, the provider's share, the commission kept) in the same transaction. Concurrent
 * purchases of one consumer queue on the wallet lock, and the unique (listing, consumer) key backs it.
 */
export async function purchaseAgent(
  db: Db,
  input: { agent: AgentSubmission; consumerId: string; commissionMicros: number; agentName: string },
): Promise<PurchaseOutcome> {
  const { agent } = input;
  return db.transaction().execute(async (trx) => {
    await lockWallets(trx, [input.consumerId, agent.ownerId]);
    const existing = await findPurchase(trx, agent.listingId, input.consumerId);
    if (existing) return { outcome: 'existing', purchase: existing };
    const id = randomUUID();
    const providerRevenueMicros = agent.priceMicros - input.commissionMicros;
    const posted = await postAgentPurchase(trx, {
      purchaseId: id,
      consumerId: input.consumerId,
      providerId: agent.ownerId,
      priceMicros: agent.priceMicros,
      providerRevenueMicros,
      agentName: input.agentName,
      payload: { agentId: agent.listingId, purchaseId: id, priceUsd: agent.priceMicros / 1_000_000 },
    });
    if (posted === 'insufficient_funds') return { outcome: 'insufficient_funds' };
    const purchase = await trx
      .insertInto('agent_market_purchases')
      .values({
        id,
        listing_id: agent.listingId,
        consumer_id: input.consumerId,
        provider_id: agent.ownerId,
        submission_id: agent.id,
        price_micros: agent.priceMicros,
        commission_micros: input.commissionMicros,
        provider_revenue_micros: providerRevenueMicros,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { outcome: 'created', purchase };
  });
}

/** Records which listing and submission a run used (idempotent per job). */
export async function recordAgentRun(
  db: Db,
  run: { jobId: string; agent: AgentSubmission; consumerId: string },
): Promise<void> {
  await db
    .insertInto('agent_market_runs')
    .values({
      job_id: run.jobId,
      listing_id: run.agent.listingId,
      submission_id: run.agent.id,
      consumer_id: run.consumerId,
      provider_id: run.agent.ownerId,
    })
    .onConflict((oc) => oc.column('job_id').doNothing())
    .execute();
}

/** The provider's aggregates of a listing: purchases, runs and sale revenue (never who bought or ran). */
export async function listingStats(
  db: Db,
  listingId: string,
): Promise<{ purchases: number; runs: number; revenueMicros: number }> {
  const [purchases, runs] = await Promise.all([
    db
      .selectFrom('agent_market_purchases')
      .select((eb) => [
        eb.fn.countAll<string>().as('n'),
        eb.fn.coalesce(eb.fn.sum<string>('provider_revenue_micros'), sql<string>`0`).as('revenue'),
      ])
      .where('listing_id', '=', listingId)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('agent_market_runs')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('listing_id', '=', listingId)
      .executeTakeFirstOrThrow(),
  ]);
  return { purchases: Number(purchases.n), runs: Number(runs.n), revenueMicros: Number(purchases.revenue) };
}
