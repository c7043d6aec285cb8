import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { AppContext } from '../context';

export function requestId() {
  return async (ctx: AppContext, next: Next) => {
    const given = ctx.get('x-request-id');
    ctx.state.requestId = /^[\w.-]{8,128}$/.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    await next();
  };
}
