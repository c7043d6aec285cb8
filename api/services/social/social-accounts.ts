import type { Updateable } from 'kysely';
import type { SocialAccountsTable, SocialPlatform } from '../../../db/schema';
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
} from '../../../db/repos/social-accounts';
import { writeSystemLog } from '../../../db/repos/system-logs';
import type { PlatformCredentials } from '../../../lib/social/platforms';
import type { MicroblogCredentials, MicroblogSession } from '../../../lib/social/microblog';
import { ForumCredentials, MicroblogCredentials as MicroblogCredentialsSchema } from '../../../lib/schemas/social';
import type { ApiDeps } from '../../deps';
import { ApiError, notFound } from '../../errors';
import { parseBodyAs } from '../../validation';

type Deps = Pick<ApiDeps, 'db' | 'config' | 'social'>;

const credentialsSchema = (platform: SocialPlatform) =>
  platform === 'forum' ? ForumCredentials : MicroblogCredentialsSchema;

function validationFailed(message: string): ApiError {
  return new ApiError(400, 'credentials_invalid', `The credentials were refused by the platform: ${message}`, [
    { path: 'body/credentials', message },
  ]);
}

/** GET /social-accounts: the caller's accounts (of one platform, if asked), never their credentials. */
export async function listSocialAccounts(deps: Pick<ApiDeps, 'db'>, userId: string, platform?: SocialPlatform) {
  return { accounts: (await listAccounts(deps.db, userId, platform)).map(toSocialAccount) };
}

/** POST /social-accounts: the credentials checked with the platform, then the account stored (sealed) and logged. */
export async function connectSocialAccount(
  deps: Deps,
  userId: string,
  body: { platform: SocialPlatform; name: string; isActive?: boolean; credentials: PlatformCredentials },
) {
  const check = await deps.social.validate(body.platform, body.credentials);
  if (!check.ok) throw validationFailed(check.message);
  const row = await insertValidatedAccount(deps.db, deps.config.masterKey, {
    userId,
    platform: body.platform,
    name: body.name,
    isActive: body.isActive ?? true,
    credentials: body.credentials,
    meta: check.meta,
    session: check.session,
  });
  await writeSystemLog(deps.db, {
    userId,
    message: `${body.platform} account "${body.name}" (${row.id}) connected`,
  });
  return { account: toSocialAccount(row) };
}

/**
 * PATCH /social-accounts/{id}: the caller's account (404 otherwise) renamed, (de)activated, or given new
 * credentials, which are validated against the account's platform's schema and checked with the platform first.
 */
export async function updateSocialAccount(
  deps: Deps,
  userId: string,
  id: string,
  // The credentials are checked against the account's platform here, after its lookup (a 404 comes first).
  body: { name?: string; isActive?: boolean; credentials?: Record<string, unknown> },
) {
  const { db } = deps;
  const masterKey = deps.config.masterKey;
  const account = await findAccount(db, userId, id);
  if (!account) throw notFound('Social account');
  const changes: Updateable<SocialAccountsTable> = { updated_at: new Date() };
  if (body.name !== undefined) changes.name = body.name;
  if (body.isActive !== undefined) changes.is_active = body.isActive;
  if (body.credentials !== undefined) {
    const credentials = parseBodyAs<PlatformCredentials>(credentialsSchema(account.platform), body.credentials);
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
  const updated = await updateAccount(db, userId, id, changes);
  return { account: toSocialAccount(updated) };
}

/** DELETE /social-accounts/{id}: the caller's account (404 otherwise) deleted; a microblog session is ended upstream when it can be. */
export async function deleteSocialAccount(deps: Deps, userId: string, id: string): Promise<void> {
  const { db } = deps;
  const masterKey = deps.config.masterKey;
  const account = await findAccount(db, userId, id);
  if (!account) throw notFound('Social account');
  await deleteAccount(db, userId, id);
  if (account.platform === 'microblog') {
    const session = unsealSession<MicroblogSession>(masterKey, account);
    const disconnected = session
      ? await deps.social.disconnectMicroblog(unsealCredentials<MicroblogCredentials>(masterKey, account), session)
      : false;
    await writeSystemLog(db, {
      userId,
      message: `microblog account ${id} deleted${disconnected ? ' and disconnected upstream' : ' (upstream disconnect not possible)'}`,
    });
  } else {
    await writeSystemLog(db, { userId, message: `forum account ${id} deleted` });
  }
}
