import type { Next } from 'koa';
import type { AppContext } from '../context';
import { ApiError } from '../errors';
import { log } from '../../lib/log';
import { isDatabaseUnavailable } from '../../db/connect';

export function errorBody(ctx: AppContext, err: ApiError) {
  return {
    error: {
      code: err.code,
      message: err.message,
      ...(err.details?.length ? { details: err.details } : {}),
      requestId: ctx.state.requestId,
    },
  };
}

/** Turns every failure into the one JSON error body; unexpected errors become 500 without internals. */
export function errorHandler() {
  return async (ctx: AppContext, next: Next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError(404, 'not_found', `No route for ${ctx.method} ${ctx.path}`);
      }
      // The router answers 501 to methods it knows nothing of (TRACE, PROPFIND, ...): for a client that is a 405 too.
      if ((ctx.status === 405 || ctx.status === 501) && (ctx.body === undefined || typeof ctx.body === 'string')) {
        throw new ApiError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`);
      }
    } catch (err) {
      const apiError =
        err instanceof ApiError
          ? err
          : isDatabaseUnavailable(err)
            ? new ApiError(
                503,
                'service_unavailable',
                'The database is unavailable; retry in a few seconds',
                undefined,
                { 'Retry-After': '5' },
              )
            : new ApiError(
                500,
                'internal_error',
                'An unexpected error occurred; the request id identifies it in the server log',
              );
      if (!(err instanceof ApiError)) {
        const logger = ctx.state.log ?? log();
        if (apiError.status === 503)
          logger.warn(
            { err, requestId: ctx.state.requestId, method: ctx.method },
            'request failed: the database is unavailable',
          );
        else
          logger.error(
            { err, requestId: ctx.state.requestId, method: ctx.method },
            'request failed with an unexpected error',
          );
      }
      ctx.status = apiError.status;
      for (const [name, value] of Object.entries(apiError.headers ?? {})) ctx.set(name, value);
      ctx.body = errorBody(ctx, apiError);
    }
  };
}
