import Router from '@koa/router';
import type { Updateable } from 'kysely';
import type { SocialAccountsTable, SocialPlatform } from '../../db/schema';
import {
  deleteAccount,
  findAccount,
  insertValidatedAccount,
  listAccounts,
  sealCredentials,
  sealSession,
  toSocialAccount,
  unsealCredentials,
  unsealSession,
  updateAccount,
} from '../../db/repos/social-accounts';
import { writeSystemLog } from '../../db/repos/system-logs';
import type { PlatformCredentials } from '../../lib/social/platforms';
import type { MicroblogCredentials, MicroblogSession } from '../../lib/social/microblog';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError, badRequest, notFound } from '../errors';
import {
  ForumCredentials,
  MicroblogCredentials as MicroblogCredentialsSchema,
  SocialAccountCreateRequest,
  SocialAccountsQuery,
  SocialAccountUpdateRequest,
} from '../../lib/schemas/social';
import { parseBody, parseBodyAs, parseQuery, parseUuidParam } from '../validation';

const credentialsSchema = (platform: SocialPlatform) =>
  platform === 'forum' ? ForumCredentials : MicroblogCredentialsSchema;

function validationFailed(message: string): ApiError {
  return new ApiError(400, 'credentials_invalid', `The credentials were refused by the platform: ${message}`, [
    { path: 'body/credentials', message },
  ]);
}

export function socialAccountRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();
  const { db } = deps;
  const masterKey = deps.config.masterKey;

  router.get('/social-accounts', async (ctx) => {
    const user = ctx.state.user;
    const query = parseQuery<{ platform?: SocialPlatform }>(SocialAccountsQuery, ctx.query);
    ctx.body = { accounts: (await listAccounts(db, user.userId, query.platform)).map(toSocialAccount) };
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
    const check = await deps.social.validate(body.platform, body.credentials);
    if (!check.ok) throw validationFailed(check.message);
    const row = await insertValidatedAccount(db, masterKey, {
      userId: user.userId,
      platform: body.platform,
      name: body.name,
      isActive: body.isActive ?? true,
      credentials: body.credentials,
      meta: check.meta,
      session: check.session,
    });
    await writeSystemLog(db, {
      userId: user.userId,
      message: `${body.platform} account "${body.name}" (${row.id}) connected`,
    });
    ctx.status = 201;
    ctx.body = { account: toSocialAccount(row) };
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
    const account = await findAccount(db, user.userId, id);
    if (!account) throw notFound('Social account');
    const changes: Updateable<SocialAccountsTable> = { updated_at: new Date() };
    if (body.name !== undefined) changes.name = body.name;
    if (body.isActive !== undefined) changes.is_active = body.isActive;
    if (body.credentials !== undefined) {
      const credentials = parseBody(credentialsSchema(account.platform), body.credentials);
      const check = await deps.social.validate(account.platform, credentials);
      if (!check.ok) throw validationFailed(check.message);
      Object.assign(changes, {
        credentials_sealed: sealCredentials(masterKey, account.id, credentials),
        session_sealed: sealSession(masterKey, account.id, check.session),
        meta: JSON.stringify(check.meta),
        validation_status: 'valid',
        validation_message: null,
        last_validated_at: new Date(),
      });
    }
    const updated = await updateAccount(db, user.userId, id, changes);
    ctx.body = { account: toSocialAccount(updated) };
  });

  router.delete('/social-accounts/:id', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    const account = await findAccount(db, user.userId, id);
    if (!account) throw notFound('Social account');
    await deleteAccount(db, user.userId, id);
    if (account.platform === 'microblog') {
      const session = unsealSession<MicroblogSession>(masterKey, account);
      const disconnected = session
        ? await deps.social.disconnectMicroblog(unsealCredentials<MicroblogCredentials>(masterKey, account), session)
        : false;
      await writeSystemLog(db, {
        userId: user.userId,
        message: `microblog account ${id} deleted${disconnected ? ' and disconnected upstream' : ' (upstream disconnect not possible)'}`,
      });
    } else {
      await writeSystemLog(db, { userId: user.userId, message: `forum account ${id} deleted` });
    }
    ctx.status = 204;
  });

  return router;
}
