import Router from '@koa/router';
import type { SocialPlatform } from '../../db/schema';
import type { PlatformCredentials } from '../../lib/social/platforms';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { badRequest } from '../errors';
import { SocialAccountCreateRequest, SocialAccountsQuery, SocialAccountUpdateRequest } from '../../lib/schemas/social';
import {
  connectSocialAccount,
  deleteSocialAccount,
  listSocialAccounts,
  updateSocialAccount,
} from '../services/social/social-accounts';
import { parseBody, parseBodyAs, parseQuery, parseUuidParam } from '../validation';

export function socialAccountRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.get('/social-accounts', async (ctx) => {
    const user = ctx.state.user;
    const query = parseQuery<{ platform?: SocialPlatform }>(SocialAccountsQuery, ctx.query);
    ctx.body = await listSocialAccounts(deps, user.userId, query.platform);
  });

  router.post('/social-accounts', async (ctx) => {
    const user = ctx.state.user;
    // Typed by hand: the credentials' schema depends on the platform (if/then/else, which FromSchema does not read).
    const body = parseBodyAs<{
      platform: SocialPlatform;
      name: string;
      isActive?: boolean;
      credentials: PlatformCredentials;
    }>(SocialAccountCreateRequest, ctx.state.body);
    const created = await connectSocialAccount(deps, user.userId, body);
    ctx.status = 201;
    ctx.body = created;
  });

  router.patch('/social-accounts/:id', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    const raw = ctx.state.body;
    if (raw && typeof raw === 'object' && 'platform' in raw) {
      throw badRequest('The platform of an account cannot be changed', [
        { path: 'body/platform', message: 'cannot be changed' },
      ]);
    }
    const body = parseBody(SocialAccountUpdateRequest, raw);
    ctx.body = await updateSocialAccount(deps, user.userId, id, body);
  });

  router.delete('/social-accounts/:id', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    await deleteSocialAccount(deps, user.userId, id);
    ctx.status = 204;
  });

  return router;
}
