import type { Next } from 'koa';
import type { AppContext } from '../context';
import type { Db } from '../../db/connect';
import { findUserByApiKeyCached } from '../../db/repos/users';
import { ApiError, unauthorized } from '../errors';
import { constantTimeEquals } from '../../lib/crypto';

export function requireApiKey(db: Db) {
  return async (ctx: AppContext, next: Next) => {
    const apiKey = ctx.get('x-api-key');
    if (!apiKey) throw unauthorized();
    const user = apiKey.length <= 256 ? await findUserByApiKeyCached(db, apiKey) : null;
    if (!user) throw unauthorized();
    ctx.state.user = user;
    await next();
  };
}

export function requireAdminToken(adminToken: string) {
  return async (ctx: AppContext, next: Next) => {
    const header = ctx.get('authorization');
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (!token || !constantTimeEquals(token, adminToken)) {
      throw new ApiError(
        401,
        'unauthorized',
        'Missing or invalid admin token (send Authorization: Bearer <ADMIN_TOKEN>)',
      );
    }
    await next();
  };
}
