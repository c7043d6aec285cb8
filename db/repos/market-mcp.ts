import { sql, type Selectable } from 'kysely';
import type { Db } from '../connect';
import type { MarketSubmissionsTable, McpMarketDetailsTable } from '../schema';
import { seal, unseal } from '../../lib/crypto';
import type { Discovery, MarketSourceType } from '../../lib/market/discovery';
import { toolListHash } from '../../lib/market/fingerprint';
import type { MonetizationStrategy, StoredMarketTool, StoredPricingEvent } from '../../lib/market/listing';
import type { PreparedMcpSubmission } from '../../lib/market/mcp-submission';
import { catalogueOrder, submissionReads, type CatalogueFilter } from './market-listings';
import { toCore, type MarketDetailsHooks, type SubmissionCore } from './market-submissions';
import type { PageRequest } from '../../lib/pagination';

/** A tool-market submission: the common columns and its details (staticConfig unsealed only on request). */
export interface McpSubmission extends SubmissionCore {
  type: MarketSourceType;
  sourceFingerprint: string;
  validationId: string;
  eventVerificationId: string | null;
  remoteMcpUrl: string | null;
  openapiBaseUrl: string | null;
  openapiSpec: Record<string, unknown> | null;
  staticConfigSealed: string;
  requiredUserParamsSchema: Record<string, unknown>;
  monetizationStrategy: MonetizationStrategy;
  pricingEvents: StoredPricingEvent[];
  tools: StoredMarketTool[];
  discoveryCache: Discovery;
  approvedTools: StoredMarketTool[] | null;
  approvedToolsHash: string | null;
}

const staticConfigAad = (submissionId: string) => `mcp-static-config:${submissionId}`;

export function sealStaticConfig(masterKey: Buffer, submissionId: string, config: Record<string, unknown>): string {
  return seal(masterKey, JSON.stringify(config), staticConfigAad(submissionId));
}

/** The provider's staticConfig in plain text: for the hosted endpoint's upstream calls only, never for responses. */
export function unsealStaticConfig(
  masterKey: Buffer,
  submission: Pick<McpSubmission, 'id' | 'staticConfigSealed'>,
): Record<string, unknown> {
  return JSON.parse(unseal(masterKey, submission.staticConfigSealed, staticConfigAad(submission.id))) as Record<
    string,
    unknown
  >;
}

type JoinedRow = Selectable<MarketSubmissionsTable> & Omit<Selectable<McpMarketDetailsTable>, 'submission_id'>;

function toMcpSubmission(row: JoinedRow): McpSubmission {
  return {
    ...toCore(row),
    type: row.type,
    sourceFingerprint: row.source_fingerprint,
    validationId: row.validation_id,
    eventVerificationId: row.event_verification_id,
    remoteMcpUrl: row.remote_mcp_url,
    openapiBaseUrl: row.openapi_base_url,
    openapiSpec: row.openapi_spec,
    staticConfigSealed: row.static_config_sealed,
    requiredUserParamsSchema: row.required_user_params_schema,
    monetizationStrategy: row.monetization_strategy,
    pricingEvents: row.pricing_events as StoredPricingEvent[],
    tools: row.tools as StoredMarketTool[],
    discoveryCache: row.discovery_cache as unknown as Discovery,
    approvedTools: row.approved_tools as StoredMarketTool[] | null,
    approvedToolsHash: row.approved_tools_hash,
  };
}

const DETAIL_COLUMNS = [
  'd.type',
  'd.source_fingerprint',
  'd.validation_id',
  'd.event_verification_id',
  'd.remote_mcp_url',
  'd.openapi_base_url',
  'd.openapi_spec',
  'd.static_config_sealed',
  'd.required_user_params_schema',
  'd.monetization_strategy',
  'd.pricing_events',
  'd.tools',
  'd.discovery_cache',
  'd.approved_tools',
  'd.approved_tools_hash',
] as const;

function joined(db: Db) {
  return db
    .selectFrom('market_submissions as s')
    .innerJoin('mcp_market_details as d', 'd.submission_id', 's.id')
    .selectAll('s')
    .select(DETAIL_COLUMNS)
    .where('s.market', '=', 'mcp');
}

/** Writes (or replaces) the details of submission `id`. */
export function mcpDetailsWriter(masterKey: Buffer, prepared: PreparedMcpSubmission) {
  return async (trx: Db, id: string) => {
    const values = {
      type: prepared.type,
      source_fingerprint: prepared.sourceFingerprint,
      validation_id: prepared.validationId,
      event_verification_id: prepared.eventVerificationId,
      remote_mcp_url: prepared.remoteMcpUrl,
      openapi_base_url: prepared.openapiBaseUrl,
      openapi_spec: prepared.openapiSpec === null ? null : JSON.stringify(prepared.openapiSpec),
      static_config_sealed: sealStaticConfig(masterKey, id, prepared.staticConfig),
      required_user_params_schema: JSON.stringify(prepared.requiredUserParamsSchema),
      monetization_strategy: prepared.monetizationStrategy,
      pricing_events: JSON.stringify(prepared.pricingEvents),
      tools: JSON.stringify(prepared.tools),
      discovery_cache: JSON.stringify(prepared.discoveryCache),
      approved_tools: null,
      approved_tools_hash: null,
    };
    await trx
      .insertInto('mcp_market_details')
      .values({ submission_id: id, ...values })
      .onConflict((oc) => oc.column('submission_id').doUpdateSet(values))
      .execute();
  };
}

