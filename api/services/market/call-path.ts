import type { Db } from '../../../db/connect';
import { loadCallEntry, createMarketCallStore, marketRunHandle } from '../../../db/repos/market-tool-calls';
import { acquireMarketRun, type PresentedCredential } from '../../../db/repos/market-runs';
import { marketReviewsGeneration } from '../../../db/repos/market-submissions';
import { createGenerationCache } from '../../../lib/bounded-cache';
import type { MarketConfig } from '../../../lib/config';
import { CREDENTIAL_KEY_ROTATED, CREDENTIAL_REVOKED } from '../../../lib/market/credential';
import {
  marketToolCallDeps,
  PrincipalRefusedError,
  roundMinLifeMs,
  type AcquiredRun,
  type MarketCallEntry,
} from '../../../lib/market/tool-call';
import type { NetworkPolicy } from '../../../lib/net/ssrf';

/**
 * The hosted call's path, assembled from the call logic (lib/market/tool-call.ts, the relay in
 * lib/market/relay/) and its storage (db/repos/market-tool-calls.ts, db/repos/market-runs.ts): the entry
 * as a call reads it (remembered briefly), the run a call is billed to, and the call dependencies the
 * hosted endpoint (api/mcp/market.ts), "try a tool" (try.ts) and agents' market selections
 * (activities/tools/market.ts, given this path by workers/activities.ts) call through.
 */

/**
 * loadCallEntry remembered for ENTRY_CACHE_TTL_MS (every hosted call reads its entry). A review
 * through this process (approve, reject, disable, a revision's swap) drops every remembered entry at
 * once (marketReviewsGeneration); one made by another process takes effect within the TTL. Opening
 * the call's run re-checks in its own statement that the entry is still live and approved.
 */
export const ENTRY_CACHE_TTL_MS = 2_000;
const entryCache = createGenerationCache<MarketCallEntry>({
  ttlMs: ENTRY_CACHE_TTL_MS,
  maxEntries: 1_000,
  generation: marketReviewsGeneration,
});

export function loadCallEntryCached(db: Db, masterKey: Buffer, entryId: string): Promise<MarketCallEntry | null> {
  return entryCache(db, entryId, () => loadCallEntry(db, masterKey, entryId));
}

/** How calls acquire their market runs (the market configuration: see runSettings). */
export interface RunSettings {
  ttlMs: number;
  limitMicros: number;
  chargeTokenKey: Buffer;
  /** A shared run is joined only while it lives at least this much longer. */
  minLifeMs: number;
}

/**
 * The run settings of the market configuration. A shared run is joined while it lives longer than a
 * call may take plus the grace for the provider's charges after it (and half a minute of margin), so
 * a provider can always charge a call's events until the grace after it is over.
 */
export function runSettings(
  market: Pick<
    MarketConfig,
    'runTtlMs' | 'runChargeLimitMicros' | 'chargeTokenKey' | 'toolCallTimeoutMs' | 'runIdleGraceMs'
  >,
): RunSettings {
  return {
    ttlMs: market.runTtlMs,
    limitMicros: market.runChargeLimitMicros,
    chargeTokenKey: market.chargeTokenKey,
    minLifeMs: roundMinLifeMs(market),
  };
}

/** What a call's run is acquired for (acquireCallRun). */
export interface CallRunInput {
  consumerId: string;
  entryId: string;
  selectionId: string;
  jobId: string | null;
  capMicros: number | null;
  reserveMicros: number | null;
  shared: boolean;
  /** A window's idle time (MARKET_RUN_WINDOW_IDLE_SECONDS) for a run this call opens; omitted: MARKET_RUN_IDLE_GRACE_SECONDS. */
  idleGraceMs?: number | null;
  /** The credential to check in the acquire's statement (acquireMarketRun): refused with PrincipalRefusedError. */
  credential?: PresentedCredential | null;
}

/**
 * The run a call is billed to (acquireMarketRun): `shared` joins (or opens) the consumer's run of
 * the selection — a credential's provider_event calls, an agent execution's selection — else the
 * call gets a run of its own. `reserveMicros` is a fixed-price call's price (null: provider_event).
 */
