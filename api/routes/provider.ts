import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { AuthenticatedUser } from '../../db/repos/users';
import { findEventVerificationByRun, recordVerificationCharge } from '../../db/repos/market-event-verifications';
import { canonicalJson } from '../../lib/market/canonical-json';
import { verifyChargeToken, type ChargeTokenClaims } from '../../lib/market/charge-token';
import { sha256Hex } from '../../lib/market/fingerprint';
import { ProviderEventChargeRequest } from '../../lib/schemas/market';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { parseBody, parseUuidParam } from '../validation';

interface ChargeRequest {
  eventName: string;
  count: number;
  toolName?: string | null;
  metadata: Record<string, unknown>;
}

/**
 * Statuses of POST /provider/runs/{runId}/charge (the contract leaves them open):
 * 400 validation_failed (body), idempotency_key_required, unknown_event (not an event of the run);
 * 401 unauthorized (API key); 403 invalid_charge_token (missing, malformed, forged, or bound to
 * another run), charge_token_expired, charge_forbidden (the API key's account is not the run's
 * provider); 404 run_not_found; 409 idempotency_conflict (the key was used with another body).
 */
export const CHARGE_STATUSES = {
  idempotencyKeyRequired: () => new ApiError(400, 'idempotency_key_required', 'Send an idempotency-key header (stable per logical event; reuse it on retries)'),
  invalidToken: (why: string) => new ApiError(403, 'invalid_charge_token', `The x-service-charge-token is not valid: ${why}`),
  expiredToken: () => new ApiError(403, 'charge_token_expired', 'The charge token has expired'),
  forbidden: () => new ApiError(403, 'charge_forbidden', 'This API key does not belong to the provider of this run'),
  runNotFound: () => new ApiError(404, 'run_not_found', 'No run with this id'),
  unknownEvent: (name: string) => new ApiError(400, 'unknown_event', `"${name}" is not an event of this run`),
  conflict: () => new ApiError(409, 'idempotency_conflict', 'This idempotency key was already used with a different request'),
};

function checkToken(deps: ApiDeps, ctx: Context, runId: string, callerId: string): ChargeTokenClaims {
  const token = ctx.get('x-service-charge-token');
  if (!token) throw CHARGE_STATUSES.invalidToken('the header is missing');
  const check = verifyChargeToken(deps.config.market.chargeTokenKey, token);
  if (!check.ok) throw check.reason === 'expired' ? CHARGE_STATUSES.expiredToken() : CHARGE_STATUSES.invalidToken(check.reason === 'malformed' ? 'malformed' : 'bad signature');
  if (check.claims.runId !== runId) throw CHARGE_STATUSES.invalidToken('it belongs to another run');
  if (check.claims.providerId !== callerId) throw CHARGE_STATUSES.forbidden();
  return check.claims;
}

/** Provider event charges: verification runs now; market runs (production, money) plug in next to them. */
export function providerRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.post('/provider/runs/:runId/charge', async (ctx) => {
    const user = ctx.state.user as AuthenticatedUser;
    const runId = parseUuidParam('runId', ctx.params.runId);
    const idempotencyKey = ctx.get('idempotency-key');
    if (!idempotencyKey) throw CHARGE_STATUSES.idempotencyKeyRequired();
    if (idempotencyKey.length > 200) throw new ApiError(400, 'validation_failed', 'idempotency-key is at most 200 characters', [{ path: 'header.idempotency-key', message: 'is too long' }]);
    const body = parseBody<ChargeRequest>(ProviderEventChargeRequest, ctx.state.body);
    const claims = checkToken(deps, ctx, runId, user.userId);
    if (claims.kind !== 'verification') throw CHARGE_STATUSES.runNotFound();

    const verification = await findEventVerificationByRun(deps.db, runId);
    if (!verification) throw CHARGE_STATUSES.runNotFound();
    if (verification.ownerId !== user.userId) throw CHARGE_STATUSES.forbidden();
    if (verification.sourceFingerprint !== claims.sourceFingerprint) throw CHARGE_STATUSES.invalidToken('it belongs to another source');

    const requestHash = sha256Hex(canonicalJson({ eventName: body.eventName, count: body.count, toolName: body.toolName ?? null, metadata: body.metadata }));
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
        ctx.body = outcome.result;
        return;
      case 'replayed':
        ctx.body = { ...outcome.result, replayed: true };
        return;
      case 'conflict':
        throw CHARGE_STATUSES.conflict();
      case 'not_found':
        throw CHARGE_STATUSES.runNotFound();
      case 'expired':
        throw CHARGE_STATUSES.expiredToken();
      case 'unknown_event':
        throw CHARGE_STATUSES.unknownEvent(body.eventName);
    }
  });

  return router;
}
