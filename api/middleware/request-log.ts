import type { Next } from 'koa';
import type { AppContext } from '../context';
import { flatLog, log, type Logger } from '../../lib/log';
import { httpRequestDuration } from '../../lib/metrics';

/** The route template that answered (`/api/v1/scrape/status/:jobId`), never the raw path, so labels stay few. */
function routeOf(ctx: AppContext): string {
  const layers = (ctx as AppContext & { matched?: { path: string | RegExp; methods: string[] }[] }).matched ?? [];
  for (let i = layers.length - 1; i >= 0; i--)
    if (layers[i].methods.includes(ctx.method)) return String(layers[i].path);
  return 'unmatched';
}

/**
 * Gives each request a child logger carrying its request id (`ctx.state.log`, made when first
 * used: most requests log nothing but their access line), and when it ends writes one access line
 * (requestId, method, route, status, duration, userId when known) and observes the latency
 * histogram. Headers and bodies are never logged. The access line is flat (strings and numbers),
 * so it goes through flatLog(): the same output as the request's child logger would write.
 */
export function requestLog() {
  return async (ctx: AppContext, next: Next) => {
    const started = process.hrtime.bigint();
    const requestId = ctx.state.requestId;
    let logger: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', {
      configurable: true,
      enumerable: true,
      get: () => (logger ??= log().child({ requestId })),
      set: (value: Logger) => {
        logger = value;
      },
    });
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeOf(ctx);
      httpRequestDuration.labels(ctx.method, route, String(ctx.status)).observe(seconds);
      const userId = ctx.state.user?.userId;
      const level = ctx.status >= 500 ? 'error' : 'info';
      flatLog()[level](
        {
          requestId,
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
