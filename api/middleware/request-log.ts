import type { Next } from 'koa';
import type { AppContext } from '../context';
import { log } from '../../lib/log';
import { httpRequestDuration } from '../../lib/metrics';

/** The route template that answered (`/api/v1/scrape/status/:jobId`), never the raw path, so labels stay few. */
function routeOf(ctx: AppContext): string {
  const layers = (ctx as AppContext & { matched?: { path: string | RegExp; methods: string[] }[] }).matched ?? [];
  const route = layers.filter((layer) => layer.methods.includes(ctx.method)).at(-1);
  return route ? String(route.path) : 'unmatched';
}

/**
 * Gives each request a child logger carrying its request id (`ctx.state.log`), and when it ends
 * writes one access line (method, route, status, duration, requestId, userId when known) and
 * observes the latency histogram. Headers and bodies are never logged.
 */
export function requestLog() {
  return async (ctx: AppContext, next: Next) => {
    const started = process.hrtime.bigint();
    const logger = log().child({ requestId: ctx.state.requestId });
    ctx.state.log = logger;
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeOf(ctx);
      httpRequestDuration.labels(ctx.method, route, String(ctx.status)).observe(seconds);
      const userId = ctx.state.user?.userId;
      const level = ctx.status >= 500 ? 'error' : 'info';
      logger[level](
        {
          method: ctx.method,
          route,
          status: ctx.status,
          durationMs: Math.round(seconds * 1e4) / 10,
          ...(userId && { userId }),
        },
        `${ctx.method} ${route} ${ctx.status}`,
      );
    }
  };
}