export async function acquireCallRun(db: Db, settings: RunSettings, input: CallRunInput): Promise<AcquiredRun> {
  const acquired = await acquireMarketRun(db, { ...input, ...settings });
  switch (acquired.outcome) {
    case 'credential_revoked':
      throw new PrincipalRefusedError(CREDENTIAL_REVOKED);
    case 'key_rotated':
      throw new PrincipalRefusedError(CREDENTIAL_KEY_ROTATED);
    case 'opened':
    case 'joined':
      return {
        ok: true,
        run: marketRunHandle(acquired.run, () => acquired.chargeToken),
        opened: acquired.outcome === 'opened',
      };
    case 'run_limit_reached':
      return { ok: false, code: 'run_limit_reached', roomMicros: acquired.roomMicros };
    case 'budget_reached':
      return {
        ok: false,
        code: 'budget_reached',
        budget: acquired.budget,
        budgetMicros: acquired.budgetMicros,
        roomMicros: acquired.roomMicros,
      };
    default:
      return { ok: false, code: acquired.outcome };
  }
}

/**
 * A presented credential whose check (its API key live, the credential not revoked: findCredentialUse) is
 * left to the call's acquire statement (acquire_market_run, migration 0027) instead of a statement of its own,
 * with that check on its own (`confirm`, once) for a request that acquires no run (credential-check.ts
 * deferredCredentialPrincipal). Never remembered beyond the request.
 */
export interface DeferredCredentialCheck {
  credential: PresentedCredential;
  /** Whether the check was made (by the acquire or by confirm). */
  settled(): boolean;
  /** What the acquire's statement found: null (may call) or the problem. */
  settle(problem: string | null): void;
  /** The check on its own unless made already: throws PrincipalRefusedError when the credential may no longer call. */
  confirm(): Promise<void>;
}

/**
 * The market call path over this database, as the hosted endpoint, "try a tool" and agents' market
 * selections all call it: the call dependencies (this store, the market's limits, the network policy)
 * and the run settings.
 */
export function marketCallPath(db: Db, market: MarketConfig, policy: NetworkPolicy) {
  const settings = runSettings(market);
  return {
    callDeps: marketToolCallDeps({
      store: createMarketCallStore(db, {
        commit: market.callCommit,
        idleGraceMs: market.runIdleGraceMs,
        chargeTokenKey: market.chargeTokenKey,
      }),
      market,
      policy,
    }),
    settings,
    /** An agent execution's selection's run (activities/tools/market.ts): acquireCallRun under these settings. */
    acquireRun: (input: CallRunInput) => acquireCallRun(db, settings, input),
    /**
     * How a consumer's own call (the hosted endpoint, try a tool) is billed: its credential's calls share
     * one run while they follow each other — provider_event calls for the grace of the provider's charges
     * (MARKET_RUN_IDLE_GRACE_SECONDS), fixed-price and free calls in a window (MARKET_RUN_WINDOW_IDLE_SECONDS:
     * each call adds its price to the window's hold and is charged on its own; the window's workflow closes
     * and settles it once idle).
     */
    consumerRun: (
      consumer: { consumerId: string; selectionId: string; capMicros: number | null },
      entry: Pick<MarketCallEntry, 'entryId' | 'monetizationStrategy'>,
      /** The consumer's credential when its check is left to the acquire's statement (the hosted endpoint). */
      check?: DeferredCredentialCheck,
    ) => ({
      runPerCall: false,
      acquireRun: async (reserveMicros: number | null) => {
        // A check made already (confirm) is not made again: its refusal is thrown here.
        if (check?.settled()) await check.confirm();
        const credential = check && !check.settled() ? check.credential : null;
        let acquired: AcquiredRun;
        try {
          acquired = await acquireCallRun(db, settings, {
            ...consumer,
            entryId: entry.entryId,
            jobId: null,
            reserveMicros,
            shared: true,
            idleGraceMs: entry.monetizationStrategy === 'provider_event' ? null : market.runWindowIdleMs,
            credential,
          });
        } catch (error) {
          if (credential && error instanceof PrincipalRefusedError) check!.settle(error.problem);
          throw error;
        }
        // The credential's check comes first in the statement: any other answer means it passed.
        if (credential) check!.settle(null);
        return acquired;
      },
      ...(check && { confirmPrincipal: check.confirm }),
    }),
  };
}
