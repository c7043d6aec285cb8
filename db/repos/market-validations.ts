import { randomUUID } from 'node:crypto';
import type { Db } from '../connect';
import {
  normalisedDiscovery,
  type Discovery,
  type DiscoveryParam,
  type MarketSourceType,
} from '../../lib/market/discovery';
import { sourceFingerprint, type SourceIdentity } from '../../lib/market/fingerprint';
import type { LlmReview } from '../../lib/market/llm-review';
import type { ValidationRecord } from '../../lib/market/records';
import {
  buildValidationReport,
  type ValidationReport,
  type ValidationStatus,
} from '../../lib/market/validation-report';

export const DEFAULT_VALIDATION_TTL_MS = 24 * 3_600_000;

export interface StoredValidation extends ValidationRecord {
  parametersRequired: boolean;
  requiredParameters: DiscoveryParam[];
}

export interface RecordValidationInput {
  id?: string;
  ownerId: string;
  source: SourceIdentity;
  discovery: Discovery;
  /** Names of the params the request gave (their values are never stored). */
  givenParamNames?: readonly string[];
  /** The platform LLM's second opinion, when it is configured (stored in the report). */
  llmReview?: LlmReview | null;
  ttlMs?: number;
  now?: Date;
}

/**
 * Fingerprints a discovered source, builds its validation report and stores the validation under
 * its owner. This is the one way a validation comes to exist (the validate workflow calls it).
 */
export async function recordValidation(db: Db, input: RecordValidationInput): Promise<StoredValidation> {
  const discovery = normalisedDiscovery(input.discovery);
  const outcome = buildValidationReport(discovery, {
    givenParamNames: input.givenParamNames,
    llmReview: input.llmReview,
  });
  const now = input.now ?? new Date();
  const row = {
    id: input.id ?? randomUUID(),
    owner_id: input.ownerId,
    type: input.source.type,
    source_fingerprint: sourceFingerprint(input.source, discovery.tools),
    status: outcome.status,
    parameters_required: outcome.parametersRequired,
    required_parameters: JSON.stringify(outcome.requiredParameters),
    report: JSON.stringify(outcome.report),
    discovery: JSON.stringify(discovery),
    created_at: now,
    expires_at: new Date(now.getTime() + (input.ttlMs ?? DEFAULT_VALIDATION_TTL_MS)),
  };
  // A workflow retry records the same validation id again: the first write wins.
  await db
    .insertInto('market_validations')
    .values(row)
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  const stored = await findValidation(db, input.ownerId, row.id);
  if (!stored) throw new Error(`validation ${row.id} belongs to another account`);
  return stored;
}

/** The owner's validation with that id (null for unknown ids and for other accounts' validations). */
export async function findValidation(db: Db, ownerId: string, id: string): Promise<StoredValidation | null> {
  const row = await db
    .selectFrom('market_validations')
    .selectAll()
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    id: row.id,
    ownerId: row.owner_id,
    type: row.type as MarketSourceType,
    sourceFingerprint: row.source_fingerprint,
    status: row.status as ValidationStatus,
    parametersRequired: row.parameters_required,
    requiredParameters: row.required_parameters as DiscoveryParam[],
    report: row.report as unknown as ValidationReport,
    discovery: row.discovery as unknown as Discovery,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
  };
}

/** The owner's newest unexpired `valid` validation with that fingerprint. */
export async function findValidValidationByFingerprint(
  db: Db,
  ownerId: string,
  fingerprint: string,
  now = new Date(),
): Promise<StoredValidation | null> {
  const row = await db
    .selectFrom('market_validations')
    .select('id')
    .where('owner_id', '=', ownerId)
    .where('source_fingerprint', '=', fingerprint)
    .where('status', '=', 'valid')
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return row ? findValidation(db, ownerId, row.id) : null;
}

/**
 * The report and status of validations by id, whoever owns them: for the public listing page of an
 * approved entry (its quality score and scan result describe the tools anyone can list).
 */
export async function findValidationReports(
  db: Db,
  ids: readonly string[],
): Promise<Map<string, { status: ValidationStatus; report: ValidationReport }>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('market_validations')
    .select(['id', 'status', 'report'])
    .where('id', 'in', ids)
    .execute();
  return new Map(
    rows.map((row) => [
      row.id,
      { status: row.status as ValidationStatus, report: row.report as unknown as ValidationReport },
    ]),
  );
}
