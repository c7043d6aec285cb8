import type { FromSchema } from 'json-schema-to-ts';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../../db/connect';
import { findEventVerificationByRun, recordVerificationCharge } from '../../../db/repos/market-event-verifications';
import { chargeMarketRun, type ProductionChargeResult } from '../../../db/repos/market-runs';
import type { Config } from '../../../lib/config';
import { canonicalJson } from '../../../lib/market/canonical-json';
import { verifyChargeToken, type ChargeTokenClaims } from '../../../lib/market/charge-token';
import { sha256Hex } from '../../../lib/market/fingerprint';
import type { ProviderEventChargeRequest } from '../../../lib/schemas/market';
import { ApiError } from '../../errors';

/**
 * A provider's event charge, POST /provider/runs/{runId}/charge: the charge token checked against the run
 * and the caller, then a production charge on a market run (money moves from the consumer's wallet to the
 * provider's within the run's hold, db/repos/market-runs.ts chargeMarketRun, the SQL function
 * charge_market_run_event()) or a verification run's charge (no money). The route parses and presents.
 */

interface ChargeDeps {
  db: Db;
  config: Pick<Config, 'market'>;
}

export type ChargeRequest = FromSchema<typeof ProviderEventChargeRequest>;

/**
 * Statuses of POST /provider/runs/{runId}/charge (the contract leaves them open):
 * 400 validation_failed (body), idempotency_key_required, unknown_event (not an event of the run);
 * 401 unauthorized (API key); 403 invalid_charge_token (missing, malformed, forged, or bound to
 * another run or entry), charge_token_expired (the token or the run has expired), charge_forbidden
 * (the API key's account is not the run's provider); 404 run_not_found; 409 idempotency_conflict
 * (the key was used with another body), run_closed (the run was closed, or the grace after the
 * last call that used it — MARKET_RUN_IDLE_GRACE_SECONDS — is over; replays still answer),
 * entry_not_active (the entry was disabled since the run opened).
 */
export const CHARGE_STATUSES = {
  idempotencyKeyRequired: () =>
    new ApiError(
      400,
      'idempotency_key_required',
      'Send an idempotency-key header (stable per logical event; reuse it on retries)',
    ),
  invalidToken: (why: string) =>
    new ApiError(403, 'invalid_charge_token', `The x-service-charge-token is not valid: ${why}`),
  expiredToken: () =>
    new ApiError(403, 'charge_token_expired', 'The charge token has expired: the run no longer accepts charges'),
  forbidden: () => new ApiError(403, 'charge_forbidden', 'This API key does not belong to the provider of this run'),
  runNotFound: () => new ApiError(404, 'run_not_found', 'No run with this id'),
  unknownEvent: (name: string) => new ApiError(400, 'unknown_event', `"${name}" is not an event of this run`),
  conflict: () =>
    new ApiError(409, 'idempotency_conflict', 'This idempotency key was already used with a different request'),
  runClosed: () => new ApiError(409, 'run_closed', 'The run is closed and accepts no new charges'),
  runEnded: (graceMs: number) =>
    new ApiError(
      409,
      'run_closed',
      `The run has ended: it accepts charges while a call uses it and for ${graceMs / 1000} s after its last call ended, and that time is over`,
    ),
  entryNotActive: () =>
    new ApiError(409, 'entry_not_active', 'The market entry is no longer approved; its runs accept no new charges'),
};

function checkToken(deps: ChargeDeps, token: string, runId: string, callerId: string): ChargeTokenClaims {
  if (!token) throw CHARGE_STATUSES.invalidToken('the header is missing');
  const check = verifyChargeToken(deps.config.market.chargeTokenKey, token);
  if (!check.ok)
    throw check.reason === 'expired'
      ? CHARGE_STATUSES.expiredToken()
      : CHARGE_STATUSES.invalidToken(check.reason === 'malformed' ? 'malformed' : 'bad signature');
  if (check.claims.runId !== runId) throw CHARGE_STATUSES.invalidToken('it belongs to another run');
  if (check.claims.providerId !== callerId) throw CHARGE_STATUSES.forbidden();
  return check.claims;
}

/**
 * A production charge against a market run (token kind `run`): money moves from the consumer's
 * wallet to the provider's within the run's hold (db/repos/market-runs.ts).
 */