/** Hooks of the tool market for the shared review machinery. */
export function mcpMarketHooks(masterKey: Buffer): MarketDetailsHooks {
  return {
    async copyDetails(trx, fromId, toId) {
      const from = await trx
        .selectFrom('mcp_market_details')
        .selectAll()
        .where('submission_id', '=', fromId)
        .executeTakeFirstOrThrow();
      const staticConfig = unsealStaticConfig(masterKey, { id: fromId, staticConfigSealed: from.static_config_sealed });
      await trx
        .insertInto('mcp_market_details')
        .values({
          ...from,
          submission_id: toId,
          openapi_spec: from.openapi_spec === null ? null : JSON.stringify(from.openapi_spec),
          static_config_sealed: sealStaticConfig(masterKey, toId, staticConfig),
          required_user_params_schema: JSON.stringify(from.required_user_params_schema),
          pricing_events: JSON.stringify(from.pricing_events),
          tools: JSON.stringify(from.tools),
          discovery_cache: JSON.stringify(from.discovery_cache),
          approved_tools: null,
          approved_tools_hash: null,
        })
        .execute();
    },
    /** The approved tool list and its hash (name, description, inputSchema; see lib/market/fingerprint). */
    async onApprove(trx, submissionId) {
      const details = await trx
        .selectFrom('mcp_market_details')
        .select('tools')
        .where('submission_id', '=', submissionId)
        .executeTakeFirstOrThrow();
      const tools = details.tools as StoredMarketTool[];
      await trx
        .updateTable('mcp_market_details')
        .set({
          approved_tools: JSON.stringify(tools),
          approved_tools_hash: toolListHash(
            tools.map((t) => ({ name: t.toolName, description: t.description, inputSchema: t.inputSchema })),
          ),
        })
        .where('submission_id', '=', submissionId)
        .execute();
    },
  };
}

const reads = submissionReads(joined, (row) => toMcpSubmission(row as JoinedRow));

/** A tool-market submission by id (only the owner's with `ownerId`), or null. */
export const findMcpSubmission: (db: Db, id: string, ownerId?: string) => Promise<McpSubmission | null> = reads.find;

export const findMcpSubmissions: (db: Db, ids: readonly string[]) => Promise<Map<string, McpSubmission>> =
  reads.findMany;

/** The live, approved entry of a listing (its public id), or null. */
export const findPublicMcpEntry: (db: Db, listingId: string) => Promise<McpSubmission | null> = reads.findPublic;

/**
 * An entry's "from" price in micro-USD: 0 when free, its cheapest enabled tool under
 * tool_call_fixed, its cheapest pricing event under provider_event.
 */
const fromPriceMicros = sql<number>`case d.monetization_strategy
  when 'free' then 0
  when 'tool_call_fixed' then (select min((t ->> 'clientPriceMicros')::bigint) from jsonb_array_elements(coalesce(d.approved_tools, d.tools)) t where (t ->> 'isEnabled')::boolean)
  else (select min((e ->> 'unitPriceMicros')::bigint) from jsonb_array_elements(d.pricing_events) e) end`;

/** The quality score (0–100) of the validation the entry was listed with. */
const qualityScore = sql<number>`(select (v.report ->> 'qualityScore')::int from market_validations v where v.id = d.validation_id)`;

/**
 * The public catalogue: live approved entries, of one monetization strategy if given. With `q`, full
 * text over name (A), description (B) and tool names (C): every term must match, the last one as a
 * prefix, ranked by ts_rank; otherwise newest approval first. The catalogue pages also bound the
 * "from" price and sort (by price, name, quality score or approval).
 */
export async function searchPublicMcpEntries(
  db: Db,
  filter: CatalogueFilter & { monetizationStrategy?: MonetizationStrategy },
  page: PageRequest,
): Promise<{ rows: McpSubmission[]; total: number }> {
  const { monetizationStrategy: strategy, minPriceMicros: min, maxPriceMicros: max } = filter;
  return reads.searchPublic(
    db,
    filter.q,
    page,
    (query) => {
      let narrowed = strategy ? query.where('d.monetization_strategy', '=', strategy) : query;
      if (min !== undefined) narrowed = narrowed.where(sql<boolean>`${fromPriceMicros} >= ${min}`);
      if (max !== undefined) narrowed = narrowed.where(sql<boolean>`${fromPriceMicros} <= ${max}`);
      return narrowed;
    },
    catalogueOrder(filter.sort, fromPriceMicros, qualityScore),
  );
}
