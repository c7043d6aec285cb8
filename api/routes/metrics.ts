import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { Counter, Gauge, Registry } from 'prom-client';
import { readPlatformState, type PlatformState } from '../../db/repos/platform-state';
import type { JobKind, JobStatus } from '../../db/schema';
import { constantTimeEquals } from '../../lib/crypto';
import { log } from '../../lib/log';
import { processMetrics } from '../../lib/metrics';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';

const JOB_KINDS: JobKind[] = ['scrape', 'agentic', 'automation'];
const JOB_STATUSES: JobStatus[] = ['pending', 'processing', 'completed', 'failed'];

/** Scrapers authenticate with `Authorization: Bearer <METRICS_TOKEN>` (the admin token when METRICS_TOKEN is unset). */
function requireMetricsToken(token: string) {
  return async (ctx: Context, next: Next) => {
    const header = ctx.get('authorization');
    const given = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (!given || !constantTimeEquals(given, token)) {
      throw new ApiError(401, 'unauthorized', 'Missing or invalid metrics token (send Authorization: Bearer <METRICS_TOKEN, or ADMIN_TOKEN when unset>)', undefined, {
        'WWW-Authenticate': 'Bearer realm="metrics"',
      });
    }
    await next();
  };
}

/**
 * Series read from Postgres at scrape time: they describe the whole platform whichever process
 * did the work. One scrape reads the database once for all of them; when it cannot,
 * platform_state_up is 0 and the other state series are left out (never reported as zero).
 */
function platformStateRegistry(read: () => Promise<PlatformState>): Registry {
  const registry = new Registry();
  let pending: Promise<PlatformState | null> | null = null;
  const snapshot = () => {
    pending ??= read()
      .catch((err) => {
        log().warn({ err }, 'metrics: could not read the platform state from the database');
        return null;
      })
      .finally(() => setImmediate(() => (pending = null)));
    return pending;
  };
  /** Registers a series whose value(s) come from the snapshot; `emit` is skipped when the read failed. */
  const fromState = <T extends Gauge | Counter>(metric: T, emit: (metric: T, state: PlatformState) => void) => {
    (metric as unknown as { collect: () => Promise<void> }).collect = async () => {
      const state = await snapshot();
      metric.reset();
      if (state) emit(metric, state);
    };
  };
  const ledger = (state: PlatformState, kind: string) => state.ledger.find((row) => row.kind === kind);

  new Gauge({
    name: 'platform_state_up',
    help: '1 when this scrape could read the platform state from Postgres, else 0',
    registers: [registry],
    async collect() {
      this.set((await snapshot()) ? 1 : 0);
    },
  });
  fromState(new Gauge({ name: 'platform_jobs', help: 'Jobs by kind and state', labelNames: ['kind', 'state'] as const, registers: [registry] }), (gauge, state) => {
    for (const kind of JOB_KINDS) for (const status of JOB_STATUSES) gauge.labels(kind, status).set(0);
    for (const row of state.jobs) gauge.labels(row.kind, row.status).set(row.count);
  });
  fromState(new Counter({ name: 'platform_debits_total', help: 'Usage debits (ledger usage entries)', registers: [registry] }), (counter, state) =>
    counter.inc(ledger(state, 'usage')?.entries ?? 0),
  );
  fromState(new Counter({ name: 'platform_debits_micros_total', help: 'Usage debited from wallets, in micro-USD', registers: [registry] }), (counter, state) =>
    counter.inc(-(ledger(state, 'usage')?.amountMicros ?? 0)),
  );
  fromState(new Counter({ name: 'platform_credits_micros_total', help: 'Credit added to wallets, in micro-USD', registers: [registry] }), (counter, state) =>
    counter.inc(ledger(state, 'credit')?.amountMicros ?? 0),
  );
  fromState(new Gauge({ name: 'platform_wallet_balance_micros', help: 'Sum of all wallet balances (ledger balance), in micro-USD', registers: [registry] }), (gauge, state) =>
    gauge.set(state.wallets.balanceMicros),
  );
  return registry;
}

/** GET /metrics: Prometheus text format; this process's series plus the platform state from Postgres. */
export function metricsRoutes(deps: ApiDeps): Router {
  const router = new Router();
  const registry = Registry.merge([processMetrics, platformStateRegistry(() => readPlatformState(deps.db))]);
  router.get('/metrics', requireMetricsToken(deps.config.metrics.token ?? deps.config.adminToken), async (ctx) => {
    const text = await registry.metrics();
    ctx.type = registry.contentType;
    ctx.body = text;
  });
  return router;
}