async function productionCharge(
  deps: ChargeDeps,
  input: {
    runId: string;
    claims: ChargeTokenClaims;
    callerId: string;
    idempotencyKey: string;
    requestHash: string;
    body: ChargeRequest;
  },
): Promise<ProductionChargeResult> {
  if (!input.claims.entryId) throw CHARGE_STATUSES.invalidToken('it names no entry');
  const outcome = await chargeMarketRun(deps.db, {
    runId: input.runId,
    providerId: input.callerId,
    entryId: input.claims.entryId,
    idempotencyKey: input.idempotencyKey,
    requestHash: input.requestHash,
    eventName: input.body.eventName,
    count: input.body.count,
    toolName: input.body.toolName ?? null,
    commissionRate: deps.config.market.commissionRate,
  });
  switch (outcome.kind) {
    case 'recorded':
    case 'replayed':
      return outcome.result;
    case 'conflict':
      throw CHARGE_STATUSES.conflict();
    case 'not_found':
      throw CHARGE_STATUSES.runNotFound();
    case 'forbidden':
      throw CHARGE_STATUSES.forbidden();
    case 'wrong_entry':
      throw CHARGE_STATUSES.invalidToken('it belongs to another entry');
    case 'closed':
      throw CHARGE_STATUSES.runClosed();
    case 'expired':
      throw CHARGE_STATUSES.expiredToken();
    case 'ended':
      throw CHARGE_STATUSES.runEnded(deps.config.market.runIdleGraceMs);
    case 'unknown_event':
      throw CHARGE_STATUSES.unknownEvent(input.body.eventName);
    case 'entry_not_active':
      throw CHARGE_STATUSES.entryNotActive();
  }
}

/** The charge of one event (`body`, parsed) on run `runId` by the API key's account `callerId`, with the x-service-charge-token `chargeToken`. */
export async function chargeProviderEvent(
  deps: ChargeDeps,
  input: { runId: string; callerId: string; idempotencyKey: string; chargeToken: string; body: ChargeRequest },
): Promise<unknown> {
  const { runId, callerId, idempotencyKey, body } = input;
  const claims = checkToken(deps, input.chargeToken, runId, callerId);
  const requestHash = sha256Hex(
    canonicalJson({
      eventName: body.eventName,
      count: body.count,
      toolName: body.toolName ?? null,
      metadata: body.metadata,
    }),
  );
  if (claims.kind === 'run') {
    return productionCharge(deps, { runId, claims, callerId, idempotencyKey, requestHash, body });
  }

  const verification = await findEventVerificationByRun(deps.db, runId);
  if (!verification) throw CHARGE_STATUSES.runNotFound();
  if (verification.ownerId !== callerId) throw CHARGE_STATUSES.forbidden();
  if (verification.sourceFingerprint !== claims.sourceFingerprint)
    throw CHARGE_STATUSES.invalidToken('it belongs to another source');

  const outcome = await recordVerificationCharge(deps.db, {
    runId,
    idempotencyKey,
    requestHash,
    eventName: body.eventName,
    // Verification: the event is proven, nothing is billed. chargedCount echoes the request so
    // the provider's code runs the same path as in production.
    result: () => ({
      chargeId: verification.id,
      eventName: body.eventName,
      requestedCount: body.count,
      chargedCount: body.count,
      chargeableWithinLimit: body.count,
      eventChargeLimitReached: false,
      unitPriceUsd: 0,
      totalChargedUsd: 0,
      commissionRate: deps.config.market.commissionRate,
      commissionUsd: 0,
      providerRevenueUsd: 0,
      meterEventId: `mev_${randomUUID()}`,
      replayed: false,
      verification: true,
    }),
  });
  switch (outcome.kind) {
    case 'recorded':
      return outcome.result;
    case 'replayed':
      return { ...outcome.result, replayed: true };
    case 'conflict':
      throw CHARGE_STATUSES.conflict();
    case 'not_found':
      throw CHARGE_STATUSES.runNotFound();
    case 'expired':
      throw CHARGE_STATUSES.expiredToken();
    case 'unknown_event':
      throw CHARGE_STATUSES.unknownEvent(body.eventName);
  }
}
